# SPDX-License-Identifier: BSD-3-Clause
"""CPU tensors in sharc_mem_alloc memory, and a pool of them.

A tensor here lives in memory a peer on the same node maps and copies from directly (one
memcpy at memory speed, where memory from anywhere else goes through the kernel's
process_vm_readv at about half the speed for large messages). Allocating such memory is a
system call and a mapping, and a peer maps each new buffer once, so buffers that come back
every step (FSDP2's all-gather outputs and reduce-scatter inputs) are pooled by size.
"""

import threading

import torch

import sharc


def _numel(size):
    n = 1
    for s in size:
        n *= int(s)
    return n


def _as_size(size):
    if isinstance(size, (int, torch.SymInt)):
        return (int(size),)
    return tuple(int(s) for s in size)


def empty(size, dtype=torch.float32, ctx=None):
    """A CPU tensor in fresh sharc_mem_alloc memory (zero-filled), freed with its last view."""
    size = _as_size(size)
    n = _numel(size)
    if n == 0:
        return torch.empty(size, dtype=dtype)
    mem = (ctx or sharc.default_context()).alloc(n * torch.empty((), dtype=dtype).element_size())
    return torch.frombuffer(mem, dtype=dtype, count=n).view(size)


class _Lease:
    """Returns a pooled block when the last tensor viewing it goes."""

    __slots__ = ("pool", "mem")

    def __init__(self, pool, mem):
        self.pool, self.mem = pool, mem

    def __del__(self):
        self.pool._give_back(self.mem)


class MemPool:
    """sharc_mem_alloc blocks handed out as tensors and taken back, by exact size, when their
    tensors are gone. At most @keep_bytes of idle blocks are kept (default 4 GiB); the
    oldest idle ones beyond are freed."""

    def __init__(self, ctx=None, keep_bytes=4 << 30):
        self.ctx = ctx or sharc.default_context()
        self.keep_bytes = keep_bytes
        self._idle = []  # [memory], oldest first
        self._idle_bytes = 0
        self._lock = threading.Lock()
        self.allocated = 0  # blocks made, for tests and statistics

    def _take(self, nbytes):
        with self._lock:
            for i, mem in enumerate(self._idle):
                if len(mem) == nbytes:
                    del self._idle[i]
                    self._idle_bytes -= nbytes
                    return mem
        self.allocated += 1
        return self.ctx.alloc(nbytes)

    def _give_back(self, mem):
        with self._lock:
            self._idle.append(mem)
            self._idle_bytes += len(mem)
            while self._idle_bytes > self.keep_bytes and self._idle:
                self._idle_bytes -= len(self._idle.pop(0))

    def empty(self, size, dtype=torch.float32):
        """A CPU tensor of @size and @dtype (not zeroed when its block is reused)."""
        size = _as_size(size)
        n = _numel(size)
        if n == 0:
            return torch.empty(size, dtype=dtype)
        nbytes = n * torch.empty((), dtype=dtype).element_size()
        mem = self._take(nbytes)
        view = sharc.memory_at(mem.ptr, nbytes, _Lease(self, mem))
        return torch.frombuffer(view, dtype=dtype, count=n).view(size)

    def clear(self):
        """Free the idle blocks."""
        with self._lock:
            self._idle, self._idle_bytes = [], 0
