#!/bin/bash
# fuzz.sh [SECONDS] [BUILD_DIR]: builds every libFuzzer harness of tests/fuzz/ with clang and
# ASan+UBSan and runs each for SECONDS (default 30): the topology parsers (nvidia-smi text,
# NCCL XML, the EFA doctor's fi_info text and plugin version scan; seeds: the captures in
# tests/topo/) and the trainer's file readers (safetensors,
# token files; seeds: written by the harnesses themselves, plus tests/trainer/hf_tiny*/ when
# present). BUILD_DIR is a configured build tree (for config.h; default build/); binaries,
# corpora, logs and crash inputs go to BUILD_DIR/fuzz. FUZZ_HARNESSES="smi xml safetensors
# tokens" picks some. Exits 77 when clang or libFuzzer is missing (or no harness could be
# built for want of its libraries), 1 when a harness found a crash (with the log's tail).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-30}
builddir=${2:-$top/build}
clang=${CLANG:-clang}
harnesses=${FUZZ_HARNESSES:-smi xml fi_info safetensors tokens}
if ! command -v "$clang" > /dev/null; then
    echo "fuzz: no clang; skipped"
    exit 77
fi
if [ ! -f "$builddir/config.h" ]; then
    echo "fuzz: $builddir is not a configured build tree (no config.h)" >&2
    exit 1
fi
out="$builddir/fuzz"
mkdir -p "$out"
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        "$clang" -fsanitize=fuzzer -x c - -o "$out/probe" 2> /dev/null; then
    echo "fuzz: $clang cannot link libFuzzer (-fsanitize=fuzzer); skipped"
    exit 77
fi
# shellcheck disable=SC2054 # the commas are in one -fsanitize= list
flags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$top/include" -I"$builddir/include" -I"$builddir")
topo_srcs=("$top/topo/topo.c" "$top/perf/topo/topo_classify.c" "$top/perf/topo/topo_smi.c"
           "$top/perf/topo/topo_xml.c" "$top/perf/topo/topo_libs.c" "$top/src/base/log.c"
           "$top/src/base/util.c")

# Keywords of the safetensors header and index, for the mutator.
write_st_dict() {
    local w
    for w in '"dtype"' '"shape"' '"data_offsets"' '"__metadata__"' '"weight_map"' '"metadata"' \
            '"F32"' '"F16"' '"BF16"' '"I32"' '"I64"' '"F64"' '"U8"' '"s1.safetensors"' \
            '"s2.safetensors"' '"in.safetensors"' '"../s1.safetensors"' '18446744073709551615' \
            '4294967296' '[]' '{}' '\u0000'; do
        printf 'kw="%s"\n' "$(printf '%s' "$w" | sed 's/\\/\\\\/g; s/"/\\"/g')"
    done
}

# build_harness NAME: compiles tests/fuzz/fuzz_NAME.c; returns 2 when a library it needs is
# missing, 1 when it does not compile.
build_harness() {
    local h=$1 cflags libs
    case $h in
    smi | xml | fi_info)
        cflags=$(pkg-config --cflags libxml-2.0 2> /dev/null) || return 2
        libs=$(pkg-config --libs libxml-2.0)
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags "$top/tests/fuzz/fuzz_$h.c" "${topo_srcs[@]}" \
            -o "$out/fuzz_$h" $libs -lpthread
        ;;
    safetensors)
        cflags=$(pkg-config --cflags json-c 2> /dev/null) || return 2
        libs=$(pkg-config --libs json-c)
        # shellcheck disable=SC2086
        "$clang" "${flags[@]}" $cflags -I"$top/trainer" "$top/tests/fuzz/fuzz_$h.c" \
            "$top"/trainer/io/safetensors_{header,read,write}.c "$top/trainer/util.c" \
            -o "$out/fuzz_$h" $libs -lm
        ;;
    tokens)
        "$clang" "${flags[@]}" -I"$top/trainer" "$top/tests/fuzz/fuzz_$h.c" \
            "$top/trainer/io/tokens.c" "$top/trainer/util.c" -o "$out/fuzz_$h" -lm
        ;;
    *)
        echo "fuzz: no harness $h" >&2
        exit 1
        ;;
    esac
}

# seed NAME CORPUS: the harness's starting inputs; extra libFuzzer options on stdout.
seed() {
    local h=$1 corpus=$2 f
    case $h in
    smi) cp "$top"/tests/topo/smi_*.txt "$corpus/" ;;
    fi_info) cp "$top"/tests/topo/fi_info_*.txt "$corpus/" ;;
    xml) cp "$top"/tests/topo/*.xml "$corpus/" ;;
    safetensors | tokens)
        if ! SHARC_FUZZ_SEEDS="$corpus" "$out/fuzz_$h" > "$out/seed_$h.log" 2>&1; then
            echo "fuzz: fuzz_$h could not write its seeds:" >&2
            tail -20 "$out/seed_$h.log" >&2
            return 1
        fi
        ;;
    esac
    case $h in
    smi | xml | fi_info) echo "-max_len=65536" ;;
    safetensors)
        for f in "$top"/tests/trainer/hf_tiny*/*.safetensors; do
            [ -f "$f" ] && cp "$f" "$corpus/$(basename "$(dirname "$f")")_$(basename "$f")"
        done
        write_st_dict > "$out/safetensors.dict"
        # room for the fixtures (~150 KB); the trainer's readers log every rejected input:
        # stderr is discarded (libFuzzer and the sanitizers keep their own copy)
        echo "-max_len=262144 -dict=$out/safetensors.dict -close_fd_mask=2"
        ;;
    tokens) echo "-max_len=65536 -close_fd_mask=2" ;;
    esac
}

rc=0
ran=0
for h in $harnesses; do
    built=0
    build_harness "$h" || built=$?
    if [ $built -eq 2 ]; then
        echo "fuzz: fuzz_$h not built (a library it needs is missing); skipped"
        continue
    elif [ $built -ne 0 ]; then
        echo "fuzz: fuzz_$h does not compile" >&2
        exit 1
    fi
    corpus="$out/corpus_$h"
    mkdir -p "$corpus"
    opts=$(seed "$h" "$corpus")
    echo "fuzz: fuzz_$h for $secs s"
    ran=$((ran + 1))
    # shellcheck disable=SC2086
    if ! "$out/fuzz_$h" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix="$out/fuzz_$h-" $opts "$corpus" > "$out/fuzz_$h.log" 2>&1; then
        echo "fuzz: fuzz_$h found a crash:"
        tail -40 "$out/fuzz_$h.log"
        rc=1
    else
        grep -E "stat::number_of_executed_units|cov:" "$out/fuzz_$h.log" | tail -2
    fi
done
if [ $ran -eq 0 ]; then
    echo "fuzz: no harness could be built; skipped"
    exit 77
fi
exit $rc
