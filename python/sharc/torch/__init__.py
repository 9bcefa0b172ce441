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
"""

import datetime
import os
import queue
import secrets
import socket
import threading
import time

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend

import sharc
from sharc import Dtype, InvalidError, Op, UnsupportedError

BACKEND = "sharc"
_RedOp = dist.ReduceOp.RedOpType

_REDUCE_DTYPES = {
    torch.float32: Dtype.F32,
    torch.float64: Dtype.F64,
    torch.float16: Dtype.F16,
    torch.bfloat16: Dtype.BF16,
    torch.int32: Dtype.I32,
    torch.int64: Dtype.I64,
    torch.uint8: Dtype.U8,
}
# complex sums and averages are sums of their real and imaginary parts
_COMPLEX = {torch.complex64: Dtype.F32, torch.complex128: Dtype.F64}
_OPS = {
    _RedOp.SUM: Op.SUM,
    _RedOp.AVG: Op.AVG,
    _RedOp.PRODUCT: Op.PROD,
    _RedOp.MIN: Op.MIN,
    _RedOp.MAX: Op.MAX,
}


def _op_name(op):
    return str(op).split(".")[-1]


def _reduction(name, tensor, reduce_op):
    """(sharc dtype, sharc op, element count, post-scale) of a reduction of @tensor, or an
    UnsupportedError naming the op and the reason."""
    kind = reduce_op.op if isinstance(reduce_op, dist.ReduceOp) else reduce_op
    scale = None
    if kind == _RedOp.PREMUL_SUM:
        # sum(f * x_i) = f * sum(x_i): the factor is applied to the result
        factor = reduce_op.factor
        scale = float(factor.item() if isinstance(factor, torch.Tensor) else factor)
        kind = _RedOp.SUM
    op = _OPS.get(kind)
    if op is None:
        raise UnsupportedError(
            "%s: ReduceOp.%s is not supported by the sharc backend (sharc reduces with SUM, "
            "AVG, PRODUCT, MIN, MAX and PREMUL_SUM)" % (name, _op_name(kind)), op=name)
    numel = tensor.numel()
    dtype = _REDUCE_DTYPES.get(tensor.dtype)
    if dtype is None and tensor.dtype in _COMPLEX and op in (Op.SUM, Op.AVG):
        dtype, numel = _COMPLEX[tensor.dtype], numel * 2
    elif dtype is None and tensor.dtype == torch.bool and op in (Op.MIN, Op.MAX):
        dtype = Dtype.U8  # MIN is AND, MAX is OR on 0/1 bytes
    if dtype is None:
        raise UnsupportedError(
            "%s: dtype %s cannot be reduced by the sharc backend (sharc reduces float32, "
            "float64, float16, bfloat16, int32, int64, uint8; complex with SUM/AVG; bool with "
            "MIN/MAX)" % (name, tensor.dtype), op=name)
    return dtype, op, numel, scale


def _dense(name, t, what):
    if not isinstance(t, torch.Tensor):
        raise InvalidError("%s: %s is a %s, not a tensor" % (name, what, type(t).__name__),
                           op=name)
    if t.layout != torch.strided:
        raise UnsupportedError("%s: %s is a %s tensor; the sharc backend takes dense tensors"
                               % (name, what, t.layout), op=name)
    return t


def _in(name, t, what="input"):
    """A contiguous tensor to read: @t itself or a contiguous copy."""
    _dense(name, t, what)
    return t if t.is_contiguous() else t.contiguous()


def _out(name, t, fixups, what="output"):
    """A contiguous tensor to write: @t itself, or a contiguous stand-in copied back into @t
    when the collective is done (fixups)."""
    _dense(name, t, what)
    if t.is_contiguous():
        return t
    tmp = torch.empty_like(t, memory_format=torch.contiguous_format)
    fixups.append(lambda: t.copy_(tmp))
    return tmp


def _buf(t, nbytes=None):
    """A sharc.Buffer over a contiguous tensor's bytes (the tensor keeps the memory)."""
    return sharc.Buffer(t.data_ptr(), t.numel() * t.element_size() if nbytes is None else nbytes,
                        None, 1, t, t.is_cuda)


def _bytes(t):
    """A contiguous tensor's elements as a flat uint8 view (the same memory)."""
    return t.reshape(-1).view(torch.uint8)


