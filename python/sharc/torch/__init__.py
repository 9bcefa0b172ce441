"""sharc as a torch.distributed backend.

    import sharc.torch                      # registers the backend "sharc" (cpu and cuda)
    dist.init_process_group("sharc")        # under torchrun, mpirun (see init_env) or srun

The backend is a Python subclass of torch's c10d Backend: torch's dispatcher calls its
methods, each turns the tensors into pointers and counts and posts one sharc collective
(libsharc through ctypes; the GIL is released while sharc runs), and the Work it returns
waits on sharc's request. No loop over data runs in Python. CUDA tensors go through sharc's
CUDA path: NCCL on the communicator's stream, ordered after the current stream, and wait()
makes the current stream wait for it (no host synchronization).

What sharc has no collective for is emulated with sharc's collectives where that is exact
(reduce, gather and scatter; lists of tensors; uneven all-to-all by padding), and refused
with UnsupportedError naming the op and the reason otherwise (send/recv, BAND/BOR/BXOR,
reductions in dtypes sharc does not reduce). docs/torch.md has the table.

The modules: backend (the process group: collectives), tensors (torch's arguments as
sharc's), work (Work, futures), rendezvous (the group's store address), launch (init_env),
mem (tensors in sharc_mem_alloc memory), fsdp (FSDP2 hooks), bench. This file registers the
backend and re-exports the public names.
"""

import torch.distributed as dist

from sharc import Dtype, InvalidError, Op, UnsupportedError  # noqa: F401  (as they always were)

from .backend import BACKEND, ProcessGroupSharc, SharcGroup
from .launch import init_env
from .mem import empty
from .work import GroupWork, Work

_SharcGroup = SharcGroup  # the mixin's older name (tests/torch/ops.py derives from it)
_group_class = ProcessGroupSharc  # what the "sharc" backend makes (tests may swap it)


def _create(opts, backend_options=None):
    """torch's extended creator API: besides the store, rank, size and timeout, the group's
    ranks in the default group and its name, from which sharc makes the group's communicator
    out of the default group's without a new rendezvous (rendezvous.py)."""
    return _group_class(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                        global_ranks=list(opts.global_ranks_in_group), group_name=opts.group_id,
                        process_group=getattr(opts, "process_group", None))


dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])

__all__ = ["BACKEND", "GroupWork", "ProcessGroupSharc", "SharcGroup", "Work", "empty",
           "init_env"]
