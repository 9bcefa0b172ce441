#!/bin/bash
# fuzz-topo.sh [SECONDS] [BUILD_DIR]: builds the libFuzzer harnesses of the topology parsers
# (tests/fuzz/: nvidia-smi text, NCCL XML) with clang and ASan+UBSan, and runs each for
# SECONDS (default 30) from the captures in tests/topo/ as seeds. BUILD_DIR is a configured
# build tree (for config.h; default build/). Exits 77 when clang or libFuzzer is missing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-30}
builddir=${2:-$top/build}
clang=${CLANG:-clang}
if ! command -v "$clang" > /dev/null; then
    echo "fuzz-topo: no clang; skipped"
    exit 77
fi
if [ ! -f "$builddir/config.h" ]; then
    echo "fuzz-topo: $builddir is not a configured build tree (no config.h)" >&2
    exit 1
fi
out="$builddir/fuzz"
mkdir -p "$out"
flags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$top/include" -I"$builddir/include" -I"$builddir" $(pkg-config --cflags libxml-2.0))
srcs=("$top/transport/topo/topo.c" "$top/transport/topo/topo_smi.c"
      "$top/transport/topo/topo_xml.c" "$top/src/log.c" "$top/src/util.c")
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        "$clang" -fsanitize=fuzzer -x c - -o "$out/probe" 2> /dev/null; then
    echo "fuzz-topo: $clang cannot link libFuzzer (-fsanitize=fuzzer); skipped"
    exit 77
fi
rc=0
for h in smi xml; do
    "$clang" "${flags[@]}" "$top/tests/fuzz/fuzz_$h.c" "${srcs[@]}" -o "$out/fuzz_$h" \
        $(pkg-config --libs libxml-2.0) -lpthread
    corpus="$out/corpus_$h"
    mkdir -p "$corpus"
    if [ $h = smi ]; then cp "$top"/tests/topo/smi_*.txt "$corpus/"; else cp "$top"/tests/topo/*.xml "$corpus/"; fi
    echo "fuzz-topo: fuzz_$h for $secs s"
    if ! "$out/fuzz_$h" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
            -print_final_stats=1 "$corpus" > "$out/fuzz_$h.log" 2>&1; then
        echo "fuzz-topo: fuzz_$h found a crash:"
        tail -40 "$out/fuzz_$h.log"
        rc=1
    else
        grep -E "stat::number_of_executed_units|cov:" "$out/fuzz_$h.log" | tail -2
    fi
done
exit $rc