def _check_same(name, a, b, what):
    if a.dtype != b.dtype:
        raise InvalidError("%s: %s dtype %s differs from the input's %s"
                           % (name, what, a.dtype, b.dtype), op=name)
    if a.device != b.device:
        raise InvalidError("%s: %s is on %s, the input on %s" % (name, what, a.device, b.device),
                           op=name)


# ---- Work ----------------------------------------------------------------------------------

_completer = None
_completer_lock = threading.Lock()


class _Failed:
    """A future's result that stands for an error (see Work.get_future)."""

    def __init__(self, error):
        self.error = error


def _unwrap(fut):
    value = fut.value()
    if isinstance(value, _Failed):
        raise value.error
    return value


def _complete_futures():
    """A thread that waits (without the GIL: inside sharc) for the works whose futures were
    asked for, and sets them: DDP's reducer waits on futures, not on works."""
    while True:
        work, base = _completer.get()
        try:
            work.wait()
            base.set_result(work._outputs)
        except Exception as e:
            base.set_result(_Failed(e))


class Work(dist.Work):
    """One collective posted to sharc (one request, or several for the emulated ones).
    wait() waits for it on the host, or, for CUDA tensors, makes the current stream wait for
    it and returns at once; then copies results where an emulation or a non-contiguous
    output needs it. Errors are sharc's, raised as sharc's exceptions."""

    def __init__(self, name, reqs, outputs, fixups=(), cuda_device=None):
        super().__init__()
        self._name = name
        self._reqs = [r for r in reqs if r is not None]
        self._outputs = outputs
        self._fixups = list(fixups)
        self._cuda = cuda_device
        self._lock = threading.Lock()
        self._done = False
        self._error = None
        self._future = None

    def _finish(self):
        try:
            stream = (torch.cuda.current_stream(self._cuda).cuda_stream
                      if self._cuda is not None else None)
            for r in self._reqs:
                if stream is not None:
                    r.wait_stream(stream)
                else:
                    r.wait()
            for f in self._fixups:
                f()
        except Exception as e:
            self._error = e
            for r in self._reqs:
                r.free()
        finally:
            self._done = True
            self._reqs = []

    def wait(self, timeout=None):
        if timeout and timeout != datetime.timedelta(0) and not self._done:
            deadline = datetime.datetime.now() + timeout
            while not self.is_completed():
                if datetime.datetime.now() > deadline:
                    raise sharc.SharcTimeoutError(
                        "%s: not done within the timeout of %s given to wait()" %
                        (self._name, timeout), op=self._name)
                time.sleep(0.0002)
        with self._lock:
            if not self._done:
                self._finish()
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        with self._lock:
            if self._done:
                return True
            if self._cuda is None:
                try:
                    if not all(r.test() for r in self._reqs):
                        return False
                except Exception:
                    pass  # wait() raises it
            else:
                return False
            self._finish()
            return True

    def is_success(self):
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def result(self):
        return self._outputs

    def synchronize(self):
        self.wait()

    def get_future(self):
        """A future of the outputs. Its error is one C++ sees too: torch's
        Future.set_exception only makes Python's value() raise (DDP's reducer, in C++, would
        take the exception object for the result), so the error is raised in a then()
        callback, which marks the future failed for every reader."""
        global _completer
        if self._future is None:
            base = torch.futures.Future()
            self._future = base.then(_unwrap)
            if self._cuda is not None or self._done:
                # CUDA: the current stream waits for the collective, so the result is ready
                # for whatever runs on it next (as ProcessGroupNCCL's futures)
                try:
                    self.wait()
                    base.set_result(self._outputs)
                except Exception as e:
                    base.set_result(_Failed(e))
            else:
                with _completer_lock:
                    if _completer is None:
                        _completer = queue.SimpleQueue()
                        threading.Thread(target=_complete_futures, name="sharc-futures",
                                         daemon=True).start()
                _completer.put((self, base))
        return self._future


# ---- bootstrap over torch's store ----------------------------------------------------------

_used_store_addrs = set()  # store addresses this process has used (see _store_addr)


def _my_host():
    """The address rank 0's peers reach it at: TORCH_SHARC_HOST, else this host's address
    toward MASTER_ADDR (the interface a packet to it leaves by), else the host name's."""
    host = os.environ.get("TORCH_SHARC_HOST")
    if host:
        return host
    master = os.environ.get("MASTER_ADDR")
    if master:
        try:
            fam = socket.AF_INET6 if ":" in master else socket.AF_INET
            with socket.socket(fam, socket.SOCK_DGRAM) as s:
                s.connect((master, 9))  # no packet is sent: this only picks the route
                return s.getsockname()[0]
        except OSError:
            pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _free_port(host, avoid):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(64):
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if _addr(host, port) not in avoid:
            return port
    raise sharc.SharcIOError("sharc backend: no free TCP port on %s for sharc's store" % host,
                             op="init")


