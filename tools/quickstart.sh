#!/bin/bash
# quickstart.sh: installs dependencies, builds sharc, and runs the main job on this machine
# with defaults: the all-gather and reduce-scatter sweeps of sharc-perf on 2 local ranks
# (1 MiB to 64 MiB), each beside OpenMPI's in the same job (--vs-mpi) and beside this
# machine's memcpy bandwidth (--vs-memcpy). SHARC_NP sets the rank count.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/tools/build.sh" "$top/build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
np=${SHARC_NP:-2}
for coll in allgather reduce_scatter; do
    echo "quickstart: mpirun -np $np sharc-perf $coll -b 1M -e 64M -f 4 --vs-mpi --vs-memcpy"
    mpirun --oversubscribe -np "$np" --mca btl self,vader "$top/build/perf/sharc-perf" "$coll" \
        -b 1M -e 64M -f 4 -n 10 -w 3 --vs-mpi --vs-memcpy
done
