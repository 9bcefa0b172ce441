#!/bin/bash
# Process groups of the "sharc" backend (tests/torch/groups.py): new_group made from the
# default group's communicator by the members alone, sequence numbers as gloo keeps them, the
# group's options and name, destructors at the interpreter's exit, a second
# init_process_group; at 2 and 4 ranks, and under TORCH_DISTRIBUTED_DEBUG=DETAIL (torch's debug
# wrapper around every group).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

for debug in OFF DETAIL; do
    for n in 2 4; do
        run_ok_match "process groups (native), $n ranks, TORCH_DISTRIBUTED_DEBUG=$debug" \
            "rank 0 of $n \(debug $debug\): [0-9]+ checks, 0 failed" \
            env TORCH_DISTRIBUTED_DEBUG=$debug "$LAUNCH" -n $n \
            --timeout 300 -- "$PY" "$TT/groups.py"
    done
done
finish
