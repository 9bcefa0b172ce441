#!/bin/bash
# bundle.sh [--gpu-run] BUILD_DIR DEST: copies into DEST/lib the shared libraries that
# BUILD_DIR's programs and libsharc load from the system (UCX with its transport modules,
# OpenMPI, hwloc, json-c, xxhash, OpenBLAS, ...), and writes DEST/env.sh, which puts them on
# LD_LIBRARY_PATH. With the build and DEST copied to another x86-64 Linux machine at the same
# paths, the build's tests and benchmarks run there although it has only the C runtime, CUDA
# and NCCL installed (a GPU machine whose image has none of sharc's Debian packages, say).
# --gpu-run: DEST/build also holds what tests/gpu/run.sh runs of the build (libsharc,
# sharc-perf, sharc-info, sharc-llama and the GPU test programs: each the program itself, not
# libtool's wrapper, without its debug information; config.h, the generated headers), laid
# out as in BUILD_DIR, and env.sh puts its libsharc first: the bundle runs from any path
# (tests/gpu/device.sh BUNDLE OUT_DIR). A DEST ending in .tar.xz is that folder packed into
# one file (solid, so the trainer's programs share one copy of their CUDA kernels).
# Left out, since the target has its own and a copy could shadow a newer one: the C runtime
# (glibc, libstdc++, libgcc_s) and CUDA's libraries (libcuda, libcudart, cuBLAS, NCCL, cuDNN:
# sharc-llama opens libcudnn.so.9 at run time, tests/gpu/run.sh finds the target's).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
gpu_run=0
[ "${1:-}" = --gpu-run ] && { gpu_run=1; shift; }
if [ $# -ne 2 ]; then
    sed -n '2,16p' "$0" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
pack=""
case $2 in
    *.tar.xz)
        pack=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
        stage=$(mktemp -d)
        trap 'rm -rf "$stage"' EXIT
        dest=$stage/sharc-bundle
        ;;
    *) dest=$2 ;;
esac
mkdir -p "$dest/lib"
dest=$(cd "$dest" && pwd)

# The programs tests/gpu/run.sh and the scripts it calls run, as paths in the build
gpu_programs=(perf/sharc-perf perf/sharc-info trainer/sharc-llama
    tests/kernels/test_kern_cuda tests/kernels/test_kern_quant_cuda tests/coll/test_gpu_coll
    tests/coll/test_gpu_p2p tests/shard/test_shard_gpu tests/trainer/test_ops_cuda
    tests/trainer/test_attention_cuda tests/trainer/test_llama_hf)
if [ $gpu_run -eq 1 ]; then
    grep -q "define HAVE_CUDA 1" "$build/config.h" ||
        { echo "bundle: $build is not a build with CUDA" >&2; exit 1; }
    mkdir -p "$dest/build/.libs"
    for p in "${gpu_programs[@]}"; do
        # libtool keeps a program linked to the build's libsharc in .libs/ (lt-NAME once run)
        d=$(dirname "$p") b=$(basename "$p") f=$build/$p
        [ -f "$build/$d/.libs/$b" ] && f=$build/$d/.libs/$b
        [ -f "$build/$d/.libs/lt-$b" ] && f=$build/$d/.libs/lt-$b
        head -c 4 "$f" 2>/dev/null | grep -q ELF ||
            { echo "bundle: $build/$p is not built (make check TESTS= builds the tests)" >&2
              exit 1; }
        mkdir -p "$dest/build/$d"
        objcopy --strip-debug "$f" "$dest/build/$p"
    done
    cp -P "$build"/.libs/libsharc.so* "$dest/build/.libs/"
    for f in "$dest"/build/.libs/libsharc.so.*; do
        [ -L "$f" ] || objcopy --strip-debug "$f"
    done
    cp "$build/config.h" "$dest/build/"
    mkdir -p "$dest/build/include/sharc"
    cp "$build"/include/sharc/*.h "$dest/build/include/sharc/"
fi

skip='^(ld-linux.*|libc|libm|libpthread|libdl|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libcudnn.*|libnvidia-.*)\.so'
# every ELF program and shared library of the build (libtool keeps the real ones in .libs/)
mapfile -t elves < <(find "$build" -type f -perm -u+x -exec sh -c \
    'head -c 4 "$1" | grep -q ELF && echo "$1"' _ {} \; ; find "$build" -name '*.so*' -type f)
ucx_modules=$(ldconfig -p | awk '/libucs\.so\.0 .*x86-64/ { print $NF; exit }')
ucx_modules=${ucx_modules:+$(dirname "$(readlink -f "$ucx_modules")")/ucx}
if [ -n "$ucx_modules" ] && [ -d "$ucx_modules" ]; then
    # UCX loads its transports from the folder "ucx" beside libucs
    mkdir -p "$dest/lib/ucx"
    cp -L "$ucx_modules"/*.so* "$dest/lib/ucx/"
    mapfile -t -O "${#elves[@]}" elves < <(ls "$dest"/lib/ucx/*.so*)
fi
for f in "${elves[@]}"; do
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    case $path in "$build"/*|"$dest"/*) continue ;; esac
    [ -e "$dest/lib/$name" ] || cp -L "$path" "$dest/lib/$name"
    echo "$name"
done > "$dest/libs.txt"
cat > "$dest/env.sh" <<'EOS'
# . env.sh: the libraries of this bundle first on the loader's path (and its build's libsharc)
bundle_top=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle_lib=$bundle_top/lib
[ -d "$bundle_top/build/.libs" ] && bundle_lib=$bundle_top/build/.libs:$bundle_lib
export LD_LIBRARY_PATH="$bundle_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
EOS
what="$(wc -l < "$dest/libs.txt") libraries"
[ $gpu_run -eq 1 ] && what="$what and ${#gpu_programs[@]} programs"
if [ -n "$pack" ]; then
    tar -C "$(dirname "$dest")" -cf - "$(basename "$dest")" | xz -T0 -9 > "$pack"
    echo "bundle: $what, $(du -sh "$pack" | cut -f1), in $pack (tests/gpu/device.sh unpacks it)"
else
    echo "bundle: $what, $(du -sh "$dest" | cut -f1), in $dest" \
        "(. $dest/env.sh before running the build's programs)"
fi
