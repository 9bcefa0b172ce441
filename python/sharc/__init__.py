"""sharc from Python: contexts, communicators, collectives, requests and shareable memory.

A thin layer over sharc's public C API (ctypes): every collective, check and algorithm runs in
libsharc; this module turns Python buffers into pointers and counts, and sharc's statuses into
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
"""

import ctypes
import enum
import weakref

from . import _lib
from ._errors import (  # noqa: F401  (re-exported)
    BackendError,
    InvalidError,
    NoMemError,
    RemoteError,
    SharcError,
    SharcIOError,
    SharcTimeoutError,
    UnsupportedError,
    check as _check,
    error_mark as _mark,
    make_error as _make_error,
)

_c = _lib.lib
byref = ctypes.byref
__version__ = _c.sharc_get_version(None, None, None).decode()
library_path = _lib.path


class Dtype(enum.IntEnum):
    """sharc_dtype_t."""

    F32 = 0
    F64 = 1
    F16 = 2
    BF16 = 3
    I32 = 4
    I64 = 5
    U8 = 6


class Op(enum.IntEnum):
    """sharc_op_t. AVG is defined for the floating-point dtypes only."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4


class Bootstrap(enum.IntEnum):
    """sharc_bootstrap_t."""

    AUTO = 0
    MPI = 1
    ENV = 2
    SLURM = 3
    EXPLICIT = 4
    SINGLE = 5


_DTYPE_NAMES = {
    "f32": Dtype.F32, "float32": Dtype.F32, "float": Dtype.F32,
    "f64": Dtype.F64, "float64": Dtype.F64, "double": Dtype.F64,
    "f16": Dtype.F16, "float16": Dtype.F16, "half": Dtype.F16,
    "bf16": Dtype.BF16, "bfloat16": Dtype.BF16,
    "i32": Dtype.I32, "int32": Dtype.I32,
    "i64": Dtype.I64, "int64": Dtype.I64,
    "u8": Dtype.U8, "uint8": Dtype.U8,
}  # fmt: skip
_OP_NAMES = {"sum": Op.SUM, "prod": Op.PROD, "product": Op.PROD, "min": Op.MIN, "max": Op.MAX,
             "avg": Op.AVG}  # fmt: skip
DTYPE_LIST = "f32, f64, f16, bf16, i32, i64, u8"


def dtype_of(value):
    """A Dtype from a Dtype, its name ("bf16", "float32", ...) or a torch/numpy dtype."""
    if isinstance(value, Dtype):
        return value
    if isinstance(value, str):
        d = _DTYPE_NAMES.get(value.lower())
    else:
        d = _DTYPE_NAMES.get(str(value).replace("torch.", "").lower())
    if d is None:
        raise InvalidError(
            "dtype %s is not one of sharc's (%s)" % (value, DTYPE_LIST), op="dtype"
        )
    return d


def op_of(value):
    """An Op from an Op or its name ("sum", "prod", "min", "max", "avg")."""
    if isinstance(value, Op):
        return value
    o = _OP_NAMES.get(str(value).lower())
    if o is None:
        raise InvalidError("op %s is not one of sharc's (sum, prod, min, max, avg)" % value, op="op")
    return o


# ---- buffers ------------------------------------------------------------------------------


class _PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
_PYBUF_WRITABLE, _PYBUF_FORMAT, _PYBUF_C_CONTIGUOUS = 0x0001, 0x0004, 0x0020 | 0x0010 | 0x0008

# struct format character -> dtype (by item size for the integer codes)
_FORMATS = {("f", 4): Dtype.F32, ("d", 8): Dtype.F64, ("e", 2): Dtype.F16, ("B", 1): Dtype.U8}
for _ch in "ilq":
    _FORMATS[(_ch, 4)] = Dtype.I32
    _FORMATS[(_ch, 8)] = Dtype.I64


class _Held:
    """A buffer export held while a collective uses the memory (released at completion)."""

    __slots__ = ("view",)

    def __init__(self, view):
        self.view = view

    def release(self):
        if self.view is not None:
            _release_buffer(byref(self.view))
            self.view = None

    def __del__(self):
        self.release()


class Buffer:
    """A contiguous piece of memory a collective reads or writes: pointer, size in bytes,
    sharc dtype (None when the object's element type is not one of sharc's) and whatever
    keeps the memory alive and exported until the collective completes."""

    __slots__ = ("ptr", "nbytes", "dtype", "itemsize", "keep", "is_cuda")

    def __init__(self, ptr, nbytes, dtype, itemsize, keep, is_cuda=False):
        self.ptr, self.nbytes, self.dtype, self.itemsize = ptr, nbytes, dtype, itemsize
        self.keep, self.is_cuda = keep, is_cuda

    def release(self):
        if isinstance(self.keep, _Held):
            self.keep.release()
        self.keep = None


_torch_dtypes = None


def _torch_dtype_map():
    global _torch_dtypes
    if _torch_dtypes is None:
        import torch

        _torch_dtypes = {
            torch.float32: Dtype.F32,
            torch.float64: Dtype.F64,
            torch.float16: Dtype.F16,
            torch.bfloat16: Dtype.BF16,
            torch.int32: Dtype.I32,
            torch.int64: Dtype.I64,
            torch.uint8: Dtype.U8,
        }
    return _torch_dtypes


def as_buffer(obj, writable, what, op):
    """The Buffer of @obj (a torch tensor or an object with the buffer protocol)."""
    if isinstance(obj, Buffer):
        return obj
    if type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr"):
        if obj.is_sparse or obj.layout.__repr__() != "torch.strided":
            raise InvalidError("%s: %s is a %s tensor; sharc takes dense (strided) tensors"
                               % (op, what, obj.layout), op=op)
        if not obj.is_contiguous():
            raise InvalidError("%s: %s is not contiguous (shape %s, strides %s); pass "
                               "tensor.contiguous()" % (op, what, tuple(obj.shape),
                                                         obj.stride()), op=op)
        return Buffer(obj.data_ptr(), obj.numel() * obj.element_size(),
                      _torch_dtype_map().get(obj.dtype), obj.element_size(), obj, obj.is_cuda)
    view = _PyBuffer()
    flags = _PYBUF_C_CONTIGUOUS | _PYBUF_FORMAT | (_PYBUF_WRITABLE if writable else 0)
    try:
        _get_buffer(obj, byref(view), flags)
    except (BufferError, TypeError, ValueError) as e:
        raise InvalidError("%s: %s (%s) cannot be used: %s; sharc takes C-contiguous%s "
                           "buffers (numpy arrays, memoryviews, torch tensors)"
                           % (op, what, type(obj).__name__, e,
                              " writable" if writable else ""), op=op) from None
    fmt = (view.format or b"B").decode().lstrip("@=<>!")
    held = _Held(view)
    return Buffer(view.buf or 0, view.len, _FORMATS.get((fmt, view.itemsize)), view.itemsize,
                  held)


def _elem_dtype(bufs, dtype, op, reducing):
    """The dtype a collective runs in: the explicit one, else the buffers' own; for moving
    data without reducing, bytes (u8) when the element type is not one of sharc's."""
    if dtype is not None:
        return dtype_of(dtype)
    d = bufs[0].dtype
    for b in bufs[1:]:
        if b.dtype != d:
            raise InvalidError("%s: the buffers' dtypes differ (%s, %s)"
                               % (op, d and d.name.lower(), b.dtype and b.dtype.name.lower()),
                               op=op)
    if d is None:
        if reducing:
            raise InvalidError("%s: the buffer's element type is not one sharc reduces (%s); "
                               "pass dtype= for raw memory" % (op, DTYPE_LIST), op=op)
        return Dtype.U8
    return d


