#!/bin/bash
# A silent link: node 2's link is cut (ip link set down on the switch's port) in the middle of
# 256 MiB all-reduces at 3 nodes x 1 rank (the env bootstrap). No process dies and no
# connection closes. With SHARC_TIMEOUT at 5 s and the heartbeats off, every rank must fail
# its all-reduce within SHARC_TIMEOUT + 1 s of the cut, its log naming a rank it waited for
# and that rank's host, and the job must end within 4 s more, without a crash. At the
# default settings (SHARC_TIMEOUT 10 minutes) the store's heartbeats find it: ranks 0 and 1
# name node 2's rank, and only it, and node 2's rank names the store's (rank 0) unreachable,
# every rank within 30 s of the cut; node 2's collective says it lost the store, not that rank 0
# is gone. Needs root (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
setup_nodes 3
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-net-linkdown.XXXXXX")
trap 'nodes_down; [ -n "${SHARCTEST_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
T=5
export SHARC_BOOTSTRAP_TIMEOUT=30s
FAULT_LINE="sharc-perf: rank [0-9]+: allreduce of [0-9]+ bytes failed"

# the cut comes 4 s after rank 0 printed its table's head: every rank's communicator is up and
# an all-reduce under way
FAULT_READY="^# sharc-perf allreduce"
fault_job "$work/a" 4 "$NODES link 2 down" -- env SHARC_TIMEOUT=${T}s \
    SHARC_BOOTSTRAP_HEARTBEAT=1h SHARC_BOOTSTRAP_HEARTBEAT_TIMEOUT=3h "$LAUNCH" --mode env \
    --node-exec "$NODE_EXEC" --out-dir "$work/a" --timeout 20 -n 3 --nodes 3 -- \
    "$top_builddir/perf/sharc-perf" allreduce -b 256M -e 256M -n 1000 -w 1
$NODES link 2 up
fault_check "node 2's link cut" "$work/a" $((T + 1)) $((T + 5)) \
    "rank [0-9]+\b.*node[0-9]\b|node[0-9]\b.*rank [0-9]+\b" 0 1 2

# the same cut at the default settings: the heartbeats name node 2, within 30 s
fault_job "$work/b" 4 "$NODES link 2 down" -- "$LAUNCH" --mode env --node-exec "$NODE_EXEC" \
    --out-dir "$work/b" --timeout 60 -n 3 --nodes 3 -- \
    "$top_builddir/perf/sharc-perf" allreduce -b 256M -e 256M -n 1000 -w 1
$NODES link 2 up
fault_check "node 2's link cut, default settings" "$work/b" 30 30 "rank 2 \(node2\)" 0 1
fault_check "node 2's link cut, default settings, seen from node 2" "$work/b" 30 30 \
    "lost the store at .*unreachable" 2
# node 2 knows only that it lost the store (and with it news of the others): its collective's
# error says that, and does not call rank 0 gone (it may well live, on the far side of the cut)
if grep -E "sharc ERROR coll: " "$work/b/out.2" | grep -Eq "rank 0 \(node0\).* is gone"; then
    echo "FAIL: node 2's link cut, default settings: node 2's collective calls rank 0 gone:"
    grep -E "sharc ERROR coll: " "$work/b/out.2" | head -3
    failures=$((failures + 1))
elif ! grep -Eq "sharc ERROR coll: rank 2: this rank \(node2\) lost the store at .*cut off" \
    "$work/b/out.2"; then
    echo "FAIL: node 2's link cut, default settings: node 2's collective does not say it is" \
        "cut off from the store:"
    grep -E "sharc ERROR" "$work/b/out.2" | head -5
    failures=$((failures + 1))
else
    echo "ok: node 2's link cut, default settings: node 2's collective says it lost the store"
fi
for r in 0 1; do
    if grep -E "sharc (ERROR|WARN) " "$work/b/out.$r" | grep -Eq "rank [01] \(node[01]\)"; then
        echo "FAIL: node 2's link cut, default settings: rank $r's log names a healthy node:"
        grep -E "sharc (ERROR|WARN) " "$work/b/out.$r" | grep -E "rank [01] \(node[01]\)" | head -3
        failures=$((failures + 1))
    else
        echo "ok: node 2's link cut, default settings: rank $r's log names no other node"
    fi
done
finish
