# SPDX-License-Identifier: BSD-3-Clause
"""The sharc Python package on its own (make check: torch_launch.sh): a communicator made by
the bootstrap the launcher implies (as in C), collectives on numpy arrays, memoryviews,
bytearrays and torch tensors, sends and receives (tags, from any rank), requests in flight,
sharc_mem_alloc memory as arrays and tensors, split, the launch report, and errors as
exceptions carrying sharc's message. Every result is checked against what the ranks' inputs
imply. Exits 1 on any mismatch.
"""

import os
import sys

import numpy as np
import torch

import sharc

failures = checks = 0


def check(what, ok, detail=""):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("rank %d FAIL %s %s" % (comm.rank, what, detail), flush=True)


def raises(what, cls, fn, *needles):
    try:
        fn()
    except cls as e:
        check(what, all(s in str(e) for s in needles), "message: %s" % e)
        return
    except Exception as e:
        check(what, False, "raised %s: %s" % (type(e).__name__, e))
        return
    check(what, False, "did not raise")


comm = sharc.Comm()
r, n = comm.rank, comm.size
want_rank = (os.environ.get("SHARCTEST_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or
             os.environ.get("RANK"))
check("rank from the launcher", want_rank is None or int(want_rank) == r, repr(comm))
want_boot = os.environ.get("SHARCTEST_BOOTSTRAP")
check("bootstrap", want_boot is None or comm.bootstrap == want_boot, comm.bootstrap)
# the launch report (sharc_launch_query) says what the communicator was made from
info = sharc.launch_info()
check("launch_info", (info.rank, info.size, info.bootstrap) == (r, n, comm.bootstrap) and
      info.launcher == {"env": "env", "mpi": "mpirun", "single": "none"}[comm.bootstrap] and
      info.local_rank in (-1, comm.local_rank), repr(info))

# numpy: all-gather, reduce-scatter, all-reduce (out of place and in place), all-to-all
x = np.arange(7, dtype=np.float32) + 10 * r
out = np.empty(7 * n, np.float32)
comm.allgather(x, out)
check("allgather numpy", np.array_equal(out, np.concatenate(
    [np.arange(7, dtype=np.float32) + 10 * j for j in range(n)])))
big = np.arange(5 * n, dtype=np.int64) * (r + 1)
part = np.empty(5, np.int64)
comm.reduce_scatter(big, part, op="max")
check("reduce_scatter max int64", np.array_equal(part, np.arange(5 * r, 5 * r + 5) * n))
y = np.full(9, r + 1, np.float64)
z = np.empty_like(y)
comm.allreduce(y, z, op=sharc.Op.PROD)
check("allreduce prod f64", np.all(z == np.prod(np.arange(1, n + 1))))
comm.allreduce(y, op="avg")
check("allreduce avg in place", np.allclose(y, (n + 1) / 2))
a = np.arange(3 * n, dtype=np.int32) + 100 * r
b = np.empty_like(a)
comm.alltoall(a, b)
check("alltoall int32", np.array_equal(b, np.concatenate(
    [np.arange(3 * r, 3 * r + 3) + 100 * j for j in range(n)])))
# bf16 has no numpy type: its bits in uint16, the dtype given
bf = torch.full((4,), float(r + 1), dtype=torch.bfloat16)
bits = bf.view(torch.int16).numpy().view(np.uint16).copy()
comm.allreduce(bits, op="sum", dtype="bf16")
check("allreduce bf16 (uint16 bits)",
      torch.equal(torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16),
                  torch.full((4,), float(n * (n + 1) // 2), dtype=torch.bfloat16)))

# memoryview and bytearray: moved as bytes
msg = bytearray(b"rank%02d" % r)
got = bytearray(len(msg) * n)
comm.allgather(memoryview(msg), got)
check("allgather bytearray", bytes(got) == b"".join(b"rank%02d" % j for j in range(n)))
bc = bytearray(b"root!!" if r == n - 1 else b"......")
comm.broadcast(bc, root=n - 1)
check("broadcast bytearray", bc == bytearray(b"root!!"))

# torch tensors through the plain API
t = torch.arange(6, dtype=torch.float32) * (r + 1)
comm.allreduce(t)
check("allreduce torch", torch.equal(t, torch.arange(6, dtype=torch.float32) * n * (n + 1) / 2))

# requests: several in flight, tested and waited for out of order
bufs = [np.full(1000 + i, i + r, np.int64) for i in range(5)]
reqs = [comm.allreduce(v, op="sum", async_op=True) for v in bufs]
while not reqs[0].test():
    pass
for q in reversed(reqs):
    q.wait()
check("5 in flight", all(np.all(v == i * n + n * (n - 1) // 2) for i, v in enumerate(bufs)))
check("requests done", all(q.done for q in reqs))
comm.barrier()
comm.barrier(async_op=True).wait()

# point-to-point: a ring (receive posted first), two tags received in the other order than
# sent, a receive from any rank, torch tensors; what a receive received
right, left = (r + 1) % n, (r - 1) % n
got = np.empty(6, np.float64)
req = comm.recv(got, src=left, tag=3, async_op=True)
comm.send(np.arange(6, dtype=np.float64) + 100 * r, right, tag=3)
req.wait()
check("send/recv ring", np.array_equal(got, np.arange(6) + 100 * left) and
      (req.source, req.tag, req.count) == (left, 3, 6), "%s %r" % (got, req.info))
g1, g2 = np.empty(3, np.int32), np.empty(5, np.int32)
q2 = comm.recv(g2, left, tag=8, async_op=True)
q1 = comm.recv(g1, left, tag=7, async_op=True)
s1 = comm.send(np.full(3, r, np.int32), right, tag=7, async_op=True)
comm.send(np.full(5, r + 50, np.int32), right, tag=8)
for q in (q1, s1, q2):
    q.wait()
check("tags match exactly", np.all(g1 == left) and np.all(g2 == left + 50) and q1.count == 3)
if r == 0:
    infos = [comm.recv(np.empty(2, np.int64), tag=5) for _ in range(n - 1)]
    check("recv from any rank", sorted(i.source for i in infos) == list(range(1, n)) and
          all(i.tag == 5 and i.count == 1 and i.nbytes == 8 for i in infos), repr(infos))
else:
    comm.send(np.array([r], np.int64), 0, tag=5)
tr = torch.empty(4)
rq = comm.recv(tr, left, tag=9, async_op=True)
comm.send(torch.full((4,), float(r)), right, tag=9)
rq.wait()
check("send/recv tensors", bool((tr == left).all()))
# a message longer than its receive fails that receive alone; the communicator goes on
if n > 1 and r == 0:
    comm.send(np.ones(10, np.float32), 1, tag=12)
elif n > 1 and r == 1:
    raises("recv too short", sharc.InvalidError,
           lambda: comm.recv(np.empty(4, np.float32), 0, tag=12), "a 40-byte message does not "
           "fit the 16-byte receive buffer")
comm.barrier()
raises("send to no rank", sharc.InvalidError, lambda: comm.send(np.ones(1), n),
       "peer %d is not a rank" % n)
raises("negative tag", ValueError, lambda: comm.recv(np.ones(1), 0, tag=-1), "tag -1 is negative")

# sharc_mem_alloc memory: numpy and torch views without a copy
mem = comm.ctx.alloc(4096 * 4)
check("alloc zero-filled", bytes(memoryview(mem)[:64]) == bytes(64))
arr = np.frombuffer(mem, dtype=np.float32)
arr[:] = r
ten = torch.frombuffer(mem, dtype=torch.float32)
check("views share the memory", ten.data_ptr() == mem.ptr == arr.ctypes.data)
comm.allreduce(arr)
check("allreduce in sharc memory", np.all(arr == n * (n - 1) / 2) and bool((ten == arr[0]).all()))
e = comm.ctx.empty((3, 5), "f32")
e[:] = r + 1
comm.allreduce(e, op="max")
check("ctx.empty", e.shape == (3, 5) and np.all(e == n))
del arr, ten, mem, e

# split: even and odd ranks
sub = comm.split(r % 2)
v = np.array([r], np.int64)
sub.allreduce(v)
check("split allreduce", sub.size == (n + 1 - r % 2) // 2 and
      v[0] == sum(j for j in range(n) if j % 2 == r % 2), "%r %s" % (sub, v))
sub.close()
check("nocolor split", comm.split(-1) is None)

# errors carry sharc's message
raises("avg of int64", sharc.InvalidError,
       lambda: comm.allreduce(np.ones(3, np.int64), op="avg"), "op avg is not defined for i64")
raises("root out of range", ValueError,
       lambda: comm.broadcast(np.ones(3), root=n), "root %d is not a rank" % n)
raises("non-contiguous", sharc.InvalidError,
       lambda: comm.allreduce(np.ones((4, 4))[:, 1]), "contiguous")
raises("read-only output", sharc.InvalidError,
       lambda: comm.allgather(np.ones(2), bytes(16 * n)), "recvbuf")
raises("wrong recv size", sharc.InvalidError,
       lambda: comm.allgather(np.ones(2), np.empty(2 * n + 1)), "not size")
raises("unknown op", sharc.InvalidError, lambda: comm.allreduce(np.ones(2), op="xor"), "xor")
raises("unknown knob", sharc.InvalidError,
       lambda: sharc.Context({"NO_SUCH_KNOB": "1"}), "NO_SUCH_KNOB")
raises("bad knob value", sharc.InvalidError,
       lambda: sharc.Context({"TIMEOUT": "soon"}), "TIMEOUT")
ctx = sharc.Context({"TIMEOUT": "42s"})
ctx.close()

comm.close()
print("rank %d of %d (%s): %d checks, %d failed" % (r, n, comm.bootstrap, checks, failures),
      flush=True)
sys.exit(1 if failures or not checks else 0)
