# SPDX-License-Identifier: BSD-3-Clause
"""sharc contexts and the shareable memory they allocate.

A Context is one parsed configuration (SHARC_* variables, then the caller's knobs) that its
communicators share; its alloc() hands out sharc_mem_alloc memory, which node-local peers
copy from directly. Communicators are sharc.comm's.
"""

import ctypes

from ._errors import InvalidError, check, error_mark
from ._lib import lib as _c
from .types import dtype_of, numpy_name


class Context:
    """A sharc context: one parsed configuration (SHARC_* variables, then @config) and what
    its communicators share. @config maps knob names ("TIMEOUT", "SHARC_CHECK", ...) to
    values as text. close() (or garbage collection) releases it once its communicators and
    memory are gone."""

    def __init__(self, config=None, env=True):
        cfg = ctypes.c_void_p()
        mark = error_mark()
        check(_c.sharc_config_create(0 if env else 1, ctypes.byref(cfg)), "sharc_config_create",
              mark)
        try:
            for k, v in (config or {}).items():
                mark = error_mark()
                check(_c.sharc_config_set(cfg, str(k).encode(), str(v).encode()),
                      "sharc_config_set(%s)" % k, mark)
            h = ctypes.c_void_p()
            mark = error_mark()
            check(_c.sharc_context_create(cfg, ctypes.byref(h)), "sharc_context_create", mark)
        finally:
            _c.sharc_config_destroy(cfg)
        self._h = h

    @property
    def handle(self):
        """The sharc_context_h (an int; None once closed)."""
        return self._h.value if self._h is not None else None

    def alloc(self, nbytes):
        """Shareable host memory (sharc_mem_alloc): page-aligned, zero-filled, @nbytes long,
        as a writable buffer (memoryview(), numpy.frombuffer(), torch.frombuffer() view it
        without a copy). A peer on the node copies straight from it. Freed when the last
        view of it goes."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise InvalidError("alloc: negative size %d" % nbytes, op="sharc_mem_alloc")
        if nbytes == 0:
            return bytearray()
        p = ctypes.c_void_p()
        mark = error_mark()
        check(_c.sharc_mem_alloc(self._h, nbytes, ctypes.byref(p)), "sharc_mem_alloc", mark)
        return memory_at(p.value, nbytes, _Block(self, p.value))

    def empty(self, shape, dtype="f32"):
        """A numpy array in sharc_mem_alloc memory (zero-filled)."""
        import numpy as np

        np_dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(numpy_name(dtype_of(dtype)))
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = 1
        for s in shape:
            n *= int(s)
        mem = self.alloc(n * np_dtype.itemsize)
        return np.frombuffer(mem, dtype=np_dtype, count=n).reshape(shape)

    # The C functions a destructor calls are bound when the class is made: at interpreter exit
    # the module's globals are gone (None) before the last objects are collected.
    def close(self, _destroy=_c.sharc_context_destroy):
        h, self._h = getattr(self, "_h", None), None
        if h is not None and h.value:
            _destroy(h)

    def __del__(self):
        self.close()


class _Block:
    """One sharc_mem_alloc allocation; holds its context so the context outlives it."""

    __slots__ = ("ctx", "ptr")

    def __init__(self, ctx, ptr):
        self.ctx, self.ptr = ctx, ptr

    def __del__(self, _free=_c.sharc_mem_free):
        if self.ptr and self.ctx._h is not None:
            _free(self.ctx._h, self.ptr)  # (an int: the prototype makes it a void *)
        self.ptr = None


_memory_types = {}


def memory_at(ptr, nbytes, owner):
    """A writable buffer over @nbytes of memory at @ptr: a ctypes array that memoryview(),
    numpy.frombuffer() and torch.frombuffer() view without a copy (its .ptr is the address,
    len() the size). It keeps @owner (its .owner) alive as long as it or any view of it
    lives: the object that frees or recycles the memory when it goes."""
    t = _memory_types.get(nbytes)
    if t is None:
        t = type("SharcMemory", (ctypes.c_ubyte * nbytes,), {"ptr": property(ctypes.addressof)})
        if len(_memory_types) < 256:
            _memory_types[nbytes] = t
    mem = t.from_address(ptr)
    mem.owner = owner
    return mem


_default_ctx = None


def default_context():
    """The process's shared context (SHARC_* variables), made on first use."""
    global _default_ctx
    if _default_ctx is None:
        _default_ctx = Context()
    return _default_ctx
