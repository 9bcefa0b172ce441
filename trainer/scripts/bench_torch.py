#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch beside sharc-llama: the same model, batch, data and optimiser, its training speed.

The side-by-side reference for the trainer's figures (docs/perf.md, tests/gpu/run.sh). It
trains sharc-llama's named configs (trainer/model/config.c: tiny, 15m, 42m, 110m, 1b, the
last TinyLlama 1.1B's shape; or explicit dims) as a transformers.LlamaForCausalLM: RMSNorm eps
1e-5, rope theta 10000, SwiGLU, grouped-query attention, untied output head; the same
optimiser settings (AdamW lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices and
embeddings only, global gradient-norm clip 1.0) and the same loss (mean cross entropy over
the B*T tokens of a batch, targets the inputs shifted by one). A step is forward, backward,
clip and optimiser update of one B*T batch, the loss read back (sharc-llama's step also ends
with its loss read back).

Precision. --dtype f32 (the CPU's default) computes in float32. --dtype bf16 (CUDA's default)
is torch.autocast(dtype=bfloat16) over float32 parameters: the products and attention run in
bf16 with f32 accumulation, the parameters, their gradients and AdamW's state stay f32. That
is as close to sharc-llama's bf16 mode as plain PyTorch comes: sharc-llama keeps f32 master
shards and AdamW in f32, gathers each unit in bf16 once per use (autocast casts each weight
once per forward and keeps the cast for its backward), multiplies in bf16 with f32
accumulation and writes f32 weight gradients. The differences: sharc-llama also stores its
activations and residual stream in bf16 (autocast keeps the residual stream, the norms and
the loss in f32 here), and its one rank keeps no gathered copy beyond the unit in use.

Attention is "sdpa" (torch's scaled_dot_product_attention, whose flash, memory-efficient or
cuDNN kernel torch picks) or "eager". AdamW is torch's fused one (fused=True) where this
torch has it for the device, else its default. --compile wraps the model in torch.compile
(the first steps compile; they are among the untimed ones).

MFU counts sharc-llama's FLOPs per token (llama_config_flops_per_token in
trainer/model/config.c: 6 x the non-embedding parameters + 12 L H hd T, PaLM's appendix B
counting the whole T x T square of attention) against --peak-tflops, by default a GEMM
measured as sharc-llama measures one where it has no data-sheet figure: the best of 10 square
products of 8192 in bf16 on a GPU (1024 in the compute dtype on the CPU) after 2. Pass
sharc-llama's peak (its start line, or "gemm_peak_gflops" in its --log) to compare the two
MFUs against one peak. Peak memory: torch.cuda.max_memory_allocated on a GPU, the process's
peak resident memory on the CPU.

Data are random tokens (seeded), or with --data FILE random windows of T+1 tokens from a sharc
token file (SHARCTOK: 32-byte little-endian header with the magic, version 1, token width 2
or 4, token count, vocabulary size, reserved; then the tokens), read through a numpy memmap;
as sharc-llama does for a named config, the vocabulary is then the file's (or --vocab).

The first --warmup-steps steps are not timed. Each step prints its loss and time; the last
line is machine-readable, key=value after "bench_torch:":

    bench_torch: tokens_per_s=<median> step_ms=<median> threads=<n> torch=<version>
        config=<name> device=<cpu|cuda> dtype=<f32|bf16> attn=<sdpa|eager> compile=<0|1>
        batch=<B> seq=<T> vocab=<V> params=<n> flops_per_token=<f> mfu=<fraction>
        peak_tflops=<t> peak=<measured|given> peak_mem_mib=<m> adamw=<fused|foreach|default>

(one line) where the medians are over the timed steps.

    python3 trainer/scripts/bench_torch.py --threads 2                      # 15m, CPU, f32
    python3 trainer/scripts/bench_torch.py --config 1b --device cuda --batch 4 --seq 2048
    python3 trainer/scripts/bench_torch.py --config tiny --seq 32 --batch 2 --steps 3

