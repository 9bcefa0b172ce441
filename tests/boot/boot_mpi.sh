#!/bin/bash
# The mpi bootstrap under OpenMPI's mpirun, at 1, 2, 3, 4 and 8 ranks.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! setup_mpirun || ! "$top_builddir/perf/sharc-info" -b | grep -q "^mpi: yes"; then
    echo "SKIP: sharc was built without MPI or no mpirun was found"
    exit 77
fi
for n in 1 2 3 4 8; do
    run_ok "mpi, $n ranks" "${MPIRUN_CMD[@]}" -np $n "$BIN/comm/test_comm"
done
run_ok "mpi, 4 ranks, bootstrap exchanges" "${MPIRUN_CMD[@]}" -np 4 "$BIN/boot/test_boot_xchg"
run_ok "mpi, 2 ranks, created twice" "${MPIRUN_CMD[@]}" -np 2 "$BIN/comm/test_comm" --creates 2
finish
