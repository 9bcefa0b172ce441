#!/bin/bash
# Collectives over a quantized wire (int8, fp8) between ranks: on one node at 1, 2, 3, 5 and 8
# ranks (flat, and hierarchical, which is exact there); on pretended nodes, where the
# hierarchical reduce-scatter sums within each node at full precision and quantizes between
# them (2 x 2, 3 x 2; 5 ranks on 2 nodes, uneven, falls back to flat); over UCX's TCP
# transport; from a progress thread; in small ring chunks.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between ranks)"
    exit 77
fi
for n in 1 2 3 5 8; do
    run_ok "quantized collectives, $n ranks" "$LAUNCH" --mode env -n $n \
        -- "$BIN/coll/test_coll_quant"
done
run_ok_match "quantized collectives, 2 nodes x 2 ranks (the hierarchical reduce-scatter)" \
    "reduce_scatter over a int8 wire \\(block 256\\): quant_hier.*quantized collectives ok" \
    env UCX_TLS=tcp,self SHARC_LOG_LEVEL=debug SHARC_LOG_SUBSYS=coll "$LAUNCH" --mode env \
    --nodes 2 -n 4 -- "$BIN/coll/test_coll_quant"
run_ok "quantized collectives, 3 nodes x 2 ranks" env UCX_TLS=tcp,self "$LAUNCH" --mode env \
    --nodes 3 -n 6 -- "$BIN/coll/test_coll_quant" 20011
run_ok "quantized collectives, 5 ranks on 2 uneven nodes" env UCX_TLS=tcp,self "$LAUNCH" \
    --mode env --nodes 2 -n 5 -- "$BIN/coll/test_coll_quant" 20011
run_ok "quantized collectives over UCX TCP, 3 ranks" env SHARC_TRANSPORT=ucx UCX_TLS=tcp,self \
    "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_coll_quant" 20011
run_ok "quantized collectives from a progress thread, 2 nodes x 2 ranks" env \
    SHARC_PROGRESS_THREAD=1 UCX_TLS=tcp,self "$LAUNCH" --mode env --nodes 2 -n 4 \
    -- "$BIN/coll/test_coll_quant"
run_ok "quantized collectives in 4 KiB ring chunks, 4 ranks" env SHARC_COLL_CHUNK=4k \
    SHARC_ALLGATHER_ALGO=ring SHARC_ALLTOALL_ALGO=pairwise "$LAUNCH" --mode env -n 4 \
    -- "$BIN/coll/test_coll_quant" 20011
finish
