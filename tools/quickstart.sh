#!/bin/bash
# quickstart.sh: installs dependencies, builds sharc, and runs the main job on this machine
# with defaults. Until the collectives land, the main job is a 4-rank communicator smoke run
# under mpirun: each rank prints its rank, node and local rank, and its place in the
# per-node and parity sub-communicators.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/tools/build.sh" "$top/build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
np=${SHARC_NP:-4}
echo "quickstart: mpirun -np $np sharc-info -C"
mpirun --oversubscribe -np "$np" --mca btl self,vader "$top/build/perf/sharc-info" -C
