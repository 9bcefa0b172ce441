#!/bin/bash
# tests/gpu/run.sh [--budget SECONDS] [--parts LIST] [--dry-run] [BUILD_DIR] [OUT_DIR]: every
# GPU test and benchmark of sharc on this machine, in parts, the figures owed first: the CUDA
# kernels against the CPU (and their bandwidth against a device copy); collectives and sends
# and receives on CUDA buffers through NCCL and staged, and over quantized wires; the sharding
# engine on the GPU; sharc-llama's ops and attentions (cuDNN's, the tiled kernel, gemm) against
# references, the attentions timed at T 2048; tokens/s, MFU and peak memory of the 1b and 110m
# configs on one GPU in bf16 with PyTorch's on the same shapes beside them (trainer/scripts/
# bench_torch.py), the 1b step's profile (every op site against its floor), offload (1b with
# none, host and managed; Llama 2 7B with host); the torch backend on CUDA tensors; sharc-perf
# on device buffers beside NCCL; the trainer against transformers and the CPU trainer
# (tests/trainer/trainer_cuda.sh) and --offload against none; the other attentions and
# recomputation; the overlap benchmark with cuBLAS compute; weak scaling over several GPUs.
# Each part runs in its own time box; with --budget the whole run ends within SECONDS (a
# part that no longer fits is skipped and says so), so one failure cannot eat the rest.
# --parts a,b,c runs those parts only (a pattern may end in *: llama-1b*). --dry-run runs
# nothing, needs no GPU, and prints what would run. OUT_DIR (default BUILD_DIR/gpu-report)
# gets each part's log, report.md (the tables) and summary.txt (one line a part, printed
# last). Needs a build with CUDA and NCCL (BUILD_DIR, default build/, its tests built: make
# check TESTS=), or tools/bundle.sh --gpu-run's copy of one (tests/gpu/device.sh). Exits 77
# without a GPU, 1 if a part failed.
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
budget=0 only="" dry_run=0
while [ $# -gt 0 ]; do
    case $1 in
        --budget) budget=$2; shift 2 ;;
        --parts) only=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
build=$(cd "${1:-$top/build}" && pwd) || exit 2
out=${2:-$build/gpu-report}
mkdir -p "$out"
out=$(cd "$out" && pwd)
report="$out/report.md"
rm -f "$out/failures.txt"
export top_srcdir="$top" top_builddir="$build"
. "$top/tests/lib.sh" # make_tokens
t_start=$SECONDS
# sharc-llama's steps a run (the medians are over the steps after the first 2); fewer where
# the time is short
llama_steps=${SHARC_GPU_LLAMA_STEPS:-30}
# the PyTorch environment of tools/install-deps.sh --torch (or SHARC_VENV), for the torch parts
venv=${SHARC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv}
unset SHARC_GPU_LLAMA_STEPS SHARC_VENV # not knobs of sharc's: every rank would warn of them
. "$top/tests/gpu/parts.sh"

