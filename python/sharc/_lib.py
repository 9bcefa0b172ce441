# SPDX-License-Identifier: BSD-3-Clause
"""Loading libsharc and declaring the public C API to ctypes.

The library is found, in this order, at $LIBSHARC (a path to libsharc.so), inside the package
(sharc/_libs/libsharc.so.0: pip install builds it there), through the dynamic loader's search
(LD_LIBRARY_PATH, the system's directories: an installed sharc), and in the libdir pkg-config
gives for sharc. UCX comes from the system, else from the libucx wheel. Nothing of sharc's logic lives here: every call
goes to the C library, and its statuses become exceptions (sharc/_errors.py).
"""

import ctypes
import importlib.util
import os
import subprocess
import sys

c_int, c_uint, c_size_t, c_void_p, c_char_p = (
    ctypes.c_int,
    ctypes.c_uint,
    ctypes.c_size_t,
    ctypes.c_void_p,
    ctypes.c_char_p,
)
c_ulong = ctypes.c_ulong
P = ctypes.POINTER


class CommParams(ctypes.Structure):
    """sharc_comm_params_t (sharc/comm.h)."""

    _fields_ = [
        ("field_mask", c_uint),
        ("bootstrap", c_int),
        ("rank", c_int),
        ("size", c_int),
        ("store_addr", c_char_p),
        ("token", c_char_p),
        ("node_id", c_int),
        ("local_rank", c_int),
        ("local_size", c_int),
    ]


class CollOpts(ctypes.Structure):
    """sharc_coll_opts_t (sharc/coll.h)."""

    _fields_ = [
        ("field_mask", c_uint),
        ("wire", c_int),
        ("block", c_size_t),
        ("flat", c_int),
    ]


class LaunchInfo(ctypes.Structure):
    """sharc_launch_info_t (sharc/launch.h)."""

    _fields_ = [
        ("launcher", c_int),
        ("bootstrap", c_int),
        ("rank", c_int),
        ("size", c_int),
        ("local_rank", c_int),
        ("local_size", c_int),
        ("node", c_int),
        ("nnodes", c_int),
        ("store_host", ctypes.c_char * 256),
        ("store_port", c_int),
    ]


class RecvInfo(ctypes.Structure):
    """sharc_recv_info_t (sharc/p2p.h)."""

    _fields_ = [("source", c_int), ("tag", c_int), ("count", c_size_t), ("bytes", c_size_t)]


# (name, restype, argtypes); c_int stands for sharc_status_t and the other enums
_PROTOS = [
    ("sharc_status_string", c_char_p, [c_int]),
    ("sharc_log_errors", c_ulong, [c_ulong, c_char_p, c_size_t]),
    ("sharc_get_version", c_char_p, [P(c_uint), P(c_uint), P(c_uint)]),
    ("sharc_build_info", c_char_p, []),
    ("sharc_dtype_size", c_size_t, [c_int]),
    ("sharc_dtype_name", c_char_p, [c_int]),
    ("sharc_dtype_from_name", c_int, [c_char_p, P(c_int)]),
    ("sharc_op_name", c_char_p, [c_int]),
    ("sharc_op_from_name", c_int, [c_char_p, P(c_int)]),
    ("sharc_config_create", c_int, [c_uint, P(c_void_p)]),
    ("sharc_config_set", c_int, [c_void_p, c_char_p, c_char_p]),
    ("sharc_config_get", c_int, [c_void_p, c_char_p, c_char_p, c_size_t]),
    ("sharc_config_destroy", None, [c_void_p]),
    ("sharc_context_create", c_int, [c_void_p, P(c_void_p)]),
    ("sharc_context_destroy", None, [c_void_p]),
    ("sharc_mem_alloc", c_int, [c_void_p, c_size_t, P(c_void_p)]),
    ("sharc_mem_free", c_int, [c_void_p, c_void_p]),
    ("sharc_comm_create", c_int, [c_void_p, P(CommParams), P(c_void_p)]),
    ("sharc_comm_split", c_int, [c_void_p, c_int, c_int, P(c_void_p)]),
    ("sharc_comm_create_group", c_int, [c_void_p, P(c_int), c_int, c_int, P(c_void_p)]),
    ("sharc_comm_barrier", c_int, [c_void_p]),
    ("sharc_comm_destroy", None, [c_void_p]),
    ("sharc_comm_rank", c_int, [c_void_p]),
    ("sharc_comm_size", c_int, [c_void_p]),
    ("sharc_comm_node", c_int, [c_void_p]),
    ("sharc_comm_nnodes", c_int, [c_void_p]),
    ("sharc_comm_local_rank", c_int, [c_void_p]),
    ("sharc_comm_local_size", c_int, [c_void_p]),
    ("sharc_comm_bootstrap", c_int, [c_void_p]),
    ("sharc_bootstrap_name", c_char_p, [c_int]),
    ("sharc_launch_query", c_int, [c_void_p, P(LaunchInfo)]),
    ("sharc_launcher_name", c_char_p, [c_int]),
    ("sharc_allgather", c_int, [c_void_p, c_void_p, c_size_t, c_int, c_void_p, P(c_void_p)]),
    (
        "sharc_allgather_ex",
        c_int,
        [c_void_p, c_void_p, c_size_t, c_int, P(CollOpts), c_void_p, P(c_void_p)],
    ),
    (
        "sharc_reduce_scatter_ex",
        c_int,
        [c_void_p, c_void_p, c_size_t, c_int, c_int, P(CollOpts), c_void_p, P(c_void_p)],
    ),
    ("sharc_wire_name", c_char_p, [c_int]),
    ("sharc_wire_from_name", c_int, [c_char_p, P(c_int)]),
    (
        "sharc_reduce_scatter",
        c_int,
        [c_void_p, c_void_p, c_size_t, c_int, c_int, c_void_p, P(c_void_p)],
    ),
    ("sharc_allreduce", c_int, [c_void_p, c_void_p, c_size_t, c_int, c_int, c_void_p, P(c_void_p)]),
    ("sharc_broadcast", c_int, [c_void_p, c_void_p, c_size_t, c_int, c_int, c_void_p, P(c_void_p)]),
    ("sharc_alltoall", c_int, [c_void_p, c_void_p, c_size_t, c_int, c_void_p, P(c_void_p)]),
    ("sharc_barrier", c_int, [c_void_p, P(c_void_p)]),
    ("sharc_send", c_int, [c_void_p, c_size_t, c_int, c_int, c_int, c_void_p, P(c_void_p)]),
    ("sharc_recv", c_int, [c_void_p, c_size_t, c_int, c_int, c_int, c_void_p, P(c_void_p)]),
    ("sharc_request_recv_info", c_int, [c_void_p, P(RecvInfo)]),
    ("sharc_p2p_group_start", c_int, [c_void_p]),
    ("sharc_p2p_group_end", c_int, [c_void_p]),
    ("sharc_request_test", c_int, [c_void_p]),
    ("sharc_request_wait", c_int, [c_void_p]),
    ("sharc_request_free", None, [c_void_p]),
]

