#!/bin/bash
# How a rank waits (test_wait): the knobs; with nearly every wait blocking on shm's doorbell
# (SHARC_WAIT_SPIN=1us), ping-pongs, all-reduces and 1 MiB exchanges (streamed through full
# FIFOs without CMA) finish without a lost wake-up, from the caller and from a progress thread,
# at 2 and 3 ranks, yielding or not; and a rank that waits seconds (shm, a progress thread, UCX,
# which cannot block and sleeps) uses under a fifth of a core; sharc_request_wait_any returns
# requests as they complete.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

WAIT="$BIN/coll/test_wait"
LOST="slept through a wake-up"
export SHARC_TIMEOUT=60s # a hang fails in a minute, not ten

# run_wakes DESCRIPTION ENV...: test_wait's wake-ups under ENV, and no wake-up lost
run_wakes() {
    local what=$1; shift
    run_ok_match "$what" "wake-ups ok" env SHARC_WAIT_SPIN=1us "$@" "$WAIT" ranks
    if echo "$last_out" | grep -q "$LOST"; then
        echo "FAIL: $what: shm reported a lost wake-up"
        show_out "$last_out"
        failures=$((failures + 1))
    fi
}

run_ok_match "SHARC_WAIT_SPIN and SHARC_WAIT_YIELD" "wait knobs ok" "$WAIT"
for n in 2 3; do
    run_ok_match "sharc_request_wait_any, $n ranks" "wait any ok" "$LAUNCH" --mode env -n $n -- \
        "$WAIT" any
done
run_ok_match "sharc_request_wait_any from a progress thread" "wait any ok" \
    env SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env -n 2 -- "$WAIT" any
run_wakes "every wait blocks, 2 ranks" "$LAUNCH" --mode env -n 2 --
run_wakes "every wait blocks, 3 ranks, yielding while they spin" SHARC_WAIT_YIELD=yes \
    "$LAUNCH" --mode env -n 3 --
run_wakes "every wait blocks, a progress thread" SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env \
    -n 2 --
run_wakes "every wait blocks, without CMA (full FIFOs)" SHARC_SHM_CMA=no "$LAUNCH" --mode env \
    -n 2 --
run_wakes "every wait blocks, without CMA, a progress thread" SHARC_SHM_CMA=no \
    SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env -n 3 --
run_ok_match "a waiting rank idles (shm)" "idle ok" "$LAUNCH" --mode env -n 2 -- "$WAIT" idle
run_ok_match "a waiting rank idles (a progress thread)" "idle ok" env SHARC_PROGRESS_THREAD=1 \
    "$LAUNCH" --mode env -n 2 -- "$WAIT" idle
if "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    run_ok_match "a waiting rank idles (UCX: sleeps)" "idle ok" env SHARC_TRANSPORT=ucx \
        "$LAUNCH" --mode env -n 2 -- "$WAIT" idle
fi
finish
