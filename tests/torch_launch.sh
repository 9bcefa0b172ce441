#!/bin/bash
# The sharc Python package and backend under each launcher: the package alone
# (tests/torch/api.py: the bootstrap the launcher implies, env under torchrun and mpi under
# mpirun; collectives on numpy, memoryviews and tensors, requests, sharc_mem_alloc memory,
# errors), and init_process_group("sharc") with a subgroup (tests/torch/launched.py) under
# mpirun and srun's variables (torch_train.sh runs it under torchrun); the FSDP2 example; and
# the package installs with pip.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/torch/env.sh"

run_ok_match "package API, env bootstrap from torchrun's variables, 3 ranks" \
    "(rank [0-2] of 3 \(env\): [0-9]+ checks, 0 failed.*){3}" \
    env SHARCTEST_BOOTSTRAP=env timeout 120 "$TORCHRUN" --nproc-per-node 3 \
    --master-port "$(free_port)" "$TT/api.py"
run_ok_match "backend under srun's variables, 3 ranks" "(launched: rank [0-2] of 3 .* ok.*){3}" \
    "$LAUNCH" --mode slurm -n 3 -- "$PY" "$TT/launched.py"
if setup_mpirun; then
    run_ok_match "package API, mpi bootstrap (mpirun), 2 ranks" \
        "rank 0 of 2 \(mpi\): [0-9]+ checks, 0 failed" \
        timeout 120 "${MPIRUN_CMD[@]}" -np 2 -x LIBSHARC -x PYTHONPATH -x OMP_NUM_THREADS \
        -x SHARCTEST_BOOTSTRAP=mpi "$PY" "$TT/api.py"
    run_ok_match "backend under mpirun, 2 ranks" "(launched: rank [01] of 2 .* ok.*){2}" \
        timeout 120 "${MPIRUN_CMD[@]}" -np 2 -x LIBSHARC -x PYTHONPATH -x OMP_NUM_THREADS \
        -x MASTER_PORT="$(free_port)" "$PY" "$TT/launched.py"
else
    echo "note: no mpirun in this build: the mpirun cases are left out"
fi

# the FSDP2 example runs (briefly) as the docs show it
run_ok_match "examples/fsdp_llama.py under torchrun" "step +3 \| loss .*done: 3 steps" \
    timeout 120 "$TORCHRUN" --nproc-per-node 2 --master-port "$(free_port)" \
    "$top_srcdir/python/examples/fsdp_llama.py" --steps 3 --layers 2 --dim 64 --seq 32

# pip install ./python (from a copy: the build leaves files in the source folder), then the
# installed package, not the tree's, is the one imported
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$top_srcdir/python" "$tmp/src"
run_ok "pip install of python/" "$PY" -m pip install -q --no-deps --no-build-isolation \
    --no-index --target "$tmp/site" "$tmp/src"
run_ok_match "the installed package loads libsharc" "^$tmp/site/sharc/__init__.py [0-9.]+" \
    env PYTHONPATH="$tmp/site" "$PY" -c 'import sharc; print(sharc.__file__, sharc.__version__)'
finish