def _count(buf, dtype, op, what):
    size = _c.sharc_dtype_size(dtype)
    if buf.nbytes % size != 0:
        raise InvalidError("%s: %s holds %d bytes, not a whole number of %s elements"
                           % (op, what, buf.nbytes, dtype.name.lower()), op=op)
    return buf.nbytes // size


# ---- context and memory --------------------------------------------------------------------


class Context:
    """A sharc context: one parsed configuration (SHARC_* variables, then @config) and what
    its communicators share. @config maps knob names ("TIMEOUT", "SHARC_CHECK", ...) to
    values as text. close() (or garbage collection) releases it once its communicators and
    memory are gone."""

    def __init__(self, config=None, env=True):
        cfg = ctypes.c_void_p()
        mark = _mark()
        _check(_c.sharc_config_create(0 if env else 1, byref(cfg)), "sharc_config_create", mark)
        try:
            for k, v in (config or {}).items():
                mark = _mark()
                _check(_c.sharc_config_set(cfg, str(k).encode(), str(v).encode()),
                       "sharc_config_set(%s)" % k, mark)
            h = ctypes.c_void_p()
            mark = _mark()
            _check(_c.sharc_context_create(cfg, byref(h)), "sharc_context_create", mark)
        finally:
            _c.sharc_config_destroy(cfg)
        self._h = h

    @property
    def handle(self):
        return self._h.value

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
        mark = _mark()
        _check(_c.sharc_mem_alloc(self._h, nbytes, byref(p)), "sharc_mem_alloc", mark)
        mem = _memory_type(nbytes).from_address(p.value)
        mem._block = _Block(self, p.value)
        return mem

    def empty(self, shape, dtype="f32"):
        """A numpy array in sharc_mem_alloc memory (zero-filled)."""
        import numpy as np

        np_dtype = np.dtype(_NUMPY_NAMES[dtype_of(dtype)]) if not isinstance(
            dtype, np.dtype) else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = 1
        for s in shape:
            n *= int(s)
        mem = self.alloc(n * np_dtype.itemsize)
        return np.frombuffer(mem, dtype=np_dtype, count=n).reshape(shape)

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h is not None and h.value:
            _c.sharc_context_destroy(h)

    def __del__(self):
        self.close()


