# SPDX-License-Identifier: BSD-3-Clause
"""The C++ backend (sharc.torch._native, compiled from python/csrc/ against the installed torch
when the package is installed): loading it, and the creator torch.distributed calls for a group.

Each torch collective then posts sharc collectives from C++ and returns a c10d Work that
completes from sharc's requests, with no Python on the way. Where the module cannot be loaded
(not built: no compiler, a torch without its headers; built for another torch), the Python
backend (backend.py) serves the groups instead, and a warning says why, once.

TORCH_SHARC_BACKEND picks one: "auto" (the default: native where it loads), "native" (an error
where it does not), "python". TORCH_SHARC_NATIVE names a built module file to load instead of
the package's own (a build of the tree: tests/torch/native.py).
"""

import ctypes
import datetime
import importlib.util
import os
import warnings

import sharc

from .rendezvous import group_tag, store_address

CHOICES = ("auto", "native", "python")


def _import():
    path = os.environ.get("TORCH_SHARC_NATIVE")
    if path:
        spec = importlib.util.spec_from_file_location("_native", path)
        if spec is None:
            raise ImportError("TORCH_SHARC_NATIVE=%s is not a module file" % path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    from . import _native

    return _native


def load():
    """(the C++ module or None, why not)."""
    choice = os.environ.get("TORCH_SHARC_BACKEND", "auto")
    if choice not in CHOICES:
        raise ValueError("TORCH_SHARC_BACKEND=%s: one of %s" % (choice, ", ".join(CHOICES)))
    if choice == "python":
        return None, "TORCH_SHARC_BACKEND=python"
    try:
        return _import(), None
    except (ImportError, OSError) as e:
        if choice == "native":
            raise ImportError("sharc: TORCH_SHARC_BACKEND=native, but the C++ backend does not "
                              "load: %s" % e) from e
        warnings.warn("sharc: the C++ torch backend is not available (%s); the Python backend "
                      "serves \"sharc\" groups (slower per call). Reinstall the package where a "
                      "C++ compiler and torch's headers are present to build it." % e,
                      RuntimeWarning, stacklevel=3)
        return None, str(e)


def _seconds(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout) if timeout is not None else 0.0


def _borrowed_comm(backend):
    """A C++ group's communicator as a sharc.Comm (the group owns it and keeps it: the Comm
    holds the group; its close() leaves the communicator to the group)."""
    h = backend.comm_handle
    if not h:
        raise sharc.InvalidError("the sharc group is shut down: it has no communicator",
                                 op="comm")
    return sharc.Comm(sharc.default_context(), _handle=ctypes.c_void_p(h), _owner=backend)


def creator(module):
    """torch.distributed's creator of a "sharc" group on the C++ backend (torch's extended
    API: the group's ranks in the default group and its name). The default group's
    communicator is made with sharc's explicit bootstrap (rendezvous.store_address); every
    later group's from it, by its members alone (sharc_comm_create_group: no rendezvous, a few
    milliseconds), as on the Python backend. Each C++ group owns its communicator:
    destroy_process_group (shutdown) destroys it, or its last reference does."""
    module.ProcessGroupSharc.comm = property(_borrowed_comm)

    def create(opts, backend_options=None):
        rank, size = opts.group_rank, opts.group_size
        ranks = list(opts.global_ranks_in_group)
        timeout = _seconds(opts.timeout)
        if size > 1 and ranks and module.world_size() > max(ranks):
            return module.create_group(ranks, group_tag(opts.group_id), timeout, opts.group_id)
        addr, token = ("", "") if size == 1 else store_address(opts.store, rank, size,
                                                               opts.timeout)
        return module.create(sharc.default_context().handle, rank, size, addr, token, timeout,
                             ranks, opts.group_id)

    return create
