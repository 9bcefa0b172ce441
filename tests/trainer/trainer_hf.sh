#!/bin/bash
# sharc-llama against Hugging Face transformers: forward (loss, logits) and backward (every
# gradient) on the committed fixtures of tests/trainer/make_hf_fixture.py, one with grouped-
# query attention and one with Llama 3 rope scaling; with and without recomputation. Then the
# same model computing through the CUDA ops table built for the host emulation of CUDA
# (test_llama_hf_emu; in f32 to the CPU's tolerances, in bf16 to the bf16 ones): the GPU's
# code paths of the model and its kernels, checked here without a GPU; and on a random
# checkpoint with head size 32, where bf16 takes the tiled attention, against the CPU model.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

FIXTURES=("$top_srcdir/tests/trainer/hf_tiny" "$top_srcdir/tests/trainer/hf_tiny_llama3")
run_ok "sharc-llama matches LlamaForCausalLM (GQA; Llama 3 rope scaling)" \
    "$BIN/trainer/test_llama_hf" "${FIXTURES[@]}"
if [ -x "$BIN/trainer/test_llama_hf_emu" ] && [ -z "${SHARCTEST_SANITIZE:-}" ]; then
    for dt in f32 bf16; do
        run_ok "the CUDA table, emulated, in $dt matches LlamaForCausalLM" \
            "$BIN/trainer/test_llama_hf_emu" --device cuda --compute-dtype $dt "${FIXTURES[@]}"
    done
    # head size 32 (the fixtures' is 8): in bf16 the tiled attention, against the CPU model
    work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-trainer-hf.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    make_hf_llama "$work/hd32" 64 2 1 32 1 96 256
    for dt in f32 bf16; do
        run_ok "the CUDA table, emulated, in $dt, head size 32: the CPU model's gradients" \
            "$BIN/trainer/test_llama_hf_emu" --device cuda --compute-dtype $dt --against-cpu \
            "$work/hd32"
    done
    run_ok "... the same in bf16 with the block's threads run in the other order" \
        env SHARCTEST_EMU_ASCENDING=1 "$BIN/trainer/test_llama_hf_emu" --device cuda \
        --compute-dtype bf16 --against-cpu "$work/hd32"
    # head size 128 on a GPU with 100 KiB of shared memory a block (the tiled kernels need
    # 105 KiB there): the materialized attention, not a failed launch
    make_hf_llama "$work/hd128" 128 1 1 128 1 96 256
    run_ok "the CUDA table, emulated, bf16, head size 128 on 100 KiB of shared memory" \
        env SHARCTEST_EMU_SMEM=102400 "$BIN/trainer/test_llama_hf_emu" --device cuda \
        --compute-dtype bf16 --against-cpu "$work/hd128"
fi
finish
