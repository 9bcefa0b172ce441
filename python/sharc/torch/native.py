# SPDX-License-Identifier: BSD-3-Clause
"""The C++ backend (sharc.torch._native, compiled from python/csrc/ against the installed torch
when the package is installed): loading it, and the creator torch.distributed calls for a group.

Each torch collective posts sharc collectives from C++ and returns a c10d Work that completes
from sharc's requests, with no Python on the way. It is sharc's one torch backend: a Python
one used to serve where the module could not be loaded, and was retired so that torch's
semantics are written once (docs/torch.md says why). Where the installed module does not
load (torch installed after sharc, or another version of it since: the ABI differs), it is
compiled now against the torch at hand from the sources the package carries, once per torch
version, into ${XDG_CACHE_HOME:-~/.cache}/sharc/torch-ext/; where that cannot be done (no C++
compiler), the import fails saying why and what to do. TORCH_SHARC_NATIVE names a built module
file to load instead (a build of the tree: tests/torch/native.py).
"""

import ctypes
import datetime
import importlib.util
import os
import warnings

import sharc

from . import _build
from .rendezvous import group_tag, store_address


def _from_file(path):
    spec = importlib.util.spec_from_file_location("_native", path)
    if spec is None:
        raise ImportError("TORCH_SHARC_NATIVE=%s is not a module file" % path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _compile(why):
    """The backend compiled against this torch from the package's sources (it did not load:
    @why); ImportError where it cannot be."""
    import torch

    pkg = os.path.dirname(os.path.abspath(sharc.__file__))
    csrc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_csrc")
    inc, libs = os.path.join(pkg, "_include"), os.path.join(pkg, "_libs")
    if not os.path.isfile(os.path.join(csrc, _build.SOURCES[0])) or \
            not os.path.isfile(os.path.join(libs, "libsharc.so.0")):
        raise ImportError("sharc: the C++ torch backend does not load (%s), and this package "
                          "carries no sources to compile it from: install sharc from its "
                          "source (pip install --no-build-isolation ./python, after torch)" %
                          why)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    where = os.path.join(cache, "sharc", "torch-ext",
                         "torch-%s-cuda-%s" % (torch.__version__, torch.version.cuda))
    warnings.warn("sharc: compiling the C++ torch backend for torch %s into %s (once per torch "
                  "version; the installed one does not load: %s)" % (torch.__version__, where,
                                                                      why),
                  RuntimeWarning, stacklevel=3)
    args = _build.ext_args(csrc, [inc], [libs], [libs], os.path.join(inc, "cuda_none"),
                           libsharc=":libsharc.so.0")
    try:
        return _build.load(args, where)
    except Exception as e:  # (a compiler's failure comes as RuntimeError or OSError)
        raise ImportError("sharc: the C++ torch backend does not load (%s) and could not be "
                          "compiled against torch %s: %s. A C++ compiler (g++) and torch's "
                          "headers (in its wheel) are needed; or reinstall sharc after torch "
                          "(pip install --no-build-isolation ./python)" %
                          (why, torch.__version__, str(e)[-600:])) from e


def load():
    """The C++ module: TORCH_SHARC_NATIVE's file, the installed one, or one compiled now."""
    path = os.environ.get("TORCH_SHARC_NATIVE")
    if path:
        return _from_file(path)
    try:
        from . import _native

        return _native
    except ImportError as e:  # not built at install, or built for another torch
        return _compile(str(e))


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
    milliseconds). Each group owns its communicator:
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