# only in a library built with CUDA
_OPTIONAL = [
    ("sharc_comm_set_cuda_stream", c_int, [c_void_p, c_void_p]),
    ("sharc_request_wait_stream", c_int, [c_void_p, c_void_p]),
]


def _candidates():
    path = os.environ.get("LIBSHARC")
    if path:
        yield path
        return
    # the package's own (pip install builds libsharc into it)
    own = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_libs", "libsharc.so.0")
    if os.path.exists(own):
        yield own
    yield "libsharc.so.0"
    yield "libsharc.so"
    try:
        libdir = subprocess.run(
            ["pkg-config", "--variable=libdir", "sharc"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        libdir = ""
    if libdir:
        yield os.path.join(libdir, "libsharc.so.0")


def _torch_first():
    """Where torch is installed, load it before libsharc. libsharc may link a CUDA runtime
    and an NCCL of its own (libcudart.so.13, libnccl.so.2) older than those torch's wheel
    bundles: the loader takes a library of a given soname once per process, so whichever
    comes first is used by both, and torch fails to load on the older one (missing symbols)
    while libsharc runs on the newer one (the same ABI major version)."""
    if "torch" in sys.modules:
        return
    try:
        if importlib.util.find_spec("torch") is None:
            return
    except (ImportError, ValueError):
        return
    import torch  # noqa: F401


def _ucx_first():
    """libsharc links UCX (libucp.so.0): where the system has none, the libucx wheel's
    (pip install libucx-cu13: sharc[ucx]) is loaded first, and libsharc links against it."""
    try:
        ctypes.CDLL("libucp.so.0")
        return
    except OSError:
        pass
    try:
        import libucx

        libucx.load_library()
    except Exception:  # noqa: BLE001 (no wheel either: the load below says what is missing)
        pass


def _load():
    _torch_first()
    _ucx_first()
    tried = []
    for cand in _candidates():
        try:
            lib = ctypes.CDLL(cand)
        except OSError as e:
            tried.append("%s (%s)" % (cand, e))
            continue
        missing = [name for name, _, _ in _PROTOS if not hasattr(lib, name)]
        if missing:
            tried.append("%s (too old: lacks %s)" % (cand, ", ".join(missing)))
            continue
        for name, restype, argtypes in _PROTOS:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        for name, restype, argtypes in _OPTIONAL:
            if hasattr(lib, name):
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
        return lib, cand
    raise ImportError(
        "sharc: cannot load libsharc; tried " + "; ".join(tried) + ". Install sharc (make install), "
        "add its libdir to LD_LIBRARY_PATH, or set LIBSHARC to the path of libsharc.so"
    )


lib, path = _load()
