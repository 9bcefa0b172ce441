#!/bin/bash
# sharc-llama --device cuda end to end without a GPU: tests/trainer/sharc-llama-emu is the
# trainer with its CUDA ops table built for the host emulation of CUDA (tests/trainer/
# cuda_emu.h), and libsharc's CUDA layer over the same emulation (tests/gpu_emu.h: the shard
# engine runs its CUDA mode, collectives staged). The tiny config, small batches (the
# emulation is slow):
#  - f32 on the emulated table equals the CPU trainer, 6 steps within 1e-5 relative (plain;
#    gradient accumulation with recomputation; bf16 gathers and reductions);
#  - the head's logits in chunks of 5 rows: the same losses (f32: the CPU's; bf16: 1e-3);
#  - bf16 (the tiled attention's table, whose kernels test_ops_cuda_emu checks; tiny's head
#    size, 16, takes the materialized path) stays within 3% of f32's losses; on a random
#    checkpoint with head size 32 (tests/lib.sh make_hf_llama) the tiled attention runs in
#    the model (--attention auto's choice: the emulation has no cuDNN), within 5e-4 of the
#    CPU's f32 losses and 5e-3 of its gradient norms; --attention cudnn is refused, saying so;
#  - a run stopped and resumed equals the uninterrupted one; validation and the Hugging Face
#    export go through the table too;
#  - --profile times every op site with the table's CUDA events (tests/trainer/
#    check_profile.py: every site with its calls, the JSON, the op track in --trace).
# What a GPU adds (its arithmetic, streams running beside each other, NCCL) is
# tests/trainer_cuda.sh.
# SKIP (77) without the emulated binary, and in sanitizer builds (fibers and ASan do not mix).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

CPU="$top_builddir/trainer/sharc-llama"
emu_trainer trainer-emu

# run BIN NAME ARGS...: 6 steps of the tiny config, 2 x 16 tokens
run() {
    local bin=$1 name=$2; shift 2
    "$LAUNCH" --mode env -n 1 --timeout 600 -- "$bin" train --config tiny --data "$work/data" \
        --seq 16 --batch 2 --steps 6 --warmup 2 --threads 1 --val-every 0 --val-seqs 4 \
        --print-every 5 --peak-tflops 1 --log "$work/$name.jsonl" "$@"
}

run_ok "CPU" run "$CPU" cpu
run_ok "emulated CUDA, f32" run "$EMU" emu --device cuda --compute-dtype f32
run_ok "emulated CUDA f32: the CPU's losses" losses_match "$work/cpu.jsonl" "$work/emu.jsonl"
# --profile on the table's CUDA events (the emulation's hold the host's clock at their record):
# the pool, the reads after the step's wait, the table and the op track in --trace
profiled() {
    run "$EMU" emuprof --device cuda --steps 10 --profile-json "$work/emuprof.json" \
        --trace "$work/emuprof-trace.json" > "$work/emuprof.out" 2>&1
}
run_ok "emulated CUDA bf16, --profile with --trace" profiled
run_ok_match "emulated CUDA --profile: every site, its calls, the JSON, the op track" \
    "profile: 33 sites" python3 "$top_srcdir/tests/trainer/check_profile.py" \
    "$work/emuprof.out" "$work/emuprof.json" --layers 2 --trace "$work/emuprof-trace.json"
run_ok "emulated CUDA --profile: the engine's trace stays valid" python3 \
    "$top_srcdir/tests/shard/check_trace.py" "$work/emuprof-trace.json" --ranks 1

run_ok "CPU, accumulation 2 and recomputation" run "$CPU" cpu_acc --accum 2 --recompute
run_ok "emulated CUDA f32, accumulation 2 and recomputation" run "$EMU" emu_acc --accum 2 \
    --recompute --device cuda --compute-dtype f32
run_ok "emulated CUDA f32 accumulation: the CPU's losses" losses_match "$work/cpu_acc.jsonl" \
    "$work/emu_acc.jsonl"
run_ok "CPU, bf16 gathers and reductions" run "$CPU" cpu_bf --param-dtype bf16 --reduce-dtype bf16
run_ok "emulated CUDA f32 compute, bf16 gathers and reductions" run "$EMU" emu_bf --device cuda \
    --compute-dtype f32 --param-dtype bf16 --reduce-dtype bf16
