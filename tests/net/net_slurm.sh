#!/bin/bash
# Jobs across nodes under a real Slurm: slurmctld and one slurmd per namespace node
# (tools/nodes.sh up --slurm), `srun -N 2 --ntasks-per-node 2` and `srun -N 3
# --ntasks-per-node 1` through sharc's slurm bootstrap with no MASTER_ADDR (the store on the
# step's first node, the port from the job id). Node ids and local ranks as srun says; every
# collective, auto (shm inside a node, UCX between nodes, as the log says) and UCX forced; the
# sharding engine's steps with HSDP across nodes; sharc-llama on 2 nodes equal to 1 node.
# Needs root, slurm-wlm and munge (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
setup_nodes 3 --slurm
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-net-slurm.XXXXXX")
trap 'nodes_down; rm -rf "$work"' EXIT
export SHARC_BOOTSTRAP_TIMEOUT=30s SHARC_TIMEOUT=60s

# step [VAR=VALUE...] SRUN_ARGS... -- PROGRAM...: one srun step with these variables, every
# task told what sharc should report (SHARCTEST_* from srun's own SLURM_* variables), no
# torchrun or mpirun variables about
step() {
    local -a vars=() sargs=()
    while [[ "$1" == *=* ]]; do vars+=("$1"); shift; done
    while [ "$1" != -- ]; do sargs+=("$1"); shift; done
    shift
    env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE -u LOCAL_RANK -u OMPI_COMM_WORLD_SIZE \
        "${vars[@]}" timeout -k 5 120 $NODES srun --kill-on-bad-exit=1 -l "${sargs[@]}" sh -c '
        SHARCTEST_RANK=$SLURM_PROCID SHARCTEST_SIZE=$SLURM_NTASKS SHARCTEST_NODE=$SLURM_NODEID \
        SHARCTEST_NNODES=$SLURM_NNODES SHARCTEST_LOCAL_RANK=$SLURM_LOCALID \
        SHARCTEST_LOCAL_SIZE=${SLURM_TASKS_PER_NODE%%(*} exec "$@"' task "$@" 2>&1 |
        sed -E 's/^ *([0-9]+): /[rank \1] /' # srun -l's labels as launch.sh's
    return "${PIPESTATUS[0]}"
}

for shape in "2 2" "3 1"; do
    read -r k per <<< "$shape"
    n=$((k * per))
    what="srun -N $k --ntasks-per-node $per"
    run_ok_match "$what: node ids and local ranks as srun says; the store from the node list" \
        "slurm bootstrap: rank 0 of $n, store node0:1[0-9]+ \(from SLURM_STEP_NODELIST\)" \
        step SHARC_LOG_LEVEL=info SHARC_LOG_SUBSYS=boot -N "$k" --ntasks-per-node "$per" -- \
        "$BIN/comm/test_comm"
    run_ok_match "$what: every collective, SHARC_TRANSPORT=auto" "collectives ok" \
        step SHARC_LOG_LEVEL=info SHARC_LOG_SUBSYS=core,tp -N "$k" --ntasks-per-node "$per" -- \
        "$BIN/coll/test_coll"
    run_ok "$what: auto picks shm inside a node and UCX between nodes (the log)" \
        transport_log "$n" "$k" "$last_out"
    run_ok_match "$what: every collective, SHARC_TRANSPORT=ucx" "collectives ok" \
        step SHARC_TRANSPORT=ucx SHARC_LOG_LEVEL=info SHARC_LOG_SUBSYS=core -N "$k" \
        --ntasks-per-node "$per" -- "$BIN/coll/test_coll" 100003
    run_ok "$what: SHARC_TRANSPORT=ucx takes UCX for every peer (the log)" \
        out_has "\[rank 0\] .*comm: rank 0 of $n, .*transport ucx\)" \
        "\[rank $((n - 1))\] .*comm: rank $((n - 1)) of $n, .*transport ucx\)"
done
run_ok_match "srun -N 2 --ntasks-per-node 2: the sharding engine's steps, HSDP across nodes" \
    "steps ok \(HSDP shard size 2\)" step -N 2 --ntasks-per-node 2 -- "$BIN/shard/test_shard" steps

mkdir -p "$work/data"
make_tokens "$work/data/train.bin" 20000 512 512
make_tokens "$work/data/val.bin" 3000 512 512
llama() {
    local name=$1
    shift
    local -a sargs=()
    while [ "$1" != -- ]; do sargs+=("$1"); shift; done
    shift
    step "${sargs[@]}" -- "$top_builddir/trainer/sharc-llama" train --config tiny \
        --data "$work/data" --seq 32 --steps 20 --warmup 5 --threads 1 --val-every 0 \
        --print-every 5 --log "$work/$name.jsonl" "$@"
}
if [ -x "$top_builddir/trainer/sharc-llama" ]; then
    run_ok "sharc-llama, srun -N 1 -n 2" llama one -N 1 -n 2 -- --batch 2
    run_ok "sharc-llama, srun -N 2 --ntasks-per-node 2, --hsdp 2" llama two -N 2 \
        --ntasks-per-node 2 -- --batch 1 --hsdp 2
    run_ok "2 nodes equal 1 node (20 steps, 1e-5)" losses_match "$work/one.jsonl" "$work/two.jsonl"
else
    echo "skipped: sharc-llama (built without a BLAS or json-c)"
fi
finish
