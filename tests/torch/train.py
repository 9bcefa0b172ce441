# SPDX-License-Identifier: BSD-3-Clause
"""Training with the sharc backend against gloo, step by step (make check: torch_train.sh).

Every rank trains a tiny Llama (transformers' LlamaForCausalLM, f32) for --steps steps from
one seed, on the same batches, once per (parallelism, backend): DDP and FSDP2 (fully_shard on
each decoder layer and the model), over the default "sharc" group and over a gloo group of
the same ranks, FSDP2 over sharc with sharc's communication hooks
(sharc.torch.fsdp.apply), and FSDP2 taking its buffers from the backend (allocate_tensor:
sharc_mem_alloc memory). The losses of each sharc run must equal gloo's within --tol at
every step, and the models' weights after training must agree as closely.
"""

import argparse
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import LlamaConfig, LlamaForCausalLM

import sharc.torch
import sharc.torch.fsdp

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--tol", type=float, default=1e-5)
ap.add_argument("--modes", default="ddp,fsdp,fsdp-hooks,fsdp-pgalloc")
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--seq", type=int, default=32)
args = ap.parse_args()

dist.init_process_group("sharc")
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
gloo = dist.new_group(backend="gloo")
sharc_group = dist.group.WORLD
assert dist.get_backend(sharc_group) == "sharc"

cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  attn_implementation="eager")


def batch(step):
    """Runs of consecutive tokens from random starts (learnable: the loss falls)."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    start = torch.randint(0, cfg.vocab_size, (args.batch, 1), generator=g)
    return (start + torch.arange(args.seq)) % cfg.vocab_size


def train(mode, group):
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    if mode == "ddp":
        model = DDP(model, process_group=group)
    else:
        mesh = DeviceMesh.from_group(group, "cpu")
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        if mode == "fsdp-hooks":
            assert sharc.torch.fsdp.apply(model) == len(model.model.layers) + 1
        if mode == "fsdp-pgalloc":  # FSDP2 asks the backend for its buffers (allocate_tensor)
            for m in [model] + list(model.model.layers):
                m.set_allocate_memory_from_process_group_for_comm(True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(args.steps):
        ids = batch(step)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    if mode == "fsdp-hooks":  # the buffers came from sharc's pool
        assert sharc.torch.fsdp.default_pool().allocated > 0, "the hooks allocated nothing"
    if mode == "fsdp-pgalloc":
        # the backend counts what it took
        assert sharc.torch._native_module.allocated() > 0, "allocateTensor was not called"
    full = {}
    for name, p in model.named_parameters():  # FSDP2: DTensors, gathered for the check
        full[name] = p.full_tensor() if hasattr(p, "full_tensor") else p.detach()
    return losses, full


failures = 0
for mode in args.modes.split(","):
    ref, ref_w = train(mode.split("-")[0], gloo)
    got, got_w = train(mode, sharc_group)
    worst = max(abs(a - b) for a, b in zip(ref, got))
    wworst = max((got_w[k] - ref_w[k]).abs().max().item() for k in ref_w)
    ok = worst <= args.tol and wworst <= args.tol and len(got) == args.steps
    failures += not ok
    print("rank %d %-10s %d steps: loss %.6f -> %.6f (gloo %.6f -> %.6f), max |loss diff| %.2e, "
          "max |weight diff| %.2e: %s" % (rank, mode, args.steps, got[0], got[-1], ref[0], ref[-1],
                                         worst, wworst, "ok" if ok else "FAIL"), flush=True)
    if not ok:
        for s, (a, b) in enumerate(zip(ref, got)):
            print("  step %2d gloo %.8f sharc %.8f diff %.2e" % (s, a, b, abs(a - b)))
    if got[-1] >= got[0] - 0.05:
        print("rank %d %s: the loss did not go down" % (rank, mode))
        failures += 1
dist.destroy_process_group()
sys.exit(1 if failures else 0)
