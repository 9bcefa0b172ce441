#!/bin/bash
# tests/gpu/run.sh [BUILD_DIR] [OUT_DIR]: every GPU test and benchmark of sharc on this
# machine, and a short report (OUT_DIR/report.md, with the JSON of each benchmark beside it):
# the CUDA kernels against the CPU and their bandwidth against a device copy; collectives on
# CUDA buffers through NCCL and staged; the sharding engine on the GPU; the torch backend on
# CUDA tensors (with the venv of tools/install-deps.sh --torch); sharc-perf on device
# buffers beside NCCL called directly; the overlap benchmark with cuBLAS compute. Needs a
# build with CUDA and NCCL (BUILD_DIR, default build/). Exits 77 without a GPU.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
out=${2:-$build/gpu-report}
mkdir -p "$out"
report="$out/report.md"
export top_srcdir="$top" top_builddir="$build"

if ! nvidia-smi -L > /dev/null 2>&1; then
    echo "SKIP: no GPU (nvidia-smi finds none)"
    exit 77
fi
# The NCCL and CUDA runtime libraries the build links, where the loader does not find them
# (a machine whose NCCL came with a Python package, say).
if ldd "$build/tests/test_gpu_coll" 2>/dev/null | grep -q "not found"; then
    for lib in libnccl.so.2 libcudart.so.13 libcublas.so.13; do
        dir=$(find / -xdev -name "$lib" -path '*lib*' 2>/dev/null | head -n 1)
        [ -n "$dir" ] && export LD_LIBRARY_PATH="$(dirname "$dir")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
fi

failures=0
step() { # step NAME COMMAND...: run, keep its output, note the outcome
    local name=$1
    shift
    local log="$out/$name.log"
    "$@" > "$log" 2>&1
    local st=$?
    case $st in
        0) echo "- $name: ok" ;;
        77) echo "- $name: skipped ($(tail -n 1 "$log"))" ;;
        *) echo "- $name: FAILED (exit $st; $log)"; failures=$((failures + 1)); tail -n 20 "$log" ;;
    esac >> "$report"
}

{
    echo "# sharc GPU report"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)"
    echo "- sharc: $("$build/perf/sharc-info" -v 2>/dev/null | head -n 1)"
    echo "- NCCL: $(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null || echo unknown) (the library found at run time)"
    echo
    echo "## Tests"
    echo
} > "$report"
step kernels "$build/tests/test_kern_cuda" --bandwidth
step collectives bash "$top/tests/gpu_coll.sh"
if [ -x "$build/tests/test_shard_gpu" ]; then
    step shard_engine bash "$top/tests/shard_gpu.sh"
fi
step torch_backend bash "$top/tests/torch/gpu.sh" # skipped without the PyTorch venv
{
    echo
    echo "## Kernel bandwidth"
    echo
    echo '```'
    grep -A5 "^bandwidth" "$out/kernels.log"
    echo '```'
    echo
    echo "## sharc-perf on device buffers, 1 rank (NCCL), beside NCCL called directly"
    echo
    echo '```'
} >> "$report"
for coll in allgather reduce_scatter allreduce broadcast; do
    "$build/perf/sharc-perf" "$coll" --device cuda -b 1K -e 1G -f 4 -n 50 -w 10 --vs-nccl \
        --vs-memcpy -J "$out/perf-$coll.json" > "$out/perf-$coll.log" 2>&1 ||
        { echo "sharc-perf $coll failed" >> "$report"; failures=$((failures + 1)); }
    grep -v '^#' "$out/perf-$coll.log" | awk -v c="$coll" '{print c, $0}' >> "$report"
done
echo '```' >> "$report"
if "$build/perf/sharc-perf" overlap -h 2>&1 | grep -q -- "--device"; then
    {
        echo
        echo "## sharc-perf overlap --device cuda (cuBLAS GEMM per unit)"
        echo
        echo '```'
    } >> "$report"
    "$build/perf/sharc-perf" overlap --device cuda --compute gemm -u 16 -p 16M -n 20 \
        -J "$out/overlap-gemm.json" >> "$report" 2>&1 || failures=$((failures + 1))
    "$build/perf/sharc-perf" overlap --device cuda --compute sleep -u 16 -p 16M -n 20 \
        -J "$out/overlap-sleep.json" >> "$report" 2>&1 || failures=$((failures + 1))
    echo '```' >> "$report"
fi
echo >> "$report"
echo "$failures failure(s)" >> "$report"
cat "$report"
[ $failures -eq 0 ]
