#!/bin/bash
# The sharding engine's quantized wires (int8, fp8 gathers and reductions) and node-local
# secondary shards (reshard_after_forward = node) between ranks: on one node at 1, 2, 3 and 4
# ranks (hierarchical reductions are exact there); on pretended nodes, 2 x 2 and 3 x 2 (the
# reductions quantized between nodes, the backward's gathers within them: the trace shows
# them on the node's queue) and 5 ranks on 2 uneven nodes (flat reductions, hpZ off); HSDP
# and accumulation; a checkpoint from a quantized group; settings that differ across ranks.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between pretended nodes)"
    exit 77
fi
for n in 1 2 3 4; do
    run_ok "wires and secondary shards, $n ranks" env SHARCTEST_CKPT_DIR="$tmp/ckpt$n" \
        "$LAUNCH" --mode env -n $n -- "$BIN/shard/test_shard_wire"
done
run_ok "wires and secondary shards, 2 nodes x 2 ranks" env UCX_TLS=tcp,self \
    SHARCTEST_CKPT_DIR="$tmp/ckpt-2x2" "$LAUNCH" --mode env --nodes 2 -n 4 \
    -- "$BIN/shard/test_shard_wire"
run_ok "wires and secondary shards, 3 nodes x 2 ranks, a progress thread" env UCX_TLS=tcp,self \
    SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env --nodes 3 -n 6 -- "$BIN/shard/test_shard_wire" \
    steps
run_ok_match "5 ranks on 2 uneven nodes: flat reductions, hpZ off (warned)" \
    "needs as many ranks of the shard group on every node.*wires and secondary shards ok" \
    env UCX_TLS=tcp,self "$LAUNCH" --mode env --nodes 2 -n 5 -- "$BIN/shard/test_shard_wire" steps
# the backward's gathers run on the node's communicator: the trace has them on its own queue
if command -v python3 > /dev/null; then
    run_ok "a trace of hpZ, 2 nodes x 2 ranks" env UCX_TLS=tcp,self \
        SHARC_SHARD_TRACE="$tmp/hpz.json" SHARC_SHARD_RESHARD_AFTER_FORWARD=node \
        SHARC_SHARD_PARAM_WIRE=int8 "$LAUNCH" --mode env --nodes 2 -n 4 \
        -- "$BIN/shard/test_shard" trace 3
    run_ok "the backward's all-gathers are on the node's queue" python3 - "$tmp/hpz.json" << 'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
node = [e for e in ev if e.get("ph") == "X" and "within the node" in names.get((e["pid"], e["tid"]), "")]
assert node, "no collective on the node's queue"
print(len(node), "collectives on the node's queue")
PY
fi
run_ok "mismatched and bad settings refused on every rank, 3 ranks" "$LAUNCH" --mode env -n 3 \
    -- "$BIN/shard/test_shard_wire" errors
finish
