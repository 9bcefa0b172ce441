#!/bin/bash
# sharc-llama against Hugging Face transformers: forward (loss, logits) and backward (every
# gradient) on the committed fixtures of tests/trainer/make_hf_fixture.py, one with grouped-
# query attention and one with Llama 3 rope scaling; with and without recomputation.
. "$(dirname "$0")/lib.sh"

run_ok "sharc-llama matches LlamaForCausalLM (GQA; Llama 3 rope scaling)" \
    "$BIN/trainer/test_llama_hf" "$top_srcdir/tests/trainer/hf_tiny" \
    "$top_srcdir/tests/trainer/hf_tiny_llama3"
finish
