# SPDX-License-Identifier: BSD-3-Clause
"""The sharc torch.distributed backend's collectives in sharc's metrics (make check:
torch_metrics.sh): 7 all-reduces of 1000 f32 and 3 all-gathers of 1000 f32 a rank, then the
group's end; the shell reads the files SHARC_METRICS_FILE names."""

import torch
import torch.distributed as dist

import sharc  # noqa: F401 (the package that registers the backend)
import sharc.torch  # noqa: F401

dist.init_process_group("sharc")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.ones(1000)
for _ in range(7):
    dist.all_reduce(t)
out = [torch.empty(1000) for _ in range(world)]
for _ in range(3):
    dist.all_gather(out, t)
ok = float(t[0]) == float(world) ** 7
dist.destroy_process_group()
print(f"rank {rank} of {world}: collectives {'ok' if ok else 'WRONG'}")
