#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch CPU baseline for sharc-llama's training throughput.

This is the side-by-side reference for the trainer figures in docs/perf.md: it
trains the same model as sharc-llama's `15m` preset (llama2.c's stories15M
shape: dim 288, 6 layers, 6 heads, 6 kv heads, ffn hidden 768, vocab 4096,
rope theta 10000, RMSNorm eps 1e-5, untied output head) as a
transformers.LlamaForCausalLM in float32 on the CPU, with the same optimiser
settings (AdamW lr 3e-4, betas 0.9/0.95, weight decay 0.1 on matrices and
embeddings only, global gradient-norm clip 1.0) and the same loss (mean cross
entropy over the B*T tokens of a batch, targets being the inputs shifted by one).

Data are random tokens (seeded), or with --data FILE random windows of T+1
tokens from a sharc token file (SHARCTOK: 32-byte little-endian header with the
magic, version 1, token width 2 or 4, token count, vocabulary size, reserved;
then the tokens), read through a numpy memmap.

The first --warmup-steps steps are not timed. Each step prints its loss and
time; the last line is machine-readable:

    bench_torch: tokens_per_s=<median> step_ms=<median> threads=<n> torch=<version>

where the medians are over the timed steps and a step is forward, backward,
clip and optimiser update of one B*T batch.

Attention defaults to "sdpa" (torch's scaled_dot_product_attention), which was
the faster of the two on the CPU here; --attn eager selects the plain
softmax(QK^T)V path.

    python3 trainer/scripts/bench_torch.py --threads 2
    python3 trainer/scripts/bench_torch.py --data data/tinystories.tok --steps 50

Needs torch, transformers and numpy.
"""

import argparse
import os
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

MAGIC = b"SHARCTOK"
HEADER = struct.Struct("<8sIIQII")  # magic, version, width, count, vocab, reserved


def open_tokens(path):
    """Memory-map a SHARCTOK file; returns (tokens array, vocab from header or 0)."""
    with open(path, "rb") as f:
        head = f.read(HEADER.size)
    if len(head) < HEADER.size:
        sys.exit("%s: shorter than the 32-byte header" % path)
    magic, version, width, count, vocab, _ = HEADER.unpack(head)
    if magic != MAGIC or version != 1 or width not in (2, 4):
        sys.exit("%s: not a version 1 SHARCTOK file with 2- or 4-byte tokens" % path)
    size = os.path.getsize(path)
    if size != HEADER.size + count * width:
        sys.exit("%s: size %d, the header says %d" % (path, size, HEADER.size + count * width))
    dtype = np.dtype("<u2") if width == 2 else np.dtype("<u4")
    return np.memmap(path, dtype=dtype, mode="r", offset=HEADER.size, shape=(count,)), vocab


class Batches:
    """Input and target batches: random tokens, or random windows of a token file."""

    def __init__(self, args, vocab):
        self.B, self.T, self.vocab = args.batch, args.seq, vocab
        self.gen = torch.Generator().manual_seed(args.seed)
        self.tokens = None
        if args.data:
            self.tokens, file_vocab = open_tokens(args.data)
            if len(self.tokens) < self.T + 1:
                sys.exit("%s: %d tokens, a window needs %d" % (args.data, len(self.tokens),
                                                               self.T + 1))
            if file_vocab > vocab:
                sys.exit("%s: vocabulary %d is larger than the model's %d (use --vocab)"
                         % (args.data, file_vocab, vocab))
            self.rng = np.random.default_rng(args.seed)

    def next(self):
        if self.tokens is None:
            seq = torch.randint(0, self.vocab, (self.B, self.T + 1), generator=self.gen)
        else:
            starts = self.rng.integers(0, len(self.tokens) - self.T, size=self.B)
            seq = torch.from_numpy(
                np.stack([self.tokens[s:s + self.T + 1] for s in starts]).astype(np.int64))
            if int(seq.max()) >= self.vocab:
                sys.exit("token %d is outside the vocabulary %d" % (int(seq.max()), self.vocab))
        return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def build_model(args):
    kw = dict(vocab_size=args.vocab, hidden_size=288, intermediate_size=768,
              num_hidden_layers=6, num_attention_heads=6, num_key_value_heads=6,
              max_position_embeddings=max(256, args.seq), rms_norm_eps=1e-5,
              hidden_act="silu", tie_word_embeddings=False, attention_bias=False,
              mlp_bias=False, use_cache=False)
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    else:
        kw["rope_theta"] = 10000.0
    cfg = LlamaConfig(**kw)
    cfg._attn_implementation = args.attn
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(cfg).to(torch.float32)
    model.config._attn_implementation = args.attn
    model.train()
    return model


def main():
    ap = argparse.ArgumentParser(description="PyTorch CPU baseline for sharc-llama's 15m "
                                 "training throughput")
    ap.add_argument("--batch", type=int, default=8, help="sequences per step (default 8)")
    ap.add_argument("--seq", type=int, default=256, help="tokens per sequence (default 256)")
    ap.add_argument("--vocab", type=int, default=4096, help="vocabulary size (default 4096)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps (default 30)")
    ap.add_argument("--warmup-steps", type=int, default=5,
                    help="untimed steps before them (default 5)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="torch.set_num_threads (default: all CPUs, %d)" % os.cpu_count())
    ap.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa",
                    help="attention implementation (default sdpa)")
    ap.add_argument("--data", metavar="FILE", help="SHARCTOK token file (default: random tokens)")
    ap.add_argument("--seed", type=int, default=1, help="model and data seed (default 1)")
    args = ap.parse_args()
    if min(args.batch, args.seq, args.vocab, args.steps, args.threads) < 1 or \
            args.warmup_steps < 0:
        ap.error("sizes, --steps and --threads must be positive, --warmup-steps >= 0")

    torch.set_num_threads(args.threads)
    model = build_model(args)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=False)
    data = Batches(args, args.vocab)
    nparams = sum(p.numel() for p in model.parameters())
    ntok = args.batch * args.seq
    print("bench_torch: 15m (%.2fM parameters), B=%d T=%d vocab %d, attn %s, %d threads, "
          "torch %s, transformers %s, data %s"
          % (nparams / 1e6, args.batch, args.seq, args.vocab, args.attn, args.threads,
             torch.__version__, transformers.__version__, args.data or "random"))

    times = []
    for step in range(args.warmup_steps + args.steps):
        x, y = data.next()
        t0 = time.perf_counter()
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        lv = loss.item()
        ms = (time.perf_counter() - t0) * 1e3
        timed = step >= args.warmup_steps
        if timed:
            times.append(ms)
        print("step %3d%s loss %.4f  %8.1f ms  %8.0f tok/s"
              % (step, " " if timed else "*", lv, ms, ntok / ms * 1e3), flush=True)

    med = statistics.median(times)
    print("bench_torch: tokens_per_s=%.0f step_ms=%.1f threads=%d torch=%s"
          % (ntok / med * 1e3, med, args.threads, torch.__version__))


if __name__ == "__main__":
    main()
