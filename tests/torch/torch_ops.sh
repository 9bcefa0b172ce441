#!/bin/bash
# The sharc torch.distributed backend against gloo, op by op (tests/torch/ops.py): every
# collective, f32/bf16/i64 and the other dtypes, every reduction, in place and not, sync and
# async, several in flight, odd sizes, non-contiguous tensors, a subgroup; at 1, 2, 3, 4 ranks,
# and 2 ranks under TORCH_DISTRIBUTED_DEBUG=DETAIL (torch's debug wrapper).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

for n in 1 2 3 4; do
    run_ok_match "torch backend (native) ops against gloo, $n rank(s)" \
        "rank 0 of $n \(native\): [0-9]+ checks, 0 failed" \
        "$LAUNCH" -n $n --timeout 300 -- "$PY" "$TT/ops.py"
done
run_ok_match "torch backend (native) ops against gloo under TORCH_DISTRIBUTED_DEBUG=DETAIL" \
    "rank 0 of 2 \(native\): [0-9]+ checks, 0 failed" \
    env TORCH_DISTRIBUTED_DEBUG=DETAIL "$LAUNCH" -n 2 --timeout 300 \
    -- "$PY" "$TT/ops.py" --sizes 0,7,1000
finish
