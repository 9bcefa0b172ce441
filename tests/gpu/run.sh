#!/bin/bash
# tests/gpu/run.sh [BUILD_DIR] [OUT_DIR]: every GPU test and benchmark of sharc on this
# machine, and a short report (OUT_DIR/report.md, with the JSON of each benchmark beside it):
# the CUDA kernels against the CPU and their bandwidth against a device copy; collectives on
# CUDA buffers through NCCL and staged; the sharding engine on the GPU; the torch backend on
# CUDA tensors (with the venv of tools/install-deps.sh --torch); sharc-perf on device
# buffers beside NCCL called directly; the overlap benchmark with cuBLAS compute;
# sharc-llama on the GPU: its ops against the CPU's, its bf16 attentions (cuDNN's, the tiled
# kernel, gemm) against each other and timed at T 2048, the trainer against transformers and the
# CPU trainer (tests/trainer/trainer_cuda.sh) and --offload against none (tests/trainer/
# trainer_offload_emu.sh --gpu), then tokens/s, MFU and peak memory of the 110m and 1b configs
# on one GPU in bf16 (1b with offload too, and Llama 2 7B with offload host), PyTorch's on the
# same shapes beside them (trainer/scripts/bench_torch.py, with the venv's torch or
# python3's), the 1b step's profile (sharc-llama --profile: every op site against its floor),
# and weak scaling over the machine's GPUs. Needs a build with
# CUDA and NCCL (BUILD_DIR, default build/). Exits 77 without a GPU. Each test step and
# benchmark is stopped after SHARC_GPU_STEP_TIMEOUT seconds (default 900) and counts as failed.
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
out=${2:-$build/gpu-report}
mkdir -p "$out"
report="$out/report.md"
export top_srcdir="$top" top_builddir="$build"
. "$top/tests/lib.sh" # make_tokens

if ! nvidia-smi -L > /dev/null 2>&1; then
    echo "SKIP: no GPU (nvidia-smi finds none)"
    exit 77
