#!/bin/bash
# The point-to-point transports between ranks: shm (with CMA and through its FIFO), UCX's
# shared memory and TCP (the cross-host path), shm + UCX on pretended nodes, under the env
# launcher and under mpirun.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX"
    exit 77
fi
for n in 2 3 4; do
    run_ok_match "shm, $n ranks" "recv_reduce ok.*transport shm: ok" "$LAUNCH" --mode env -n $n \
        -- "$BIN/transport/test_tp_p2p"
    run_ok_match "ucx, $n ranks" "transport ucx: ok" env SHARC_TRANSPORT=ucx "$LAUNCH" \
        --mode env -n $n -- "$BIN/transport/test_tp_p2p"
done
run_ok_match "shm through its FIFO (no CMA), 3 ranks" "recv_reduce ok.*transport shm: ok" \
    env SHARC_SHM_CMA=no \
    "$LAUNCH" --mode env -n 3 -- "$BIN/transport/test_tp_p2p"
run_ok_match "ucx over TCP only, 3 ranks" "transport ucx: ok" env SHARC_TRANSPORT=ucx \
    UCX_TLS=tcp,self "$LAUNCH" --mode env -n 3 -- "$BIN/transport/test_tp_p2p"
run_ok_match "shm within and ucx between 2 nodes, 5 ranks" \
    "shm within the node, ucx between nodes.*transport hybrid: ok" env SHARC_LOG_LEVEL=info \
    UCX_TLS=tcp,self "$LAUNCH" --mode env --nodes 2 -n 5 -- "$BIN/transport/test_tp_p2p"
run_fail "SHARC_TRANSPORT=shm refuses ranks on 2 nodes" 30 \
    "SHARC_TRANSPORT=shm cannot serve this communicator of 4 ranks on several nodes" \
    env SHARC_TRANSPORT=shm "$LAUNCH" --mode env --nodes 2 -n 4 -- "$BIN/transport/test_tp_p2p"
if setup_mpirun; then
    run_ok_match "shm under mpirun, 4 ranks" "transport shm: ok" "${MPIRUN_CMD[@]}" -np 4 \
        "$BIN/transport/test_tp_p2p"
fi
finish
