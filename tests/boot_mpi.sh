#!/bin/bash
# The mpi bootstrap under OpenMPI's mpirun, at 1, 2, 3, 4 and 8 ranks.
. "$(dirname "$0")/lib.sh"

if [ -z "${MPIRUN:-}" ] || ! "$top_builddir/perf/sharc-info" -b | grep -q "^mpi: yes"; then
    echo "SKIP: sharc was built without MPI or no mpirun was found"
    exit 77
fi
mpirun=("$MPIRUN" --oversubscribe --allow-run-as-root --mca btl self,vader
        -x SHARC_BOOTSTRAP_TIMEOUT=30s)
if [ -n "${SHARC_SANITIZE:-}" ]; then
    # Keep OpenMPI's components mapped so LeakSanitizer can name them (tests/nodlclose.c),
    # and unwind slowly: OpenMPI is built without frame pointers.
    export LD_PRELOAD="$top_builddir/tests/.libs/libnodlclose.so"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:fast_unwind_on_malloc=0"
fi
for n in 1 2 3 4 8; do
    run_ok "mpi, $n ranks" "${mpirun[@]}" -np $n "$BIN/test_comm"
done
run_ok "mpi, 4 ranks, bootstrap exchanges" "${mpirun[@]}" -np 4 "$BIN/test_boot_xchg"
run_ok "mpi, 2 ranks, created twice" "${mpirun[@]}" -np 2 "$BIN/test_comm" --creates 2
finish
