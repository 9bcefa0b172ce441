# SPDX-License-Identifier: BSD-3-Clause
"""sharc as a torch.distributed backend.

    import sharc.torch                      # registers the backend "sharc" (cpu and cuda)
    dist.init_process_group("sharc")        # under torchrun, mpirun (see init_env) or srun

"sharc" groups are served by the C++ backend (native.py: a c10d Backend compiled against the
installed torch, calling libsharc's C API directly) where it loads, else by the Python one
(backend.py: a Python subclass of c10d's Backend over sharc.Comm), which says so once.
"sharc_py" always names the Python one (to compare them). Both post sharc collectives on
contiguous buffers and return a Work that waits on sharc's requests; no loop over data runs
in Python. CUDA tensors go through sharc's CUDA path: NCCL on the communicator's stream,
ordered after the current stream, and wait() makes the current stream wait for it.

What sharc has no collective for is emulated with sharc's collectives where that is exact
(reduce, gather and scatter; lists of tensors; uneven all-to-all by padding), and refused
with the reason otherwise (BAND/BOR/BXOR, reductions in dtypes sharc does not reduce).
Point-to-point (send, recv, from any rank too; torch's isend, irecv, batch_isend_irecv) is
sharc_send / sharc_recv. docs/torch.md has the table.

The modules: native (the C++ backend's loading and creator), backend (the Python process
group), tensors (torch's arguments as sharc's), work (the Python Work, futures), rendezvous
(the group's store address), launch (init_env), mem (tensors in sharc_mem_alloc memory),
fsdp (FSDP2 hooks), bench. This file registers the backends and re-exports the public names.
"""

import torch.distributed as dist

from sharc import Dtype, InvalidError, Op, UnsupportedError  # noqa: F401  (as they always were)

from . import native
from .backend import BACKEND, ProcessGroupSharc, SharcGroup
from .launch import init_env
from .mem import empty
from .work import GroupWork, Work

_SharcGroup = SharcGroup  # the mixin's older name (tests/torch/ops.py derives from it)
_group_class = ProcessGroupSharc  # what the Python backend makes (tests may swap it)
PYTHON_BACKEND = "sharc_py"


def _create_python(opts, backend_options=None):
    """torch's extended creator API: besides the store, rank, size and timeout, the group's
    ranks in the default group and its name, from which sharc makes the group's communicator
    out of the default group's without a new rendezvous (rendezvous.py)."""
    return _group_class(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                        global_ranks=list(opts.global_ranks_in_group), group_name=opts.group_id,
                        process_group=getattr(opts, "process_group", None))


_native_module, native_unavailable = native.load()
"""The C++ backend's module (None where it does not load), and why not."""
implementation = "native" if _native_module is not None else "python"
"""Which backend serves "sharc" groups: "native" or "python"."""

if _native_module is not None:
    dist.Backend.register_backend(BACKEND, native.creator(_native_module), extended_api=True,
                                  devices=["cpu", "cuda"])
else:
    dist.Backend.register_backend(BACKEND, _create_python, extended_api=True,
                                  devices=["cpu", "cuda"])
dist.Backend.register_backend(PYTHON_BACKEND, _create_python, extended_api=True,
                              devices=["cpu", "cuda"])


def _register():
    """torch's entry point (group "torch.distributed.backends", the package's metadata):
    init_process_group("sharc") imports this module, which registers the backends, with no
    import in the user's program."""
    return None


__all__ = ["BACKEND", "GroupWork", "ProcessGroupSharc", "SharcGroup", "Work", "empty",
           "implementation", "init_env"]