run_ok "emulated CUDA bf16 gathers and reductions: the CPU's losses" losses_match \
    "$work/cpu_bf.jsonl" "$work/emu_bf.jsonl"
run_ok_match "emulated CUDA, bf16, the tiled attention" "cuda-bf16" run "$EMU" emu16 \
    --device cuda --attention flash
run_ok "emulated CUDA bf16: within 3% of f32's losses" losses_match "$work/emu.jsonl" \
    "$work/emu16.jsonl" 1 3e-2
# the head's logits 5 rows at a time (chunks at offsets the products' heuristic must be told
# of; the last chunk short): the whole head's losses
run_ok "emulated CUDA f32, --head-rows 5" run "$EMU" emu_rows --device cuda --compute-dtype f32 \
    --head-rows 5
run_ok "emulated CUDA f32 --head-rows 5: the CPU's losses" losses_match "$work/cpu.jsonl" \
    "$work/emu_rows.jsonl"
run_ok "emulated CUDA bf16, --head-rows 5" run "$EMU" emu16_rows --device cuda --attention flash \
    --head-rows 5
run_ok "emulated CUDA bf16 --head-rows 5: the whole head's losses (1e-3) and norms (1e-2)" \
    losses_match "$work/emu16.jsonl" "$work/emu16_rows.jsonl" 1 1e-3 1e-2
run_fail "emulated CUDA: --attention cudnn says there is no cuDNN" 60 \
    "attention cudnn: the host emulation of CUDA has no cuDNN" run "$EMU" emu_cudnn --device cuda \
    --attention cudnn

# the tiled attention inside the model: head size 32 (a random checkpoint, 1 block, 2 query
# heads on 1 kv head), 80 tokens (a full query tile and a partial one), 4 steps
make_hf_llama "$work/hd32" 64 2 1 32 1 96 256
run_hd32() {
    local bin=$1 name=$2; shift 2
    "$LAUNCH" --mode env -n 1 --timeout 600 -- "$bin" train --hf "$work/hd32" --data "$work/data" \
        --seq 80 --batch 1 --steps 4 --warmup 1 --threads 1 --val-every 0 --val-seqs 1 \
        --print-every 2 --peak-tflops 1 --log "$work/$name.jsonl" "$@"
}
run_ok "CPU, head size 32" run_hd32 "$CPU" cpu32
# (--attention auto: the emulation has no cuDNN, so the tiled kernel)
run_ok_match "emulated CUDA bf16, head size 32: auto takes the tiled attention" "cuda-bf16\)" \
    run_hd32 "$EMU" emu32 --device cuda
run_ok "emulated CUDA bf16 tiled attention: the CPU's f32 losses (5e-4) and norms (5e-3)" \
    losses_match "$work/cpu32.jsonl" "$work/emu32.jsonl" 1 5e-4 5e-3

run_ok "emulated CUDA f32, stopped at step 3" run "$EMU" stop --device cuda --compute-dtype f32 \
    --stop-at 3 --save "$work/ck"
run_ok "emulated CUDA f32, resumed" run "$EMU" resumed --device cuda --compute-dtype f32 \
    --resume "$work/ck" --val-every 6 --export "$work/hf"
run_ok "resumed steps 4-6 equal the uninterrupted run" losses_match "$work/emu.jsonl" \
    "$work/resumed.jsonl" 4
run_ok "the export, evaluated on the CPU" "$LAUNCH" --mode env -n 1 -- "$CPU" train \
    --hf "$work/hf" --data "$work/data" --seq 16 --batch 2 --steps 1 --lr 0 --min-lr 0 \
    --val-every 1 --val-seqs 4 --threads 1 --log "$work/reimport.jsonl"
run_ok_match "the export's validation loss on the CPU is the emulated GPU's (1e-5)" "val" \
    python3 - "$work/resumed.jsonl" "$work/reimport.jsonl" <<'EOF'
import json, sys
def val(path):
    return [e["val_loss"] for e in map(json.loads, open(path)) if e["event"] == "val"][-1]
a, b = val(sys.argv[1]), val(sys.argv[2])
print("val loss: emulated GPU %.6f, its export on the CPU %.6f" % (a, b))
sys.exit(0 if abs(a - b) <= 1e-5 * abs(a) else 1)
EOF
finish
