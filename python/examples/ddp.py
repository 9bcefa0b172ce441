# SPDX-License-Identifier: BSD-3-Clause
"""DDP over the sharc backend: a small MLP learns to regress a fixed random linear map.

    torchrun --nproc-per-node 2 python/examples/ddp.py [--steps 200] [--backend sharc|gloo]

DDP broadcasts the weights from rank 0 at the start and all-reduces the gradients in buckets
during backward (through sharc's all-reduce; DDP waits on the futures of sharc's works). The
change from gloo is the backend's name and the import that registers it.
"""

import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import sharc.torch

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--width", type=int, default=512)
ap.add_argument("--backend", default="sharc")
args = ap.parse_args()

sharc.torch.init_env()
dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()

torch.manual_seed(1234)  # the target, the same on every rank
target = torch.randn(64, 64) / 8
torch.manual_seed(rank)  # different initial weights: DDP makes them rank 0's
model = DDP(torch.nn.Sequential(torch.nn.Linear(64, args.width), torch.nn.GELU(),
                                torch.nn.Linear(args.width, 64)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(100 + rank)
for step in range(1, args.steps + 1):
    x = torch.randn(128, 64, generator=gen)
    loss = torch.nn.functional.mse_loss(model(x), x @ target)
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step % 50 == 0 or step == 1:
        avg = loss.detach().clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG)
        if rank == 0:
            print("step %4d | loss %.6f" % (step, avg.item()), flush=True)
# the replicas must be identical: DDP averaged the same gradients everywhere
w = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
wmax, wmin = w.clone(), w.clone()
dist.all_reduce(wmax, op=dist.ReduceOp.MAX)
dist.all_reduce(wmin, op=dist.ReduceOp.MIN)
if rank == 0:
    print("replicas identical: %s" % bool(torch.equal(wmax, wmin)))
dist.destroy_process_group()