Needs torch, transformers and numpy.
"""

import argparse
import os
import resource
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

# trainer/model/config.c's named configs that train: dim, layers, heads, kv heads, ffn hidden,
# vocabulary, longest sequence (head dim = dim / heads)
CONFIGS = {
    "tiny": (64, 2, 4, 2, 176, 4096, 64),
    "15m": (288, 6, 6, 6, 768, 4096, 256),
    "42m": (512, 8, 8, 8, 1376, 4096, 1024),
    "110m": (768, 12, 12, 12, 2048, 4096, 1024),
    "1b": (2048, 22, 32, 4, 5632, 32000, 2048),
}


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

    def __init__(self, args, tokens):
        self.B, self.T, self.vocab = args.batch, args.seq, args.vocab
        self.gen = torch.Generator().manual_seed(args.seed)
        self.tokens = tokens
        if tokens is not None:
            if len(tokens) < self.T + 1:
                sys.exit("%s: %d tokens, a window needs %d" % (args.data, len(tokens), self.T + 1))
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


def params_nonembed(a):
    """llama_config_params_nonembed (trainer/model/config.c): all but the embedding table."""
    C, hd = a.dim, a.dim // a.heads
    block = C * hd * a.heads * 2 + C * hd * a.kv_heads * 2 + 3 * C * a.ffn + 2 * C
    return a.layers * block + C + a.vocab * C


def flops_per_token(a):
    """llama_config_flops_per_token (trainer/model/config.c), ported as it is: training FLOPs
    per token at sequence length T, forward + backward without recomputation,
    6 * (non-embedding parameters) + 12 * L * H * hd * T."""
    hd = a.dim // a.heads
    return 6.0 * params_nonembed(a) + 12.0 * a.layers * a.heads * hd * float(a.seq)


def build_model(a, device):
    kw = dict(vocab_size=a.vocab, hidden_size=a.dim, intermediate_size=a.ffn,
              num_hidden_layers=a.layers, num_attention_heads=a.heads,
              num_key_value_heads=a.kv_heads, head_dim=a.dim // a.heads,
              max_position_embeddings=max(a.max_seq, a.seq), rms_norm_eps=1e-5,
              hidden_act="silu", tie_word_embeddings=False, attention_bias=False,
              mlp_bias=False, use_cache=False)
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    else:
        kw["rope_theta"] = 10000.0
    cfg = LlamaConfig(**kw)
    cfg._attn_implementation = a.attn
    torch.manual_seed(a.seed)
    model = LlamaForCausalLM(cfg).to(device=device, dtype=torch.float32)
    model.config._attn_implementation = a.attn
    model.train()
    return model


def make_optimizer(model, device):
    """AdamW as sharc-llama's: decay on matrices and embeddings; fused where torch has it."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    kw = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    try:
        return torch.optim.AdamW(groups, fused=True, **kw), "fused"
    except (RuntimeError, TypeError, ValueError) as e:  # no fused kernel for this device
        print("bench_torch: fused AdamW unavailable on %s (%s); torch's default" % (device, e))
        return torch.optim.AdamW(groups, **kw), "default"


def measure_peak(device, dtype):
    """A GEMM's rate as sharc-llama measures one (trainer/ops/cuda/cuda.cu measure_peak, and
    trainer/cli/metrics.c llama_gemm_peak on the CPU): zero-filled square products, the best
    after 2 that warm."""
    n = 8192 if device.type == "cuda" else 1024
    a = torch.zeros(n, n, device=device, dtype=dtype)
    b = torch.zeros(n, n, device=device, dtype=dtype)
    best, start = 0.0, time.perf_counter()
    for r in range(1000):
        if device.type == "cuda":
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.mm(a, b)
            e1.record()
            e1.synchronize()
            s = e0.elapsed_time(e1) * 1e-3
        else:
            t0 = time.perf_counter()
            torch.mm(a, b)
            s = time.perf_counter() - t0
        if r >= 2 and s > 0:
            best = max(best, 2.0 * n ** 3 / s)
        if r >= 11 and (device.type == "cuda" or time.perf_counter() - start >= 0.5):
            break
    return best


