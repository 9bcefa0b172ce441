#!/bin/bash
# Jobs across nodes for real, launched torchrun / PyTorchJob style (the env bootstrap): ranks
# on tools/nodes.sh's namespace nodes (each its own host name and address, joined through
# veth pairs on a bridge), at 2 nodes x 2 ranks and 3 nodes x 1 rank. Node ids and local
# ranks as the launcher says and, without them, from the host names; every collective, with
# SHARC_TRANSPORT=auto (shm inside a node and UCX between nodes, as the log says) and with
# UCX forced; the bytes cross the nodes' links; the sharding engine's steps with HSDP (shard
# group inside a node, replicas across nodes); sharc-llama on 2 nodes equal to 1 node.
# Needs root (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
setup_nodes 3
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-net-env.XXXXXX")
trap 'nodes_down; rm -rf "$work"' EXIT
export SHARC_BOOTSTRAP_TIMEOUT=30s SHARC_TIMEOUT=60s
job=("$LAUNCH" --mode env --node-exec "$NODE_EXEC" --timeout 120)

for shape in "4 2" "3 3"; do
    read -r n k <<< "$shape"
    what="$k nodes x $((n / k))"
    run_ok "$what: node ids and local ranks from GROUP_RANK / LOCAL_RANK" \
        "${job[@]}" -n "$n" --nodes "$k" -- "$BIN/comm/test_comm"
    run_ok "$what: node ids and local ranks from the host names (pods: RANK, WORLD_SIZE only)" \
        "${job[@]}" -n "$n" --nodes "$k" --bare -- "$BIN/comm/test_comm"
    run_ok_match "$what: every collective, SHARC_TRANSPORT=auto" "collectives ok" \
        env SHARC_LOG_LEVEL=info SHARC_LOG_SUBSYS=core,tp "${job[@]}" -n "$n" --nodes "$k" \
        --bare -- "$BIN/coll/test_coll"
    run_ok "$what: auto picks shm inside a node and UCX between nodes (the log)" \
        transport_log "$n" "$k" "$last_out"
    run_ok_match "$what: every collective, SHARC_TRANSPORT=ucx" "collectives ok" \
        env SHARC_TRANSPORT=ucx SHARC_LOG_LEVEL=info SHARC_LOG_SUBSYS=core "${job[@]}" -n "$n" \
        --nodes "$k" -- "$BIN/coll/test_coll" 100003
    run_ok "$what: SHARC_TRANSPORT=ucx takes UCX for every peer (the log)" \
        out_has "\[rank 0\] .*comm: rank 0 of $n, .*transport ucx\)" \
        "\[rank $((n - 1))\] .*comm: rank $((n - 1)) of $n, .*transport ucx\)"
done

# The data crosses the links: node 1 must send at least the whole buffer per all-reduce
# (node 0 cannot sum what it never received), 10 all-reduces of 16 MiB (4 + 1 warm-up, out of
# place and in place).
read -r tx0 _ <<< "$($NODES bytes 1)"
run_ok "2 nodes x 2: sharc-perf allreduce 16 MiB" "${job[@]}" -n 4 --nodes 2 -- \
    "$top_builddir/perf/sharc-perf" allreduce -b 16M -e 16M -n 4 -w 1
read -r tx1 _ <<< "$($NODES bytes 1)"
run_ok "node 1 sent $(((tx1 - tx0) >> 20)) MiB through its link (at least 160 MiB)" \
    test $((tx1 - tx0)) -ge $((160 << 20))

run_ok_match "2 nodes x 2: the sharding engine's steps, HSDP shard group inside a node" \
    "steps ok \(HSDP shard size 2\)" "${job[@]}" -n 4 --nodes 2 --bare -- "$BIN/shard/test_shard" steps

# sharc-llama: 2 ranks on 1 node against 2 nodes x 2 ranks, flat and HSDP (--hsdp 2: a node
# holds a whole replica); the same global batch, the same losses for 20 steps
mkdir -p "$work/data"
make_tokens "$work/data/train.bin" 20000 512 512
make_tokens "$work/data/val.bin" 3000 512 512
llama() {
    local name=$1 n=$2 k=$3
    shift 3
    "${job[@]}" -n "$n" --nodes "$k" -- "$top_builddir/trainer/sharc-llama" train --config tiny \
        --data "$work/data" --seq 32 --steps 20 --warmup 5 --threads 1 --val-every 0 \
        --print-every 5 --log "$work/$name.jsonl" "$@"
}
if [ -x "$top_builddir/trainer/sharc-llama" ]; then
    run_ok "sharc-llama, 1 node x 2 ranks" llama one 2 1 --batch 2
    run_ok "sharc-llama, 2 nodes x 2 ranks" llama two 4 2 --batch 1
    run_ok "sharc-llama, 2 nodes x 2 ranks, --hsdp 2" llama hsdp 4 2 --batch 1 --hsdp 2
    run_ok "2 nodes equal 1 node (20 steps, 1e-5)" losses_match "$work/one.jsonl" "$work/two.jsonl"
    run_ok "2 nodes with HSDP equal 1 node" losses_match "$work/one.jsonl" "$work/hsdp.jsonl"
else
    echo "skipped: sharc-llama (built without a BLAS or json-c)"
fi
finish
