# SPDX-License-Identifier: BSD-3-Clause
"""The process group of the "sharc" backend: torch.distributed's collectives over one sharc
communicator.

Each method checks the tensors, turns them into contiguous buffers (tensors.py) and posts
sharc collectives through the public sharc.Comm; what sharc has no collective for is
emulated exactly with those it has, or refused with UnsupportedError. The Work it returns is
work.py's; the store address is agreed by rendezvous.py; registration is __init__.py's.
"""

import atexit
import datetime
import functools
import itertools
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend

import sharc.types
from sharc import InvalidError, UnsupportedError

from .rendezvous import group_comm, forget_comm
from .tensors import as_bytes, check_same, raw, readable, reduction, writable
from .work import GroupWork, RecvWork, Work

BACKEND = "sharc"

# The groups of this process, kept alive from creation to shutdown. torch holds only the C++
# side of a Python backend: under TORCH_DISTRIBUTED_DEBUG=DETAIL its debug wrapper is all
# that refers to it, and without this the Python object (its methods) would be collected.
_live = {}
_made = itertools.count()  # the order groups were made in


@atexit.register
def _shutdown_at_exit():
    """Close the groups torch has not shut down, the newest first, while the interpreter is
    whole (the process group's subgroups before the group they were made from)."""
    for group in sorted(_live.values(), key=lambda g: -g._order):
        group.shutdown()


def _counted(method):
    """A collective as torch counts them: the group's sequence number (what
    _get_sequence_number_for_group reports; the debug wrapper compares it across ranks before
    each collective) goes up by one per call from torch, as gloo's does, not per collective
    an emulation posts inside it."""

    @functools.wraps(method)
    def counted(self, *args, **kwargs):
        if self._depth == 0:
            self._seq += 1
        self._depth += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._depth -= 1

    return counted


def _wire_kw(wire, tensor):
    """sharc.Comm's wire=, block= and dtype= (a quantized wire needs the values' dtype, not
    bytes) from a wire name or (name, block); {} for none."""
    if wire is None:
        return {}
    name, block = wire if isinstance(wire, tuple) else (wire, None)
    return {"wire": name, "block": block, "dtype": sharc.types.dtype_of_torch(tensor.dtype)}