def parse_args():
    ap = argparse.ArgumentParser(description="PyTorch beside sharc-llama: the same model, "
                                 "batch, data and optimiser, its training speed")
    ap.add_argument("--config", choices=sorted(CONFIGS), default="15m",
                    help="sharc-llama's named config (default 15m)")
    for name, what in (("dim", "hidden size"), ("layers", "blocks"), ("heads", "query heads"),
                       ("kv-heads", "key/value heads"), ("ffn", "SwiGLU hidden size"),
                       ("vocab", "vocabulary (default: the data's, else the config's)")):
        ap.add_argument("--" + name, type=int, help=what + " instead of the config's")
    ap.add_argument("--batch", type=int, default=8, help="sequences per step (default 8)")
    ap.add_argument("--seq", type=int, help="tokens per sequence (default: the config's longest, "
                    "at most 256, as sharc-llama)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps (default 30)")
    ap.add_argument("--warmup-steps", type=int, default=5,
                    help="untimed steps before them (default 5)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where to train (default cpu)")
    ap.add_argument("--dtype", choices=("f32", "bf16"),
                    help="f32, or bf16 autocast over f32 parameters (default: f32 on the CPU, "
                    "bf16 on CUDA)")
    ap.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa",
                    help="attention implementation (default sdpa)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="torch.set_num_threads (default: all CPUs, %d)" % os.cpu_count())
    ap.add_argument("--peak-tflops", type=float,
                    help="peak for MFU, TFLOP/s (default: a GEMM measured at start)")
    ap.add_argument("--data", metavar="FILE", help="SHARCTOK token file (default: random tokens)")
    ap.add_argument("--seed", type=int, default=1, help="model and data seed (default 1)")
    a = ap.parse_args()
    dim, layers, heads, kv, ffn, vocab, a.max_seq = CONFIGS[a.config]
    if any(v is not None for v in (a.dim, a.layers, a.heads, a.kv_heads, a.ffn)):
        a.config = "custom"  # (the named config's dims where none is given)
    a.dim, a.layers, a.heads = a.dim or dim, a.layers or layers, a.heads or heads
    a.kv_heads, a.ffn = a.kv_heads or kv, a.ffn or ffn
    a.seq = a.seq or min(a.max_seq, 256)
    a.dtype = a.dtype or ("bf16" if a.device == "cuda" else "f32")
    tokens, file_vocab = open_tokens(a.data) if a.data else (None, 0)
    a.vocab = a.vocab or file_vocab or vocab
    if min(a.batch, a.seq, a.vocab, a.steps, a.threads, a.dim, a.layers, a.heads, a.kv_heads,
           a.ffn) < 1 or a.warmup_steps < 0:
        ap.error("sizes, --steps and --threads must be positive, --warmup-steps >= 0")
    if a.dim % a.heads or a.heads % a.kv_heads or (a.dim // a.heads) % 2:
        ap.error("dim must be a multiple of heads, heads of kv-heads, and the head size even")
    if file_vocab > a.vocab:
        ap.error("%s: vocabulary %d is larger than the model's %d" % (a.data, file_vocab, a.vocab))
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: torch sees no GPU here")
    return a, tokens


def train(a, model, opt, data, device, autocast_dtype):
    """The steps; the times (ms) of the timed ones."""
    times = []
    ntok = a.batch * a.seq
    for step in range(a.warmup_steps + a.steps):
        x, y = data.next()
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=a.dtype == "bf16"):
            logits = model(input_ids=x).logits
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        lv = loss.item()  # (waits for the device, as sharc-llama's loss read-back does)
        ms = (time.perf_counter() - t0) * 1e3
        timed = step >= a.warmup_steps
        if timed:
            times.append(ms)
        print("step %3d%s loss %.4f  %8.1f ms  %8.0f tok/s"
              % (step, " " if timed else "*", lv, ms, ntok / ms * 1e3), flush=True)
    return times


def main():
    a, tokens = parse_args()
    device = torch.device(a.device)
    torch.set_num_threads(a.threads)
    autocast_dtype = torch.bfloat16
    compute_dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    if a.peak_tflops:
        peak, peak_src = a.peak_tflops * 1e12, "given"
    else:
        peak, peak_src = measure_peak(device, compute_dtype), "measured"
    model = build_model(a, device)
    opt, adamw = make_optimizer(model, device)
    if a.compile:
        model = torch.compile(model)
    data = Batches(a, tokens)
    nparams = sum(p.numel() for p in model.parameters())
    fpt = flops_per_token(a)
    print("bench_torch: %s (%.2fM parameters), B=%d T=%d vocab %d, %s %s, attn %s%s, AdamW %s, "
          "%d threads, torch %s, transformers %s, data %s; MFU against %.1f TFLOP/s (%s)"
          % (a.config, nparams / 1e6, a.batch, a.seq, a.vocab, a.device, a.dtype, a.attn,
             ", compiled" if a.compile else "", adamw, a.threads, torch.__version__,
             transformers.__version__, a.data or "random", peak / 1e12, peak_src))
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = train(a, model, opt, data, device, autocast_dtype)
    if device.type == "cuda":
        mem = torch.cuda.max_memory_allocated() / 2 ** 20
    else:
        mem = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    med = statistics.median(times)
    tps = a.batch * a.seq / med * 1e3
    mfu = fpt * tps / peak if peak > 0 else 0.0
    print("bench_torch: tokens_per_s=%.0f step_ms=%.1f threads=%d torch=%s config=%s device=%s "
          "dtype=%s attn=%s compile=%d batch=%d seq=%d vocab=%d params=%d flops_per_token=%.6g "
          "mfu=%.4f peak_tflops=%.4g peak=%s peak_mem_mib=%.0f adamw=%s"
          % (tps, med, a.threads, torch.__version__, a.config, a.device, a.dtype, a.attn,
             int(a.compile), a.batch, a.seq, a.vocab, nparams, fpt, mfu, peak / 1e12, peak_src,
             mem, adamw))


if __name__ == "__main__":
    main()
