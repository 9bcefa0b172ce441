#!/bin/bash
# One process: no launcher at all, SHARC_BOOTSTRAP=single, and launchers that say one rank.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
clean=(env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS -u OMPI_COMM_WORLD_SIZE)

run_ok "no launcher: a job of one" "${clean[@]}" SHARCTEST_SIZE=1 SHARCTEST_RANK=0 \
    SHARCTEST_NODE=0 SHARCTEST_LOCAL_SIZE=1 "$BIN/comm/test_comm"
run_ok "SHARC_BOOTSTRAP=single" "${clean[@]}" SHARC_BOOTSTRAP=single SHARCTEST_SIZE=1 \
    "$BIN/comm/test_comm"
run_ok "env with WORLD_SIZE=1 needs no store" "${clean[@]}" RANK=0 WORLD_SIZE=1 \
    SHARCTEST_SIZE=1 "$BIN/comm/test_comm"
run_ok "create and destroy three times" "${clean[@]}" "$BIN/comm/test_comm" --creates 3
run_ok "exchanges of one" "${clean[@]}" "$BIN/boot/test_boot_xchg"
run_ok "sharc-info -C" "${clean[@]}" "$top_builddir/perf/sharc-info" -C
finish
