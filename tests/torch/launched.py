# SPDX-License-Identifier: BSD-3-Clause
"""init_process_group("sharc") under a launcher (make check: torch_launch.sh): torchrun, mpirun
or srun's variables (sharc.torch.init_env). All-reduce, all-gather and a sharc subgroup of the
even ranks; prints "launched: rank R of N ok" and exits 0 when every result is right."""

import os
import sys

import torch
import torch.distributed as dist

import sharc.torch

rank, world = sharc.torch.init_env()
dist.init_process_group("sharc")
assert dist.get_rank() == rank and dist.get_world_size() == world, (rank, world)
assert dist.get_backend() == "sharc", dist.get_backend()
local = int(os.environ.get("LOCAL_RANK", "-1"))
t = torch.full((1000,), float(rank + 1))
dist.all_reduce(t)
ok = bool((t == world * (world + 1) / 2).all())
out = torch.empty(world * 3, dtype=torch.int64)
dist.all_gather_into_tensor(out, torch.tensor([rank, local, world]))
rows = out.view(world, 3)
ok &= rows[:, 0].tolist() == list(range(world)) and rows[:, 2].tolist() == [world] * world
evens = list(range(0, world, 2))
sub = dist.new_group(ranks=evens, backend="sharc")
if rank in evens:
    s = torch.tensor([rank], dtype=torch.int64)
    dist.all_reduce(s, group=sub)
    ok &= s.item() == sum(evens)
# the group's communicator shows its layout
backend = dist.group.WORLD._get_backend(torch.device("cpu"))
what = getattr(backend, "comm", None) or "the %s backend" % sharc.torch.implementation
print("launched: rank %d of %d (local rank %d, sharc %r) %s"
      % (rank, world, local, what, "ok" if ok else "FAIL"), flush=True)
dist.destroy_process_group()
sys.exit(0 if ok else 1)
