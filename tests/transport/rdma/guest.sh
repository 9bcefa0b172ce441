#!/bin/bash
# guest.sh: what tests/transport/rdma.sh runs inside the soft-RoCE guest (tests/transport/rdma/vm.sh), from the
# build directory: the verbs unit test, then sharc's ib transport (SHARC_TRANSPORT=ib) on
# rxe0: point-to-point semantics (copied and zero-copy, the registration cache with its
# invalidation on free and its eviction), the public sends and receives (test_p2p: tags,
# receives from any rank, truncation) and every collective (every dtype and op, f32 and
# bf16 included) at 2, 3 and 4 ranks, on shareable buffers (zero-copy), the sharding engine's
# steps; and the faults: a rank that dies before a collective and a rank killed in the middle
# of a large transfer (the others fail at once, naming the rank that is gone and its host).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../../lib.sh"
export SHARCTEST_TIMES=1 # each case's seconds on its line

run_ok_match "verbs: RC QPs, RDMA write with immediate, a QP forced into error, a bad registration" \
    "device rxe0.*rdma write with immediate of [0-9]+ bytes: ok.*QP in error: Work Request Flushed Error.*registering an unmapped range: Bad address" \
    "$BIN/transport/rdma/test_verbs"
export SHARC_TRANSPORT=ib
# 2 and 4 ranks here; 3 ranks below, on shareable buffers (the emulated guest is slow: each
# run of every collective takes minutes on a loaded host)
for n in 2 4; do
    run_ok_match "ib: point to point, $n ranks" "transport ib: ok" "$LAUNCH" --mode env -n $n \
        --timeout 200 -- "$BIN/transport/test_tp_p2p"
    run_ok "ib: every collective, $n ranks" "$LAUNCH" --mode env -n $n --timeout 300 -- \
        "$BIN/coll/test_coll" 100003
done
# point-to-point calls over ib: every dtype, tags and order (copied and zero-copy sizes),
# receives from any rank matched in MPI's order, truncation, 1000 in flight, self, groups;
# at 3 ranks (several senders to one receive from any rank) with small messages only
for n in 2 3; do
    run_ok "ib: sends and receives (sharc_send / sharc_recv), $n ranks" env SHARC_TIMEOUT=120s \
        "$LAUNCH" --mode env -n $n --timeout 300 -- "$BIN/coll/test_p2p" $((n == 2 ? 100003 : 10003))
done
run_ok "ib: sends and receives on shareable buffers (zero-copy), 2 ranks" \
    env SHARC_TIMEOUT=120s SHARC_IB_ZCOPY_MIN=64k SHARCTEST_MEM_ALLOC=1 "$LAUNCH" --mode env -n 2 \
    --timeout 300 -- "$BIN/coll/test_p2p" 300000
run_ok_match "ib: zero-copy through the registration cache, evicting past 4 MiB" \
    "registered the 33558528-byte buffer.*least recently used.*transport ib: ok" \
    env SHARC_LOG_LEVEL=debug SHARC_LOG_SUBSYS=tp SHARC_IB_REG_CACHE=4m "$LAUNCH" --mode env \
    -n 2 --timeout 200 -- "$BIN/transport/test_tp_p2p"
run_ok "ib: every collective on shareable buffers (zero-copy), 3 ranks" \
    env SHARCTEST_MEM_ALLOC=1 "$LAUNCH" --mode env -n 3 --timeout 300 -- "$BIN/coll/test_coll" 100003
run_ok "ib: the sharding engine's steps, 2 ranks" env SHARC_TIMEOUT=120s "$LAUNCH" --mode env \
    -n 2 --timeout 300 -- "$BIN/shard/test_shard" steps
run_ok_match "ib: sharc-perf reports it" "transport ib.*33554432 +8388608 +f32" \
    env SHARC_LOG_LEVEL=info "$LAUNCH" --mode env -n 2 --timeout 200 -- \
    "$top_builddir/perf/sharc-perf" allgather -b 32M -e 32M -n 1 -w 1

crash_ranks=(--rank-env 0:SHARCTEST_CRASH_RANK=1 --rank-env 1:SHARCTEST_CRASH_RANK=1
    --rank-env 2:SHARCTEST_CRASH_RANK=1)
run_fail "ib: a rank dies before an allreduce" 60 \
    "rank [0-9] \(.*\) of this 3-rank communicator is gone.*the next collective: remote peer error" \
    env SHARC_TIMEOUT=60s "$LAUNCH" --mode env -n 3 "${crash_ranks[@]}" --timeout 60 -- \
    "$BIN/coll/test_coll"
run_fail "ib: a rank dies while the others wait in receives" 60 \
    "rank 1 \(.*\) of this 3-rank communicator is gone.*the next send: remote peer error" \
    env SHARC_TIMEOUT=60s SHARCTEST_P2P_CRASH=1 "$LAUNCH" --mode env -n 3 --timeout 60 -- \
    "$BIN/coll/test_p2p"
# rank 1 killed (SIGKILL) 5 s after its communicator came up, inside a long run of 16 MiB
# all-gathers: rank 0 fails at once, naming it: the store sees rank 1's connection close and
# tells rank 0. What is bounded is the time from the kill to rank 0's end (30 s in the
# emulated guest; fail_fast.sh measures it on the host); the whole run, setup included, only
# has a generous bound, since under load the guest's setup alone can take minutes. (Without
# the store, on a real HCA the probe of a silent peer fails within SHARC_IB_TIMEOUT's tries;
# rxe never reports a destroyed peer QP, so SHARC_TIMEOUT would be what notices.) The kill
# waits for the communicator.
stamp=$(mktemp)
kill_rank1='if [ "$RANK" != 1 ]; then exec "$@"; fi
log=$(mktemp); "$@" > "$log" 2>&1 & pid=$!
until grep -q "transport ib)" "$log"; do kill -0 $pid 2> /dev/null || exit 1; sleep 0.2; done
sleep 5; date +%s.%N > "$SHARCTEST_KILL_STAMP"; kill -KILL $pid; wait $pid'
run_fail "ib: a rank killed in the middle of a transfer" 600 \
    "rank 1 \(.*\) of this 2-rank communicator is gone" \
    env SHARC_TIMEOUT=120s SHARC_LOG_LEVEL=info SHARCTEST_KILL_STAMP="$stamp" "$LAUNCH" \
    --mode env -n 2 --timeout 600 -- sh -c "$kill_rank1" sh "$top_builddir/perf/sharc-perf" \
    allgather -b 16M -e 16M -n 100000 -w 0 -c 0
after=$(awk -v k="$(cat "$stamp")" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - k }')
if [ ! -s "$stamp" ] || awk -v s="$after" 'BEGIN { exit !(s > 30) }'; then
    echo "FAIL: ib: rank 0 ended ${after} s after rank 1 was killed (limit 30 s)"
    failures=$((failures + 1))
else
    echo "ok: ib: rank 0 ended ${after} s after rank 1 was killed"
fi
rm -f "$stamp"
finish