_NUMPY_NAMES = {Dtype.F32: "float32", Dtype.F64: "float64", Dtype.F16: "float16",
                Dtype.I32: "int32", Dtype.I64: "int64", Dtype.U8: "uint8",
                Dtype.BF16: "uint16"}  # numpy has no bf16: its bits as uint16  # fmt: skip


class _Block:
    """One sharc_mem_alloc allocation; holds its context so the context outlives it."""

    __slots__ = ("ctx", "ptr")

    def __init__(self, ctx, ptr):
        self.ctx, self.ptr = ctx, ptr

    def __del__(self):
        if self.ptr and self.ctx._h is not None:
            _c.sharc_mem_free(self.ctx._h, ctypes.c_void_p(self.ptr))
        self.ptr = None


_memory_types = {}


def _memory_type(nbytes):
    t = _memory_types.get(nbytes)
    if t is None:
        t = type("SharcMemory", (ctypes.c_ubyte * nbytes,), {"ptr": property(ctypes.addressof)})
        if len(_memory_types) < 256:
            _memory_types[nbytes] = t
    return t


_default_ctx = None


def default_context():
    """The process's shared context (SHARC_* variables), made on first use."""
    global _default_ctx
    if _default_ctx is None:
        _default_ctx = Context()
    return _default_ctx


# ---- requests ------------------------------------------------------------------------------


class Request:
    """A collective in flight. wait() blocks until it is done (raising its error); test()
    says whether it is; either releases it once done. The buffers stay referenced until then.
    The error of a failed request carries every error sharc logged since it was posted."""

    __slots__ = ("_h", "comm", "op", "bufs", "mark", "error", "__weakref__")

    def __init__(self, handle, comm, op, bufs, mark):
        self._h, self.comm, self.op, self.bufs, self.mark = handle, comm, op, bufs, mark
        self.error = None

    def _finish(self, status):
        _c.sharc_request_free(self._h)
        self._h = None
        for b in self.bufs:
            b.release()
        self.bufs = ()
        if status != 0:
            self.error = self.comm._failure(status, self.op, self.mark)

    def wait(self):
        """Block until the collective is done; raise its error."""
        if self._h is not None:
            self._finish(_c.sharc_request_wait(self._h))
        if self.error is not None:
            raise self.error

    def wait_stream(self, stream):
        """CUDA: make @stream (a cudaStream_t as an int) wait for the collective, at once
        (a host collective is waited for as by wait())."""
        if self._h is not None:
            self._finish(_c.sharc_request_wait_stream(self._h, ctypes.c_void_p(stream)))
        if self.error is not None:
            raise self.error

    def test(self):
        """Whether the collective is done (progressing it); raise its error."""
        if self._h is not None:
            status = _c.sharc_request_test(self._h)
            if status == 1:  # SHARC_INPROGRESS
                return False
            self._finish(status)
        if self.error is not None:
            raise self.error
        return True

    @property
    def done(self):
        return self._h is None

    def free(self):
        """Release without raising (completes it first, as sharc_request_free does)."""
        if self._h is not None:
            self._finish(_c.sharc_request_wait(self._h))

    def __del__(self):
        if getattr(self, "_h", None) is not None:
            _c.sharc_request_free(self._h)


# ---- communicators -------------------------------------------------------------------------

_PARAM_BOOTSTRAP, _PARAM_RANK, _PARAM_STORE, _PARAM_TOKEN, _PARAM_LOCAL = 1, 2, 4, 8, 16


