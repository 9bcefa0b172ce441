#!/bin/bash
# Collectives between ranks: every collective (the rooted and uneven ones too), dtype, op, in
# place and out of place, at 1, 2, 3, 4, 5 and 8 ranks; under mpirun; over UCX's TCP transport
# (the cross-host path); and with tiny chunks, so that every block crosses the ring in many
# pieces.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between ranks)"
    exit 77
fi
for n in 1 2 3 4 5 8; do
    run_ok "collectives, $n ranks" "$LAUNCH" --mode env -n $n -- "$BIN/coll/test_coll"
done
# the rooted (reduce, gather, scatter) and uneven (allgatherv, reduce_scatterv, alltoallv)
# collectives: every dtype, op, root, in place and out, blocks with empty ones and gaps
for n in 1 2 3 4 5 8; do
    run_ok "rooted and uneven collectives, $n ranks" "$LAUNCH" --mode env -n $n -- \
        "$BIN/coll/test_coll_v"
done
run_ok "rooted and uneven collectives over UCX TCP, 3 ranks" env SHARC_TRANSPORT=ucx \
    UCX_TLS=tcp,self "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_coll_v"
run_ok "rooted and uneven collectives over shm without CMA, 3 ranks" env SHARC_SHM_CMA=no \
    "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_coll_v"
# across the wrap of the collectives' sequence numbers (their messages' tags, modulo 2^39):
# every collective of the test, and sub-collectives taking ranges of numbers, from 8 below it
run_ok "collectives across the sequence numbers' wrap, 3 ranks" env \
    SHARC_SEQ_START=$(( (1 << 39) - 8 )) "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_coll"
# the transports: shm is the default on one node; UCX (its shared memory, and TCP as between
# hosts); shm streaming through its FIFO without CMA; buffers peers map (sharc_mem_alloc);
# shm within and UCX between two pretended nodes
run_ok "collectives over UCX TCP, 3 ranks" env SHARC_TRANSPORT=ucx UCX_TLS=tcp,self "$LAUNCH" \
    --mode env -n 3 -- "$BIN/coll/test_coll" 100003
run_ok "collectives over UCX shared memory, 4 ranks" env SHARC_TRANSPORT=ucx "$LAUNCH" \
    --mode env -n 4 -- "$BIN/coll/test_coll" 100003
run_ok "collectives over shm without CMA, 3 ranks" env SHARC_SHM_CMA=no "$LAUNCH" --mode env \
    -n 3 -- "$BIN/coll/test_coll" 100003
# reductions read with CMA at every size past the FIFO's eager limit (by default only from
# 256 KiB), through the bounce buffer in more than one chunk (the rings' messages of 100003
# f32 are 130-200 KB; the bounce buffer is 128 KiB)
for n in 2 3; do
    run_ok "reductions over CMA in bounce-buffer chunks, $n ranks" env SHARC_SHM_CMA_REDUCE_MIN=0 \
        "$LAUNCH" --mode env -n $n -- "$BIN/coll/test_coll" 100003
done
run_ok_match "collectives on sharc_mem_alloc buffers, 4 ranks" \
    "maps rank [0-9]+'s [0-9]+-byte shared buffer.*collectives ok" \
    env SHARCTEST_MEM_ALLOC=1 SHARC_LOG_LEVEL=debug SHARC_LOG_SUBSYS=tp "$LAUNCH" --mode env \
    -n 4 -- "$BIN/coll/test_coll"
run_ok "collectives over shm + UCX on 2 nodes, 5 ranks" env UCX_TLS=tcp,self "$LAUNCH" \
    --mode env --nodes 2 -n 5 -- "$BIN/coll/test_coll" 100003
run_ok "collectives in 4 KiB chunks, 4 ranks" env SHARC_COLL_CHUNK=4k "$LAUNCH" --mode env -n 4 \
    -- "$BIN/coll/test_coll" 100003
# every algorithm, forced (auto picks one-step algorithms for small sizes, rings for large)
run_ok "forced rings, chain and pairwise, 3 ranks" env SHARC_ALLGATHER_ALGO=ring \
    SHARC_REDUCE_SCATTER_ALGO=ring SHARC_ALLREDUCE_ALGO=ring SHARC_BROADCAST_ALGO=chain \
    SHARC_ALLTOALL_ALGO=pairwise "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_coll" 100003
