#!/bin/bash
# The sharc torch.distributed backend against gloo, op by op (tests/torch/ops.py): every
# collective, f32/bf16/i64 and the other dtypes, every reduction, in place and not, sync and
# async, several in flight, odd sizes, non-contiguous tensors, a subgroup; at 1, 2, 3, 4 ranks.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/torch/env.sh"

for n in 1 2 3 4; do
    run_ok_match "torch backend ops against gloo, $n rank(s)" \
        "rank 0 of $n: [0-9]+ checks, 0 failed" \
        "$LAUNCH" -n $n --timeout 300 -- "$PY" "$TT/ops.py"
done
finish
