#!/bin/bash
# DDP and FSDP2 (plain, with sharc's FSDP2 hooks, and with buffers from the backend's
# allocate_tensor) trained 20 steps over the "sharc" backend and over gloo from one seed
# (tests/torch/train.py): the losses agree within 1e-5 at every step and the trained weights
# as closely; at 2 ranks under torchrun (every mode), at 3 under the env launcher (DDP and
# FSDP2 with the hooks).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

pattern="rank 0 ddp .*: ok.*rank 0 fsdp .*: ok.*rank 0 fsdp-hooks .*: ok.*rank 0 fsdp-pgalloc .*: ok"
run_ok_match "DDP and FSDP2 over sharc (native) = over gloo, 2 ranks (torchrun)" "$pattern" \
    timeout 300 "$TORCHRUN" --nproc-per-node 2 \
    --master-port "$(free_port)" "$TT/train.py" --steps 20 --tol 1e-5
run_ok_match "DDP and FSDP2 with sharc's hooks over sharc (native) = over gloo, 3 ranks" \
    "rank 0 ddp .*: ok.*rank 0 fsdp-hooks .*: ok" \
    "$LAUNCH" -n 3 --timeout 300 -- "$PY" "$TT/train.py" \
    --steps 20 --tol 1e-5 --modes ddp,fsdp-hooks
finish