def _addr(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def _store_addr(store, rank, size, timeout):
    """Rank 0 picks a free port for sharc's store and a job token and tells the others
    through torch's store (the group's own prefix). sharc numbers the communicators made
    from one store address per process, so the address must be new to every rank: each
    rank says which it has used, and rank 0 avoids them all."""
    store.set("sharc/used/%d" % rank, " ".join(sorted(_used_store_addrs)))
    if rank == 0:
        used = set()
        for r in range(size):
            used.update(store.get("sharc/used/%d" % r).decode().split())
        host = _my_host()
        addr = _addr(host, _free_port(host, used))
        store.set("sharc/addr", "%s %s" % (addr, secrets.token_hex(16)))
    addr, token = store.get("sharc/addr").decode().split()
    _used_store_addrs.add(addr)
    return addr, token


class _SharcGroup:
    """The torch.distributed backend over one sharc communicator (made with sharc's explicit
    bootstrap, its store's address agreed through torch's store). All groups of a process
    share one sharc context (SHARC_* variables). A mixin: ProcessGroupSharc puts it on the
    c10d class this torch lets Python subclass."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        ctx = sharc.default_context()
        if size == 1:
            self.comm = sharc.Comm(ctx, bootstrap="single")
        else:
            addr, token = _store_addr(store, rank, size, timeout)
            self.comm = sharc.Comm(ctx, bootstrap="explicit", rank=rank, size=size,
                                   store_addr=addr, token=token)
        self._pool = None

    def getBackendName(self):
        return BACKEND

    def _get_backend_name(self):
        return BACKEND

    @property
    def supports_splitting(self):
        return False

    @property
    def supports_coalescing(self):
        return False

    # -- posting ----------------------------------------------------------------------------

    def _cuda(self, name, tensors):
        """The CUDA device of the tensors (None for host tensors); sharc is told the stream
        its collective must follow."""
        if not any(t.is_cuda for t in tensors) and all(t.is_cpu for t in tensors):
            return None  # the common case, quickly
        devs = {t.device for t in tensors}
        if len(devs) > 1:
            raise InvalidError("%s: tensors on several devices (%s)"
                               % (name, ", ".join(sorted(map(str, devs)))), op=name)
        dev = devs.pop() if devs else torch.device("cpu")
        if dev.type == "cpu":
            return None
        if dev.type != "cuda":
            raise UnsupportedError("%s: %s tensors are not supported by the sharc backend "
                                   "(cpu and cuda)" % (name, dev.type), op=name)
        torch.cuda.set_device(dev)  # NCCL runs on the current device (one per rank)
        self.comm.set_cuda_stream(torch.cuda.current_stream(dev).cuda_stream)
        return dev

    def _work(self, name, post, tensors, outputs, fixups=()):
        dev = self._cuda(name, tensors)
        reqs = post()
        return Work(name, reqs if isinstance(reqs, list) else [reqs], outputs, fixups, dev)

    def _allreduce_posts(self, name, t, reduce_op, fixups):
        dtype, op, numel, scale = _reduction(name, t, reduce_op)
        c = _out(name, t, fixups, "tensor")
        if c is not t:
            c.copy_(t)
        if scale is not None:
            fixups.insert(0, lambda: c.mul_(scale))
        return lambda: self.comm._post(
            "sharc_allreduce", sharc._c.sharc_allreduce,
            (c.data_ptr(), c.data_ptr(), numel, dtype, op, self.comm._h), (_buf(c),), True)

    # -- collectives ------------------------------------------------------------------------

    def allreduce(self, tensors, opts):
        name = "allreduce"
        if len(tensors) != 1:
            return self.allreduce_coalesced(tensors, opts)
        fixups = []
        post = self._allreduce_posts(name, tensors[0], opts.reduceOp, fixups)
        return self._work(name, post, tensors, tensors, fixups)

    def allreduce_coalesced(self, tensors, opts):
        name = "allreduce_coalesced"
        fixups = []
        posts = [self._allreduce_posts(name, t, opts.reduceOp, fixups) for t in tensors]
        return self._work(name, lambda: [p() for p in posts], tensors, tensors, fixups)

    def allreduce_sparse(self, tensors, opts):
        raise UnsupportedError("allreduce_sparse: sparse tensors are not supported by the sharc "
                               "backend (sharc reduces dense buffers)", op="allreduce_sparse")

    def broadcast(self, tensors, opts):
        name = "broadcast"
        if len(tensors) != 1 or opts.rootTensor != 0:
            raise UnsupportedError("broadcast: one tensor per rank only (got %d)" % len(tensors),
                                   op=name)
        t, fixups = tensors[0], []
        c = _out(name, t, fixups, "tensor")
        if c is not t:
            c.copy_(t)
        root = opts.rootRank
        return self._work(name, lambda: self.comm.broadcast(_buf(c), root=root, async_op=True),
                          tensors, tensors, fixups)

    def all_gather_single(self, output, input, opts):
        name = "all_gather_into_tensor"
        _check_same(name, output, input, "output")
        if output.numel() != input.numel() * self._size:
            raise InvalidError("%s: output has %d elements, not world size (%d) x input's %d"
                               % (name, output.numel(), self._size, input.numel()), op=name)
        fixups = []
        inp = _in(name, input)
        out = _out(name, output, fixups)
        return self._work(name, lambda: self.comm.allgather(_buf(inp), _buf(out), async_op=True),
                          [output, input], [output], fixups)

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(self, outputs, inputs, opts):
        name = "all_gather_into_tensor_coalesced"
        works = [self.all_gather_single(o, i, opts) for o, i in zip(outputs, inputs)]
        return _Group(name, works, outputs)

    def allgather(self, output_lists, inputs, opts):
        name = "all_gather"
        if len(inputs) != 1 or len(output_lists) != 1:
            raise UnsupportedError("%s: one input tensor per rank only (got %d)"
                                   % (name, len(inputs)), op=name)
        outs, inp = output_lists[0], _in(name, inputs[0])
        if len(outs) != self._size:
            raise InvalidError("%s: %d output tensors for a world size of %d"
                               % (name, len(outs), self._size), op=name)
        for o in outs:
            _check_same(name, o, inp, "an output")
            if o.numel() != inp.numel():
                raise InvalidError("%s: an output tensor has %d elements, the input %d (sharc "
                                   "gathers equal blocks)" % (name, o.numel(), inp.numel()),
                                   op=name)
        flat = torch.empty((self._size,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)

        def copy_out():
            for i, o in enumerate(outs):
                o.copy_(flat[i].view_as(o))

        return self._work(name,
                          lambda: self.comm.allgather(_buf(inp), _buf(flat), async_op=True),
                          [inp] + list(outs), output_lists, [copy_out])

    def allgather_coalesced(self, output_lists, inputs, opts):
        """torch indexes @output_lists [rank][tensor]: output_lists[r][i] receives rank r's
        inputs[i]. The inputs (any shapes and dtypes) are packed as bytes into one buffer,
        gathered in one collective, and unpacked."""
        name = "all_gather_coalesced"
        if len(output_lists) != self._size:
            raise InvalidError("%s: %d output lists for a world size of %d (one per rank)"
                               % (name, len(output_lists), self._size), op=name)
        for r, outs in enumerate(output_lists):
            if len(outs) != len(inputs):
                raise InvalidError("%s: the output list of rank %d has %d tensors, the input "
                                   "list %d" % (name, r, len(outs), len(inputs)), op=name)
            for o, i in zip(outs, inputs):
                _check_same(name, o, i, "an output")
                if o.numel() != i.numel():
                    raise InvalidError("%s: an output tensor has %d elements, its input %d"
                                       % (name, o.numel(), i.numel()), op=name)
        ins = [_in(name, t) for t in inputs]
        fixups = []
        outs = [[_out(name, o, fixups) for o in lst] for lst in output_lists]
        sizes = [t.numel() * t.element_size() for t in ins]
        total = sum(sizes)
        dev = ins[0].device if ins else torch.device("cpu")
        packed = torch.empty(total, dtype=torch.uint8, device=dev)
        off = 0
        for t, nb in zip(ins, sizes):
            packed[off:off + nb].copy_(_bytes(t))
            off += nb
        flat = torch.empty(total * self._size, dtype=torch.uint8, device=dev)

        def unpack():
            off = 0
            for lst in outs:
                for o, nb in zip(lst, sizes):
                    _bytes(o).copy_(flat[off:off + nb])
                    off += nb

        # the unpacking runs before the fixups that copy non-contiguous outputs back
        fixups.insert(0, unpack)
        every = list(inputs) + [o for lst in output_lists for o in lst]
        return self._work(name,
                          lambda: self.comm.allgather(_buf(packed), _buf(flat), async_op=True),
                          every, output_lists, fixups)

    def reduce_scatter_single(self, output, input, opts):
        name = "reduce_scatter_tensor"
        _check_same(name, output, input, "output")
        if input.numel() != output.numel() * self._size:
            raise InvalidError("%s: input has %d elements, not world size (%d) x output's %d"
                               % (name, input.numel(), self._size, output.numel()), op=name)
        dtype, op, numel, scale = _reduction(name, output, opts.reduceOp)
        fixups = []
        inp = _in(name, input)
        out = _out(name, output, fixups)
        if scale is not None:
            fixups.insert(0, lambda: out.mul_(scale))
        return self._work(
            name, lambda: self.comm._post(
                "sharc_reduce_scatter", sharc._c.sharc_reduce_scatter,
                (inp.data_ptr(), out.data_ptr(), numel, dtype, op, self.comm._h),
                (_buf(inp), _buf(out)), True),
            [output, input], [output], fixups)

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):
        name = "reduce_scatter_tensor_coalesced"
        works = [self.reduce_scatter_single(o, i, opts) for o, i in zip(outputs, inputs)]
        return _Group(name, works, outputs)

    # the names an older torch's ProcessGroup dispatches to (see _c10d_base)
    allgather_into_tensor_coalesced = all_gather_single_coalesced
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def reduce_scatter(self, outputs, input_lists, opts):
        name = "reduce_scatter"
        if len(outputs) != 1 or len(input_lists) != 1:
            raise UnsupportedError("%s: one output tensor per rank only (got %d)"
                                   % (name, len(outputs)), op=name)
        ins, out = input_lists[0], outputs[0]
        if len(ins) != self._size:
            raise InvalidError("%s: %d input tensors for a world size of %d"
                               % (name, len(ins), self._size), op=name)
        for i in ins:
            _check_same(name, out, i, "the output")
            if i.numel() != out.numel():
                raise InvalidError("%s: an input tensor has %d elements, the output %d"
                                   % (name, i.numel(), out.numel()), op=name)
        flat = torch.cat([i.reshape(-1) for i in ins])
        return self.reduce_scatter_single(out, flat, opts)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts):
        name = "all_to_all_single"
        _check_same(name, output, input, "output")
        n = self._size
        if not output_split_sizes and not input_split_sizes:
            if input.numel() != output.numel() or input.numel() % n != 0:
                raise InvalidError("%s: input (%d elements) and output (%d) must be equal and "
                                   "divide by the world size (%d) without split sizes"
                                   % (name, input.numel(), output.numel(), n), op=name)
            fixups = []
            inp = _in(name, input)
            out = _out(name, output, fixups)
            return self._work(name,
                              lambda: self.comm.alltoall(_buf(inp), _buf(out), async_op=True),
                              [output, input], [output], fixups)
        # uneven: dim-0 rows per peer; padded to the largest block of any rank (an all-reduce
        # of the maximum first), exchanged as equal blocks, unpacked
        row_in = input[0].numel() if input.dim() > 0 and input.shape[0] else 1
        row_out = output[0].numel() if output.dim() > 0 and output.shape[0] else 1
        ins = list(input_split_sizes) or [input.shape[0] // n] * n
        outs = list(output_split_sizes) or [output.shape[0] // n] * n
        if len(ins) != n or len(outs) != n or sum(ins) != input.shape[0] or \
                sum(outs) != output.shape[0] or (row_in != row_out and input.numel() and
                                                 output.numel()):
            raise InvalidError("%s: split sizes %s / %s do not fit input rows %d / output rows "
                               "%d for a world size of %d" % (name, ins, outs, input.shape[0],
                                                              output.shape[0], n), op=name)
        inp = _in(name, input).reshape(-1)
        blocks_in = [inp[sum(ins[:j]) * row_in:sum(ins[:j + 1]) * row_in] for j in range(n)]
        fixups = []
        out = _out(name, output, fixups).reshape(-1)
        blocks_out = [out[sum(outs[:j]) * row_out:sum(outs[:j + 1]) * row_out] for j in range(n)]
        return self._alltoallv(name, blocks_in, blocks_out, [output, input], [output], fixups)

    alltoall_base = all_to_all_single

    def alltoall(self, outputs, inputs, opts):
        name = "all_to_all"
        if len(outputs) != self._size or len(inputs) != self._size:
            raise InvalidError("%s: %d inputs and %d outputs for a world size of %d"
                               % (name, len(inputs), len(outputs), self._size), op=name)
        for t in list(outputs) + list(inputs):
            _check_same(name, t, inputs[0], "a tensor")
        fixups = []
        blocks_in = [_in(name, t).reshape(-1) for t in inputs]
        blocks_out = [_out(name, t, fixups).reshape(-1) for t in outputs]
        return self._alltoallv(name, blocks_in, blocks_out, list(inputs) + list(outputs),
                               outputs, fixups)

    def _alltoallv(self, name, blocks_in, blocks_out, tensors, outputs, fixups):
        """All-to-all of blocks of any sizes: every rank learns the largest block (an
        all-reduce MAX), pads its blocks to it, and the exchange is one sharc_alltoall."""
        dev = blocks_in[0].device
        big = torch.tensor([max([b.numel() for b in blocks_in + blocks_out] + [0])],
                           dtype=torch.int64)
        self.comm.allreduce(big, op="max")  # host tensor: a blocking host collective
        block = int(big.item())
        dtype = blocks_in[0].dtype
        send = torch.zeros(self._size * block, dtype=dtype, device=dev)
        recv = torch.empty(self._size * block, dtype=dtype, device=dev)
        for j, b in enumerate(blocks_in):
            send[j * block:j * block + b.numel()].copy_(b)

        def unpack():
            for j, b in enumerate(blocks_out):
                b.copy_(recv[j * block:j * block + b.numel()])

        return self._work(name, lambda: self.comm.alltoall(_buf(send), _buf(recv),
                                                           async_op=True),
                          tensors, outputs, [unpack] + fixups)

    def barrier(self, opts):
        return Work("barrier", [self.comm.barrier(async_op=True)], [])

    # emulated rooted collectives: exact results, more traffic than a rooted algorithm
    def reduce(self, tensors, opts):
        name = "reduce"
        if len(tensors) != 1:
            raise UnsupportedError("%s: one tensor per rank only" % name, op=name)
        t, root = tensors[0], opts.rootRank
        tmp = _in(name, t).clone()
        fixups = []
        post = self._allreduce_posts(name, tmp, opts.reduceOp, fixups)
        if self._rank == root:
            fixups.append(lambda: t.copy_(tmp.view_as(t)))
        return self._work(name, post, tensors, tensors, fixups)

    def gather(self, output_lists, inputs, opts):
        name = "gather"
        if len(inputs) != 1:
            raise UnsupportedError("%s: one input tensor per rank only" % name, op=name)
        inp = _in(name, inputs[0])
        flat = torch.empty((self._size,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)
        outs = output_lists[0] if (output_lists and self._rank == opts.rootRank) else []
        if outs and len(outs) != self._size:
            raise InvalidError("%s: %d output tensors for a world size of %d"
                               % (name, len(outs), self._size), op=name)

        def copy_out():
            for i, o in enumerate(outs):
                o.copy_(flat[i].view_as(o))

        return self._work(name,
                          lambda: self.comm.allgather(_buf(inp), _buf(flat), async_op=True),
                          [inp], output_lists, [copy_out])

    def scatter(self, outputs, input_lists, opts):
        name = "scatter"
        if len(outputs) != 1:
            raise UnsupportedError("%s: one output tensor per rank only" % name, op=name)
        out = outputs[0]
        flat = torch.empty((self._size,) + tuple(out.shape), dtype=out.dtype, device=out.device)
        if self._rank == opts.rootRank:
            ins = input_lists[0]
            if len(ins) != self._size:
                raise InvalidError("%s: %d input tensors for a world size of %d"
                                   % (name, len(ins), self._size), op=name)
            for i, t in enumerate(ins):
                flat[i].copy_(t.view_as(flat[i]))
        mine = flat[self._rank]
        return self._work(name, lambda: self.comm.broadcast(_buf(flat), root=opts.rootRank,
                                                            async_op=True),
                          [out], outputs, [lambda: out.copy_(mine.view_as(out))])

    def _no_p2p(self, name):
        raise UnsupportedError("%s: point-to-point is not supported by the sharc backend (sharc "
                               "has collectives only); use gloo for it, e.g. "
                               "init_process_group('cpu:sharc,cuda:nccl') or a gloo group"
                               % name, op=name)

    def send(self, tensors, dst, tag):
        self._no_p2p("send")

    def recv(self, tensors, src, tag):
        self._no_p2p("recv")

    def recv_anysource(self, tensors, tag):
        self._no_p2p("recv_anysource")

    # memory the peers of a node copy straight from (FSDP2's allocate-from-process-group)
    def supports_tensor_alloc(self, device):
        return torch.device(device).type == "cpu"

    def allocate_tensor(self, size, *, dtype, device):
        if self._pool is None:
            from .mem import MemPool

            self._pool = MemPool(self.comm.ctx)
        return self._pool.empty((size,), dtype=dtype)

    def shutdown(self):
        self.comm.close()

    def abort(self):
        self.comm.close()


class _Group(Work):
    """Works posted together (the coalesced calls): done when all are."""

    def __init__(self, name, works, outputs):
        super().__init__(name, [], outputs)
        self._works = works

    def _finish(self):
        try:
            for w in self._works:
                w.wait()
        except Exception as e:
            self._error = e
        finally:
            self._done = True

    def is_completed(self):
        return all(w.is_completed() for w in self._works)


def _c10d_base():
    """The c10d class the sharc group derives from: torch.distributed's Backend where Python
    may subclass it; else its ProcessGroup (an older torch, 2.11 among them, whose Backend
    has no Python constructor), which init_process_group takes from a backend's creator too
    and uses as the group itself."""

    class _Probe(_C10dBackend):
        pass

    try:
        _Probe(0, 1)
    except TypeError:
        return dist.ProcessGroup
    return _C10dBackend


class ProcessGroupSharc(_SharcGroup, _c10d_base()):
    __doc__ = _SharcGroup.__doc__


_group_class = ProcessGroupSharc  # what the "sharc" backend makes (tests may swap it)


def _create(store, rank, size, timeout):
    return _group_class(store, rank, size, timeout)


def init_env():
    """Set torch's launch variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) from
    mpirun's (OMPI_COMM_WORLD_*) or srun's (SLURM_*) where they are not set, so that
    init_process_group("sharc") works under those launchers too. MASTER_ADDR defaults to
    127.0.0.1 for a one-node job (else set it), MASTER_PORT to 29500 (under Slurm: 12000 +
    SLURM_JOB_ID % 20000, sharc's rule). Returns (rank, world_size)."""
    env = os.environ
    if "RANK" not in env:
        if "OMPI_COMM_WORLD_SIZE" in env:
            src = {"RANK": "OMPI_COMM_WORLD_RANK", "WORLD_SIZE": "OMPI_COMM_WORLD_SIZE",
                   "LOCAL_RANK": "OMPI_COMM_WORLD_LOCAL_RANK",
                   "LOCAL_WORLD_SIZE": "OMPI_COMM_WORLD_LOCAL_SIZE"}
        elif "SLURM_PROCID" in env:
            src = {"RANK": "SLURM_PROCID", "WORLD_SIZE": "SLURM_NTASKS",
                   "LOCAL_RANK": "SLURM_LOCALID"}
            if "MASTER_PORT" not in env and "SLURM_JOB_ID" in env:
                env["MASTER_PORT"] = str(12000 + int(env["SLURM_JOB_ID"]) % 20000)
        else:
            src = {}
        for k, v in src.items():
            if v in env:
                env[k] = env[v]
        if src and "MASTER_ADDR" not in env:
            nnodes = env.get("OMPI_MCA_orte_num_nodes") or env.get("SLURM_NNODES") or "1"
            if nnodes != "1":
                raise InvalidError("init_env: a job on %s nodes needs MASTER_ADDR (rank 0's "
                                   "host)" % nnodes, op="init_env")
            env["MASTER_ADDR"] = "127.0.0.1"
    env.setdefault("RANK", "0")
    env.setdefault("WORLD_SIZE", "1")
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29500")
    return int(env["RANK"]), int(env["WORLD_SIZE"])


def empty(size, dtype=torch.float32, ctx=None):
    """A CPU tensor in sharc_mem_alloc memory (zero-filled): node-local peers copy straight
    from it. Freed when the last view of it goes."""
    from .mem import empty as _empty

    return _empty(size, dtype, ctx)


dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])
