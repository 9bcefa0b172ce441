#!/bin/bash
# A rank that skips one all-reduce, across nodes: 8 ranks on 4 namespace nodes (2 a node, the
# env bootstrap: shm within a node, UCX between); rank 5 (node2) skips the 4th of 8
# all-reduces (tests/coll/test_flight.c skip) and idles. SHARC_STALL_WARN is 5 s and
# SHARC_TIMEOUT 20 s. Every rank must log the same stall verdict, naming collective #7 (an
# all-reduce), rank 5 and its host, within SHARC_STALL_WARN + 5 s of the stall's start (when
# rank 5 moved past its last all-reduce); no rank may blame another rank before it fails; at
# SHARC_TIMEOUT the waiting ranks' errors carry the verdict; the job ends without a crash.
# As ranks do, they reach the stalled all-reduce at different times: rank 3 posts it 2 s
# late, so its own timeout comes 2 s after the others' (they must not leave before it, or it
# fails on their leaving instead), and rank 6 polls it with sharc_request_test, which has no
# timeout: it fails when the others leave, and its error must carry the verdict too.
# Needs root (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
setup_nodes 4
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-net-stall.XXXXXX")
trap 'nodes_down; [ -n "${SHARCTEST_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
WARN=5
T=20
SKIPPER=5
LATE=3
POLLER=6
export SHARC_BOOTSTRAP_TIMEOUT=60s
verdict="communicator w0: collective #7 \(allreduce of 256 f32, lane 0\) has waited [0-9]+ s on [^;]*; rank $SKIPPER \(node2\) has not posted it: its last collective was #6, allreduce of 256 f32, posted [0-9]+ s ago and complete [0-9]+ s ago$"
FAULT_LINE="sharc WARN .*rank [0-9]+: stall verdict: $verdict"
since() { awk -v t="$1" -v s="$start" 'BEGIN { printf "%.2f", t - s }'; }

# (the fault is rank 5's own: fault_job only watches the ranks' output for the verdict)
mkdir -p "$work/dumps"
fault_job "$work/job" 0 true -- env SHARC_STALL_WARN=${WARN}s SHARC_TIMEOUT=${T}s \
    SHARC_FLIGHT_DIR="$work/dumps" SHARCTEST_IDLE=$((T + 8)) SHARCTEST_LATE=$LATE:2 \
    SHARCTEST_POLL=$POLLER:1 "$LAUNCH" --mode env --node-exec "$NODE_EXEC" \
    --out-dir "$work/job" --timeout 150 -n 8 --nodes 4 -- "$BIN/coll/test_flight" skip $SKIPPER
out=$work/job
if [ "$FAULT_RC" = 0 ]; then
    echo "ok: the job ended with status 0"
else
    echo "FAIL: the job ended with status $FAULT_RC"
    show_out "$FAULT_OUT"
    failures=$((failures + 1))
fi
start=$(grep -oE "moved past its last all-reduce at [0-9.]+" "$out/out.$SKIPPER" | awk '{ print $NF }')
if [ -z "$start" ]; then
    echo "FAIL: rank $SKIPPER did not say when it moved past its last all-reduce"
    show_out "$(cat "$out/out.$SKIPPER")"
    finish
fi

# every rank: the verdict within WARN + 5 s of the stall's start, the same text everywhere
for r in 0 1 2 3 4 5 6 7; do
    t=${FAULT_WALL[$r]:-}
    if [ -z "$t" ]; then
        echo "FAIL: rank $r logged no verdict naming rank $SKIPPER (node2) and collective #7; its warnings:"
        grep -E "sharc (ERROR|WARN)" "$out/out.$r" | sed 's/^.*sharc /  /' | head -6
        failures=$((failures + 1))
    elif awk -v t="$(since "$t")" -v b=$((WARN + 5)) 'BEGIN { exit !(t <= b) }'; then
        echo "ok: rank $r logged the verdict $(since "$t") s after the stall's start (bound $((WARN + 5)) s)"
    else
        echo "FAIL: rank $r logged the verdict $(since "$t") s after the stall's start (bound $((WARN + 5)) s)"
        failures=$((failures + 1))
    fi
done
n=$(grep -ohE "stall verdict: .*" "$out"/out.* | sort -u | wc -l)
if [ "$n" = 1 ]; then
    echo "ok: every rank logged the same verdict: $(grep -ohE "stall verdict: .*" "$out/out.0" | head -1)"
else
    echo "FAIL: the ranks logged $n different verdicts:"
    grep -hE "stall verdict: .*" "$out"/out.* | sed 's/^.*sharc /  /' | sort | uniq -c
    failures=$((failures + 1))
fi

# the waiting ranks: at SHARC_TIMEOUT (rank 3's 2 s later) their all-reduce fails, its
# error carrying the verdict; the polling rank's fails when they leave, with the verdict too
for r in 0 1 2 3 4 6 7; do
    t=$(grep -oE "the last all-reduce failed \([^)]*\) at [0-9.]+" "$out/out.$r" | awk '{ print $NF }')
    lo=$((T - 1)) hi=$((T + 10)) err="did not complete within $T s \(SHARC_TIMEOUT\); the communicator is failed\. The ranks' verdict: "
    [ $r = $LATE ] && lo=$((T + 1)) hi=$((T + 12))
    [ $r = $POLLER ] && err="(The ranks had found it stalled; their verdict|The ranks' verdict on its stalled collective): "
    if ! grep -Eq "sharc ERROR coll: rank $r: .*$err$verdict" "$out/out.$r"; then
        echo "FAIL: rank $r's error does not carry the verdict; its errors:"
        grep -E "sharc ERROR" "$out/out.$r" | sed 's/^.*sharc /  /' | head -4
        failures=$((failures + 1))
    elif [ -z "$t" ] || ! awk -v t="$(since "$t")" -v lo=$lo -v hi=$hi 'BEGIN { exit !(t >= lo && t <= hi) }'; then
        echo "FAIL: rank $r's all-reduce did not fail from $lo to $hi s after the stall's start: $([ -n "$t" ] && since "$t" || echo never)"
        failures=$((failures + 1))
    else
        echo "ok: rank $r's all-reduce failed $(since "$t") s after the stall's start ($lo to $hi s), its error carrying the verdict"
    fi
done

# no rank blames another before it fails: its warnings and errors up to its failure (rank 5:
# its verdict; rank 6, whose all-reduce fails when the others leave: its verdict) name no
# rank but itself and rank 5, outside the verdict (which names the waiting ranks as such)
for r in 0 1 2 3 4 5 6 7; do
    last="The ranks' verdict: |their verdict: "
    [ $r = $SKIPPER ] || [ $r = $POLLER ] && last="stall verdict: "
    blamed=$(grep -E "sharc (ERROR|WARN) " "$out/out.$r" | awk -v last="$last" '{ print } $0 ~ last { exit }' |
        sed -E "s/verdict: .*//; s/\brank $r\b//g" | grep -oE "\brank [0-9]+" | grep -v "^rank $SKIPPER$" |
        sort -u | tr '\n' ' ')
    if [ -n "$blamed" ]; then
        echo "FAIL: rank $r's log names another rank than rank $SKIPPER before it failed: $blamed"
        grep -E "sharc (ERROR|WARN) " "$out/out.$r" | sed 's/^.*sharc /  /' | head -6
        failures=$((failures + 1))
    else
        echo "ok: rank $r's log blames no rank but rank $SKIPPER"
    fi
done
no_crash "a rank skips an all-reduce, 8 ranks on 4 nodes" "$out" 0 1 2 3 4 5 6 7
finish
