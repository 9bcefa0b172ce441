#!/bin/bash
# torch's point-to-point on the "sharc" backend against gloo (tests/torch/p2p.py): send, recv,
# isend, irecv, batch_isend_irecv, tags, receives from any rank, a group's ranks, bad input;
# on the C++ backend and on the Python one at 2 and 3 ranks, and on the C++ one under
# TORCH_DISTRIBUTED_DEBUG=DETAIL (torch's debug wrapper around the group).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

for b in $BACKENDS; do
    for n in 2 3; do
        run_ok_match "point-to-point ($b) against gloo, $n ranks" \
            "rank 0 of $n \($b\): [0-9]+ checks, 0 failed" \
            env TORCH_SHARC_BACKEND=$b "$LAUNCH" -n $n --timeout 300 -- "$PY" "$TT/p2p.py"
    done
done
run_ok_match "point-to-point (native) against gloo under TORCH_DISTRIBUTED_DEBUG=DETAIL" \
    "rank 0 of 2 \(native\): [0-9]+ checks, 0 failed" \
    env TORCH_SHARC_BACKEND=native TORCH_DISTRIBUTED_DEBUG=DETAIL "$LAUNCH" -n 2 --timeout 300 \
    -- "$PY" "$TT/p2p.py"
finish