if [ "$dry_run" = 0 ] && ! nvidia-smi -L > /dev/null 2>&1; then
    echo "SKIP: no GPU (nvidia-smi finds none); --dry-run shows what would run"
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
if [ "$dry_run" = 0 ]; then
    if ldd "$build"/.libs/libsharc.so "$build"/trainer/sharc-llama "$build"/trainer/.libs/* \
        2>/dev/null | grep -q "not found"; then
        for lib in libnccl.so.2 libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
            add_lib_dir "$lib"
        done
    fi
    grep -q "define HAVE_CUDNN 1" "$build/config.h" 2> /dev/null && add_lib_dir libcudnn.so.9
fi

{
    echo "# sharc GPU report"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    if [ "$dry_run" = 1 ]; then
        echo "- GPU: none (dry run)"
    else
        echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)"
    fi
    echo "- sharc: $("$build/perf/sharc-info" -v 2>/dev/null | head -n 1)"
    echo "- budget: $([ "$budget" -gt 0 ] && echo "$budget s" || echo none)${only:+; parts $only}"
    echo "- sharc-llama: $llama_steps steps a run"
} > "$report"

rm -f "$out/rows-llama.md"
# ---- the tests owed: kernels, collectives, the engine, the trainer's ops and attentions
part kernels 60 "$build/tests/kernels/test_kern_cuda" --bandwidth &&
    figure "$(grep -o 'copy [0-9]*' "$out/kernels.log" | head -n 1) GB/s"
part quantizers 60 "$build/tests/kernels/test_kern_quant_cuda" --bandwidth
part collectives 90 bash "$top/tests/coll/gpu_coll.sh" # test_gpu_coll and test_gpu_p2p
part shard_engine 90 bash "$top/tests/shard/shard_gpu.sh"
part trainer_ops 60 "$build/tests/trainer/test_ops_cuda"
# the bf16 attentions (cuDNN's, the tiled kernel, gemm) against f32 and each other at T 2048
part trainer_attention 60 "$build/tests/trainer/test_attention_cuda"
# the attentions alone: forward and backward at T 2048, head size 64, causal
part attention_bench 60 "$build/tests/trainer/test_attention_cuda" --bench &&
    figure "best $(grep '^attention ' "$out/attention_bench.log" | grep -o '[0-9.]* TFLOP/s' |
        sort -n | tail -n 1)"

# ---- sharc-llama on one GPU, PyTorch beside it, the profile, offload
llama_bench 1b 90 1b 32000 4 2048
torch_bench 1b 120 1b 1b 32000 4 2048
# every op site of the 1b step timed against its floor
llama_bench 1b-profile 90 1b 32000 4 2048 --profile --profile-json "$out/profile-1b.json"
llama_bench 110m 60 110m 4096 16 1024
torch_bench 110m 90 110m 110m 4096 16 1024
# offload: the 1b config with accumulation 4, without it and with host and managed; Llama 2
# 7B, which does not fit one 80 GB GPU without (predicted: sharc-perf predict --sweep
# offload), with a fifth of it kept on the GPU: all of its 108 GB of f32 state would not
# leave a host of 128 GiB room for the rest
llama_bench 1b-accum4 90 1b 32000 4 2048 --accum 4
llama_bench 1b-accum4-offload-host 120 1b 32000 4 2048 --accum 4 --offload host
llama_bench 1b-accum4-offload-managed 120 1b 32000 4 2048 --accum 4 --offload managed
llama_bench 7b-offload-host 240 llama2-7b 32000 1 2048 --offload host --offload-fraction 0.8 \
    --recompute --steps 6

# ---- the torch backend on CUDA tensors (its C++ extension is compiled there: most of the box)
part torch_backend 240 env SHARC_VENV="$venv" bash "$top/tests/torch/gpu.sh" # skipped without torch

# ---- sharc-perf on device buffers beside NCCL, and over quantized wires
for coll in allgather reduce_scatter allreduce broadcast; do
    part "perf-$coll" 45 "$build/perf/sharc-perf" "$coll" --device cuda -b 1K -e 1G -f 4 \
        -n 30 -w 5 --vs-nccl --vs-memcpy -J "$out/perf-$coll.json"
done
for wire in int8 fp8; do
    for coll in allgather reduce_scatter; do
        part "perf-$coll-$wire" 30 "$build/perf/sharc-perf" "$coll" --device cuda --wire "$wire" \
            -b 1M -e 256M -f 4 -n 20 -w 5 -J "$out/perf-$coll-$wire.json"
    done
done

# ---- the trainer end to end, offload against none
part trainer_gpu 300 bash "$top/tests/trainer/trainer_cuda.sh"
part trainer_offload 240 bash "$top/tests/trainer/trainer_offload_emu.sh" --gpu

# ---- the rest of the trainer's variants: the other attentions, recomputation, compiled torch
llama_bench 1b-flash-attention 90 1b 32000 4 2048 --attention flash
llama_bench 110m-flash-attention 60 110m 4096 16 1024 --attention flash
llama_bench 110m-gemm-attention 60 110m 4096 16 1024 --attention gemm
llama_bench 110m-recompute 60 110m 4096 16 1024 --recompute
llama_bench 1b-recompute 90 1b 32000 8 2048 --recompute
torch_bench 1b-compile 240 1b 1b 32000 4 2048 --compile

# ---- the overlap benchmark with cuBLAS compute, and scaling over the machine's GPUs
part overlap-gemm 60 "$build/perf/sharc-perf" overlap --device cuda --compute gemm -u 16 \
    -p 16M -n 20 -J "$out/overlap-gemm.json"
part overlap-sleep 60 "$build/perf/sharc-perf" overlap --device cuda --compute sleep -u 16 \
    -p 16M -n 20 -J "$out/overlap-sleep.json"
ngpu=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -ge 2 ]; then
    ranks=1
    for n in 2 4 8; do [ "$n" -le "$ngpu" ] && ranks="$ranks,$n"; done
    part scale 600 bash "$top/trainer/scripts/scale.sh" --ranks "$ranks" --out "$out/scale" \
        --launch "$top/tests/launch.sh --mode env --timeout 900 -n {N} --" \
        --bin "$build/trainer/sharc-llama" -- --device cuda --config 1b \
        --train "$(data_for 32000)" --batch 4 --seq 2048 --steps 20 --warmup 5 --print-every 10
fi

# ---- the report, from the parts' logs
# show FILE COMMAND...: COMMAND's output in a code block, where FILE (a part's log) exists
show() {
    local f=$1
    shift
    [ -f "$f" ] || return 0
    { echo '```'; "$@"; echo '```'; } >> "$report"
}
section "Kernel bandwidth"
show "$out/kernels.log" grep -A5 "^bandwidth" "$out/kernels.log"
section "sharc-llama's attention, forward and backward (test_attention_cuda --bench)" \
    "FLOPs as FlashAttention's benchmarks count them: forward 4 B H T^2 hd / 2 (causal)," \
    "backward 2.5 times the forward; the best of 5 batches of 20 calls."
show "$out/attention_bench.log" grep '^attention ' "$out/attention_bench.log"
section "sharc-llama on one GPU (bf16; medians of the steps after the first 2)" \
    "MFU against the GPU's dense bf16 peak (the start line of each llama-*.log says which);" \
    "peak memory: the high-water mark of device memory in use (cudaMemGetInfo after each of" \
    "the trainer's allocations and each micro-batch)." "" \
    "| run | batch x seq, options | tokens/s | MFU | peak GPU memory | step |" \
    "|---|---|---|---|---|---|"
[ -f "$out/rows-llama.md" ] && cat "$out/rows-llama.md" >> "$report"
section "PyTorch beside sharc-llama (the same GPU, config, batch x seq and tokens; bf16)" \
    "trainer/scripts/bench_torch.py: transformers' LlamaForCausalLM, bf16 autocast over f32" \
    "parameters, SDPA, fused AdamW; medians of the steps after the first 3. Both MFUs against" \
    "sharc-llama's peak; memory: torch.cuda.max_memory_allocated for PyTorch, the device's" \
    "high-water mark (cudaMemGetInfo) for sharc-llama." "" \
    "| run | sharc-llama tokens/s | MFU | peak GPU memory | PyTorch tokens/s | MFU | peak GPU memory | sharc-llama / PyTorch |" \
    "|---|---|---|---|---|---|---|---|"
beside_row 1b 1b 1b
beside_row 110m 110m 110m
beside_row 1b-compile 1b 1b-compile
section "sharc-llama --profile, 1b (4 x 2048, bf16; rank 0's table; profile-1b.json beside)"
show "$out/llama-1b-profile.log" grep '^profile: ' "$out/llama-1b-profile.log"
section "sharc-perf on device buffers, 1 rank (NCCL): beside NCCL called directly; over int8 and fp8 wires"
for f in "$out"/perf-*.log; do
    [ -f "$f" ] || continue
    c=$(basename "$f" .log)
    show "$f" awk -v c="${c#perf-}" '!/^#/ { print c, $0 }' "$f"
done
section "sharc-perf overlap --device cuda (cuBLAS GEMM per unit; a sleep per unit)"
show "$out/overlap-gemm.log" cat "$out/overlap-gemm.log"
show "$out/overlap-sleep.log" cat "$out/overlap-sleep.log"
if [ -f "$out/scale.log" ]; then
    section "sharc-llama weak scaling over this machine's GPUs (1b, bf16, 4 x 2048 per GPU)"
    show "$out/scale.log" sed -n '/weak scaling/,$p' "$out/scale.log"
fi

if [ -f "$out/failures.txt" ]; then
    { echo; echo "## Failed parts (the end of each log)"; echo; cat "$out/failures.txt"; } >> "$report"
fi
summary > "$out/summary.txt"
cat "$report" "$out/summary.txt"
[ $failures -eq 0 ]
