#!/bin/bash
# Collectives on CUDA buffers: through NCCL on one rank per GPU (one rank when the machine
# has one GPU: NCCL takes a GPU per rank), and staged through host memory with several
# ranks sharing the GPUs; sends and receives on CUDA buffers through NCCL (to self on one
# GPU, a ring on several), refused when staged. SKIP without CUDA or a GPU.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

out=$("$BIN/coll/test_gpu_coll" 2>&1)
st=$?
if [ $st -eq 77 ]; then
    echo "$out"
    exit 77
fi
if [ $st -ne 0 ]; then
    echo "FAIL: GPU collectives, 1 rank"
    echo "$out" | tail -30
    failures=$((failures + 1))
else
    echo "ok: GPU collectives through NCCL, 1 rank"
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -ge 2 ]; then
    run_ok_match "GPU collectives through NCCL, $ngpu ranks" "GPU collectives ok" \
        env SHARC_CUDA_BACKEND=nccl "$LAUNCH" --mode env -n "$ngpu" -- "$BIN/coll/test_gpu_coll"
fi
for n in 2 3; do
    run_ok_match "GPU collectives staged through host memory, $n ranks" "GPU collectives ok" \
        env SHARC_CUDA_BACKEND=staged SHARC_STAGE_CHUNK=64k "$LAUNCH" --mode env -n $n \
        -- "$BIN/coll/test_gpu_coll"
done
run_ok_match "GPU collectives staged, one rank" "GPU collectives ok" \
    env SHARC_CUDA_BACKEND=staged "$BIN/coll/test_gpu_coll"
run_ok_match "GPU sends and receives through NCCL, 1 rank (to self)" "GPU point-to-point ok" \
    "$BIN/coll/test_gpu_p2p"
if [ "${ngpu:-0}" -ge 2 ]; then
    run_ok_match "GPU sends and receives through NCCL, $ngpu ranks" "GPU point-to-point ok" \
        env SHARC_CUDA_BACKEND=nccl "$LAUNCH" --mode env -n "$ngpu" -- "$BIN/coll/test_gpu_p2p"
fi
run_ok_match "GPU sends and receives refused when staged, 2 ranks" "GPU point-to-point ok" \
    env SHARC_CUDA_BACKEND=staged "$LAUNCH" --mode env -n 2 -- "$BIN/coll/test_gpu_p2p"
finish
