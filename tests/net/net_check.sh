#!/bin/bash
# sharc-perf check on 4 namespace nodes (one rank each, the env bootstrap), every link at
# 400 Mbit/s (tc tbf): with one node's link slowed 4x (100 Mbit/s) that node and nothing else
# is named (exit status 1), the slowed node taking each place in turn; with none slowed
# no node or link is named (exit status 0; a rank's copy figure is not judged: see below). Along the way: the JSON (every pair of nodes once, no node
# twice in a round, the named node), the heat map, the expected figures from sharc-topo on a
# fixture and from --expect. Then what must end with exit status 2 and a message, in bounded
# time: one node, a budget too small, bad options, a link cut during the check.
#
# SHARC_CHECK_SLOW_RUNS slowed and SHARC_CHECK_CLEAN_RUNS clean runs: 10 and 10 (2 and 2 in
# the sanitizer build); tools/bench-check.sh prints each run's figures (docs/perf.md).
# Needs root (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
json=0 # -J and sharc-topo's JSON need json-c; the text and the verdicts do not
"$top_builddir/perf/sharc-info" -b | grep -q "^json-c: yes" && json=1
slow_runs=${SHARC_CHECK_SLOW_RUNS:-10}
clean_runs=${SHARC_CHECK_CLEAN_RUNS:-10}
if [ -n "${SHARCTEST_SANITIZE:-}" ]; then # the sanitizer build looks for memory errors, not odds
    slow_runs=${SHARC_CHECK_SLOW_RUNS:-2}
    clean_runs=${SHARC_CHECK_CLEAN_RUNS:-2}
fi
setup_nodes 4 --rate 400mbit
perf="$top_builddir/perf/sharc-perf"
job=("$LAUNCH" --mode env --node-exec "$NODE_EXEC" --timeout 90 -n 4 --nodes 4)
# 1-2 MiB exchanges: past tbf's bucket (10 ms of traffic), so the rate shows, not the burst
check=(check --budget 15s -b 1M -e 2M -n 5 --timeout 20s)
work=$(mktemp -d)
trap 'rm -rf "$work"; nodes_down' EXIT
named_ok=0
clean_ok=0

# What is judged here is the nodes and links. The namespace nodes share this machine's cores
# and caches with whatever else runs (make check -j runs other tests beside this one), so a
# rank's memcpy figure measures that load, not the node: a rank named for its copy alone
# ("SLOW rank R (...): its copy ...") is printed as a note and neither fails nor passes a run.
# named_findings OUTPUT: rank 0's SLOW lines that name a node or a link
named_findings() {
    printf '%s\n' "$1" | grep '^\[rank 0\] SLOW ' | grep -v '^\[rank 0\] SLOW rank [0-9]* (.*): its copy ran'
}
# copy_notes OUTPUT: say so when a rank was named for its copy
copy_notes() {
    printf '%s\n' "$1" | grep '^\[rank 0\] SLOW rank [0-9]* (.*): its copy ran' |
        sed 's/^\[rank 0\] /note (the machine'"'"'s load, not judged): /'
}
# only_named K OUTPUT: rank 0 named node K (by index and host name), and no other node or link
only_named() {
    local k=$1 out=$2
    printf '%s\n' "$out" | grep -Eq "^\[rank 0\] SLOW node $k \(node$k, rank $k\)" ||
        { echo "node $k is not named"; return 1; }
    [ "$(named_findings "$out" | grep -c .)" = 1 ] ||
        { echo "more than node $k is named:"; named_findings "$out"; return 1; }
}

for ((i = 0; i < slow_runs; i++)); do
    k=$((i % 4))
    $NODES rate $k 100mbit
    extra=()
    [ $i = 0 ] && [ $json = 1 ] && extra=(-J "$work/slow.json" --png "$work/slow.png")
    t0=$(date +%s.%N)
    out=$("${job[@]}" -- "$perf" "${check[@]}" "${extra[@]}" 2>&1)
    st=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    $NODES rate $k 400mbit
    copy_notes "$out"
    if [ $st = 1 ] && why=$(only_named $k "$out"); then
        named_ok=$((named_ok + 1))
        echo "ok: slowed node $k: named, alone (exit 1, $secs s)"
    else
        echo "FAIL: slowed node $k: exit $st, ${why:-} ($secs s)"
        show_out "$(printf '%s\n' "$out" | grep '^\[rank 0\]')"
        failures=$((failures + 1))
    fi
    if [ $i = 0 ] && [ $json = 1 ]; then
        run_ok "the JSON: every pair of nodes once, no node twice in a round, node 0 named" \
            python3 - "$work/slow.json" << 'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["nnodes"] == 4 and d["nranks"] == 4 and d["exit_status"] == 1, d
