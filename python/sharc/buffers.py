# SPDX-License-Identifier: BSD-3-Clause
"""Python objects as the memory a collective reads or writes: pointer, size, element type.

A Buffer is what every collective of sharc.Comm takes: made here from a torch tensor or any
object with the buffer protocol (C-contiguous), or built directly over raw memory. The
export of a buffer-protocol object is held until the collective completes. Nothing here
calls a collective; the element types are sharc.types'.
"""

import ctypes

from ._errors import InvalidError
from ._lib import lib as _c
from .types import DTYPE_LIST, Dtype, dtype_of, dtype_of_format, dtype_of_torch


class _PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
_PYBUF_WRITABLE, _PYBUF_FORMAT, _PYBUF_C_CONTIGUOUS = 0x0001, 0x0004, 0x0020 | 0x0010 | 0x0008


class _Held:
    """A buffer export held while a collective uses the memory (released at completion)."""

    __slots__ = ("view",)

    def __init__(self, view):
        self.view = view

    # bound at definition: a destructor may run at interpreter exit, after the globals went
    def release(self, _release=_release_buffer, _byref=ctypes.byref):
        if self.view is not None:
            _release(_byref(self.view))
            self.view = None

    def __del__(self):
        self.release()


class Buffer:
    """A contiguous piece of memory a collective reads or writes: pointer, size in bytes,
    sharc dtype (None when the object's element type is not one of sharc's) and whatever
    keeps the memory alive and exported until the collective completes.

    Every collective of Comm takes a Buffer where it takes a buffer: Buffer(ptr, nbytes,
    None, 1, owner) is raw memory (a tensor's data_ptr(), say) that the collective runs on in
    the dtype it is given (dtype=), or moves as bytes; is_cuda says it is CUDA memory."""

    __slots__ = ("ptr", "nbytes", "dtype", "itemsize", "keep", "is_cuda")

    def __init__(self, ptr, nbytes, dtype, itemsize, keep, is_cuda=False):
        self.ptr, self.nbytes, self.dtype, self.itemsize = ptr, nbytes, dtype, itemsize
        self.keep, self.is_cuda = keep, is_cuda

    def release(self):
        if isinstance(self.keep, _Held):
            self.keep.release()
        self.keep = None


def _tensor_buffer(obj, what, op):
    if obj.is_sparse or obj.layout.__repr__() != "torch.strided":
        raise InvalidError("%s: %s is a %s tensor; sharc takes dense (strided) tensors"
                           % (op, what, obj.layout), op=op)
    if not obj.is_contiguous():
        raise InvalidError("%s: %s is not contiguous (shape %s, strides %s); pass "
                           "tensor.contiguous()" % (op, what, tuple(obj.shape), obj.stride()),
                           op=op)
    return Buffer(obj.data_ptr(), obj.numel() * obj.element_size(), dtype_of_torch(obj.dtype),
                  obj.element_size(), obj, obj.is_cuda)


def as_buffer(obj, writable, what, op):
    """The Buffer of @obj (a Buffer, a torch tensor or an object with the buffer protocol)."""
    if isinstance(obj, Buffer):
        return obj
    if type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr"):
        return _tensor_buffer(obj, what, op)
    view = _PyBuffer()
    flags = _PYBUF_C_CONTIGUOUS | _PYBUF_FORMAT | (_PYBUF_WRITABLE if writable else 0)
    try:
        _get_buffer(obj, ctypes.byref(view), flags)
    except (BufferError, TypeError, ValueError) as e:
        raise InvalidError("%s: %s (%s) cannot be used: %s; sharc takes C-contiguous%s "
                           "buffers (numpy arrays, memoryviews, torch tensors)"
                           % (op, what, type(obj).__name__, e,
                              " writable" if writable else ""), op=op) from None
    fmt = (view.format or b"B").decode().lstrip("@=<>!")
    held = _Held(view)
    return Buffer(view.buf or 0, view.len, dtype_of_format(fmt, view.itemsize), view.itemsize,
                  held)


def run_dtype(bufs, dtype, op, reducing):
    """The dtype a collective runs in: the explicit one, else the buffers' own; for moving
    data without reducing, bytes (u8) when the element type is not one of sharc's."""
    if dtype is not None:
        return dtype_of(dtype)
    d = bufs[0].dtype
    for b in bufs[1:]:
        if b.dtype != d:
            raise InvalidError("%s: the buffers' dtypes differ (%s, %s)"
                               % (op, d and d.name.lower(), b.dtype and b.dtype.name.lower()),
                               op=op)
    if d is None:
        if reducing:
            raise InvalidError("%s: the buffer's element type is not one sharc reduces (%s); "
                               "pass dtype= for raw memory" % (op, DTYPE_LIST), op=op)
        return Dtype.U8
    return d


def count(buf, dtype, op, what):
    """The number of @dtype elements in @buf; an error when its size is not a whole number."""
    size = _c.sharc_dtype_size(dtype)
    if buf.nbytes % size != 0:
        raise InvalidError("%s: %s holds %d bytes, not a whole number of %s elements"
                           % (op, what, buf.nbytes, dtype.name.lower()), op=op)
    return buf.nbytes // size
