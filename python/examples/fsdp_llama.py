# SPDX-License-Identifier: BSD-3-Clause
"""FSDP2 training of a small Llama over the sharc backend.

    torchrun --nproc-per-node 2 python/examples/fsdp_llama.py [--steps 50] [--layers 4]
        [--dim 256] [--batch 4] [--seq 128] [--backend sharc|gloo] [--no-hooks]

transformers' LlamaForCausalLM from a config (no download): fully_shard on every decoder
layer and on the model, sharc's FSDP2 hooks (all-gather outputs and reduce-scatter inputs in
sharc_mem_alloc memory, which node-local peers copy straight from), AdamW. The data are runs
of consecutive token ids from random starts, which a model can learn: the loss falls. With
--backend gloo the same run goes over gloo, for comparison. The two-line change from gloo:

    import sharc.torch
    dist.init_process_group("sharc")

Under mpirun or srun, sharc.torch.init_env() sets torch's launch variables from theirs.
Needs transformers besides torch: pip install "./python[examples]".
"""

import argparse
import time

import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

try:
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    sys.exit('fsdp_llama.py needs transformers: pip install "./python[examples]" (or transformers)')

import sharc.torch
import sharc.torch.fsdp

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--steps", type=int, default=50)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--dim", type=int, default=256)
ap.add_argument("--vocab", type=int, default=4096)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--seq", type=int, default=128)
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--backend", default="sharc")
ap.add_argument("--no-hooks", action="store_true", help="FSDP2's own buffers, not sharc's")
args = ap.parse_args()

sharc.torch.init_env()  # a no-op under torchrun
dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()

cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=args.dim, intermediate_size=args.dim * 8 // 3,
                  num_hidden_layers=args.layers, num_attention_heads=max(args.dim // 64, 1),
                  num_key_value_heads=max(args.dim // 128, 1), max_position_embeddings=args.seq)
torch.manual_seed(0)  # every rank starts from the same weights
model = LlamaForCausalLM(cfg)
nparams = sum(p.numel() for p in model.parameters())
for layer in model.model.layers:
    fully_shard(layer)
fully_shard(model)
if args.backend == "sharc" and not args.no_hooks:
    sharc.torch.fsdp.apply(model)
opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
if rank == 0:
    name = args.backend + (" (%s)" % sharc.torch.implementation if args.backend == "sharc"
                           else "")  # the C++ backend, or the Python one
    print("FSDP2 over %s: %d ranks, %.1fM parameters, %d x %d tokens per rank and step"
          % (name, world, nparams / 1e6, args.batch, args.seq), flush=True)

gen = torch.Generator().manual_seed(rank + 1)  # each rank its own batches
t_start = time.perf_counter()
for step in range(1, args.steps + 1):
    t0 = time.perf_counter()
    start = torch.randint(0, args.vocab, (args.batch, 1), generator=gen)
    ids = (start + torch.arange(args.seq)) % args.vocab
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    avg = loss.detach().clone()
    dist.all_reduce(avg, op=dist.ReduceOp.AVG)
    dt = time.perf_counter() - t0
    if rank == 0 and (step % 10 == 0 or step == 1 or step == args.steps):
        print("step %4d | loss %.4f | %.3f s | %.0f tokens/s" % (
            step, avg.item(), dt, world * args.batch * args.seq / dt), flush=True)
if rank == 0:
    print("done: %d steps in %.1f s" % (args.steps, time.perf_counter() - t_start))
dist.destroy_process_group()
