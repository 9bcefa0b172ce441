#!/bin/bash
# The point-to-point transport between ranks: over UCX's shared memory and over UCX's TCP
# transport (the cross-host path), under the env launcher and under mpirun.
. "$(dirname "$0")/lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX"
    exit 77
fi
for n in 2 3 4; do
    run_ok "ucx, $n ranks" "$LAUNCH" --mode env -n $n -- "$BIN/test_tp_p2p"
done
run_ok "ucx over TCP only, 3 ranks" env UCX_TLS=tcp,self "$LAUNCH" --mode env -n 3 \
    -- "$BIN/test_tp_p2p"
if setup_mpirun; then
    run_ok "ucx under mpirun, 4 ranks" "${MPIRUN_CMD[@]}" -np 4 "$BIN/test_tp_p2p"
fi
finish