pairs = sorted((l["node_a"], l["node_b"]) for l in d["links"])
assert pairs == [(a, b) for a in range(4) for b in range(a + 1, 4)], pairs
rounds = {}
for l in d["links"]:
    busy = rounds.setdefault(l["round"], set())
    assert l["node_a"] not in busy and l["node_b"] not in busy, l
    busy |= {l["node_a"], l["node_b"]}
assert sorted(rounds) == [0, 1, 2], rounds
assert [n["named"] for n in d["nodes"]] == [["links"], [], [], []], d["nodes"]
slow = [l for l in d["links"] if 0 in (l["node_a"], l["node_b"])]
fast = [l for l in d["links"] if 0 not in (l["node_a"], l["node_b"])]
assert max(l["busbw_gbps"] for l in slow) < 0.75 * min(l["busbw_gbps"] for l in fast), d["links"]
assert len(d["ring"]["hops"]) == 4 and d["ring"]["gbps"] > 0
print("links", [round(l["busbw_gbps"], 4) for l in d["links"]])
EOF
        if command -v gnuplot > /dev/null; then
            run_ok "the heat map is a PNG" sh -c "head -c 8 '$work/slow.png' | od -An -tx1 | grep -q '89 50 4e 47'"
        fi
    fi
done

fix="$work/dgx-h100"
python3 "$top_srcdir/tests/topo/mkfixture.py" dgx-h100 "$fix" || { echo "FAIL: mkfixture"; exit 1; }
for ((i = 0; i < clean_runs; i++)); do
    extra=()
    # the oracle: a DGX H100's 8 x 400 Gb/s InfiniBand ports, one rail: 50 GB/s expected
    [ $i = 0 ] && [ $json = 1 ] &&
        extra=(--topo-cmd "$top_builddir/perf/sharc-topo --sysfs-root $fix --json")
    [ $i = 1 ] && extra=(--expect 10Gb/s)
    t0=$(date +%s.%N)
    out=$("${job[@]}" -- "$perf" "${check[@]}" "${extra[@]}" 2>&1)
    st=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    copy_notes "$out"
    if { [ $st = 0 ] && printf '%s\n' "$out" | grep -q '^\[rank 0\] OK: no slow node'; } ||
        { [ $st = 1 ] && [ -n "$(copy_notes "$out")" ]; } && [ -z "$(named_findings "$out")" ]; then
        clean_ok=$((clean_ok + 1))
        echo "ok: no node slowed: no node or link named (exit $st, $secs s)"
    else
        echo "FAIL: no node slowed: exit $st ($secs s)"
        show_out "$(printf '%s\n' "$out" | grep '^\[rank 0\]')"
        failures=$((failures + 1))
    fi
    last_out=$out
    if [ $i = 0 ] && [ $json = 1 ]; then
        run_ok "expected figures from sharc-topo: 50 GB/s a link, every node warned" out_has \
            "^\[rank 0\] +0 +node0 +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +50\.000 .*8 InfiniBand ports, 3200 Gb/s in all" \
            "^\[rank 0\] WARN every node is below 50% of its expected figure"
    elif [ $i = 1 ]; then
        run_ok "--expect 10Gb/s: 1.25 GB/s a link" out_has \
            "^\[rank 0\] +3 +node3 +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +1\.250 .*--expect"
    fi
done
echo "slowed node named alone: $named_ok of $slow_runs runs; nothing named with none slowed: $clean_ok of $clean_runs runs"

# two nodes, one slowed: nothing can be named (one link, both ends), the expected figure warns
# (exit status 0; or 1 where a rank's copy alone was named: the machine's load, as above)
$NODES rate 1 100mbit
out=$("$LAUNCH" --mode env --node-exec "$NODE_EXEC" --timeout 60 -n 2 --nodes 2 -- \
    "$perf" "${check[@]}" --expect 0.4Gb/s 2>&1)
