#!/bin/bash
# Point-to-point sends and receives between ranks (test_p2p: every dtype, tags and order,
# receives from any rank, truncation, zero size, 1000 in flight, self, completion apart from
# the collectives, groups, bad arguments) at 1 to 4 ranks over shm, UCX (shared memory, and
# TCP as between hosts), shm without CMA, buffers the peer maps (sharc_mem_alloc), shm + UCX
# on two pretended nodes, a progress thread; and a rank that dies while the others wait in
# receives.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between ranks)"
    exit 77
fi
P2P="$BIN/coll/test_p2p"
export SHARC_TIMEOUT=60s # a hang fails in a minute, not ten
run_ok "point-to-point on one rank (self)" "$LAUNCH" --mode env -n 1 -- "$P2P" 100003
for n in 2 3 4; do
    run_ok "point-to-point over shm, $n ranks" "$LAUNCH" --mode env -n $n -- "$P2P" 100003
done
run_ok "point-to-point over UCX shared memory, 3 ranks" env SHARC_TRANSPORT=ucx "$LAUNCH" \
    --mode env -n 3 -- "$P2P" 100003
run_ok "point-to-point over UCX TCP, 2 ranks" env SHARC_TRANSPORT=ucx UCX_TLS=tcp,self \
    "$LAUNCH" --mode env -n 2 -- "$P2P" 100003
run_ok "point-to-point over shm without CMA, 3 ranks" env SHARC_SHM_CMA=no "$LAUNCH" \
    --mode env -n 3 -- "$P2P" 100003
run_ok_match "point-to-point on sharc_mem_alloc buffers (mapped by the peer), 3 ranks" \
    "maps rank [0-9]+'s [0-9]+-byte shared buffer.*point-to-point ok" \
    env SHARCTEST_MEM_ALLOC=1 SHARC_LOG_LEVEL=debug SHARC_LOG_SUBSYS=tp "$LAUNCH" --mode env \
    -n 3 -- "$P2P" 100003
run_ok_match "point-to-point over shm + UCX on 2 nodes, 4 ranks" \
    "shm within the node, ucx between nodes.*point-to-point ok" env SHARC_LOG_LEVEL=info \
    UCX_TLS=tcp,self "$LAUNCH" --mode env --nodes 2 -n 4 -- "$P2P" 100003
run_ok "point-to-point over shm + UCX on 2 nodes, 3 ranks" env UCX_TLS=tcp,self "$LAUNCH" \
    --mode env --nodes 2 -n 3 -- "$P2P" 100003
run_ok "point-to-point from a progress thread, 3 ranks" env SHARC_PROGRESS_THREAD=1 "$LAUNCH" \
    --mode env -n 3 -- "$P2P" 100003
# sends and receives between collectives whose sequence numbers wrap (2^39): the two halves
# of the tag space stay apart
run_ok "point-to-point across the collectives' sequence wrap, 3 ranks" env \
    SHARC_SEQ_START=$(( (1 << 39) - 8 )) "$LAUNCH" --mode env -n 3 -- "$P2P" 100003
# each of its two truncations (an eager and a large message) is logged once, in the caller's
# terms: the transports leave it to coll/ (shm and self used to say it too, in theirs)
for tp in shm ucx; do
    run_ok_match "a message too long for its receive names both sizes ($tp)" \
        "recv from rank 0, tag 21 \(50 f32\): a 400-byte message does not fit the 200-byte" \
        env SHARC_TRANSPORT=$tp "$LAUNCH" --mode env -n 2 -- "$P2P" 1003
    n=$(echo "$last_out" | grep -c "does not fit")
    if [ "$n" -ne 2 ]; then
        echo "FAIL: two truncated receives over $tp are logged $n times, not twice:"
        echo "$last_out" | grep "does not fit"
        failures=$((failures + 1))
    fi
done
# the path by memory (tests/gpu_emu.h's device memory, no NCCL): messages of no data match
# whatever their buffers, a group mixing host and device buffers is refused at once
if [ -x "$BIN/coll/test_p2p_memtype" ]; then
    run_ok_match "messages of no data match whatever their buffers; mixed groups refused" \
        "no data match whatever.*mixing host and device buffers is refused" \
        "$LAUNCH" --mode env -n 2 -- "$BIN/coll/test_p2p_memtype"
fi
run_fail "a receive nobody sends to ends at SHARC_TIMEOUT" 30 \
    "recv from any rank, tag 77 \(1 f32\) did not complete within 2 s \(SHARC_TIMEOUT\)" \
    env SHARC_TIMEOUT=2s SHARCTEST_P2P_TIMEOUT=1 "$LAUNCH" --mode env -n 2 -- "$P2P"

# A rank that dies while the others wait in receives (from it, or from any rank): each fails
# within 2 s (the store's notice, not SHARC_TIMEOUT), naming the rank and its host, and the
# communicator refuses later sends.
crashed() {
    local name=$1 victim=$2 nodes=$3 out st ok named
    shift 3
    named="rank $victim \([^)]+\) of this 3-rank communicator is gone"
    named="$named|of this 3-rank communicator lost rank $victim \("
    out=$(env "$@" SHARCTEST_P2P_CRASH="$victim" "$LAUNCH" --mode env --nodes "$nodes" -n 3 \
        --timeout 60 -- "$P2P" 2>&1)
    st=$?
    ok=$(echo "$out" |
        grep -Ec "recv after rank $victim died: remote peer error after [01]\.[0-9]+ s")
    if [ $st -eq 0 ]; then
        echo "FAIL: $name: the job succeeded"
        failures=$((failures + 1))
    elif ! echo "$out" | grep -Eq "$named"; then
        echo "FAIL: $name: no rank named rank $victim and its host"
        show_out "$out"
        failures=$((failures + 1))
    elif [ "$ok" -ne 2 ] || ! echo "$out" | grep -q "the next send: remote peer error"; then
        echo "FAIL: $name: $ok of the 2 other ranks failed their receive within 2 s"
        show_out "$out"
        failures=$((failures + 1))
    else
        echo "ok: $name"
    fi
}
crashed "rank 1 dies under receives (shm)" 1 1
crashed "rank 1 dies under receives (ucx)" 1 1 SHARC_TRANSPORT=ucx
crashed "rank 0 (the store) dies under receives (shm)" 0 1
crashed "rank 2 dies under receives (shm + ucx on 2 nodes)" 2 2 UCX_TLS=tcp,self
finish
