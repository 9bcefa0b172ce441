# SPDX-License-Identifier: BSD-3-Clause
"""sharc communicators, their collectives and point-to-point messages, and the requests of
those in flight.

Each call turns its buffers into pointers and counts (sharc.buffers), checks what Python can
check before anything is sent, and posts one sharc collective, send or receive; sharc runs
and checks the rest. Contexts and memory are sharc.context's; launch variables sharc.launch's.
"""

import collections
import contextlib
import ctypes
import weakref

from . import _lib
from ._errors import (
    INPROGRESS,
    OK,
    BackendError,
    InvalidError,
    RemoteError,
    SharcTimeoutError,
    UnsupportedError,
    check,
    error_mark,
    make_error,
)
from .buffers import as_buffer, count, run_dtype
from .context import default_context
from .types import Bootstrap, op_of, wire_of

_c = _lib.lib

ANY_SOURCE = -1  # SHARC_ANY_SOURCE: Comm.recv from any rank (src=None says the same)
TAG_MAX = 0x7FFFFFFF  # SHARC_TAG_MAX: tags are 0 .. TAG_MAX

# What a completed receive received (sharc_recv_info_t): the sender, the tag, the whole
# elements of the receive's dtype, the bytes.
RecvInfo = collections.namedtuple("RecvInfo", "source tag count nbytes")

# Errors of a send or receive that fail its communicator too (a peer or a transport failed);
# any other (a message too long for its receive) is that operation's alone.
_P2P_FATAL = (RemoteError.status, BackendError.status, SharcTimeoutError.status)


class Request:
    """A collective, send or receive in flight. wait() blocks until it is done (raising its
    error); test() says whether it is; either releases it once done. The buffers stay
    referenced until then. The error of a failed request carries every error sharc logged
    since it was posted. A receive's request says, once done, what it received: info (a
    RecvInfo), and source, tag, count."""

    __slots__ = ("_h", "comm", "op", "bufs", "mark", "error", "kind", "info", "__weakref__")

    def __init__(self, handle, comm, op, bufs, mark, kind=None):
        self._h, self.comm, self.op, self.bufs, self.mark = handle, comm, op, bufs, mark
        self.kind = kind  # None: a collective; "send" or "recv"
        self.error = self.info = None

    def _finish(self, status, _free=_c.sharc_request_free, _info=_c.sharc_request_recv_info):
        if status == OK and self.kind == "recv":
            i = _lib.RecvInfo()
            if _info(self._h, ctypes.byref(i)) == OK:
                self.info = RecvInfo(i.source, i.tag, i.count, i.bytes)
        _free(self._h)
        self._h = None
        for b in self.bufs:
            b.release()
        self.bufs = ()
        if status != OK:
            if self.kind is not None and status not in _P2P_FATAL:
                self.error = make_error(status, self.op, self.mark)
            else:
                self.error = self.comm._failure(status, self.op, self.mark)

    @property
    def source(self):
        """A receive that completed: the sender's rank (None before)."""
        return self.info.source if self.info is not None else None

    @property
    def tag(self):
        return self.info.tag if self.info is not None else None

    @property
    def count(self):
        return self.info.count if self.info is not None else None

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
            if status == INPROGRESS:
                return False
            self._finish(status)
        if self.error is not None:
            raise self.error
        return True

    @property
    def done(self):
        return self._h is None

    # (destructors' C functions are bound at definition: see Context.close)
    def free(self, _wait=_c.sharc_request_wait):
        """Release without raising (completes it first, as sharc_request_free does)."""
        if self._h is not None:
            self._finish(_wait(self._h))

    def __del__(self, _free=_c.sharc_request_free):
        if getattr(self, "_h", None) is not None:
            _free(self._h)


_PARAM_BOOTSTRAP, _PARAM_RANK, _PARAM_STORE, _PARAM_TOKEN, _PARAM_LOCAL = 1, 2, 4, 8, 16
_OPT_WIRE, _OPT_BLOCK, _OPT_FLAT = 1, 2, 4  # sharc_coll_opts_t's field_mask

# how the two buffers of a collective compare: equal, or one size times the other
_SAME, _GATHER, _SCATTER = 0, 1, 2


