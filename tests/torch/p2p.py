# SPDX-License-Identifier: BSD-3-Clause
"""torch's point-to-point on the "sharc" backend against gloo (make check: torch_p2p.sh): the
same sends and receives on a sharc group and a gloo group of the same ranks, the received
tensors equal.

- a ring of isend / recv: float32, bfloat16, int64, uint8, bool, complex64; 0, 1, 7, 65537
  and 1M elements; non-contiguous sends and receives;
- tags: two messages to one peer received in the other order than sent (by tag);
- batch_isend_irecv both ways round the ring, with tags;
- a receive from any rank: rank 0 receives one message from every other rank and
  recv(src=None) returns each sender;
- a group of the first and the last rank (group ranks differ from global ones);
- bad input: a peer outside the group, a negative tag (ValueError at once), a message longer
  than its receive (that receive fails naming both sizes; the group goes on);
- futures in completion order: an all_reduce's future completes while an earlier receive's
  is still pending.
Exits 1 on any mismatch.
"""

import sys
import time

import torch
import torch.distributed as dist

import sharc.torch

results = []


def check(what, ok, detail=""):
    results.append((what, bool(ok), detail))


dist.init_process_group("sharc")
rank, size = dist.get_rank(), dist.get_world_size()
impl = sharc.torch.implementation
gloo = dist.new_group(backend="gloo")
nxt, prv = (rank + 1) % size, (rank - 1) % size


def values(n, dtype, seed):
    x = torch.arange(n, dtype=torch.int64) * 7 + seed * 1000
    if dtype == torch.bool:
        return (x % 3 == 0)
    if dtype == torch.complex64:
        return torch.complex(x.float(), -x.float())
    if dtype == torch.uint8:
        return (x % 251).to(dtype)
    return (x % 50000).to(dtype)


def on_both(what, fn):
    """fn(group) -> tensors received; equal on sharc (the default group) and gloo."""
    try:
        got = fn(None)
    except Exception as e:
        check(what, False, "%s: %s" % (type(e).__name__, str(e)[:300]))
        return
    want = fn(gloo)
    same = len(got) == len(want) and all(a.dtype == b.dtype and a.shape == b.shape and
                                         torch.equal(a, b) for a, b in zip(got, want))
    check(what, same, "sharc %s, gloo %s" % ([t.flatten()[:4] for t in got],
                                             [t.flatten()[:4] for t in want]))


def ring(dtype, n, contiguous=True):
    def fn(g):
        send = values(n, dtype, rank)
        if not contiguous:
            send = torch.stack([send, send]).t()[:, 0]  # a strided view of the same values
        recv = torch.zeros(n, dtype=dtype) if contiguous else \
            torch.zeros(n, 2, dtype=dtype)[:, 1]  # a strided view
        w = dist.isend(send, nxt, group=g)
        dist.recv(recv, prv, group=g)
        w.wait()
        return [recv.clone()]

    return fn


for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.uint8, torch.bool,
              torch.complex64):
    for n in (0, 1, 7, 65537):
        on_both("ring %s x %d" % (dtype, n), ring(dtype, n))
on_both("ring float32 x 1M", ring(torch.float32, 1 << 20))
# (gloo takes contiguous tensors only: the values are the reference here)
got = ring(torch.float32, 1000, contiguous=False)(None)[0]
check("ring non-contiguous", torch.equal(got, values(1000, torch.float32, prv)), str(got[:4]))


def tags(g):
    """Rank 0 sends tag 5 then tag 9 to rank 1, which receives tag 9 first."""
    if rank == 0:
        a = dist.isend(values(10, torch.float32, 5), 1, group=g, tag=5)
        b = dist.isend(values(10, torch.float32, 9), 1, group=g, tag=9)
        a.wait()
        b.wait()
        return []
    if rank == 1:
        r9, r5 = torch.zeros(10), torch.zeros(10)
        w9 = dist.irecv(r9, 0, group=g, tag=9)
        w5 = dist.irecv(r5, 0, group=g, tag=5)
        w9.wait()
        w5.wait()
        return [r9, r5]
    return []


on_both("tags: received by tag, not in the order sent", tags)


