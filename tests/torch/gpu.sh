#!/bin/bash
# The sharc torch backend on CUDA tensors (tests/gpu/run.sh runs it on a machine with a GPU):
# tests/torch/ops.py --device cuda, the sharc side's tensors on the rank's GPU (sharc's CUDA
# path: NCCL on a stream ordered after torch's current stream; wait() makes the current
# stream wait) and gloo's on the CPU as the reference; one rank per GPU (NCCL takes one rank
# per device), 1 rank and as many as there are GPUs. Skipped without a GPU or the venv.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2> /dev/null || echo 0)
if [ "${ngpu:-0}" -lt 1 ]; then
    echo "SKIP: torch sees no GPU"
    exit 77
fi
for n in $(printf '%s\n' 1 2 4 "$ngpu" | sort -un); do
    [ "$n" -le "$ngpu" ] || continue
    run_ok_match "torch backend ops on CUDA tensors against gloo, $n rank(s)" \
        "rank 0 of $n: [0-9]+ checks, 0 failed" \
        "$LAUNCH" -n "$n" --timeout 600 -- "$PY" "$TT/ops.py" --device cuda
done
finish