class Comm:
    """A sharc communicator. Created from a bootstrap as in C: by default (auto) mpirun's,
    then torchrun's / Kubeflow's (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), then Slurm's
    variables, else one process; or bootstrap="explicit" with rank, size and store_addr
    ("host:port", served by rank 0). Collective: every rank of the job calls it."""

    def __init__(self, ctx=None, bootstrap=None, rank=None, size=None, store_addr=None,
                 token=None, node_id=None, local_rank=None, local_size=None, _handle=None):
        self.ctx = ctx if ctx is not None else default_context()
        self._failed = None  # the first error of a collective: later ones repeat it
        self._reqs = weakref.WeakSet()
        if _handle is not None:
            self._h = _handle
        else:
            p = _lib.CommParams()
            if bootstrap is not None:
                p.field_mask |= _PARAM_BOOTSTRAP
                p.bootstrap = (Bootstrap[bootstrap.upper()] if isinstance(bootstrap, str)
                               else int(bootstrap))
            if rank is not None or size is not None:
                p.field_mask |= _PARAM_RANK
                p.rank, p.size = int(rank), int(size)
            if store_addr is not None:
                p.field_mask |= _PARAM_STORE
                p.store_addr = store_addr.encode()
            if token is not None:
                p.field_mask |= _PARAM_TOKEN
                p.token = token.encode()
            if node_id is not None:
                p.field_mask |= _PARAM_LOCAL
                p.node_id, p.local_rank, p.local_size = node_id, local_rank, local_size
            h = ctypes.c_void_p()
            mark = _mark()
            _check(_c.sharc_comm_create(self.ctx._h, byref(p), byref(h)), "sharc_comm_create",
                   mark)
            self._h = h
        self.rank = _c.sharc_comm_rank(self._h)
        self.size = _c.sharc_comm_size(self._h)
        self.node = _c.sharc_comm_node(self._h)
        self.nnodes = _c.sharc_comm_nnodes(self._h)
        self.local_rank = _c.sharc_comm_local_rank(self._h)
        self.local_size = _c.sharc_comm_local_size(self._h)
        self.bootstrap = _c.sharc_bootstrap_name(_c.sharc_comm_bootstrap(self._h)).decode()

    def __repr__(self):
        return "<sharc.Comm rank %d of %d, node %d of %d, %s>" % (
            self.rank, self.size, self.node, self.nnodes, self.bootstrap)

    # A failed collective fails the communicator (the ranks no longer agree on what is in
    # flight): the collectives after it fail too, and their errors name the first cause.
    def _failure(self, status, op, mark):
        err = _make_error(status, op, mark)
        if self._failed is None:
            self._failed = err
        else:
            err = _make_error(status, op, detail=(err.detail + "\n" if err.detail else "")
                              + "the first failure on this communicator: " + str(self._failed))
        return err

    def _post(self, op, fn, args, bufs, async_op):
        if self._h is None:
            raise InvalidError("%s: the communicator is closed" % op, op=op)
        req = ctypes.c_void_p()
        mark = _mark()
        status = fn(*args, byref(req))
        if status != 0:
            for b in bufs:
                b.release()
            if status in (-1, -3) and self._failed is None:
                raise _make_error(status, op, mark)  # a bad argument: this rank's alone
            raise self._failure(status, op, mark)
        r = Request(req, self, op, bufs, mark)
        self._reqs.add(r)
        if not async_op:
            r.wait()
            return None
        return r

    @property
    def handle(self):
        return self._h.value

    def split(self, color, key=None):
        """sharc_comm_split: ranks with the same color form a communicator (None for color
        < 0, SHARC_COMM_SPLIT_NOCOLOR)."""
        h = ctypes.c_void_p()
        mark = _mark()
        _check(_c.sharc_comm_split(self._h, int(color), self.rank if key is None else int(key),
                                   byref(h)), "sharc_comm_split", mark)
        return Comm(self.ctx, _handle=h) if h.value else None

    def bootstrap_barrier(self):
        """sharc_comm_barrier: through the bootstrap, for startup and tests."""
        mark = _mark()
        _check(_c.sharc_comm_barrier(self._h), "sharc_comm_barrier", mark)

    def barrier(self, async_op=False):
        return self._post("sharc_barrier", _c.sharc_barrier, (self._h,), (), async_op)

    def allgather(self, sendbuf, recvbuf, dtype=None, async_op=False):
        """Rank i's sendbuf lands at block i of every rank's recvbuf (size times as long).
        In place when sendbuf is recvbuf's block of this rank."""
        op = "sharc_allgather"
        s = as_buffer(sendbuf, False, "sendbuf", op)
        r = as_buffer(recvbuf, True, "recvbuf", op)
        d = _elem_dtype([s, r], dtype, op, False)
        if r.nbytes != s.nbytes * self.size:
            raise InvalidError("%s: recvbuf holds %d bytes, not size (%d) x sendbuf's %d"
                               % (op, r.nbytes, self.size, s.nbytes), op=op)
        n = _count(s, d, op, "sendbuf")
        return self._post(op, _c.sharc_allgather, (s.ptr, r.ptr, n, d, self._h), (s, r),
                          async_op)

    def reduce_scatter(self, sendbuf, recvbuf, op="sum", dtype=None, async_op=False):
        """Block i of every rank's sendbuf (size blocks of recvbuf's length) is reduced into
        rank i's recvbuf. In place when recvbuf is sendbuf's block of this rank."""
        name = "sharc_reduce_scatter"
        s = as_buffer(sendbuf, False, "sendbuf", name)
        r = as_buffer(recvbuf, True, "recvbuf", name)
        d = _elem_dtype([s, r], dtype, name, True)
        if s.nbytes != r.nbytes * self.size:
            raise InvalidError("%s: sendbuf holds %d bytes, not size (%d) x recvbuf's %d"
                               % (name, s.nbytes, self.size, r.nbytes), op=name)
        n = _count(r, d, name, "recvbuf")
        return self._post(name, _c.sharc_reduce_scatter,
                          (s.ptr, r.ptr, n, d, op_of(op), self._h), (s, r), async_op)

    def allreduce(self, sendbuf, recvbuf=None, op="sum", dtype=None, async_op=False):
        """Every rank's sendbuf reduced into every rank's recvbuf (sendbuf when None)."""
        name = "sharc_allreduce"
        s = as_buffer(sendbuf, recvbuf is None, "sendbuf", name)
        r = s if recvbuf is None else as_buffer(recvbuf, True, "recvbuf", name)
        d = _elem_dtype([s, r], dtype, name, True)
        if r.nbytes != s.nbytes:
            raise InvalidError("%s: recvbuf holds %d bytes, sendbuf %d"
                               % (name, r.nbytes, s.nbytes), op=name)
        n = _count(s, d, name, "sendbuf")
        return self._post(name, _c.sharc_allreduce, (s.ptr, r.ptr, n, d, op_of(op), self._h),
                          (s, r) if r is not s else (s,), async_op)

    def broadcast(self, buf, root=0, recvbuf=None, dtype=None, async_op=False):
        """root's buf lands in every rank's recvbuf (buf itself when None)."""
        name = "sharc_broadcast"
        s = as_buffer(buf, recvbuf is None, "buf", name)
        r = s if recvbuf is None else as_buffer(recvbuf, True, "recvbuf", name)
        d = _elem_dtype([s, r], dtype, name, False)
        if r.nbytes != s.nbytes:
            raise InvalidError("%s: recvbuf holds %d bytes, buf %d" % (name, r.nbytes, s.nbytes),
                               op=name)
        n = _count(r, d, name, "buf")
        return self._post(name, _c.sharc_broadcast, (s.ptr, r.ptr, n, d, int(root), self._h),
                          (s, r) if r is not s else (s,), async_op)

    def alltoall(self, sendbuf, recvbuf, dtype=None, async_op=False):
        """Block j of rank i's sendbuf lands in block i of rank j's recvbuf (size equal
        blocks each). In place when sendbuf is recvbuf."""
        name = "sharc_alltoall"
        s = as_buffer(sendbuf, False, "sendbuf", name)
        r = as_buffer(recvbuf, True, "recvbuf", name)
        d = _elem_dtype([s, r], dtype, name, False)
        if r.nbytes != s.nbytes:
            raise InvalidError("%s: recvbuf holds %d bytes, sendbuf %d"
                               % (name, r.nbytes, s.nbytes), op=name)
        n = _count(s, d, name, "sendbuf")
        if n % self.size != 0:
            raise InvalidError("%s: %d elements do not make %d equal blocks"
                               % (name, n, self.size), op=name)
        return self._post(name, _c.sharc_alltoall, (s.ptr, r.ptr, n // self.size, d, self._h),
                          (s, r), async_op)

    def set_cuda_stream(self, stream):
        """sharc_comm_set_cuda_stream: the cudaStream_t (an int) the caller's work runs on."""
        fn = getattr(_c, "sharc_comm_set_cuda_stream", None)
        if fn is None:
            raise UnsupportedError("sharc_comm_set_cuda_stream: libsharc was built without "
                                   "CUDA", op="sharc_comm_set_cuda_stream")
        mark = _mark()
        _check(fn(self._h, ctypes.c_void_p(stream)), "sharc_comm_set_cuda_stream", mark)

    def close(self):
        """Destroy the communicator (pending requests are completed and freed first)."""
        h = getattr(self, "_h", None)
        if h is None:
            return
        for r in list(self._reqs):
            r.free()
        self._h = None
        _c.sharc_comm_destroy(h)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def build_info():
    return _c.sharc_build_info().decode()
