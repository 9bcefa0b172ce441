# SPDX-License-Identifier: BSD-3-Clause
"""torch's arguments as what sharc takes: checks, contiguous stand-ins, buffers, reductions.

The backend (backend.py) calls these before it posts: a tensor to read becomes contiguous,
a tensor to write gets a contiguous stand-in copied back when the collective is done, and a
reduction's ReduceOp and dtype become sharc's op and dtype (by name: sharc.types) or an
UnsupportedError naming what sharc does not do. Nothing here posts a collective.
"""

import torch
import torch.distributed as dist

import sharc
from sharc import Dtype, InvalidError, Op, UnsupportedError

_RedOp = dist.ReduceOp.RedOpType
# torch's reductions that are sharc's ops, by name (PRODUCT is sharc's "prod")
_OPS = {kind: sharc.op_of(kind.name) for kind in
        (_RedOp.SUM, _RedOp.AVG, _RedOp.PRODUCT, _RedOp.MIN, _RedOp.MAX)}

_COMPLEX = (torch.complex64, torch.complex128)  # reduced as pairs of float32, float64


def _op_name(op):
    return str(op).split(".")[-1]


def _reduce_dtype(name, tensor, op):
    """(sharc dtype, element count) of a reduction by @op over @tensor's elements."""
    dtype = sharc.types.dtype_of_torch(tensor.dtype)
    if dtype is not None:
        return dtype, tensor.numel()
    if tensor.dtype in _COMPLEX and op in (Op.SUM, Op.AVG):
        # complex sums and averages are sums of their real and imaginary parts
        return sharc.types.dtype_of_torch(tensor.dtype.to_real()), tensor.numel() * 2
    if tensor.dtype == torch.bool and op in (Op.MIN, Op.MAX):
        return Dtype.U8, tensor.numel()  # MIN is AND, MAX is OR on 0/1 bytes
    raise UnsupportedError(
        "%s: dtype %s cannot be reduced by the sharc backend (sharc reduces float32, "
        "float64, float16, bfloat16, int32, int64, uint8; complex with SUM/AVG; bool with "
        "MIN/MAX)" % (name, tensor.dtype), op=name)


def reduction(name, tensor, reduce_op):
    """(sharc dtype, sharc op, element count, post-scale) of a reduction of @tensor, or an
    UnsupportedError naming the op and the reason."""
    kind = reduce_op.op if isinstance(reduce_op, dist.ReduceOp) else reduce_op
    scale = None
    if kind == _RedOp.PREMUL_SUM:
        # sum(f * x_i) = f * sum(x_i): the factor is applied to the result
        factor = reduce_op.factor
        scale = float(factor.item() if isinstance(factor, torch.Tensor) else factor)
        kind = _RedOp.SUM
    op = _OPS.get(kind)
    if op is None:
        raise UnsupportedError(
            "%s: ReduceOp.%s is not supported by the sharc backend (sharc reduces with SUM, "
            "AVG, PRODUCT, MIN, MAX and PREMUL_SUM)" % (name, _op_name(kind)), op=name)
    dtype, numel = _reduce_dtype(name, tensor, op)
    return dtype, op, numel, scale


def _dense(name, t, what):
    if not isinstance(t, torch.Tensor):
        raise InvalidError("%s: %s is a %s, not a tensor" % (name, what, type(t).__name__),
                           op=name)
    if t.layout != torch.strided:
        raise UnsupportedError("%s: %s is a %s tensor; the sharc backend takes dense tensors"
                               % (name, what, t.layout), op=name)
    return t


def readable(name, t, what="input"):
    """A contiguous tensor to read: @t itself or a contiguous copy."""
    _dense(name, t, what)
    return t if t.is_contiguous() else t.contiguous()


def writable(name, t, fixups, what="output"):
    """A contiguous tensor to write: @t itself, or a contiguous stand-in copied back into @t
    when the collective is done (fixups)."""
    _dense(name, t, what)
    if t.is_contiguous():
        return t
    tmp = torch.empty_like(t, memory_format=torch.contiguous_format)
    fixups.append(lambda: t.copy_(tmp))
    return tmp


def raw(t):
    """A sharc.Buffer over a contiguous tensor's bytes (the tensor keeps the memory): the
    collective runs in the dtype it is given, or moves bytes."""
    return sharc.Buffer(t.data_ptr(), t.numel() * t.element_size(), None, 1, t, t.is_cuda)


def as_bytes(t):
    """A contiguous tensor's elements as a flat uint8 view (the same memory)."""
    return t.reshape(-1).view(torch.uint8)


def check_same(name, a, b, what):
    if a.dtype != b.dtype:
        raise InvalidError("%s: %s dtype %s differs from the input's %s"
                           % (name, what, a.dtype, b.dtype), op=name)
    if a.device != b.device:
        raise InvalidError("%s: %s is on %s, the input on %s" % (name, what, a.device, b.device),
                           op=name)
