#!/bin/bash
# The sharc Python package and backend under each launcher: the package alone
# (tests/torch/api.py: the bootstrap the launcher implies, env under torchrun and mpi under
# mpirun; collectives on numpy, memoryviews and tensors, requests, sharc_mem_alloc memory,
# errors), and init_process_group("sharc") with a subgroup (tests/torch/launched.py) under
# mpirun and srun's variables (torch_train.sh runs it under torchrun); init_env's variables
# under srun and mpirun on two nodes; the FSDP2 example (torch_wheel.sh installs the package).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

run_ok_match "package API, env bootstrap from torchrun's variables, 3 ranks" \
    "(rank [0-2] of 3 \(env\): [0-9]+ checks, 0 failed.*){3}" \
    env SHARCTEST_BOOTSTRAP=env timeout 120 "$TORCHRUN" --nproc-per-node 3 \
    --master-port "$(free_port)" "$TT/api.py"
run_ok_match "backend (native) under srun's variables, 3 ranks" \
    "(launched: rank [0-2] of 3 .* ok.*){3}" \
    "$LAUNCH" --mode slurm -n 3 -- "$PY" "$TT/launched.py"
if setup_mpirun; then
    run_ok_match "package API, mpi bootstrap (mpirun), 2 ranks" \
        "rank 0 of 2 \(mpi\): [0-9]+ checks, 0 failed" \
        timeout 120 "${MPIRUN_CMD[@]}" -np 2 -x LIBSHARC -x PYTHONPATH -x OMP_NUM_THREADS \
        -x SHARCTEST_BOOTSTRAP=mpi "$PY" "$TT/api.py"
    run_ok_match "backend (native) under mpirun, 2 ranks" "(launched: rank [01] of 2 .* ok.*){2}" \
        timeout 120 "${MPIRUN_CMD[@]}" -np 2 -x LIBSHARC -x PYTHONPATH -x OMP_NUM_THREADS \
        -x TORCH_SHARC_NATIVE -x MASTER_PORT="$(free_port)" \
        "$PY" "$TT/launched.py"
else
    echo "note: no mpirun in this build: the mpirun cases are left out"
fi

# init_env takes the launcher's variables as libsharc reads them (sharc_launch_query): an srun
# step on two nodes gets MASTER_ADDR from the step's node list and MASTER_PORT from sharc's
# Slurm rule (12000 + 123456 % 20000); mpirun on two nodes needs MASTER_ADDR
bare=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT
      -u OMPI_COMM_WORLD_SIZE -u SLURM_NNODES -u SLURM_JOB_NODELIST)
show_env='import os, sharc.torch
try:
    r, n = sharc.torch.init_env()
    e = os.environ
    print("init_env:", r, n, e["LOCAL_RANK"], e["MASTER_ADDR"], e["MASTER_PORT"])
except sharc.InvalidError as err:
    print("init_env refused:", err)'
run_ok_match "init_env under srun's variables, 2 nodes" "init_env: 1 4 0 gpu03 15456" \
    "${bare[@]}" SLURM_PROCID=1 SLURM_NTASKS=4 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_STEP_ID=0 \
    SLURM_JOB_ID=123456 SLURM_STEP_NUM_NODES=2 "SLURM_STEP_NODELIST=gpu[03-04]" \
    "$PY" -c "$show_env"
run_ok_match "init_env under mpirun's variables, 2 nodes, no MASTER_ADDR" \
    "init_env refused: init_env: a job on 2 nodes needs MASTER_ADDR" \
    "${bare[@]}" OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_LOCAL_RANK=1 \
    OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_MCA_orte_num_nodes=2 "$PY" -c "$show_env"

# the FSDP2 example runs (briefly) as the docs show it
run_ok_match "examples/fsdp_llama.py under torchrun" "step +3 \| loss .*done: 3 steps" \
    timeout 120 "$TORCHRUN" --nproc-per-node 2 --master-port "$(free_port)" \
    "$top_srcdir/python/examples/fsdp_llama.py" --steps 3 --layers 2 --dim 64 --seq 32

# pip install of the package: torch_wheel.sh
finish
