# SPDX-License-Identifier: BSD-3-Clause
"""sharc from Python: contexts, communicators, collectives, requests and shareable memory.

A thin layer over sharc's public C API (ctypes): every collective, check and algorithm runs in
libsharc; this package turns Python buffers into pointers and counts, and sharc's statuses into
exceptions carrying the message sharc logged. Buffers are anything with the buffer protocol
(numpy arrays, memoryviews, bytearrays) or torch tensors, C-contiguous; torch's CUDA tensors
go through sharc's CUDA path (NCCL on the communicator's stream).

    import numpy as np, sharc
    comm = sharc.Comm()                       # the bootstrap from the launcher, as in C
    x = np.full(4, comm.rank, np.float32)
    out = np.empty(4 * comm.size, np.float32)
    comm.allgather(x, out)
    req = comm.allreduce(x, op="sum", async_op=True)
    req.wait()

`sharc.torch` registers sharc as a torch.distributed backend.

The package's modules, one purpose each: _lib (finding and loading libsharc, the ctypes
prototypes), _errors (statuses as exceptions), types (dtypes, ops, bootstraps: libsharc's
tables), buffers (Python objects as pointers and sizes), context (contexts, shareable
memory), comm (communicators, collectives, requests), launch (the launcher's variables as
sharc reads them). This file only re-exports their public names.
"""

from . import _lib
from ._errors import (
    BackendError,
    InvalidError,
    NoMemError,
    RemoteError,
    SharcError,
    SharcIOError,
    SharcTimeoutError,
    UnsupportedError,
)
from .buffers import Buffer, as_buffer
from .comm import ANY_SOURCE, TAG_MAX, Comm, RecvInfo, Request
from .context import Context, default_context, memory_at
from .launch import LaunchInfo, launch_info
from .types import DTYPE_LIST, Bootstrap, Dtype, Launcher, Op, Wire, dtype_of, op_of, wire_of

__version__ = _lib.lib.sharc_get_version(None, None, None).decode()
library_path = _lib.path


def build_info():
    return _lib.lib.sharc_build_info().decode()


__all__ = [
    "BackendError", "InvalidError", "NoMemError", "RemoteError", "SharcError", "SharcIOError",
    "SharcTimeoutError", "UnsupportedError", "Buffer", "as_buffer", "Comm", "Request",
    "ANY_SOURCE", "TAG_MAX", "RecvInfo",
    "Context", "default_context", "memory_at", "LaunchInfo", "launch_info", "DTYPE_LIST",
    "Bootstrap", "Dtype", "Launcher", "Op", "Wire", "dtype_of", "op_of", "wire_of", "build_info",
    "library_path",
]  # fmt: skip
