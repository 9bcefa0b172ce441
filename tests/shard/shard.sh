#!/bin/bash
# The sharding engine between ranks: emulated training steps against all-gather / all-reduce
# references (flat and HSDP, every dtype pairing, accumulation, adaptive prefetch) at 1, 2, 3,
# 4, 5 and 8 ranks; the schedule, prefetch and memory bound; adaptive prefetch; overlap with a
# progress thread; reductions behind gathers on one queue; the timeline trace (JSON, nesting,
# waits against the statistics, the PNG); bad input.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for n in 1 2 3 4 5 8; do
    run_ok "shard engine, $n ranks" "$LAUNCH" --mode env -n $n -- "$BIN/shard/test_shard"
done
run_ok "shard engine over UCX TCP, 4 ranks" env SHARC_TRANSPORT=ucx UCX_TLS=tcp,self \
    "$LAUNCH" --mode env -n 4 -- "$BIN/shard/test_shard" steps
run_ok "shard engine on 2 pretended nodes (shm + UCX), 6 ranks" env UCX_TLS=tcp,self \
    "$LAUNCH" --mode env --nodes 2 -n 6 -- "$BIN/shard/test_shard" steps
run_ok "shard engine with a progress thread, 3 ranks" env SHARC_PROGRESS_THREAD=1 "$LAUNCH" \
    --mode env -n 3 -- "$BIN/shard/test_shard"
run_ok_match "communication hidden behind compute, 2 ranks" "overlap ok" \
    env SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env -n 2 -- "$BIN/shard/test_shard" overlap
# the collective engine under the engine's queues: completion lanes, posts handed to a pass
run_ok_match "completion lanes; a post during a pass is handed over" "lanes ok" \
    "$BIN/coll/test_coll_lanes"
for n in 2 3; do
    run_ok_match "posts in two lanes, many during passes, $n ranks" "hand-over ok" \
        env SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env -n $n -- "$BIN/coll/test_coll_lanes" ranks
done
run_ok "adaptive prefetch with a progress thread, 3 ranks" env SHARC_PROGRESS_THREAD=1 \
    "$LAUNCH" --mode env -n 3 -- "$BIN/shard/test_shard" auto
run_ok "reductions behind gathers on one queue (SHARC_SHARD_REDUCE_QUEUE=no), 3 ranks" \
    env SHARC_SHARD_REDUCE_QUEUE=no SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env -n 3 -- \
    "$BIN/shard/test_shard" steps

# the timeline trace: every rank's last 4 of 14 steps (adaptive prefetch, bound 3), checked as
# Perfetto needs it and against what sharc_shard_stats said of each step
if command -v python3 > /dev/null; then
    for n in 2 3; do
        run_ok_match "trace of $n ranks written" "trace steps ok" env \
            SHARC_SHARD_TRACE="$tmp/trace$n.json" SHARC_SHARD_TRACE_STEPS=4 SHARC_PROGRESS_THREAD=1 \
            "$LAUNCH" --mode env -n $n -- "$BIN/shard/test_shard" trace auto 14 3
        printf '%s\n' "$last_out" > "$tmp/stats$n"
        run_ok "trace of $n ranks: JSON, spans nest, waits add up to the exposed time" \
            python3 "$top_srcdir/tests/shard/check_trace.py" "$tmp/trace$n.json" --ranks $n \
            --steps-max 4 --stats "$tmp/stats$n" --auto
    done
    run_ok_match "trace of one queue (reductions behind gathers), no progress thread" \
        "trace steps ok" env SHARC_SHARD_TRACE="$tmp/one.json" SHARC_SHARD_REDUCE_QUEUE=no \
        "$LAUNCH" --mode env -n 2 -- "$BIN/shard/test_shard" trace 6
    printf '%s\n' "$last_out" > "$tmp/stats-one"
    run_ok "trace of one queue: JSON, spans nest, waits add up to the exposed time" \
        python3 "$top_srcdir/tests/shard/check_trace.py" "$tmp/one.json" --ranks 2 --stats "$tmp/stats-one"
    if command -v gnuplot > /dev/null; then
        run_ok "trace-plot draws a step" python3 "$top_srcdir/tools/trace-plot" \
            "$tmp/trace2.json" -o "$tmp/trace2.png"
        run_ok "trace-plot's PNG is there" test -s "$tmp/trace2.png"
    fi
fi
run_fail "an unwritable trace file fails the group's creation on every rank, saying why" 30 \
    "cannot write the trace file '$tmp/no/such/dir/t.json'.*failed on rank 0" \
    env SHARC_SHARD_TRACE="$tmp/no/such/dir/t.json" "$LAUNCH" --mode env -n 2 -- \
    "$BIN/shard/test_shard" trace 2
run_fail "a mismatched parameter list names the rank" 20 \
    "rank 1 passed other parameters or settings than rank 0" \
    "$LAUNCH" --mode env -n 2 -- sh -c '"$0" errors >&2; exit 1' "$BIN/shard/test_shard"
finish
