#!/bin/bash
# The sharding engine between ranks: emulated training steps against all-gather / all-reduce
# references (flat and HSDP, every dtype pairing, accumulation) at 1, 2, 3, 4, 5 and 8 ranks;
# the schedule, prefetch and memory bound; overlap with a progress thread; bad input.
. "$(dirname "$0")/lib.sh"

for n in 1 2 3 4 5 8; do
    run_ok "shard engine, $n ranks" "$LAUNCH" --mode env -n $n -- "$BIN/test_shard"
done
run_ok "shard engine over UCX TCP, 4 ranks" env SHARC_TRANSPORT=ucx UCX_TLS=tcp,self \
    "$LAUNCH" --mode env -n 4 -- "$BIN/test_shard" steps
run_ok "shard engine on 2 pretended nodes (shm + UCX), 6 ranks" env UCX_TLS=tcp,self \
    "$LAUNCH" --mode env --nodes 2 -n 6 -- "$BIN/test_shard" steps
run_ok "shard engine with a progress thread, 3 ranks" env SHARC_PROGRESS_THREAD=1 "$LAUNCH" \
    --mode env -n 3 -- "$BIN/test_shard"
run_ok_match "communication hidden behind compute, 2 ranks" "overlap ok" \
    env SHARC_PROGRESS_THREAD=1 "$LAUNCH" --mode env -n 2 -- "$BIN/test_shard" overlap
run_fail "a mismatched parameter list names the rank" 20 \
    "rank 1 passed other parameters or settings than rank 0" \
    "$LAUNCH" --mode env -n 2 -- sh -c '"$0" errors >&2; exit 1' "$BIN/test_shard"
finish