def _params(bootstrap, rank, size, store_addr, token, node_id, local_rank, local_size):
    """The sharc_comm_params_t of Comm's arguments (None: not given)."""
    p = _lib.CommParams()
    if bootstrap is not None:
        p.field_mask |= _PARAM_BOOTSTRAP
        p.bootstrap = Bootstrap[bootstrap.upper()] if isinstance(bootstrap, str) else int(bootstrap)
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
    return p


def _coll_opts(wire, block, flat):
    """The sharc_coll_opts_t of a collective's wire= block= flat= (None: not given)."""
    o = _lib.CollOpts()
    o.field_mask = _OPT_WIRE
    o.wire = wire_of(wire)
    if block is not None:
        o.field_mask |= _OPT_BLOCK
        o.block = int(block)
    if flat is not None:
        o.field_mask |= _OPT_FLAT
        o.flat = int(bool(flat))
    return o


class Comm:
    """A sharc communicator. Created from a bootstrap as in C: by default (auto) mpirun's,
    then torchrun's / Kubeflow's (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), then Slurm's
    variables, else one process; or bootstrap="explicit" with rank, size and store_addr
    ("host:port", served by rank 0). Collective: every rank of the job calls it.

    The collectives take buffers as anything with the buffer protocol, torch tensors, or
    sharc.Buffer (raw memory: a pointer and a size); dtype= names the element type they run
    in (else the buffers'); async_op=True returns a Request instead of waiting."""

    def __init__(self, ctx=None, bootstrap=None, rank=None, size=None, store_addr=None,
                 token=None, node_id=None, local_rank=None, local_size=None, _handle=None,
                 _owner=None):
        self.ctx = ctx if ctx is not None else default_context()
        self._owner = _owner  # what owns a borrowed _handle (close() leaves it to it)
        self._failed = None  # the first error of a collective: later ones repeat it
        self._reqs = weakref.WeakSet()
        if _handle is not None:
            self._h = _handle
        else:
            p = _params(bootstrap, rank, size, store_addr, token, node_id, local_rank, local_size)
            h = ctypes.c_void_p()
            mark = error_mark()
            check(_c.sharc_comm_create(self.ctx.handle, ctypes.byref(p), ctypes.byref(h)),
                  "sharc_comm_create", mark)
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
        err = make_error(status, op, mark)
        if self._failed is None:
            self._failed = err
        else:
            err = make_error(status, op, detail=(err.detail + "\n" if err.detail else "")
                             + "the first failure on this communicator: " + str(self._failed))
        return err

    def _post(self, op, fn, args, bufs, async_op, kind=None):
        if self._h is None:
            raise InvalidError("%s: the communicator is closed" % op, op=op)
        req = ctypes.c_void_p()
        mark = error_mark()
        status = fn(*args, ctypes.byref(req))
        if status != OK:
            for b in bufs:
                b.release()
            if status in (InvalidError.status, UnsupportedError.status) and self._failed is None:
                raise make_error(status, op, mark)  # a bad argument: this rank's alone
            raise self._failure(status, op, mark)
        r = Request(req, self, op, bufs, mark, kind)
        self._reqs.add(r)
        if not async_op:
            r.wait()
            return r.info if kind == "recv" else None
        return r

    def _operands(self, op, sendbuf, recvbuf, dtype, reducing, shape, send_what="sendbuf",
                  in_place=False):
        """(send, recv, dtype, count) of a collective: its Buffers (recv is send when
        @in_place and @recvbuf is None), the dtype it runs in and the count of its smaller
        buffer, whose sizes @shape relates (_SAME, _GATHER: recv is size x send, _SCATTER:
        send is size x recv)."""
        in_place = in_place and recvbuf is None
        s = as_buffer(sendbuf, in_place, send_what, op)
        r = s if in_place else as_buffer(recvbuf, True, "recvbuf", op)
        d = run_dtype([s, r], dtype, op, reducing)
        big, small, whats = (s, r, (send_what, "recvbuf")) if shape == _SCATTER else \
            (r, s, ("recvbuf", send_what))
        if shape == _SAME and r.nbytes != s.nbytes:
            raise InvalidError("%s: %s holds %d bytes, %s %d"
                               % (op, whats[0], big.nbytes, whats[1], small.nbytes), op=op)
        if shape != _SAME and big.nbytes != small.nbytes * self.size:
            raise InvalidError("%s: %s holds %d bytes, not size (%d) x %s's %d"
                               % (op, whats[0], big.nbytes, self.size, whats[1], small.nbytes),
                               op=op)
        return s, r, d, count(small, d, op, whats[1])

    @property
    def handle(self):
        return self._h.value

    def split(self, color, key=None):
        """sharc_comm_split: ranks with the same color form a communicator (None for color
        < 0, SHARC_COMM_SPLIT_NOCOLOR)."""
        h = ctypes.c_void_p()
        mark = error_mark()
        check(_c.sharc_comm_split(self._h, int(color), self.rank if key is None else int(key),
                                  ctypes.byref(h)), "sharc_comm_split", mark)
        return Comm(self.ctx, _handle=h) if h.value else None

    def create_group(self, ranks, tag=0):
        """sharc_comm_create_group: a communicator of the listed ranks of this one (rank i of
        it is ranks[i]), called by those ranks only, over this communicator's bootstrap.
        Members make the groups of one list and tag in the same order."""
        ranks = [int(r) for r in ranks]
        arr = (ctypes.c_int * len(ranks))(*ranks)
        h = ctypes.c_void_p()
        mark = error_mark()
        check(_c.sharc_comm_create_group(self._h, arr, len(ranks), int(tag), ctypes.byref(h)),
              "sharc_comm_create_group", mark)
        return Comm(self.ctx, _handle=h)

    def bootstrap_barrier(self):
        """sharc_comm_barrier: through the bootstrap, for startup and tests."""
        mark = error_mark()
        check(_c.sharc_comm_barrier(self._h), "sharc_comm_barrier", mark)

    def barrier(self, async_op=False):
        return self._post("sharc_barrier", _c.sharc_barrier, (self._h,), (), async_op)

    def allgather(self, sendbuf, recvbuf, dtype=None, async_op=False, wire=None, block=None):
        """Rank i's sendbuf lands at block i of every rank's recvbuf (size times as long).
        In place when sendbuf is recvbuf's block of this rank. wire="int8" or "fp8" sends
        block-quantized values (block= values per scale, default 256): every rank gets the
        same dequantized values (sharc_allgather_ex)."""
        op = "sharc_allgather"
        s, r, d, n = self._operands(op, sendbuf, recvbuf, dtype, False, _GATHER)
        if wire is not None:
            o = _coll_opts(wire, block, None)
            return self._post("sharc_allgather_ex", _c.sharc_allgather_ex,
                              (s.ptr, r.ptr, n, d, ctypes.byref(o), self._h), (s, r), async_op)
        return self._post(op, _c.sharc_allgather, (s.ptr, r.ptr, n, d, self._h), (s, r),
                          async_op)

    def reduce_scatter(self, sendbuf, recvbuf, op="sum", dtype=None, async_op=False, wire=None,
                       block=None, flat=None):
        """Block i of every rank's sendbuf (size blocks of recvbuf's length) is reduced into
        rank i's recvbuf. In place when recvbuf is sendbuf's block of this rank. wire="int8"
        or "fp8" (op sum or avg): full precision within a node, quantized between nodes
        (flat=True: every hop), summed in f32 (sharc_reduce_scatter_ex)."""
        name = "sharc_reduce_scatter"
        s, r, d, n = self._operands(name, sendbuf, recvbuf, dtype, True, _SCATTER)
        if wire is not None:
            o = _coll_opts(wire, block, flat)
            return self._post("sharc_reduce_scatter_ex", _c.sharc_reduce_scatter_ex,
                              (s.ptr, r.ptr, n, d, op_of(op), ctypes.byref(o), self._h), (s, r),
                              async_op)
        return self._post(name, _c.sharc_reduce_scatter,
                          (s.ptr, r.ptr, n, d, op_of(op), self._h), (s, r), async_op)

    def allreduce(self, sendbuf, recvbuf=None, op="sum", dtype=None, async_op=False):
        """Every rank's sendbuf reduced into every rank's recvbuf (sendbuf when None)."""
        name = "sharc_allreduce"
        s, r, d, n = self._operands(name, sendbuf, recvbuf, dtype, True, _SAME, in_place=True)
        return self._post(name, _c.sharc_allreduce, (s.ptr, r.ptr, n, d, op_of(op), self._h),
                          (s, r) if r is not s else (s,), async_op)

    def broadcast(self, buf, root=0, recvbuf=None, dtype=None, async_op=False):
        """root's buf lands in every rank's recvbuf (buf itself when None)."""
        name = "sharc_broadcast"
        s, r, d, n = self._operands(name, buf, recvbuf, dtype, False, _SAME, "buf", True)
        return self._post(name, _c.sharc_broadcast, (s.ptr, r.ptr, n, d, int(root), self._h),
                          (s, r) if r is not s else (s,), async_op)

    def alltoall(self, sendbuf, recvbuf, dtype=None, async_op=False):
        """Block j of rank i's sendbuf lands in block i of rank j's recvbuf (size equal
        blocks each). In place when sendbuf is recvbuf."""
        name = "sharc_alltoall"
        s, r, d, n = self._operands(name, sendbuf, recvbuf, dtype, False, _SAME)
        if n % self.size != 0:
            raise InvalidError("%s: %d elements do not make %d equal blocks"
                               % (name, n, self.size), op=name)
        return self._post(name, _c.sharc_alltoall, (s.ptr, r.ptr, n // self.size, d, self._h),
                          (s, r), async_op)

    def send(self, buf, dst, tag=0, dtype=None, async_op=False):
        """sharc_send: buf (all of it) to rank dst with tag (0 .. TAG_MAX). Messages from one
        rank to another with one tag arrive in the order they were sent. async_op=True
        returns a Request."""
        name = "sharc_send"
        b = as_buffer(buf, False, "buf", name)
        d = run_dtype([b], dtype, name, False)
        return self._post(name, _c.sharc_send,
                          (b.ptr, count(b, d, name, "buf"), d, int(dst), int(tag), self._h), (b,),
                          async_op, "send")

    def recv(self, buf, src=None, tag=0, dtype=None, async_op=False):
        """sharc_recv: a message with tag from rank src (None or ANY_SOURCE: from any rank)
        into buf, which holds up to its size; a longer message raises InvalidError and fails
        this receive only. Returns the RecvInfo (source, tag, count, nbytes), or with
        async_op=True a Request whose info, source, tag and count say it once done."""
        name = "sharc_recv"
        b = as_buffer(buf, True, "buf", name)
        d = run_dtype([b], dtype, name, False)
        peer = ANY_SOURCE if src is None else int(src)
        return self._post(name, _c.sharc_recv,
                          (b.ptr, count(b, d, name, "buf"), d, peer, int(tag), self._h), (b,),
                          async_op, "recv")

    @contextlib.contextmanager
    def p2p_group(self):
        """sharc_p2p_group_start / end around the block: its sends and receives on CUDA
        buffers are issued together at its end (one NCCL group), so that a rank may send to
        and receive from the same peers; they must be async_op=True (wait after the block)."""
        mark = error_mark()
        check(_c.sharc_p2p_group_start(self._h), "sharc_p2p_group_start", mark)
        try:
            yield self
        finally:
            mark = error_mark()
            check(_c.sharc_p2p_group_end(self._h), "sharc_p2p_group_end", mark)

    def set_cuda_stream(self, stream):
        """sharc_comm_set_cuda_stream: the cudaStream_t (an int) the caller's work runs on."""
        fn = getattr(_c, "sharc_comm_set_cuda_stream", None)
        if fn is None:
            raise UnsupportedError("sharc_comm_set_cuda_stream: libsharc was built without "
                                   "CUDA", op="sharc_comm_set_cuda_stream")
        mark = error_mark()
        check(fn(self._h, ctypes.c_void_p(stream)), "sharc_comm_set_cuda_stream", mark)

    def close(self, _destroy=_c.sharc_comm_destroy):
        """Destroy the communicator (pending requests are completed and freed first)."""
        h = getattr(self, "_h", None)
        if h is None:
            return
        for r in list(self._reqs):
            r.free()
        self._h = None
        if self._owner is not None:
            self._owner = None  # borrowed: its owner destroys it
            return
        _destroy(h)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
