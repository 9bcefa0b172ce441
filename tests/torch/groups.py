# SPDX-License-Identifier: BSD-3-Clause
"""Process groups of the "sharc" backend, C++ or Python (make check: torch_groups.sh, also under
TORCH_DISTRIBUTED_DEBUG=DETAIL, where torch wraps each group in its debug wrapper).

- new_group of every rank, of each parity (only members get a group), of one rank, of the
  same list twice: each is made from the default group's sharc communicator by its members,
  without a new store (the backend picks no new store address), and its all-reduce and
  all-gather give what the ranks' inputs imply;
- sequence numbers as torch's own backends keep them: after each of a run of collectives, the
  sharc group's number equals that of a gloo group of the same ranks doing the same;
- the group's Backend.Options, name, and the Python object kept alive (garbage collection,
  then collectives: under DETAIL torch holds only the wrapper);
- a second init_process_group after destroy_process_group, and a group made from it;
- the package's objects go quietly when the interpreter ends: a child process clears the
  modules' globals first, as the interpreter's exit does, and no destructor may fail.
Exits 1 on any mismatch.
"""

import gc
import os
import subprocess
import sys

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as C10dBackend

import sharc.torch
from sharc.torch import rendezvous

results = []  # (what, ok, detail) of every check, reported at the end


def check(what, ok, detail=""):
    results.append((what, bool(ok), detail))


dist.init_process_group("sharc")
rank, size = dist.get_rank(), dist.get_world_size()
debug = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF")


def check_group(what, ranks, g):
    """@g is the group of @ranks (sorted): sums and gathers over it."""
    if rank not in ranks:
        check("%s: a non-member gets no group" % what, g == dist.GroupMember.NON_GROUP_MEMBER)
        return
    x = torch.full((5,), float(rank + 1))
    dist.all_reduce(x, group=g)
    want = float(sum(r + 1 for r in ranks))
    check("%s: all_reduce" % what, bool((x == want).all()), "got %s, want %s" % (x, want))
    out = [torch.empty(1, dtype=torch.int64) for _ in ranks]
    dist.all_gather(out, torch.tensor([rank]), group=g)
    check("%s: all_gather" % what, [int(t) for t in out] == list(ranks), str(out))
    check("%s: rank" % what, dist.get_rank(g) == ranks.index(rank))


def groups():
    addrs = set(rendezvous._used_store_addrs)
    made = []
    everyone = list(range(size))
    for what, ranks in [("every rank", everyone), ("even ranks", everyone[0::2]),
                        ("odd ranks", everyone[1::2]), ("rank 0 alone", [0]),
                        ("every rank again", everyone), ("the last two", everyone[-2:])]:
        if ranks:
            made.append((what, ranks, dist.new_group(ranks)))
    gc.collect()  # the backends must outlive Python's collection (torch holds C++ only)
    for what, ranks, g in made:
        check_group(what, ranks, g)
    check("groups come from the default group's communicator: no new store",
          rendezvous._used_store_addrs == addrs,
          "new store addresses %s" % (rendezvous._used_store_addrs - addrs))
    return made


def backend_of(g):
    return g._get_backend(torch.device("cpu"))


def sequence_numbers():
    """After each collective, the sharc group's sequence number is gloo's."""
    sg, gg = dist.new_group(backend="sharc"), dist.new_group(backend="gloo")
    x, out = torch.ones(4), torch.empty(4 * size)
    objs = [None] * size

    def run(g):
        lst = [torch.empty(4) for _ in range(size)]
        yield "all_reduce", lambda: dist.all_reduce(x, group=g)
        yield "broadcast", lambda: dist.broadcast(x, 0, group=g)
        yield "barrier", lambda: dist.barrier(group=g)
        yield "all_gather", lambda: dist.all_gather(lst, x, group=g)
        yield "all_gather_into_tensor", lambda: dist.all_gather_into_tensor(out, x, group=g)
        yield "all_reduce_coalesced", lambda: dist.all_reduce_coalesced([x, x.clone()], group=g)
        yield "all_gather_object", lambda: dist.all_gather_object(objs, rank, group=g)
        yield "reduce", lambda: dist.reduce(x, 0, group=g)
        yield "gather", lambda: dist.gather(x, lst if rank == 0 else None, 0, group=g)
        yield "scatter", lambda: dist.scatter(x, lst if rank == 0 else None, 0, group=g)
        yield "all_to_all_single", lambda: dist.all_to_all_single(out, out.clone(), group=g)
        yield "reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(x, out, group=g)
        yield "async all_reduce", lambda: dist.all_reduce(x, group=g, async_op=True).wait()

    check("sequence numbers start at 0", sg._get_sequence_number_for_group() == 0)
    for (name, s_op), (_, g_op) in zip(run(sg), run(gg)):
        s_op()
        g_op()
        s, want = sg._get_sequence_number_for_group(), gg._get_sequence_number_for_group()
        check("sequence number after %s" % name, s == want, "sharc %d, gloo %d" % (s, want))
    backend_of(sg)._set_sequence_number_for_group()  # a no-op, as torch's
    check("setting the sequence number keeps it", sg._get_sequence_number_for_group() == want)
    # point-to-point is not counted (as NCCL's collective sequence; gloo counts it on the two
    # ranks only, and its debug wrapper then fails the next collective of a larger group)
    if rank == 0 and size > 1:
        dist.send(x, group=sg, group_dst=1)
    elif rank == 1:
        dist.recv(x, group=sg, group_src=0)
    check("send / recv leave the sequence number", sg._get_sequence_number_for_group() == want)
    dist.all_reduce(x, group=sg)  # under DETAIL the wrapper compares the numbers of all ranks
    check("a collective after send / recv counts",
          sg._get_sequence_number_for_group() == want + 1)


