#!/bin/bash
# sharc-llama train --profile on the CPU (the table's timing by the host's clock; the CUDA
# events' path runs in tests/trainer/trainer_cuda_emu.sh): the table lists every op site with
# the calls a step of the tiny model makes, the sites' times add up to the step's, the JSON
# (--profile-json) has the table's rows; with accumulation, recomputation and bf16 gathers and
# reductions the casts and the recomputed forward are counted; on 2 ranks with --trace (and
# accumulation: the timelines meet at the last micro-batch) the op spans are a track of the
# shard engine's timeline, inside its compute spans, with no read of the device between a
# step's backward and its update; and off, the losses are those of a run with it (profiling
# changes no arithmetic).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

LLAMA="$top_builddir/trainer/sharc-llama"
CHECK="$top_srcdir/tests/trainer/check_profile.py"
trainer_work trainer-profile

# run NAME RANKS ARGS...: the tiny config (2 blocks), 10 steps of 2 x 16 tokens per rank
run() {
    local name=$1 n=$2; shift 2
    "$LAUNCH" --mode env -n "$n" --timeout 300 -- "$LLAMA" train --config tiny \
        --data "$work/data" --seq 16 --batch 2 --steps 10 --warmup 2 --threads 1 \
        --val-every 0 --print-every 5 --log "$work/$name.jsonl" "$@" > "$work/$name.out" 2>&1
}

run_ok "CPU, --profile --profile-json" run plain 1 --profile --profile-json "$work/plain.json"
run_ok_match "the table, the JSON and the calls of each site" "profile: 33 sites" \
    python3 "$CHECK" "$work/plain.out" "$work/plain.json" --layers 2
run_ok "CPU without --profile" run off 1
run_ok "the profile changes no loss" losses_match "$work/off.jsonl" "$work/plain.jsonl" 1 0

run_ok "CPU, accumulation 2, recomputation, bf16 gathers and reductions, --profile" run acc 1 \
    --accum 2 --recompute --param-dtype bf16 --reduce-dtype bf16 --profile-json "$work/acc.json"
run_ok_match "the casts and the recomputed forward are counted" "profile: 33 sites" \
    python3 "$CHECK" "$work/acc.out" "$work/acc.json" --layers 2 --accum 2 --recompute \
    --param-cast --grad-cast

run_ok "2 ranks, accumulation 2, --profile with --trace" run traced 2 --accum 2 \
    --profile-json "$work/traced.json" --trace "$work/trace.json"
run_ok_match "the engine's trace stays valid with the op track" "statistics: ok" \
    python3 "$top_srcdir/tests/shard/check_trace.py" "$work/trace.json" --ranks 2
run_ok_match "the op spans lie in the engine's compute spans" "outside the engine" \
    python3 "$CHECK" "$work/traced.out" "$work/traced.json" --layers 2 --accum 2 \
    --trace "$work/trace.json"

run_fail "--profile-json to a folder that is not there" 60 "cannot write" \
    "$LAUNCH" --mode env -n 1 --timeout 60 -- "$LLAMA" train --config tiny --data "$work/data" \
    --seq 16 --batch 2 --steps 2 --threads 1 --val-every 0 --profile-json "$work/no/such.json"
finish
