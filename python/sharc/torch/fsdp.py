# SPDX-License-Identifier: BSD-3-Clause
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

Quantized wires (ZeRO++'s qwZ and qgZ, sharc_allgather_ex / sharc_reduce_scatter_ex):

    sharc.torch.fsdp.apply(model, param_wire="int8", reduce_wire="int8", wire_block=256)

gathers the parameters as int8 (or "fp8") codes with a scale per block of values and
reduce-scatters the gradients full precision within a node and quantized between nodes,
summed in f32; the sharded parameters and the optimizer stay in their dtype. A wire needs
the group's backend to be "sharc" (UnsupportedError otherwise).
"""

from types import SimpleNamespace

import torch
import torch.distributed as dist

try:  # FSDP2's interfaces (torch >= 2.7)
    from torch.distributed.fsdp._fully_shard._fsdp_api import AllGather as _AllGatherBase
    from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter as _ReduceScatterBase
except ImportError:  # pragma: no cover - older torch
    _AllGatherBase = _ReduceScatterBase = object

from sharc import UnsupportedError

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


def _sharc_backend(group, tensor, what):
    """The sharc process group behind @group for @tensor's device (a wire needs it)."""
    from . import _native_module

    kinds = (_native_module.ProcessGroupSharc,)
    be = group
    if not isinstance(be, kinds):
        try:
            be = group._get_backend(tensor.device)
        except (AttributeError, RuntimeError):
            be = None
    if not isinstance(be, kinds):
        raise UnsupportedError("%s: a quantized wire needs the group's backend to be sharc"
                               % what, op=what)
    return be


def _done(work, async_op):
    """FSDP2's contract: the Work when async_op, else None once it is done."""
    if async_op:
        return work
    work.wait()
    return None


class AllGather(_Alloc, _AllGatherBase):
    """FSDP2's all-gather: into a sharc-allocated output, in place; with @wire ("int8",
    "fp8") over sharc's quantized wire, @block values per scale. FSDP2 hands the hook its
    parameters as bytes (uint8): a wire reads them as @dtype, the dtype every parameter of
    the module has (its MixedPrecisionPolicy's param_dtype, if any)."""

    def __init__(self, pool=None, wire=None, block=None, dtype=torch.float32):
        super().__init__(pool)
        self.wire = None if wire in (None, "full") else (wire, block)
        self.dtype = dtype

    def __call__(self, output_tensor, input_tensor, group, async_op=False):
        if self.wire is None:
            return dist.all_gather_into_tensor(output_tensor, input_tensor, group=group,
                                               async_op=async_op)
        be = _sharc_backend(group, input_tensor, "all_gather_into_tensor")
        inp, out = input_tensor, output_tensor
        if inp.dtype == torch.uint8:
            size = torch.empty(0, dtype=self.dtype).element_size()
            if inp.numel() % size != 0:
                raise UnsupportedError("all_gather_into_tensor: %d bytes are no whole %s values "
                                       "for the %s wire" % (inp.numel(), self.dtype, self.wire[0]),
                                       op="all_gather_into_tensor")
            inp, out = inp.view(self.dtype), out.view(self.dtype)
        return _done(be.all_gather_single(out, inp, None, wire=self.wire), async_op)


class ReduceScatter(_Alloc, _ReduceScatterBase):
    """FSDP2's reduce-scatter: from a sharc-allocated input; with @wire ("int8", "fp8") over
    sharc's quantized wire (full precision within a node), @block values per scale."""

    def __init__(self, pool=None, wire=None, block=None):
        super().__init__(pool)
        self.wire = None if wire in (None, "full") else (wire, block)

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        if self.wire is None:
            return dist.reduce_scatter_tensor(output_tensor, input_tensor, op=op, group=group,
                                              async_op=async_op)
        be = _sharc_backend(group, input_tensor, "reduce_scatter_tensor")
        # (what the backend reads of c10d's options: a ReduceOp, as torch's own calls pass)
        opts = SimpleNamespace(reduceOp=op if hasattr(op, "op") else dist.ReduceOp(op))
        return _done(be.reduce_scatter_single(output_tensor, input_tensor, opts, wire=self.wire),
                     async_op)


def apply(model, pool=None, param_wire=None, reduce_wire=None, wire_block=None,
          param_dtype=torch.float32):
    """Set sharc's AllGather and ReduceScatter on every FSDP module of @model (fully_shard
    first), over the quantized wires asked for ("int8", "fp8"; None or "full": the dtype;
    @param_dtype: the parameters' dtype in the gathers, see AllGather). Returns how many
    modules got them."""
    from torch.distributed.fsdp import FSDPModule

    ag = AllGather(pool, param_wire, wire_block, param_dtype)
    rs = ReduceScatter(pool, reduce_wire, wire_block)
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