def batch(g):
    a, b = torch.zeros(33), torch.zeros(33, dtype=torch.int64)
    ops = [dist.P2POp(dist.irecv, a, prv, group=g, tag=1),
           dist.P2POp(dist.isend, values(33, torch.float32, rank), nxt, group=g, tag=1),
           dist.P2POp(dist.isend, values(33, torch.int64, rank), prv, group=g, tag=2),
           dist.P2POp(dist.irecv, b, nxt, group=g, tag=2)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    return [a, b]


on_both("batch_isend_irecv both ways round the ring", batch)

# from any rank: every other rank sends rank 0 one message
if rank == 0:
    senders, ok = [], True
    for _ in range(size - 1):
        t = torch.zeros(3)
        src = dist.recv(t, tag=4)
        senders.append(src)
        ok = ok and torch.equal(t, values(3, torch.float32, src))
    check("recv from any rank: every sender once, its data", ok and
          sorted(senders) == list(range(1, size)), str(senders))
else:
    dist.send(values(3, torch.float32, rank), 0, tag=4)

# a group of the first and the last rank: global rank size-1 is group rank 1
pair = [0, size - 1]
g = dist.new_group(pair)
if rank in pair and size > 1:
    t = torch.zeros(5)
    if rank == size - 1:
        dist.send(values(5, torch.float32, rank), group=g, group_dst=0)
    else:
        src = dist.recv(t, group=g, group_src=1)
        check("a group's ranks: recv from group rank 1 (global %d)" % (size - 1),
              src == size - 1 and torch.equal(t, values(5, torch.float32, size - 1)),
              "src %s, %s" % (src, t))

# bad input
for what, fn in (("a peer outside the group", lambda: dist.send(torch.ones(2), size)),
                 ("a negative tag", lambda: dist.send(torch.ones(2), nxt, tag=-1))):
    try:
        fn()
        check("%s is refused" % what, False, "no exception")
    except (ValueError, RuntimeError) as e:
        check("%s is refused" % what, True, str(e))
if size > 1 and rank < 2:
    if rank == 0:
        dist.send(torch.ones(8), 1, tag=6)
    else:
        try:
            dist.recv(torch.zeros(4), 0, tag=6)
            check("a message longer than its receive fails it", False, "no exception")
        except Exception as e:
            check("a message longer than its receive fails it, naming the sizes",
                  "32" in str(e) and "16" in str(e), str(e)[:300])
on_both("the group goes on after a failed receive", ring(torch.float32, 9))

# futures complete as their own requests do (the completer waits on all it holds): a receive
# whose message comes last holds back no later collective's future
if size > 1:
    t = torch.zeros(3)
    f_recv = dist.irecv(t, 0, tag=7).get_future() if rank == 1 else None
    f_ar = dist.all_reduce(torch.ones(4), async_op=True).get_future()
    if rank == 1:
        t0 = time.monotonic()
        while not f_ar.done() and time.monotonic() - t0 < 20:
            time.sleep(0.01)
        check("a future completes before an earlier one whose receive is still pending",
              f_ar.done() and not f_recv.done(),
              "all_reduce's future %s after %.1f s, the receive's %s" % (
                  "done" if f_ar.done() else "not done", time.monotonic() - t0,
                  "done" if f_recv.done() else "pending"))
        dist.send(torch.ones(1), 0, tag=8)  # now rank 0 may send
        f_recv.wait()
        check("the receive's future completes once its message comes",
              torch.equal(t, values(3, torch.float32, 0)), str(t))
    elif rank == 0:
        f_ar.wait()
        dist.recv(torch.zeros(1), 1, tag=8)
        dist.send(values(3, torch.float32, 0), 1, tag=7)
    f_ar.wait()

dist.barrier(group=gloo)
failed = [r for r in results if not r[1]]
for what, _, detail in failed:
    print("rank %d FAIL %s: %s" % (rank, what, detail))
print("rank %d of %d (%s): %d checks, %d failed" % (rank, size, impl, len(results), len(failed)),
      flush=True)
dist.destroy_process_group()
sys.exit(1 if failed else 0)
