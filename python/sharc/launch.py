# SPDX-License-Identifier: BSD-3-Clause
"""What the launcher told this process, as sharc's bootstrap reads it (sharc_launch_query).

libsharc detects the launcher (mpirun, torchrun / Kubeflow, srun) and reads its variables
the way a communicator's bootstrap would, the store address rules included; this module
only hands that report to Python. It creates and connects nothing.
"""

import collections
import ctypes

from . import _lib
from ._errors import check, error_mark

_c = _lib.lib

LaunchInfo = collections.namedtuple(
    "LaunchInfo", "launcher bootstrap rank size local_rank local_size node nnodes store_host "
    "store_port")
LaunchInfo.__doc__ = """sharc_launch_info_t: launcher ("none", "mpirun", "env", "slurm"), the
bootstrap a Comm() would use ("mpi", "env", "slurm", "single"), rank and size, local_rank and
local_size, node and nnodes (-1 where the launcher does not say), and the store a
communicator's bootstrap would use, store_host and store_port ("" and 0 where it has none)."""


def launch_info():
    """The launch report of this process under the SHARC_* variables' configuration; raises
    sharc's error (InvalidError naming the variable) where the launch variables are wrong."""
    info = _lib.LaunchInfo()
    mark = error_mark()
    check(_c.sharc_launch_query(None, ctypes.byref(info)), "sharc_launch_query", mark)
    return LaunchInfo(_c.sharc_launcher_name(info.launcher).decode(),
                      _c.sharc_bootstrap_name(info.bootstrap).decode(), info.rank, info.size,
                      info.local_rank, info.local_size, info.node, info.nnodes,
                      info.store_host.decode(), info.store_port)
