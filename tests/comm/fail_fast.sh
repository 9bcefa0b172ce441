#!/bin/bash
# Fast failure across the job: a rank killed (SIGKILL) in the middle of a long run of
# all-reduces makes every other rank fail within 2 s of the kill, with SHARC_ERR_REMOTE and
# a message naming the dead rank and its host (gone, as the store saw it, or lost, as a peer's
# transport reported it), over shm and over UCX, and when the rank
# killed is rank 0 (it serves the bootstrap store). A rank that is only slow (stopped for 3 s,
# longer than the detection takes) is not declared dead: the job ends with correct results.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

PERF="$top_builddir/perf/sharc-perf"
BOUND=2.0
work=$(mktemp -d /tmp/sharc-failfast.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The rank named by SHARCTEST_VICTIM waits for its communicator, lets the collectives run for
# a second, and is then killed (or stopped for 3 s and continued: SHARCTEST_STOP=1); every
# rank writes when it ended into $work/<case>/.
# shellcheck disable=SC2016 # expanded by the rank's shell
wrap='d=$SHARCTEST_DIR; mkdir -p "$d"
if [ "$RANK" = "$SHARCTEST_VICTIM" ]; then
    log=$d/victim.log; "$@" > "$log" 2>&1 & pid=$!
    until grep -q "transport " "$log"; do kill -0 $pid 2> /dev/null || exit 1; sleep 0.1; done
    sleep 1
    if [ -n "${SHARCTEST_STOP:-}" ]; then
        kill -STOP $pid; date +%s.%N > "$d/event"; sleep 3; kill -CONT $pid; wait $pid
        st=$?; cat "$log"; date +%s.%N > "$d/end.$RANK"; exit $st
    fi
    date +%s.%N > "$d/event"; kill -KILL $pid; wait $pid; exit 0
fi
"$@"; st=$?; date +%s.%N > "$d/end.$RANK"; exit $st'

# killed NAME VICTIM [ENV...]: 3 ranks; the others fail, naming rank VICTIM, within BOUND s.
killed() {
    local name=$1 victim=$2 out st slow=0 ends=""
    shift 2
    out=$(env "$@" SHARCTEST_DIR="$work/$name" SHARCTEST_VICTIM="$victim" SHARC_LOG_LEVEL=info \
        SHARC_TIMEOUT=60s "$LAUNCH" --mode env -n 3 --timeout 90 -- sh -c "$wrap" sh \
        "$PERF" allreduce -b 16M -e 16M -n 100000 -w 0 -c 0 2>&1)
    st=$?
    for r in 0 1 2; do
        [ "$r" = "$victim" ] && continue
        if [ ! -f "$work/$name/end.$r" ] || [ ! -f "$work/$name/event" ]; then
            echo "FAIL: $name: rank $r did not end (or the kill did not happen)"
            show_out "$out"
            failures=$((failures + 1))
            return
        fi
        s=$(awk -v a="$(cat "$work/$name/event")" -v b="$(cat "$work/$name/end.$r")" \
            'BEGIN { printf "%.3f", b - a }')
        ends="$ends rank $r after $s s;"
        awk -v s="$s" -v m="$BOUND" 'BEGIN { exit !(s > m) }' && slow=1
    done
    if [ $st -eq 0 ]; then
        echo "FAIL: $name: the job succeeded after rank $victim was killed"
        failures=$((failures + 1))
    elif [ $slow -ne 0 ]; then
        echo "FAIL: $name: a rank took longer than $BOUND s to fail:$ends"
        show_out "$out"
        failures=$((failures + 1))
    elif ! echo "$out" | grep -Eq "rank $victim \([^)]+\) of this 3-rank communicator is gone|of this 3-rank communicator lost rank $victim \([^)]+\)"; then
        echo "FAIL: $name: no rank named rank $victim and its host"
        show_out "$out"
        failures=$((failures + 1))
    else
        echo "ok: $name: the others failed, naming rank $victim:$ends"
    fi
}

killed "shm, rank 2 killed" 2
killed "ucx, rank 2 killed" 2 SHARC_TRANSPORT=ucx
killed "shm, rank 0 (the store) killed" 0

# A rank stopped for 3 s is slow, not gone: nobody fails, and the results are right (-c 1).
run_ok_match "a rank stopped for 3 s is not declared dead" \
    "16777216 +4194304 +f32 +sum +-1 .* 0 .* 0" \
    env SHARCTEST_DIR="$work/stopped" SHARCTEST_VICTIM=1 SHARCTEST_STOP=1 SHARC_LOG_LEVEL=info \
    SHARC_TIMEOUT=60s "$LAUNCH" --mode env -n 3 --timeout 90 -- sh -c "$wrap" sh \
    "$PERF" allreduce -b 16M -e 16M -n 60 -w 0 -c 1
if echo "$last_out" | grep -q "is gone"; then
    echo "FAIL: the stopped rank was declared gone"
    failures=$((failures + 1))
fi
finish
