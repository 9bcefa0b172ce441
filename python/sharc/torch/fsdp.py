"""FSDP2 communication hooks over sharc.

    from torch.distributed.fsdp import fully_shard
    import sharc.torch.fsdp

    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    sharc.torch.fsdp.apply(model)          # every FSDP module: sharc's hooks

AllGather and ReduceScatter are FSDP2's custom communication objects
(FSDPModule.set_custom_all_gather / set_custom_reduce_scatter). Their allocate() hands out
CPU buffers from sharc_mem_alloc (pooled by size, so a step reuses the previous step's
buffers): FSDP2 gathers in place into the all-gather output, and node-local peers copy
each rank's block straight out of that buffer through a mapping, and likewise the
reduce-scatter input. CUDA buffers come from torch's caching allocator (sharc runs them
through NCCL). The collectives themselves go through torch.distributed on the group FSDP2
passes, so they run on whatever backend the group has; with "sharc" they are sharc's.
"""

import torch
import torch.distributed as dist

try:  # FSDP2's interfaces (torch >= 2.7)
    from torch.distributed.fsdp._fully_shard._fsdp_api import AllGather as _AllGatherBase
    from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter as _ReduceScatterBase
except ImportError:  # pragma: no cover - older torch
    _AllGatherBase = _ReduceScatterBase = object

from .mem import MemPool

_default_pool = None


def default_pool():
    """The process's pool of sharc_mem_alloc buffers for FSDP2 (one for all modules: blocks
    of equal size, as transformer blocks have, are shared)."""
    global _default_pool
    if _default_pool is None:
        _default_pool = MemPool()
    return _default_pool


class _Alloc:
    def __init__(self, pool=None):
        self.pool = pool if pool is not None else default_pool()

    def allocate(self, size, *, dtype, device):
        if torch.device(device).type == "cpu":
            return self.pool.empty(size, dtype=dtype)
        return torch.empty(*size, dtype=dtype, device=device)


class AllGather(_Alloc, _AllGatherBase):
    """FSDP2's all-gather: into a sharc-allocated output, in place."""

    def __call__(self, output_tensor, input_tensor, group, async_op=False):
        return dist.all_gather_into_tensor(output_tensor, input_tensor, group=group,
                                           async_op=async_op)


class ReduceScatter(_Alloc, _ReduceScatterBase):
    """FSDP2's reduce-scatter: from a sharc-allocated input."""

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        return dist.reduce_scatter_tensor(output_tensor, input_tensor, op=op, group=group,
                                          async_op=async_op)


def apply(model, pool=None):
    """Set sharc's AllGather and ReduceScatter on every FSDP module of @model (fully_shard
    first). Returns how many modules got them."""
    from torch.distributed.fsdp import FSDPModule

    ag, rs = AllGather(pool), ReduceScatter(pool)
    n = 0
    for m in model.modules():
        if isinstance(m, FSDPModule):
            m.set_custom_all_gather(ag)
            m.set_custom_reduce_scatter(rs)
            n += 1
    if n == 0:
        raise ValueError("sharc.torch.fsdp.apply: no FSDP module in the model (call "
                         "fully_shard on it first)")
    return n