fi
# The NCCL, CUDA runtime and cuBLAS libraries the build links, where the loader does not find
# them (a machine whose NCCL came with a Python package, say), and cuDNN, which sharc-llama
# opens at run time (--attention cudnn; libcudnn.so.9 loads its sub-libraries, libcudnn_graph,
# libcudnn_engines_*, ..., from its own folder): CUDA's folder, then the nvidia-* Python
# packages (torch's wheels: nvidia/cudnn/lib), then anywhere.
add_lib_dir() { # add_lib_dir LIB: its folder on LD_LIBRARY_PATH, unless the loader finds it
    local lib=$1 dir
    ldconfig -p | grep -q " $lib " && return
    dir=$({
        echo /usr/local/cuda/lib64
        python3 -c 'import nvidia, os
for p in nvidia.__path__:
    for d in sorted(os.listdir(p)): print(os.path.join(p, d, "lib"))'
    } 2>/dev/null | while read -r d; do [ -e "$d/$lib" ] && { echo "$d"; break; }; done)
    [ -n "$dir" ] || dir=$(dirname "$(find / -name "$lib" -path '*lib*' -not -path '/proc/*' \
        2>/dev/null | head -n 1)")
    [ "$dir" != . ] && export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
if ldd "$build"/.libs/libsharc.so "$build"/trainer/.libs/* 2>/dev/null | grep -q "not found"; then
    for lib in libnccl.so.2 libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
        add_lib_dir "$lib"
    done
fi
grep -q "define HAVE_CUDNN 1" "$build/config.h" 2> /dev/null && add_lib_dir libcudnn.so.9

failures=0
limit=${SHARC_GPU_STEP_TIMEOUT:-900}
unset SHARC_GPU_STEP_TIMEOUT # not a knob of sharc's: every rank would warn of it
bounded() { timeout -k 10 "$limit" "$@"; } # a hung step must not hold the whole report
step() { # step NAME COMMAND...: run, keep its output, note the outcome
    local name=$1
    shift
    local log="$out/$name.log"
    local t0=$SECONDS
    bounded "$@" > "$log" 2>&1
    local st=$?
    case $st in
        0) echo "- $name: ok ($((SECONDS - t0)) s)" ;;
        77) echo "- $name: skipped ($(tail -n 1 "$log"))" ;;
        124|137) echo "- $name: FAILED (stopped after $limit s; $log)"; failures=$((failures + 1))
           tail -n 20 "$log" ;;
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
step kernels "$build/tests/kernels/test_kern_cuda" --bandwidth
step quantizers "$build/tests/kernels/test_kern_quant_cuda" --bandwidth
step collectives bash "$top/tests/coll/gpu_coll.sh"
if [ -x "$build/tests/shard/test_shard_gpu" ]; then
    step shard_engine bash "$top/tests/shard/shard_gpu.sh"
fi
step torch_backend bash "$top/tests/torch/gpu.sh" # skipped without the PyTorch venv
if [ -x "$build/trainer/sharc-llama" ]; then
    # the trainer's GPU tests are check programs: built here when the build has not yet
    [ -x "$build/tests/trainer/test_ops_cuda" ] && [ -x "$build/tests/trainer/test_llama_hf" ] &&
        [ -x "$build/tests/trainer/test_attention_cuda" ] ||
        make -C "$build" -j"$(nproc)" tests/trainer/test_ops_cuda tests/trainer/test_llama_hf \
            tests/trainer/test_attention_cuda > "$out/trainer-tests-build.log" 2>&1
    step trainer_ops "$build/tests/trainer/test_ops_cuda"
    # the bf16 attentions (cuDNN's, the tiled kernel, gemm) against f32 and each other at T 2048
    step trainer_attention "$build/tests/trainer/test_attention_cuda"
    step trainer_gpu bash "$top/tests/trainer/trainer_cuda.sh"
    step trainer_offload bash "$top/tests/trainer/trainer_offload_emu.sh" --gpu
fi
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
    bounded "$build/perf/sharc-perf" "$coll" --device cuda -b 1K -e 1G -f 4 -n 50 -w 10 --vs-nccl \
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
    bounded "$build/perf/sharc-perf" overlap --device cuda --compute gemm -u 16 -p 16M -n 20 \
        -J "$out/overlap-gemm.json" >> "$report" 2>&1 || failures=$((failures + 1))
    bounded "$build/perf/sharc-perf" overlap --device cuda --compute sleep -u 16 -p 16M -n 20 \
        -J "$out/overlap-sleep.json" >> "$report" 2>&1 || failures=$((failures + 1))
    echo '```' >> "$report"
fi

# sharc-llama's attentions alone: forward and backward at T 2048, head size 64, causal
if [ -x "$build/tests/trainer/test_attention_cuda" ]; then
    {
        echo
        echo "## sharc-llama's attention, forward and backward (test_attention_cuda --bench)"
        echo
        echo "FLOPs as FlashAttention's benchmarks count them: forward 4 B H T^2 hd / 2 (causal),"
        echo "backward 2.5 times the forward; the best of 5 batches of 20 calls."
        echo
        echo '```'
    } >> "$report"
    bounded "$build/tests/trainer/test_attention_cuda" --bench > "$out/attention-bench.log" 2>&1 ||
        failures=$((failures + 1))
    grep '^attention ' "$out/attention-bench.log" >> "$report"
    echo '```' >> "$report"
fi

# sharc-llama on one GPU: bf16 compute and gathers, f32 masters and reductions, synthetic
# tokens (the speed does not depend on them). llama_bench NAME CONFIG VOCAB BATCH SEQ ARGS...
llama_bench() {
    local name=$1 config=$2 vocab=$3 batch=$4 seq=$5
    shift 5
    mkdir -p "$out/data-$vocab"
    [ -f "$out/data-$vocab/train.bin" ] || make_tokens "$out/data-$vocab/train.bin" 1000000 \
        "$vocab" "$vocab"
    rm -f "$out/llama-$name.jsonl"
    if ! bounded "$build/trainer/sharc-llama" train --device cuda --config "$config" \
        --train "$out/data-$vocab/train.bin" --batch "$batch" --seq "$seq" --steps 30 \
        --warmup 5 --print-every 10 --log "$out/llama-$name.jsonl" "$@" \
        > "$out/llama-$name.log" 2>&1; then
        echo "| $name | $batch x $seq $* | FAILED (llama-$name.log) | | | |" >> "$report"
        { echo "### llama-$name"; tail -n 20 "$out/llama-$name.log"; } >> "$out/failures.txt"
        failures=$((failures + 1))
        return
    fi
    python3 - "$out/llama-$name.jsonl" "$name" "$batch x $seq $*" >> "$report" <<'EOF'
import json, sys
s = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "summary"][-1]
print("| %s | %s | %.0f | %.1f%% | %.0f MiB | %.3f s |" % (sys.argv[2], sys.argv[3],
      s["tokens_per_s"], 100 * s["mfu"], s.get("peak_gpu_mem_mib", 0), s["step_s"]))
EOF
}
# PyTorch beside sharc-llama (trainer/scripts/bench_torch.py): the same config, batch, sequence
# and token file on the same GPU; bf16 autocast over f32 parameters, SDPA attention, fused
# AdamW; eager, and torch.compile for 1b; MFU against the peak sharc-llama's run took (the
# start record of its log), so that both MFUs share it.
torch_py=""
for py in "${SHARC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv}/bin/python" python3; do
    "$py" -c 'import torch, transformers, numpy' > /dev/null 2>&1 && { torch_py=$py; break; }
done
unset SHARC_VENV # not a knob of sharc's: every rank would warn of it
# torch_bench NAME CONFIG VOCAB BATCH SEQ ARGS...: beside sharc-llama's run llama-CONFIG
torch_bench() {
    local name=$1 config=$2 vocab=$3 batch=$4 seq=$5 peak
    shift 5
    peak=$(python3 -c 'import json, sys
s = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "start"][-1]
print("%.6g" % (s["gemm_peak_gflops"] / 1e3))' "$out/llama-$config.jsonl" 2> /dev/null)
    if ! bounded "$torch_py" "$top/trainer/scripts/bench_torch.py" --config "$config" \
        --device cuda --data "$out/data-$vocab/train.bin" --batch "$batch" --seq "$seq" \
        --steps 25 --warmup-steps 5 ${peak:+--peak-tflops "$peak"} "$@" \
        > "$out/torch-$name.log" 2>&1; then
        { echo "### torch-$name"; tail -n 20 "$out/torch-$name.log"; } >> "$out/failures.txt"
        failures=$((failures + 1))
    fi
}
# torch_row NAME LLAMA_RUN: a row of the section's table, sharc-llama's summary and PyTorch's
torch_row() {
    python3 - "$out/llama-$2.jsonl" "$out/torch-$1.log" "$1" >> "$report" <<'EOF'
import json, sys
try:
    s = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "summary"][-1]
except (OSError, IndexError, ValueError):
    s = None
try:
    last = [l for l in open(sys.argv[2]) if l.startswith("bench_torch: tokens_per_s=")][-1]
    t = dict(f.split("=", 1) for f in last.split()[1:])
except (OSError, IndexError):
    t = None
a = ("%.0f | %.1f%% | %.0f MiB" % (s["tokens_per_s"], 100 * s["mfu"],
                                    s.get("peak_gpu_mem_mib", 0)) if s else "FAILED | |")
b = ("%.0f | %.1f%% | %.0f MiB" % (float(t["tokens_per_s"]), 100 * float(t["mfu"]),
                                    float(t["peak_mem_mib"])) if t else "FAILED | |")
r = "%.2f" % (s["tokens_per_s"] / float(t["tokens_per_s"])) if s and t else "-"
print("| %s | %s | %s | %s |" % (sys.argv[3], a, b, r))
EOF
}
# the section: 110m and 1b (eager and compiled) beside sharc-llama's runs of them
torch_beside() {
    local run
    {
        echo
        echo "## PyTorch beside sharc-llama (the same GPU, config, batch x seq and tokens; bf16)"
        echo
    } >> "$report"
    if [ -z "$torch_py" ]; then
        echo "skipped: no python with torch, transformers and numpy" >> "$report"
        return
    fi
    torch_bench 110m 110m 4096 16 1024
    torch_bench 1b 1b 32000 4 2048
    torch_bench 1b-compile 1b 32000 4 2048 --compile
    {
        echo "trainer/scripts/bench_torch.py: transformers' LlamaForCausalLM, bf16 autocast over"
        echo "f32 parameters, SDPA, fused AdamW; medians of 25 steps after 5. Both MFUs against"
        echo "sharc-llama's peak; memory: torch.cuda.max_memory_allocated for PyTorch, the"
        echo "device's high-water mark (cudaMemGetInfo) for sharc-llama."
        echo
        echo "| run | sharc-llama tokens/s | MFU | peak GPU memory | PyTorch tokens/s | MFU" \
            "| peak GPU memory | sharc-llama / PyTorch |"
        echo "|---|---|---|---|---|---|---|---|"
    } >> "$report"
    torch_row 110m 110m
    torch_row 1b 1b
    torch_row 1b-compile 1b
    {
        echo
        echo '```'
        for run in 110m:110m 1b:1b 1b-compile:1b; do
            echo "${run%%:*}:"
            grep -h 'summary: .*tok/s' "$out/llama-${run#*:}.log" | sed 's/^/  sharc-llama /'
            grep -h '^bench_torch: tokens_per_s=' "$out/torch-${run%%:*}.log" |
                sed 's/^/  PyTorch /'
        done
        echo '```'
    } >> "$report"
}
if [ -x "$build/trainer/sharc-llama" ]; then
    {
        echo
        echo "## sharc-llama on one GPU (bf16; medians of 28 steps after 2)"
        echo
        echo "MFU against the GPU's dense bf16 peak (the start line of each llama-*.log says"
        echo "which); peak memory: the high-water mark of device memory in use (cudaMemGetInfo"
        echo "after each of the trainer's allocations and each micro-batch)."
        echo
        echo "| run | batch x seq, options | tokens/s | MFU | peak GPU memory | step |"
        echo "|---|---|---|---|---|---|"
    } >> "$report"
    llama_bench 110m 110m 4096 16 1024
    llama_bench 110m-recompute 110m 4096 16 1024 --recompute
    llama_bench 110m-gemm-attention 110m 4096 16 1024 --attention gemm
    # (the default attention is cuDNN's where the build has it: the tiled kernel beside it)
    llama_bench 110m-flash-attention 110m 4096 16 1024 --attention flash
    llama_bench 1b 1b 32000 4 2048
    llama_bench 1b-flash-attention 1b 32000 4 2048 --attention flash
    llama_bench 1b-recompute 1b 32000 8 2048 --recompute
    # offload: the 1b config with accumulation 4, without it and with host; Llama 2 7B, which
    # does not fit one 80 GB GPU without (predicted: sharc-perf predict --sweep offload), with
    # a fifth of it kept on the GPU: all of its 108 GB of f32 state would not leave a host of
    # 128 GiB room for the rest
    # every op site of the 1b step timed against its floor (the table: below)
    llama_bench 1b-profile 1b 32000 4 2048 --profile --profile-json "$out/profile-1b.json"
    llama_bench 1b-accum4 1b 32000 4 2048 --accum 4
    llama_bench 1b-accum4-offload-host 1b 32000 4 2048 --accum 4 --offload host
    llama_bench 1b-accum4-offload-managed 1b 32000 4 2048 --accum 4 --offload managed
    llama_bench 7b-offload-host llama2-7b 32000 1 2048 --offload host --offload-fraction 0.8 \
        --recompute --steps 10
    torch_beside
    {
        echo
        echo "## sharc-llama --profile, 1b (4 x 2048, bf16; rank 0's table, medians of 28 steps"
        echo "after 2; profile-1b.json beside this report)"
        echo
        echo '```'
        grep '^profile: ' "$out/llama-1b-profile.log"
        echo '```'
    } >> "$report"
    ngpu=$(nvidia-smi -L | grep -c '^GPU')
    if [ "$ngpu" -ge 2 ]; then
        ranks=1
        for n in 2 4 8; do [ "$n" -le "$ngpu" ] && ranks="$ranks,$n"; done
        {
            echo
            echo "## sharc-llama weak scaling over this machine's GPUs (1b, bf16, 4 x 2048 per GPU)"
            echo
            echo '```'
        } >> "$report"
        bounded bash "$top/trainer/scripts/scale.sh" --ranks "$ranks" --out "$out/scale" \
            --launch "$top/tests/launch.sh --mode env --timeout 900 -n {N} --" \
            --bin "$build/trainer/sharc-llama" -- --device cuda --config 1b \
            --train "$out/data-32000/train.bin" --batch 4 --seq 2048 --steps 20 --warmup 5 \
            --print-every 10 > "$out/scale.log" 2>&1 || failures=$((failures + 1))
        sed -n '/weak scaling/,$p' "$out/scale.log" >> "$report"
        echo '```' >> "$report"
    fi
fi
echo >> "$report"
if [ -f "$out/failures.txt" ]; then
    { echo "## Failed runs"; echo; cat "$out/failures.txt"; echo; } >> "$report"
fi
echo "$failures failure(s)" >> "$report"
cat "$report"
[ $failures -eq 0 ]