run_ok "forced direct and binomial, 5 ranks" env SHARC_ALLGATHER_ALGO=direct \
    SHARC_REDUCE_SCATTER_ALGO=direct SHARC_BROADCAST_ALGO=binomial SHARC_ALLTOALL_ALGO=direct \
    "$LAUNCH" --mode env -n 5 -- "$BIN/coll/test_coll" 100003
run_ok "forced pairwise alltoall, 4 ranks" env SHARC_ALLTOALL_ALGO=pairwise "$LAUNCH" \
    --mode env -n 4 -- "$BIN/coll/test_coll" 100003
for n in 2 4 8; do
    run_ok "forced recursive doubling and halving, $n ranks" \
        env SHARC_ALLGATHER_ALGO=recursive_doubling SHARC_ALLREDUCE_ALGO=recursive_doubling \
        SHARC_REDUCE_SCATTER_ALGO=recursive_halving "$LAUNCH" --mode env -n $n \
        -- "$BIN/coll/test_coll" 100003
done
run_fail "recursive doubling refused on 3 ranks" 10 "needs a power-of-two rank count, not 3" \
    env SHARC_ALLREDUCE_ALGO=recursive_doubling SHARCTEST_ONE_ALLREDUCE=1 "$LAUNCH" --mode env \
    -n 3 -- "$BIN/coll/test_coll"
run_ok "collectives from a progress thread, 3 ranks" env SHARC_PROGRESS_THREAD=1 "$LAUNCH" \
    --mode env -n 3 -- "$BIN/coll/test_coll" 100003
if setup_mpirun; then
    run_ok "collectives under mpirun, 4 ranks" "${MPIRUN_CMD[@]}" -np 4 "$BIN/coll/test_coll"
fi
run_ok "SHARC_CHECK=1 passes matching collectives, 3 ranks" env SHARC_CHECK=1 "$LAUNCH" \
    --mode env -n 3 -- "$BIN/coll/test_coll" 1003
run_ok "SHARC_CHECK=1 fails a mismatched collective on every rank" env SHARC_CHECK=1 \
    SHARCTEST_MISMATCH_RANK=2 "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_coll"
run_fail "SHARC_CHECK names the ranks and what differed" 10 \
    "SHARC_CHECK: rank 2 called allgather\(4096 f32\), rank 0 called reduce_scatter\(4096 f32, sum\), seq 1" \
    env SHARC_CHECK=1 SHARCTEST_MISMATCH_RANK=2 "$LAUNCH" --mode env -n 3 -- sh -c \
    '"$0" >&2; exit 1' "$BIN/coll/test_coll"
run_fail "SHARC_CHECK describes an alltoall" 10 \
    "SHARC_CHECK: rank 1 called alltoall\(4096 f32\), rank 0 called reduce_scatter\(4096 f32, sum\)" \
    env SHARC_CHECK=1 SHARCTEST_MISMATCH_RANK=1 SHARCTEST_MISMATCH_ALLTOALL=1 "$LAUNCH" \
    --mode env -n 2 -- sh -c '"$0" >&2; exit 1' "$BIN/coll/test_coll"

# A rank that dies: the others fail at once (the store sees its connection close and tells
# them), naming it and its host, and the communicator fails every later collective at once;
# over shm and over UCX alike.
crash_ranks=(--rank-env 0:SHARCTEST_CRASH_RANK=1 --rank-env 1:SHARCTEST_CRASH_RANK=1
    --rank-env 2:SHARCTEST_CRASH_RANK=1)
run_fail "a rank dies before an allreduce (shm)" 8 \
    "rank [0-9] \(.*\) of this 3-rank communicator is gone.*the next collective: remote peer error" \
    env SHARC_TIMEOUT=60s "$LAUNCH" --mode env -n 3 "${crash_ranks[@]}" -- "$BIN/coll/test_coll"
run_fail "a rank dies before an allreduce (ucx)" 8 \
    "rank [0-9] \(.*\) of this 3-rank communicator is gone.*the next collective: remote peer error" \
    env SHARC_TIMEOUT=60s SHARC_TRANSPORT=ucx "$LAUNCH" --mode env -n 3 "${crash_ranks[@]}" \
    -- "$BIN/coll/test_coll"
finish