class SharcGroup:
    """The torch.distributed backend over one sharc communicator (made with sharc's explicit
    bootstrap, its store's address agreed through torch's store). All groups of a process
    share one sharc context (SHARC_* variables). A mixin: ProcessGroupSharc puts it on the
    c10d class this torch lets Python subclass."""

    def __init__(self, store, rank, size, timeout, global_ranks=None, group_name="",
                 process_group=None):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._timeout = timeout if isinstance(timeout, datetime.timedelta) else \
            datetime.timedelta(seconds=float(timeout))
        self._global_ranks, self._group_name = list(global_ranks or []), group_name or ""
        self._seq = self._depth = 0
        self.comm = group_comm(store, rank, size, timeout, self._global_ranks, self._group_name)
        self._pool = None
        self._order = next(_made)
        _live[id(self)] = self
        if process_group is not None:
            try:  # torch's group gone without a shutdown: this goes too
                weakref.finalize(process_group, _live.pop, id(self), None)
            except TypeError:
                pass

    # -- what torch asks of a backend beside the collectives ------------------------------

    def getBackendName(self):
        return BACKEND

    def _get_backend_name(self):
        return BACKEND

    @property
    def options(self):
        """The group's Backend.Options (torch's flight recorder and debug wrapper read them;
        without them torch's lookup recurses until Python's limit, about 30 ms per group)."""
        opts = _C10dBackend.Options(BACKEND, self._timeout)
        opts.global_ranks_in_group = self._global_ranks or list(range(self._size))
        opts.group_name = self._group_name
        return opts

    def _get_sequence_number_for_group(self):
        return self._seq

    def _set_sequence_number_for_group(self):
        """A no-op, as in torch's own backends now: sequence numbers start at 0 on every
        rank (the group is new on every rank at once)."""

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
        dtype, op, numel, scale = reduction(name, t, reduce_op)
        c = writable(name, t, fixups, "tensor")
        if c is not t:
            c.copy_(t)
        if scale is not None:
            fixups.insert(0, lambda: c.mul_(scale))
        return lambda: self.comm.allreduce(raw(c), op=op, dtype=dtype, async_op=True)

    def _one_each(self, name, output, input, gather):
        """(contiguous input, contiguous output, fixups) of a collective of one tensor each,
        the output world size x the input (@gather) or the input world size x the output."""
        check_same(name, output, input, "output")
        big, small, whats = ((output, input, ("output", "input")) if gather
                             else (input, output, ("input", "output")))
        if big.numel() != small.numel() * self._size:
            raise InvalidError("%s: %s has %d elements, not world size (%d) x %s's %d"
                               % (name, whats[0], big.numel(), self._size, whats[1],
                                  small.numel()), op=name)
        fixups = []
        return readable(name, input), writable(name, output, fixups), fixups

    def _gather_list(self, name, inp, outs, tensors, outputs):
        """Every rank's @inp into one buffer (an all-gather), then copied into the list
        @outs (empty: nothing kept)."""
        flat = torch.empty((self._size,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)

        def copy_out():
            for i, o in enumerate(outs):
                o.copy_(flat[i].view_as(o))

        return self._work(name, lambda: self.comm.allgather(raw(inp), raw(flat), async_op=True),
                          tensors, outputs, [copy_out])

    @staticmethod
    def _each(single, outputs, inputs, opts):
        """The Works of @single (a method of one output and one input) on each pair."""
        return [single(o, i, opts) for o, i in zip(outputs, inputs)]

    def _world_list(self, name, tensors, what):
        if len(tensors) != self._size:
            raise InvalidError("%s: %d %s tensors for a world size of %d"
                               % (name, len(tensors), what, self._size), op=name)

    # -- reductions -------------------------------------------------------------------------

    @_counted
    def allreduce(self, tensors, opts):
        name = "allreduce"
        if len(tensors) != 1:
            return self.allreduce_coalesced(tensors, opts)
        fixups = []
        post = self._allreduce_posts(name, tensors[0], opts.reduceOp, fixups)
        return self._work(name, post, tensors, tensors, fixups)

    @_counted
    def allreduce_coalesced(self, tensors, opts):
        name = "allreduce_coalesced"
        fixups = []
        posts = [self._allreduce_posts(name, t, opts.reduceOp, fixups) for t in tensors]
        return self._work(name, lambda: [p() for p in posts], tensors, tensors, fixups)

    def allreduce_sparse(self, tensors, opts):
        raise UnsupportedError("allreduce_sparse: sparse tensors are not supported by the sharc "
                               "backend (sharc reduces dense buffers)", op="allreduce_sparse")

    @_counted
    def reduce_scatter_single(self, output, input, opts, wire=None):
        """(@wire: sharc's quantized wire, "int8" or "fp8", as FSDP2's hooks ask: fsdp.py)"""
        name = "reduce_scatter_tensor"
        inp, out, fixups = self._one_each(name, output, input, False)
        dtype, op, _, scale = reduction(name, output, opts.reduceOp)
        if scale is not None:
            fixups.insert(0, lambda: out.mul_(scale))
        return self._work(name, lambda: self.comm.reduce_scatter(raw(inp), raw(out), op=op,
                                                                 async_op=True,
                                                                 **({"dtype": dtype} | _wire_kw(
                                                                     wire, inp))),
                          [output, input], [output], fixups)

    _reduce_scatter_base = reduce_scatter_single

    @_counted
    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):
        return GroupWork("reduce_scatter_tensor_coalesced",
                         self._each(self.reduce_scatter_single, outputs, inputs, opts), outputs)

    @_counted
    def reduce_scatter(self, outputs, input_lists, opts):
        name = "reduce_scatter"
        if len(outputs) != 1 or len(input_lists) != 1:
            raise UnsupportedError("%s: one output tensor per rank only (got %d)"
                                   % (name, len(outputs)), op=name)
        ins, out = input_lists[0], outputs[0]
        self._world_list(name, ins, "input")
        for i in ins:
            check_same(name, out, i, "the output")
            if i.numel() != out.numel():
                raise InvalidError("%s: an input tensor has %d elements, the output %d"
                                   % (name, i.numel(), out.numel()), op=name)
        flat = torch.cat([i.reshape(-1) for i in ins])
        return self.reduce_scatter_single(out, flat, opts)

    # emulated rooted reduction: exact results, more traffic than a rooted algorithm
    @_counted
    def reduce(self, tensors, opts):
        name = "reduce"
        if len(tensors) != 1:
            raise UnsupportedError("%s: one tensor per rank only" % name, op=name)
        t, root = tensors[0], opts.rootRank
        tmp = readable(name, t).clone()
        fixups = []
        post = self._allreduce_posts(name, tmp, opts.reduceOp, fixups)
        if self._rank == root:
            fixups.append(lambda: t.copy_(tmp.view_as(t)))
        return self._work(name, post, tensors, tensors, fixups)

    # -- data movement ----------------------------------------------------------------------

    @_counted
    def broadcast(self, tensors, opts):
        name = "broadcast"
        if len(tensors) != 1 or opts.rootTensor != 0:
            raise UnsupportedError("broadcast: one tensor per rank only (got %d)" % len(tensors),
                                   op=name)
        t, fixups = tensors[0], []
        c = writable(name, t, fixups, "tensor")
        if c is not t:
            c.copy_(t)
        root = opts.rootRank
        return self._work(name, lambda: self.comm.broadcast(raw(c), root=root, async_op=True),
                          tensors, tensors, fixups)

    @_counted
    def all_gather_single(self, output, input, opts, wire=None):
        """(@wire: sharc's quantized wire, "int8" or "fp8", as FSDP2's hooks ask: fsdp.py)"""
        name = "all_gather_into_tensor"
        inp, out, fixups = self._one_each(name, output, input, True)
        return self._work(name, lambda: self.comm.allgather(raw(inp), raw(out), async_op=True,
                                                            **_wire_kw(wire, inp)),
                          [output, input], [output], fixups)

    _allgather_base = all_gather_single

    @_counted
    def all_gather_single_coalesced(self, outputs, inputs, opts):
        return GroupWork("all_gather_into_tensor_coalesced",
                         self._each(self.all_gather_single, outputs, inputs, opts), outputs)

    # the names an older torch's ProcessGroup dispatches to (see _c10d_base)
    allgather_into_tensor_coalesced = all_gather_single_coalesced
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    @_counted
    def allgather(self, output_lists, inputs, opts):
        name = "all_gather"
        if len(inputs) != 1 or len(output_lists) != 1:
            raise UnsupportedError("%s: one input tensor per rank only (got %d)"
                                   % (name, len(inputs)), op=name)
        outs, inp = output_lists[0], readable(name, inputs[0])
        self._world_list(name, outs, "output")
        for o in outs:
            check_same(name, o, inp, "an output")
            if o.numel() != inp.numel():
                raise InvalidError("%s: an output tensor has %d elements, the input %d (sharc "
                                   "gathers equal blocks)" % (name, o.numel(), inp.numel()),
                                   op=name)
        return self._gather_list(name, inp, outs, [inp] + list(outs), output_lists)

    @_counted
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
                check_same(name, o, i, "an output")
                if o.numel() != i.numel():
                    raise InvalidError("%s: an output tensor has %d elements, its input %d"
                                       % (name, o.numel(), i.numel()), op=name)
        ins = [readable(name, t) for t in inputs]
        fixups = []
        outs = [[writable(name, o, fixups) for o in lst] for lst in output_lists]
        sizes = [t.numel() * t.element_size() for t in ins]
        total = sum(sizes)
        dev = ins[0].device if ins else torch.device("cpu")
        packed = torch.empty(total, dtype=torch.uint8, device=dev)
        off = 0
        for t, nb in zip(ins, sizes):
            packed[off:off + nb].copy_(as_bytes(t))
            off += nb
        flat = torch.empty(total * self._size, dtype=torch.uint8, device=dev)

        def unpack():
            off = 0
            for lst in outs:
                for o, nb in zip(lst, sizes):
                    as_bytes(o).copy_(flat[off:off + nb])
                    off += nb

        # the unpacking runs before the fixups that copy non-contiguous outputs back
        fixups.insert(0, unpack)
        every = list(inputs) + [o for lst in output_lists for o in lst]
        return self._work(name,
                          lambda: self.comm.allgather(raw(packed), raw(flat), async_op=True),
                          every, output_lists, fixups)

    @_counted
    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts):
        name = "all_to_all_single"
        check_same(name, output, input, "output")
        n = self._size
        if not output_split_sizes and not input_split_sizes:
            if input.numel() != output.numel() or input.numel() % n != 0:
                raise InvalidError("%s: input (%d elements) and output (%d) must be equal and "
                                   "divide by the world size (%d) without split sizes"
                                   % (name, input.numel(), output.numel(), n), op=name)
            fixups = []
            inp = readable(name, input)
            out = writable(name, output, fixups)
            return self._work(name,
                              lambda: self.comm.alltoall(raw(inp), raw(out), async_op=True),
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
        inp = readable(name, input).reshape(-1)
        blocks_in = [inp[sum(ins[:j]) * row_in:sum(ins[:j + 1]) * row_in] for j in range(n)]
        fixups = []
        out = writable(name, output, fixups).reshape(-1)
        blocks_out = [out[sum(outs[:j]) * row_out:sum(outs[:j + 1]) * row_out] for j in range(n)]
        return self._alltoallv(name, blocks_in, blocks_out, [output, input], [output], fixups)

    alltoall_base = all_to_all_single

    @_counted
    def alltoall(self, outputs, inputs, opts):
        name = "all_to_all"
        if len(outputs) != self._size or len(inputs) != self._size:
            raise InvalidError("%s: %d inputs and %d outputs for a world size of %d"
                               % (name, len(inputs), len(outputs), self._size), op=name)
        for t in list(outputs) + list(inputs):
            check_same(name, t, inputs[0], "a tensor")
        fixups = []
        blocks_in = [readable(name, t).reshape(-1) for t in inputs]
        blocks_out = [writable(name, t, fixups).reshape(-1) for t in outputs]
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

        return self._work(name, lambda: self.comm.alltoall(raw(send), raw(recv), async_op=True),
                          tensors, outputs, [unpack] + fixups)

    @_counted
    def barrier(self, opts):
        return Work("barrier", [self.comm.barrier(async_op=True)], [])

    # emulated rooted collectives: exact results, more traffic than a rooted algorithm
    @_counted
    def gather(self, output_lists, inputs, opts):
        name = "gather"
        if len(inputs) != 1:
            raise UnsupportedError("%s: one input tensor per rank only" % name, op=name)
        inp = readable(name, inputs[0])
        outs = output_lists[0] if (output_lists and self._rank == opts.rootRank) else []
        if outs:
            self._world_list(name, outs, "output")
        return self._gather_list(name, inp, outs, [inp], output_lists)

    @_counted
    def scatter(self, outputs, input_lists, opts):
        name = "scatter"
        if len(outputs) != 1:
            raise UnsupportedError("%s: one output tensor per rank only" % name, op=name)
        out = outputs[0]
        flat = torch.empty((self._size,) + tuple(out.shape), dtype=out.dtype, device=out.device)
        if self._rank == opts.rootRank:
            ins = input_lists[0]
            self._world_list(name, ins, "input")
            for i, t in enumerate(ins):
                flat[i].copy_(t.view_as(flat[i]))
        mine = flat[self._rank]
        return self._work(name, lambda: self.comm.broadcast(raw(flat), root=opts.rootRank,
                                                            async_op=True),
                          [out], outputs, [lambda: out.copy_(mine.view_as(out))])

    # -- point-to-point: sharc_send / sharc_recv (isend, irecv and batch_isend_irecv are
    # torch's calls of these). They take no sequence number, as NCCL's (its collective
    # sequence): gloo counts them on the two ranks only, and its debug wrapper
    # (TORCH_DISTRIBUTED_DEBUG=DETAIL) then finds the numbers differ at the next collective
    # of a group larger than the pair.

    def _p2p(self, name, tensors, peer, tag):
        if len(tensors) != 1:
            raise InvalidError("%s: one tensor only (got %d)" % (name, len(tensors)), op=name)
        if peer is not None and not 0 <= peer < self._size:
            raise InvalidError("%s: rank %d is not a rank of the group (size %d)"
                               % (name, peer, self._size), op=name)
        if tag < 0:
            raise InvalidError("%s: the tag %d is negative (sharc's tags are 0 .. %d)"
                               % (name, tag, 0x7fffffff), op=name)
        return tensors[0]

    def send(self, tensors, dst, tag):
        name = "send"
        c = readable(name, self._p2p(name, tensors, dst, tag), "tensor")
        return self._work(name, lambda: self.comm.send(raw(c), dst, tag=tag, async_op=True),
                          tensors, tensors)

    def _recv(self, name, tensors, src, tag):
        t, fixups = self._p2p(name, tensors, src, tag), []
        c = writable(name, t, fixups, "tensor")
        dev = self._cuda(name, tensors)
        req = self.comm.recv(raw(c), src, tag=tag, async_op=True)
        return RecvWork(name, [req], tensors, fixups, dev, src)

    def recv(self, tensors, src, tag):
        return self._recv("recv", tensors, src, tag)

    def recv_anysource(self, tensors, tag):
        """(the Work's _source_rank() names the sender once it is done)"""
        return self._recv("recv_anysource", tensors, None, tag)

    # -- memory and lifetime ----------------------------------------------------------------

    # memory the peers of a node copy straight from (FSDP2's allocate-from-process-group)
    def supports_tensor_alloc(self, device):
        return torch.device(device).type == "cpu"

    def allocate_tensor(self, size, *, dtype, device):
        if self._pool is None:
            from .mem import MemPool

            self._pool = MemPool(self.comm.ctx)
        return self._pool.empty((size,), dtype=dtype)

    def shutdown(self):
        _live.pop(id(self), None)
        forget_comm(self.comm)
        self.comm.close()

    def abort(self):
        self.shutdown()


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


class ProcessGroupSharc(SharcGroup, _c10d_base()):
    __doc__ = SharcGroup.__doc__
