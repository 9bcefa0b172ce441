#!/bin/bash
# The sharc torch.distributed backend against gloo, op by op (tests/torch/ops.py): every
# collective, f32/bf16/i64 and the other dtypes, every reduction, in place and not, sync and
# async, several in flight, odd sizes, non-contiguous tensors, a subgroup; at 1, 2, 3, 4 ranks
# on the C++ backend and on the Python one; 2 ranks under TORCH_DISTRIBUTED_DEBUG=DETAIL
# (torch's debug wrapper) on the C++ one; and at 2 on c10d's ProcessGroup, the base an older
# torch gives the Python group.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

for b in $BACKENDS; do
    for n in 1 2 3 4; do
        run_ok_match "torch backend ($b) ops against gloo, $n rank(s)" \
            "rank 0 of $n \($b\): [0-9]+ checks, 0 failed" \
            env TORCH_SHARC_BACKEND=$b "$LAUNCH" -n $n --timeout 300 -- "$PY" "$TT/ops.py"
    done
done
run_ok_match "torch backend (native) ops against gloo under TORCH_DISTRIBUTED_DEBUG=DETAIL" \
    "rank 0 of 2 \(native\): [0-9]+ checks, 0 failed" \
    env TORCH_SHARC_BACKEND=native TORCH_DISTRIBUTED_DEBUG=DETAIL "$LAUNCH" -n 2 --timeout 300 \
    -- "$PY" "$TT/ops.py" --sizes 0,7,1000
# the group as a torch whose c10d Backend Python cannot subclass makes it (a ProcessGroup)
run_ok_match "torch backend (python) ops against gloo on a ProcessGroup base, 2 ranks" \
    "rank 0 of 2 \(python\): [0-9]+ checks, 0 failed" \
    env TORCH_SHARC_BACKEND=python "$LAUNCH" -n 2 --timeout 300 -- "$PY" "$TT/ops.py" \
    --c10d-base process_group
finish