st=$?
$NODES rate 1 400mbit
copy_notes "$out"
last_out=$out
if { [ $st = 0 ] || { [ $st = 1 ] && [ -n "$(copy_notes "$out")" ]; }; } &&
    [ -z "$(named_findings "$out")" ] &&
    out_has "^\[rank 0\] # ring: none" \
        "^\[rank 0\] WARN the link between the two nodes is below 50% of its expected figure" \
        > /dev/null; then
    echo "ok: two nodes, node 1 slowed: nothing named, no ring, the link below --expect (exit $st)"
else
    echo "FAIL: two nodes, node 1 slowed: nothing named, no ring, the link below --expect (exit $st)"
    named_findings "$out"
    show_out "$out"
    failures=$((failures + 1))
fi

# --- what must fail cleanly (exit status 2) ---
run_fail "one node: exit 2" 60 "all on one node \(node0\).*needs ranks on 2 nodes" \
    "$LAUNCH" --mode env --node-exec "$NODE_EXEC" --timeout 60 -n 2 --nodes 1 -- "$perf" check
run_fail "a budget too small: exit 2" 60 "--budget 2s is too small for 4 nodes x 1 ranks.*use --budget [0-9]+s" \
    "${job[@]}" -- "$perf" check --budget 2s -b 4M
for bad in "--threshold 2" "--budget 0" "--expect fast" "-b 8M -e 4M" "--device tpu" "extra"; do
    # shellcheck disable=SC2086 # the words of the bad option
    run_fail "bad option '$bad': exit 2" 10 "sharc-perf check: .*usage: sharc-perf check" "$perf" check $bad
done
st=0
"$perf" check --threshold 2 > /dev/null 2>&1 || st=$?
run_ok "bad options give exit status 2 ($st)" test $st = 2

# a node cut off before the check: the job cannot form; every rank says so within the
# bootstrap's timeout (4 s here), and the store names the rank that did not arrive
$NODES link 3 down
run_fail "node 3 cut off before the check: exit 2" 20 \
    "cannot join the job: a rank is missing or unreachable.*rank\(s\) 3 of 4 did not arrive" \
    env SHARC_BOOTSTRAP_TIMEOUT=4s "${job[@]}" -- "$perf" check --budget 20s
$NODES link 3 up

# a link cut during the check: the ranks that wait on it leave at --timeout naming the link,
# the others learn it from sharc; where a collective of the whole job times out instead, the
# store says which rank is missing; every rank is gone within SHARC_TIMEOUT + the bootstrap's
t0=$(date +%s.%N)
SHARC_BOOTSTRAP_TIMEOUT=8s "${job[@]}" -- "$perf" check --budget 60s -b 1M -e 2M --timeout 5s \
    > "$work/cut.out" 2>&1 &
pid=$!
sleep 3
$NODES link 3 down
tcut=$(date +%s.%N)
wait $pid
st=$?
$NODES link 3 up
secs=$(awk -v a="$tcut" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
last_out=$(cat "$work/cut.out")
run_ok "node 3's link cut during the check: exit 2 (exit $st)" test $st = 2
# the bound: the cut-off rank learns nothing; it fails at SHARC_TIMEOUT (--timeout + 5 s),
# closes its endpoints (a few seconds), and asks the store in vain (SHARC_BOOTSTRAP_TIMEOUT,
# 8 s, and the store client's grace): 5 to 31 s in our tries
run_ok "... every rank gone within 40 s of the cut ($secs s)" awk -v s="$secs" 'BEGIN { exit !(s <= 40) }'
# the ranks that wait on the link name node3, or the store names rank 3 as the one missing (or,
# where the cut comes before the exchanges, under load, as the one gone once it gave up)
run_ok "... the output names node 3" out_has \
    "(sharc-perf check: rank [0-9] \(node[0-9]\): .*node3|rank\(s\) 3 of 4 did not arrive|rank 3 of this communicator is gone)"
run_ok "... no rank crashed" sh -c "! grep -Eq 'Assertion|Segmentation|exited with status 1[3-9][0-9]' '$work/cut.out'"
[ $failures = 0 ] || grep -E "sharc-perf check|ERROR|exited" "$work/cut.out" | cut -c1-220
finish
