# SPDX-License-Identifier: BSD-3-Clause
"""sharc as a torch.distributed backend.

    import sharc.torch                      # registers the backend "sharc" (cpu and cuda)
    dist.init_process_group("sharc")        # under torchrun, mpirun (see init_env) or srun

"sharc" groups are served by the C++ backend (native.py: a c10d Backend compiled against the
installed torch, calling libsharc's C API directly; compiled on first use where the installed
one does not load). Each torch call posts sharc's collectives on contiguous buffers and returns
a Work that waits on sharc's requests; no loop over data runs in Python. CUDA tensors go
through sharc's CUDA path: NCCL on the communicator's stream, ordered after the current
stream, and wait() makes the current stream wait for it. docs/torch.md has the table of calls.

The modules: native (the C++ backend's loading and creator), _build (how it compiles),
rendezvous (the group's store address), launch (init_env), mem (tensors in sharc_mem_alloc
memory), fsdp (FSDP2 hooks), bench. This file registers the backend and re-exports the public
names.
"""

import torch.distributed as dist

from sharc import Dtype, InvalidError, Op, UnsupportedError  # noqa: F401  (as they always were)

from . import native
from .launch import init_env
from .mem import empty

BACKEND = "sharc"

_native_module = native.load()
"""The C++ backend's module."""
implementation = "native"
"""Which backend serves "sharc" groups (the C++ one: the Python one was retired)."""
ProcessGroupSharc = _native_module.ProcessGroupSharc

dist.Backend.register_backend(BACKEND, native.creator(_native_module), extended_api=True,
                              devices=["cpu", "cuda"])


def _register():
    """torch's entry point (group "torch.distributed.backends", the package's metadata):
    init_process_group("sharc") imports this module, which registers the backend, with no
    import in the user's program."""
    return None


__all__ = ["BACKEND", "ProcessGroupSharc", "empty", "implementation", "init_env"]
