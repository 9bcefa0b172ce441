#!/bin/bash
# torchrun / Kubeflow PyTorchJob style launches: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
# with and without LOCAL_RANK / LOCAL_WORLD_SIZE / GROUP_RANK, at 1, 2, 3, 4 and 8 ranks.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

for n in 1 2 3 4 8; do
    run_ok "env, $n ranks, one node" "$LAUNCH" --mode env -n $n -- "$BIN/comm/test_comm"
done
run_ok "env, 4 ranks on 2 nodes" "$LAUNCH" --mode env -n 4 --nodes 2 -- "$BIN/comm/test_comm"
run_ok "env, 5 ranks on 2 nodes (uneven)" "$LAUNCH" --mode env -n 5 --nodes 2 -- "$BIN/comm/test_comm"
run_ok "env, 8 ranks on 3 nodes" "$LAUNCH" --mode env -n 8 --nodes 3 -- "$BIN/comm/test_comm"
run_ok "env, 3 ranks, PyTorchJob pods (no local variables)" "$LAUNCH" --mode env -n 3 --bare \
    -- "$BIN/comm/test_comm"
run_ok "env, 3 ranks, created twice on the same port" "$LAUNCH" --mode env -n 3 \
    -- "$BIN/comm/test_comm" --creates 2
run_ok "env, 4 ranks, rank 0 starts last" "$LAUNCH" --mode env -n 4 --delay 0:1 \
    -- "$BIN/comm/test_comm"
run_ok "env, 3 ranks, bootstrap exchanges" "$LAUNCH" --mode env -n 3 -- "$BIN/boot/test_boot_xchg"
run_ok "env, 4 ranks, bootstrap exchanges" "$LAUNCH" --mode env -n 4 -- "$BIN/boot/test_boot_xchg"
run_ok "env, torchrun agent store: sharc takes MASTER_PORT+1" "$LAUNCH" --mode env -n 2 \
    --rank-env 0:TORCHELASTIC_USE_AGENT_STORE=True --rank-env 1:TORCHELASTIC_USE_AGENT_STORE=True \
    -- "$BIN/comm/test_comm"
run_ok "env, SHARC_BOOTSTRAP=env named explicitly" "$LAUNCH" --mode env -n 2 \
    --rank-env 0:SHARC_BOOTSTRAP=env --rank-env 1:SHARC_BOOTSTRAP=env -- "$BIN/comm/test_comm"
finish
