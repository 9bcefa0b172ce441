#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Build the Hugging Face reference fixtures for tests/trainer/test_llama_hf.

sharc-llama's forward and backward pass is checked against transformers'
LlamaForCausalLM. This script builds a tiny random model in float32 on the CPU,
runs one batch through it and stores, per fixture directory:

  config.json, model.safetensors   the model, via save_pretrained (f32)
  reference.safetensors            input_ids  int32 [B,T]
                                   targets    int32 [B,T]
                                   loss       f32 [1]
                                   logits     f32 [B,T,V]
                                   grad.<name> f32, one per parameter, named as
                                   in the HF state dict (model.embed_tokens.weight,
                                   model.layers.0.self_attn.q_proj.weight, ...,
                                   model.norm.weight, lm_head.weight)

The loss is the mean over all B*T tokens of the cross entropy of logits[b,t]
against targets[b,t], where each row is a random sequence of T+1 tokens,
input_ids = seq[:, :T] and targets = seq[:, 1:]. It is computed here from the
logits (the model is not given labels=, which would shift them once more).

Two fixtures are written:

  hf_tiny         vocab 128, hidden 32, ffn 96, 2 layers, 4 heads, 2 kv heads
                  (GQA), rope_theta 10000, B=2, T=16
  hf_tiny_llama3  the same shape with rope_theta 500000 and Llama 3 rope scaling,
                  its parameters chosen so that the head's four rotary
                  frequencies fall in all three bands (kept, interpolated,
                  divided by the factor); the script prints the check

