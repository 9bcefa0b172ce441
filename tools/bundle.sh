#!/bin/bash
# bundle.sh BUILD_DIR DEST: copies into DEST/lib the shared libraries that BUILD_DIR's programs
# and libsharc load from the system (UCX with its transport modules, OpenMPI, hwloc, json-c,
# xxhash, OpenBLAS, ...), and writes DEST/env.sh, which puts them on LD_LIBRARY_PATH. With the
# build and DEST copied to another x86-64 Linux machine at the same paths, the build's tests and
# benchmarks run there although it has only the C runtime, CUDA and NCCL installed (a GPU
# machine whose image has none of sharc's Debian packages, say: tests/gpu/run.sh then runs
# there). Left out, since the target has its own and a copy could shadow a newer one: the C
# runtime (glibc, libstdc++, libgcc_s) and CUDA's libraries (libcuda, libcudart, cuBLAS, NCCL,
# cuDNN: sharc-llama opens libcudnn.so.9 at run time, tests/gpu/run.sh finds the target's).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
if [ $# -ne 2 ]; then
    sed -n '2,10p' "$0" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
mkdir -p "$2/lib"
dest=$(cd "$2" && pwd)

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
cat > "$dest/env.sh" <<'EOF'
# . env.sh: the libraries of this bundle first on the loader's path
bundle_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib
export LD_LIBRARY_PATH="$bundle_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
EOF
echo "bundle: $(wc -l < "$dest/libs.txt") libraries, $(du -sh "$dest" | cut -f1), in $dest" \
    "(. $dest/env.sh before running the build's programs)"