def options(g):
    b = backend_of(g)
    try:
        opts = C10dBackend.options.__get__(b)
        check("Backend.Options names sharc", opts.backend == "sharc", opts.backend)
        check("Backend.Options: the group's ranks", list(opts.global_ranks_in_group) ==
              list(range(size)), str(opts.global_ranks_in_group))
    except Exception as e:  # torch's lookup recursed without the property
        check("Backend.Options", False, "%s: %s" % (type(e).__name__, str(e)[:200]))


EXIT_CHILD = r"""
import gc, sys
import sharc, sharc.buffers, sharc.comm, sharc.context
errors = []
sys.unraisablehook = lambda u: errors.append("%s in %s" % (u.exc_value, u.object))
ctx = sharc.Context()
comm = sharc.Comm(ctx, bootstrap="single")
mem = ctx.alloc(4096)
buf = bytearray(64)
req = comm.allgather(buf[:32], buf, async_op=True) if comm.size == 2 else \
    comm.allreduce(bytearray(8), dtype="i32", async_op=True)
# what the interpreter's exit does: the modules' globals are gone before the last objects
for m in (sharc.context, sharc.comm, sharc.buffers, sharc._lib):
    for k in list(vars(m)):
        if not k.startswith("__"):
            setattr(m, k, None)
del req, mem, comm, ctx
gc.collect()
print("destructors at exit: %s" % ("; ".join(errors) or "quiet"))
"""


def destructors_at_exit():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "GROUP_"))}
    p = subprocess.run([sys.executable, "-c", EXIT_CHILD], capture_output=True, text=True,
                       env=env, timeout=120)
    check("destructors at exit are quiet", p.returncode == 0 and
          "destructors at exit: quiet" in p.stdout and "Exception ignored" not in p.stderr,
          "exit %d: %s %s" % (p.returncode, p.stdout[-500:], p.stderr[-1500:]))


def second_init():
    """destroy_process_group, then init_process_group again in the same process: the new
    default group and a group made from it work (each group owns its communicator: nothing
    is destroyed twice or left behind)."""
    dist.destroy_process_group()
    dist.init_process_group("sharc")
    check_group("after a second init_process_group: the default group", list(range(size)),
                dist.group.WORLD)
    check_group("after a second init_process_group: a new group", list(range(size)),
                dist.new_group(list(range(size))))


made = groups()
sequence_numbers()
options(made[0][2])
check("the backend's name (the wrapper asks the sharc object under DETAIL)",
      backend_of(made[0][2]).name() == "sharc" and dist.get_backend(made[0][2]) == "sharc",
      backend_of(made[0][2]).name())
if rank == 0 and size == 2 and debug == "OFF":  # (once: a child process imports torch)
    destructors_at_exit()
if debug == "OFF":  # (under DETAIL torch's own gloo helper group of the wrapper finds the
    second_init()  # first init's keys in the store and its connection fails, on gloo too)
dist.barrier()
failed = [r for r in results if not r[1]]
for what, _, detail in failed:
    print("rank %d FAIL %s %s" % (rank, what, detail))
print("rank %d of %d (debug %s): %d checks, %d failed" % (rank, size, debug, len(results),
                                                         len(failed)), flush=True)
dist.destroy_process_group()
sys.exit(1 if failed else 0)
