#!/bin/bash
# Link faults that must end well today, on namespace nodes (3 nodes x 1 rank, the env
# bootstrap): a node partitioned (its link down) before the bootstrap ends in errors naming
# the missing rank and the unreachable store within SHARC_BOOTSTRAP_TIMEOUT (4 s here); a
# node whose link is 10x slower than the others' (tc tbf: 40 against 400 Mbit/s) gives correct
# results, slowly (the all-reduce takes at least what the slow link allows: the job really ran
# through it): a slow node is not declared dead. The link cut in the middle of an all-reduce is
# tests/net/net_linkdown.sh; dead processes are tests/net_fastfail.sh. Needs root (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
setup_nodes 3
job=("$LAUNCH" --mode env --node-exec "$NODE_EXEC" --timeout 60 -n 3 --nodes 3)
perf="$top_builddir/perf/sharc-perf"

# --- a node partitioned before the bootstrap ---
$NODES link 2 down
T=4
t0=$(date +%s.%N)
last_out=$(env SHARC_BOOTSTRAP_TIMEOUT=${T}s "${job[@]}" -- "$perf" allreduce -b 1M -e 1M -n 2 2>&1)
st=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
run_ok "node 2 partitioned before the bootstrap: the job fails (status $st)" test $st -ne 0
run_ok "... within $((T + 4)) s ($secs s)" awk -v s="$secs" -v m=$((T + 4)) 'BEGIN { exit !(s <= m) }'
run_ok "... ranks 0 and 1 name the rank that did not arrive" \
    out_has "\[rank 0\] .*rank\(s\) 2 of 3 did not arrive" "\[rank 1\] .*rank\(s\) 2 of 3 did not arrive"
run_ok "... rank 2 names the store it cannot reach" \
    out_has "\[rank 2\] .*cannot reach the bootstrap store \(rank 2\) at node0:[0-9]+"
run_ok "... no rank crashed" sh -c "! printf '%s' \"\$0\" | grep -Eq 'Assertion|Segmentation|exited with status 1[3-9][0-9]'" "$last_out"
$NODES link 2 up

# --- a link 10x slower than the others ---
$NODES rate 0 400mbit && $NODES rate 1 400mbit && $NODES rate 2 40mbit
run_ok "node 2 at 40 Mbit/s, the others at 400: every collective correct" \
    env SHARC_TIMEOUT=60s "${job[@]}" -- "$BIN/coll/test_coll" 100003
# node 2's input reaches the others only through its link: at least 2 MiB at 5 MB/s per
# all-reduce (0.42 s; 0.35 s allows for tbf's bucket)
run_ok_match "node 2 at 40 Mbit/s: sharc-perf allreduce 2 MiB, no wrong element" \
    "\[rank 0\] +2097152 +524288 +f32 +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0" \
    env SHARC_TIMEOUT=60s "${job[@]}" -- "$perf" allreduce -b 2M -e 2M -n 2 -w 0
us=$(printf '%s\n' "$last_out" | awk '$1 == "[rank" && $3 == "2097152" { print $8; exit }')
run_ok "... each all-reduce took ${us:-?} us through the slow link (at least 350000)" \
    awk -v t="${us:-0}" 'BEGIN { exit !(t >= 350000) }'
finish
