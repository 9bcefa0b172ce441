#!/bin/bash
# The sharding engine on CUDA against the same engine on the host: through NCCL on one rank
# per GPU (one rank when the machine has one GPU: NCCL takes a GPU per rank), and with its
# collectives staged through host memory with several ranks sharing the GPUs (HSDP among
# them). Built without CUDA: CUDA groups are refused, on one rank. SKIP without a GPU.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$("$BIN/shard/test_shard_gpu" "$dir/ckpt1" 2>&1)
st=$?
if [ $st -eq 77 ]; then
    echo "$out"
    exit 77
fi
if [ $st -ne 0 ]; then
    echo "FAIL: shard engine on CUDA, 1 rank"
    echo "$out" | tail -30
    failures=$((failures + 1))
else
    echo "ok: $(echo "$out" | tail -n 1)"
fi
if echo "$out" | grep -q "refused without CUDA"; then
    finish
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -ge 2 ]; then
    run_ok_match "shard engine on CUDA through NCCL, $ngpu ranks" "shard engine on CUDA ok" \
        env SHARC_CUDA_BACKEND=nccl "$LAUNCH" --mode env -n "$ngpu" -- \
        "$BIN/shard/test_shard_gpu" "$dir/ckpt$ngpu"
fi
for n in 2 3; do
    run_ok_match "shard engine on CUDA, staged through host memory, $n ranks" \
        "shard engine on CUDA ok" \
        env SHARC_CUDA_BACKEND=staged SHARC_STAGE_CHUNK=64k "$LAUNCH" --mode env -n $n \
        -- "$BIN/shard/test_shard_gpu" "$dir/ckpt-staged$n"
done
finish
