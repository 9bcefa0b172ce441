#!/bin/bash
# srun-style launches: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID; the store
# address comes from the first host of SLURM_JOB_NODELIST and the port from SLURM_JOB_ID.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

for n in 1 2 3 4 8; do
    nodes=$(( n >= 2 ? 2 : 1 ))
    run_ok "slurm, $n ranks on $nodes node(s)" "$LAUNCH" --mode slurm -n $n --nodes $nodes \
        -- "$BIN/comm/test_comm"
done
run_ok "slurm, 8 ranks on 4 nodes" "$LAUNCH" --mode slurm -n 8 --nodes 4 -- "$BIN/comm/test_comm"
run_ok "slurm, 3 ranks, bootstrap exchanges" "$LAUNCH" --mode slurm -n 3 -- "$BIN/boot/test_boot_xchg"
finish
