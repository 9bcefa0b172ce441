#!/bin/bash
# Offload and the engine's AdamW on the emulated CUDA runtime (tests/gpu_emu.h): every
# configuration against an independent AdamW and against offload none, on 1, 2 and 4 ranks
# (HSDP at 4); checkpoints across offload and none; a rank that dies while its gradients are
# on their way to the host. SKIP without the emulated program (no C++ compiler).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

T="$BIN/shard/test_shard_offload"
if [ ! -x "$T" ]; then
    echo "SKIP: no tests/shard/test_shard_offload (needs a C++ compiler)"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_ok "1 rank: every configuration against the reference" "$T" equal
run_ok "2 ranks: every configuration against the reference" "$LAUNCH" --mode env -n 2 -- "$T" equal
run_ok "4 ranks, HSDP 2 x 2 among them" "$LAUNCH" --mode env -n 4 -- "$T" equal
if "$top_builddir/perf/sharc-info" -b | grep -q "^json-c: yes" &&
   "$top_builddir/perf/sharc-info" -b | grep -q "^xxhash: yes"; then
    run_ok "checkpoints across offload, 2 ranks" "$LAUNCH" --mode env -n 2 -- "$T" ckpt "$work"
fi
run_ok_match "a rank dies during the host copies: the step fails naming it" \
    "nothing left in flight" env SHARC_BOOTSTRAP_TIMEOUT=20s "$LAUNCH" --mode env -n 3 -- "$T" die
finish
