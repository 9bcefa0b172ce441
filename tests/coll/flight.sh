#!/bin/bash
# The flight recorder (tests/coll/test_flight.c): a dump on request holds every collective
# of the rank, in order, with its op, size, state and times; a hang (one rank skips an
# all-reduce) dumps, at SHARC_TIMEOUT, the ranks that waited with the stalled all-reduce
# and the rank they waited for, and the rank that skipped it with one collective fewer; a
# dump across the wrap of the sequence numbers.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
check_json() { # check_json DESCRIPTION PYTHON: the dumps in $dir pass the Python checks
    local what=$1 code=$2
    run_ok "$what" python3 - "$dir" <<PY
import glob, json, sys
dumps = {}
for path in glob.glob(sys.argv[1] + "/sharc-flight.*.json"):
    d = json.load(open(path))
    dumps[d["rank"]] = d
$code
PY
}

for n in 1 3; do
    rm -f "$dir"/*
    run_ok "dump on request, $n rank(s)" "$LAUNCH" --mode env -n $n -- \
        "$BIN/coll/test_flight" dump "$dir"
    check_json "the dumps of $n rank(s) hold every collective" "
assert sorted(dumps) == list(range($n)), sorted(dumps)
for r, d in dumps.items():
    assert d['reason'] == 'request' and d['size'] == $n, d
    ops = [e['op'] for e in d['entries']]
    assert ops == ['allreduce'] * 10 + ['allgather'] * 3 + ['broadcast'], ops
    assert [e['ordinal'] for e in d['entries']] == list(range(14))
    assert all(e['state'] == 'complete' for e in d['entries']), d['entries']
    assert d['entries'][0]['count'] == 64 and d['entries'][0]['dtype'] == 'f32'
    assert d['head']['posted'] == 14 and d['head']['oldest_incomplete'] is None
    assert all(e['posted_s_ago'] >= e['done_s_ago'] >= 0 for e in d['entries'])
"
done

# across the wrap of the collectives' sequence numbers (tags modulo 2^39): started 8 below it,
# the 14 collectives' numbers wrap to 0 while their ordinals go on, and every one completes
wrap=$(( (1 << 39) - 8 ))
rm -f "$dir"/*
run_ok "dump on request across the sequence numbers' wrap, 3 ranks" env SHARC_SEQ_START=$wrap \
    "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_flight" dump "$dir"
check_json "the dumps across the wrap" "
for r, d in dumps.items():
    seqs = [e['seq'] for e in d['entries']]
    assert [e['ordinal'] for e in d['entries']] == list(range(14))
    assert all(e['state'] == 'complete' for e in d['entries']), d['entries']
    assert seqs[0] == $wrap and max(seqs) < 2**39 and min(seqs) < 8, seqs
    assert len(set(seqs)) == 14, seqs
"

rm -f "$dir"/*
# rank 2 skips the 4th all-reduce: at SHARC_STALL_WARN every rank logs the same verdict,
# naming rank 2 and the stalled collective; at SHARC_TIMEOUT the others' errors carry it
verdict="communicator w0: collective #7 \(allreduce of 256 f32, lane 0\) has waited [0-9]+ s on rank 0 \([^)]*\) and rank 1 \([^)]*\); rank 2 \([^)]*\) has not posted it: its last collective was #6, allreduce of 256 f32"
run_ok_match "a rank skips an all-reduce: every rank logs the same verdict" \
    "\[rank 0\].*stall verdict: $verdict.*did not complete within 10 s.*The ranks' verdict: $verdict.*\[rank 1\].*stall verdict: $verdict.*\[rank 2\].*stall verdict: $verdict.*rank 2: skipped one, idled, dumped" \
    env SHARC_TIMEOUT=10s SHARC_STALL_WARN=2s SHARC_FLIGHT_DIR="$dir" SHARCTEST_IDLE=14 \
    "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_flight" skip 2
check_json "the dumps say which collective hung and whom it waited for" "
assert sorted(dumps) == [0, 1, 2], sorted(dumps)
for r in (0, 1):
    d = dumps[r]
    assert d['reason'] == 'timeout', d['reason']
    assert 'rank 2' in d['verdict'] and 'has not posted it' in d['verdict'], d['verdict']
    assert len(d['entries']) == 8 and d['head']['posted'] == 8
    last = d['entries'][-1]
    assert last['state'] in ('running', 'failed') and last['op'] == 'allreduce', last
skip = dumps[2]
assert skip['reason'] == 'request' and skip['head']['posted'] == 7, skip['head']
assert all(e['state'] == 'complete' for e in skip['entries'])
"

# a destroy that completes a collective left in flight waits for its peers: meanwhile its
# rank's heartbeats and verdicts go on (here every 250 ms, a silence of 1 s names a rank
# gone), so rank 0, 3 s late, finds it alive, and the drain's wait is explained as any other
if [ -n "${SHARCTEST_SANITIZE:-}" ]; then
    echo "skipped: a destroy with a request in flight (its task is the caller's leak: LSan)"
else
    run_ok_match "a destroy that waits for a late peer keeps its heartbeats" \
        "\[rank 0\] rank 0: all-reduce complete.*\[rank 2\].*stall verdict: communicator w0: collective #0 \(allreduce of 64 f32, lane 0\) has waited [0-9]+ s on .*rank 0 \([^)]*\) has not posted it.*rank 2: all-reduce complete" \
        env SHARC_BOOTSTRAP_HEARTBEAT=250ms SHARC_BOOTSTRAP_HEARTBEAT_TIMEOUT=1s \
        SHARC_STALL_WARN=1s "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_flight" drain
    if printf '%s\n' "$last_out" | grep -Eq "is gone|silent for"; then
        echo "FAIL: a destroy that waits for a late peer: a rank was named gone"
        printf '%s\n' "$last_out" | grep -E "is gone|silent for" | head -3
        failures=$((failures + 1))
    fi
fi

# sharc-perf why: the same verdict from the dumps alone; a rank without a dump, a corrupt
# dump and an empty directory
why="$top_builddir/perf/sharc-perf"
run_ok_match "sharc-perf why: the verdict from the dumps" \
    "communicator w0: collective #7 \(allreduce of 256 f32, lane 0\) has waited [0-9]+ s on rank 0 .* and rank 1 .*; rank 2 \([^)]*\) has not posted it: its last collective was #6" \
    "$why" why "$dir"
mv "$dir/sharc-flight.w0.r2.json" "$dir/saved"
echo '{"sharc_flight": 1, "comm": "w0", "rank": 1, "size": 3, "head": ' > "$dir/sharc-flight.w0.r1.json"
run_ok_match "sharc-perf why: a rank without a dump, and a corrupt one" \
    "not a sharc flight dump.*no dump from rank 1 \(\?\) and rank 2 \(\?\)" "$why" why "$dir"
rm -f "$dir"/*
run_fail "sharc-perf why: an empty directory" 10 "no flight dumps" "$why" why "$dir"
finish
