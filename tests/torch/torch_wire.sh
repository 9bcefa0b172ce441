#!/bin/bash
# Quantized wires through the Python package and FSDP2's hooks (tests/torch/wire.py): at 2
# ranks on 2 pretended nodes (the reductions quantized between them), and 3 ranks on one.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

run_ok_match "quantized wires from Python and FSDP2, 2 nodes x 1 rank" \
    "rank 0: quantized wires ok" env UCX_TLS=tcp,self "$LAUNCH" --nodes 2 -n 2 --timeout 300 \
    -- "$PY" "$TT/wire.py"
run_ok_match "quantized wires from Python and FSDP2, 3 ranks" \
    "rank 0: quantized wires ok" "$LAUNCH" -n 3 --timeout 300 -- "$PY" "$TT/wire.py"
finish
