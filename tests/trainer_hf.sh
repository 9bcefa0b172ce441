#!/bin/bash
# sharc-llama against Hugging Face transformers: forward (loss, logits) and backward (every
# gradient) on the committed fixtures of tests/trainer/make_hf_fixture.py, one with grouped-
# query attention and one with Llama 3 rope scaling; with and without recomputation. Then the
# same model computing through the CUDA ops table built for the host emulation of CUDA
# (test_llama_hf_emu; in f32 to the CPU's tolerances, in bf16 to the bf16 ones): the GPU's
# code paths of the model and its kernels, checked here without a GPU.
. "$(dirname "$0")/lib.sh"

FIXTURES=("$top_srcdir/tests/trainer/hf_tiny" "$top_srcdir/tests/trainer/hf_tiny_llama3")
run_ok "sharc-llama matches LlamaForCausalLM (GQA; Llama 3 rope scaling)" \
    "$BIN/trainer/test_llama_hf" "${FIXTURES[@]}"
if [ -x "$BIN/trainer/test_llama_hf_emu" ] && [ -z "${SHARCTEST_SANITIZE:-}" ]; then
    for dt in f32 bf16; do
        run_ok "the CUDA table, emulated, in $dt matches LlamaForCausalLM" \
            "$BIN/trainer/test_llama_hf_emu" --device cuda --compute-dtype $dt "${FIXTURES[@]}"
    done
fi
finish