Weights are drawn normal(0, 0.2) and RMSNorm weights 1 + 0.1 * randn (rather
than HF's ones), each fixture from its own fixed seed, so that the comparison
is sensitive and the output reproducible for a given torch version.

Run from the repository root (needs torch, transformers and safetensors):

    python3 tests/trainer/make_hf_fixture.py            # both, into tests/trainer/
    python3 tests/trainer/make_hf_fixture.py OUTDIR     # both, into OUTDIR/
    python3 tests/trainer/make_hf_fixture.py --only hf_tiny_llama3
"""

import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

SHAPE = dict(
    vocab_size=128,
    hidden_size=32,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    rms_norm_eps=1e-5,
    hidden_act="silu",
    tie_word_embeddings=False,
    attention_bias=False,
    mlp_bias=False,
)

# Llama 3 scaling: with head_dim 8 and theta 500000 the wavelengths are about
# 6.3, 167, 4443 and 118142 positions. The usual low 1 / high 4 would need an
# original context of at least 167 to reach the middle band, longer than this
# model's 64 positions (transformers warns about that), so the band factors are
# shrunk instead: original_max 32 with low 1/16 and high 3/8 puts the band edges
# at wavelengths 85.3 and 512, so one frequency is kept, one interpolated (smooth
# factor 0.41) and two divided by the factor. The values are exact in binary.
LLAMA3_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 0.0625,
    "high_freq_factor": 0.375,
    "original_max_position_embeddings": 32,
}

FIXTURES = {
    "hf_tiny": dict(seed=1234, rope_theta=10000.0, rope_scaling=None, batch=2, seq=16),
    "hf_tiny_llama3": dict(seed=4321, rope_theta=500000.0, rope_scaling=LLAMA3_SCALING,
                           batch=2, seq=16),
}


def make_config(spec):
    kw = dict(SHAPE)
    if spec["rope_scaling"] is None:
        rope = {"rope_type": "default", "rope_theta": spec["rope_theta"]}
    else:
        rope = dict(spec["rope_scaling"], rope_theta=spec["rope_theta"])
    major = int(transformers.__version__.split(".")[0])
    if major >= 5:
        kw["rope_parameters"] = rope
    else:
        kw["rope_theta"] = spec["rope_theta"]
        if spec["rope_scaling"] is not None:
            kw["rope_scaling"] = dict(spec["rope_scaling"])
    kw["dtype" if major >= 5 else "torch_dtype"] = "float32"
    return LlamaConfig(**kw)


def band_check(cfg, spec):
    """Print where each rotary frequency falls; fail unless all three bands are hit."""
    sc = spec["rope_scaling"]
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    inv = [1.0 / spec["rope_theta"] ** (2 * i / head_dim) for i in range(head_dim // 2)]
    if sc is None:
        print("  rope: default, theta %g, inv_freq %s" % (spec["rope_theta"],
                                                          ["%.4g" % f for f in inv]))
        return
    lo_wl = sc["original_max_position_embeddings"] / sc["low_freq_factor"]
    hi_wl = sc["original_max_position_embeddings"] / sc["high_freq_factor"]
    print("  rope: llama3, theta %g, band edges: high-freq wavelength < %g, "
          "low-freq wavelength > %g" % (spec["rope_theta"], hi_wl, lo_wl))
    bands = set()
    for i, f in enumerate(inv):
        wl = 2 * math.pi / f
        if wl < hi_wl:
            band, g = "high (kept)", f
        elif wl > lo_wl:
            band, g = "low (/factor)", f / sc["factor"]
        else:
            s = (sc["original_max_position_embeddings"] / wl - sc["low_freq_factor"]) / (
                sc["high_freq_factor"] - sc["low_freq_factor"])
            band, g = "medium (smoothed, s=%.3f)" % s, (1 - s) * f / sc["factor"] + s * f
        bands.add(band.split()[0])
        print("    i=%d inv_freq %.6g wavelength %.6g -> %s, scaled inv_freq %.6g"
              % (i, f, wl, band, g))
    if bands != {"high", "medium", "low"}:
        sys.exit("rope scaling parameters do not cover all three bands: %s" % sorted(bands))


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))


def forward_loss(model, input_ids, targets):
    logits = model(input_ids=input_ids).logits
    V = logits.shape[-1]
    loss = F.cross_entropy(logits.reshape(-1, V).float(), targets.reshape(-1))
    return logits, loss


def build(outdir, name, spec):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    print("%s -> %s" % (name, d))
    torch.manual_seed(spec["seed"])
    cfg = make_config(spec)
    band_check(cfg, spec)
    model = LlamaForCausalLM(cfg).to(torch.float32)
    # eager attention: the plain softmax(QK^T)V reference, no fused kernels
    model.config._attn_implementation = "eager"
    init_weights(model, spec["seed"])
    model.train()  # no dropout in Llama; train() only for the backward pass

    B, T, V = spec["batch"], spec["seq"], cfg.vocab_size
    g = torch.Generator().manual_seed(spec["seed"] + 1)
    seq = torch.randint(0, V, (B, T + 1), generator=g, dtype=torch.int64)
    input_ids, targets = seq[:, :T].contiguous(), seq[:, 1:].contiguous()

    model.zero_grad(set_to_none=True)
    logits, loss = forward_loss(model, input_ids, targets)
    loss.backward()

    ref = {
        "input_ids": input_ids.to(torch.int32),
        "targets": targets.to(torch.int32),
        "loss": loss.detach().reshape(1).to(torch.float32).contiguous(),
        "logits": logits.detach().to(torch.float32).contiguous(),
    }
    names = []
    for pname, p in model.named_parameters():
        assert p.grad is not None, pname
        ref["grad." + pname] = p.grad.detach().to(torch.float32).contiguous()
        names.append(pname)

    model.save_pretrained(d, safe_serialization=True)
    gen = os.path.join(d, "generation_config.json")  # not needed by the test
    if os.path.exists(gen):
        os.remove(gen)
    save_file(ref, os.path.join(d, "reference.safetensors"))
    print("  loss %.7f, %d parameters, %d gradients" % (loss.item(), len(names), len(names)))

    # sanity: what was saved reloads to the same model and the same logits
    with open(os.path.join(d, "config.json")) as f:
        text = f.read()
    if spec["rope_scaling"] is not None and '"llama3"' not in text:
        sys.exit("%s/config.json lacks the llama3 rope scaling" % d)
    if '"tie_word_embeddings": false' not in text:
        sys.exit("%s/config.json does not say tie_word_embeddings false" % d)
    major = int(transformers.__version__.split(".")[0])
    re = LlamaForCausalLM.from_pretrained(d, attn_implementation="eager",
                                          **{"dtype" if major >= 5 else "torch_dtype": torch.float32})
    re.eval()
    with torch.no_grad():
        logits2 = re(input_ids=input_ids).logits
    diff = (logits2 - ref["logits"]).abs().max().item()
    print("  reload: max |logits diff| %.3g" % diff)
    if diff > 1e-6 * max(1.0, ref["logits"].abs().max().item()):
        sys.exit("reloaded model disagrees with the reference")
    sd = re.state_dict()
    missing = [n for n in names if n not in sd]
    if missing:
        sys.exit("reloaded model lacks %s" % missing)
    sizes = {f: os.path.getsize(os.path.join(d, f)) for f in sorted(os.listdir(d))}
    print("  files: %s" % ", ".join("%s %d B" % kv for kv in sizes.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir", nargs="?", default=os.path.dirname(os.path.abspath(__file__)),
                    help="where the fixture directories go (default: next to this script)")
    ap.add_argument("--only", choices=sorted(FIXTURES), action="append",
                    help="write just this fixture (repeatable)")
    args = ap.parse_args()
    print("torch %s, transformers %s" % (torch.__version__, transformers.__version__))
    torch.use_deterministic_algorithms(True)
    for name in args.only or FIXTURES:
        build(args.outdir, name, FIXTURES[name])


if __name__ == "__main__":
    main()
