#!/bin/bash
# Quantized wires through the Python package and FSDP2's hooks (tests/torch/wire.py): at 2
# ranks on 2 pretended nodes (the reductions quantized between them), on the C++ backend and
# the Python one, and 3 ranks on one (C++).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

for b in $BACKENDS; do
    run_ok_match "quantized wires from Python and FSDP2 ($b), 2 nodes x 1 rank" \
        "rank 0: quantized wires ok" env TORCH_SHARC_BACKEND=$b UCX_TLS=tcp,self "$LAUNCH" \
        --nodes 2 -n 2 --timeout 300 -- "$PY" "$TT/wire.py"
done
run_ok_match "quantized wires from Python and FSDP2 (native), 3 ranks" \
    "rank 0: quantized wires ok" env TORCH_SHARC_BACKEND=native "$LAUNCH" -n 3 --timeout 300 \
    -- "$PY" "$TT/wire.py"
finish
