#!/bin/bash
# torch's point-to-point on the "sharc" backend against gloo (tests/torch/p2p.py): send, recv,
# isend, irecv, batch_isend_irecv, tags, receives from any rank, a group's ranks, bad input;
# futures in the order their requests complete; at 2 and 3 ranks, and under
# TORCH_DISTRIBUTED_DEBUG=DETAIL (torch's debug wrapper around the group); a process that exits
# with futures in flight.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

for n in 2 3; do
    run_ok_match "point-to-point (native) against gloo, $n ranks" \
        "rank 0 of $n \(native\): [0-9]+ checks, 0 failed" \
        "$LAUNCH" -n $n --timeout 300 -- "$PY" "$TT/p2p.py"
done
# a process that exits with futures in flight and its group never destroyed: the completer
# thread ends at exit (tests/torch/p2p_exit.py), and no rank aborts or waits (for the receive
# nobody sends to: SHARC_TIMEOUT's 10 minutes. The run takes 5 s on a quiet machine and up
# to 30 beside a dozen busy processes on 2 cores, importing torch the most of it)
run_ok_match "exit with futures in flight, the group not destroyed (native)" \
    "rank 0 \(native\): leaving.*rank 1 \(native\): leaving" \
    "$LAUNCH" -n 2 --timeout 90 -- "$PY" "$TT/p2p_exit.py"
if echo "$last_out" | grep -Eq "terminate called|Aborted|Fatal Python"; then
    echo "FAIL: exit with futures in flight (native): a rank aborted"
    show_out "$last_out"
    failures=$((failures + 1))
fi
run_ok_match "point-to-point (native) against gloo under TORCH_DISTRIBUTED_DEBUG=DETAIL" \
    "rank 0 of 2 \(native\): [0-9]+ checks, 0 failed" \
    env TORCH_DISTRIBUTED_DEBUG=DETAIL "$LAUNCH" -n 2 --timeout 300 \
    -- "$PY" "$TT/p2p.py"
finish
