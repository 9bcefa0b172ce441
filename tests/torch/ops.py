# SPDX-License-Identifier: BSD-3-Clause
"""Every collective of the sharc backend against gloo's result (make check: torch_ops.sh).

Run on N ranks (any launcher). The default group is "sharc"; a gloo group of the same ranks
computes the reference from the same inputs. Each case runs an op on both and compares:
all_reduce, all_gather_into_tensor, all_gather, reduce_scatter_tensor, reduce_scatter,
broadcast, all_to_all_single (even and uneven), all_to_all, reduce, gather, scatter, barrier;
float32 / bfloat16 / int64 (and the other dtypes sharc has); SUM, AVG, PRODUCT, MIN, MAX;
in place and not; sync and async; several in flight at once, waited for out of order;
sizes 0, 1 and odd ones; non-contiguous tensors; a sharc subgroup made with new_group.
Inputs are small integers, so every reduction is exact in every dtype and the results must
be equal (AVG in bf16 and at 3 ranks within rounding). Exits 1 on any mismatch.

--device cuda puts the sharc side's tensors on the rank's GPU (sharc's CUDA path: NCCL on
the current stream) and keeps gloo's on the CPU (tests/gpu/run.sh).
"""

import argparse
import sys

import torch
import torch.distributed as dist

import sharc
import sharc.torch

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="0,1,7,1000,65537")
ap.add_argument("--device", default="cpu")
args = ap.parse_args()

dist.init_process_group("sharc")
rank, n = dist.get_rank(), dist.get_world_size()
if args.device == "cuda":
    torch.cuda.set_device(int(__import__("os").environ.get("LOCAL_RANK", rank)) %
                          torch.cuda.device_count())
torch.set_num_threads(1)
GLOO = dist.new_group(backend="gloo")
SHARC = dist.group.WORLD
R = dist.ReduceOp
checks = failures = 0


def data(seed, numel, dtype, r=None, op=None):
    """Rank r's input: small integers, nonzero for PRODUCT (so products stay exact)."""
    g = torch.Generator().manual_seed(seed * 131 + (rank if r is None else r))
    if op == R.PRODUCT:
        x = torch.randint(1, 3, (numel,), generator=g, device="cpu")
        x = x * (1 - 2 * torch.randint(0, 2, (numel,), generator=g, device="cpu"))
    else:
        lo = 0 if dtype == torch.uint8 else -3
        x = torch.randint(lo, 4, (numel,), generator=g, device="cpu")
    return x.to(dtype).to(torch.get_default_device())


def same(what, got, want, exact=True):
    global checks, failures
    checks += 1
    if isinstance(got, (list, tuple)):
        ok = len(got) == len(want) and all(same_t(a, b, exact) for a, b in zip(got, want))
    else:
        ok = same_t(got, want, exact)
    if not ok:
        failures += 1
        print("rank %d FAIL %s:\n  sharc %s\n  gloo  %s" % (rank, what, got, want), flush=True)


def same_t(a, b, exact):
    a, b = a.cpu(), b.cpu()
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if exact:
        return torch.equal(a, b)
    return torch.allclose(a.double(), b.double(), rtol=1e-2, atol=1e-2)


def both(fn):
    """Run fn(group, async_op) on sharc and gloo; returns both results."""
    out = []
    for g in (SHARC, GLOO):
        torch.set_default_device(args.device if g is SHARC else "cpu")
        for async_op in (False, True):
            res, work = fn(g, async_op)
            if async_op:
                assert work is not None, "async_op=True returned no Work"
                work.wait()
            out.append(res())
    torch.set_default_device("cpu")
    # sync and async on sharc must agree as well
    return out[0], out[1], out[2]


REDUCE_OPS = [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX]
DTYPES = [torch.float32, torch.bfloat16, torch.int64]
sizes = [int(s) for s in args.sizes.split(",")]


def op_ok(op, dtype):
    return op != R.AVG or dtype.is_floating_point


seed = 0
for dtype in DTYPES:
    for numel in sizes:
        for op in REDUCE_OPS:
            if not op_ok(op, dtype):
                continue
            exact = op != R.AVG or (dtype == torch.float32 and n in (1, 2, 4))
            seed += 1
            tag = "%s %s numel %d" % (dtype, op, numel)

            # all_reduce (always in place)
            def ar(g, a, s=seed, op=op):
                t = data(s, numel, dtype, op=op)
                w = dist.all_reduce(t, op=op, group=g, async_op=a)
                return (lambda: t), w
            s_sync, s_async, ref = both(ar)
            same("all_reduce " + tag, s_sync, ref, exact)
            same("all_reduce async " + tag, s_async, ref, exact)

            # reduce_scatter_tensor, out of place and in place
            def rs(g, a, s=seed, op=op):
                inp = data(s, numel * n, dtype, op=op)
                out = torch.empty(numel, dtype=dtype)
                w = dist.reduce_scatter_tensor(out, inp, op=op, group=g, async_op=a)
                return (lambda: out), w
            s_sync, s_async, ref = both(rs)
            same("reduce_scatter_tensor " + tag, s_sync, ref, exact)
            same("reduce_scatter_tensor async " + tag, s_async, ref, exact)

            def rs_inplace(g, a, s=seed, op=op):
                buf = data(s, numel * n, dtype, op=op)
                out = buf.narrow(0, rank * numel, numel)
                w = dist.reduce_scatter_tensor(out, buf, op=op, group=g, async_op=a)
                return (lambda: out.clone()), w
            s_sync, _, ref = both(rs_inplace)
            same("reduce_scatter_tensor in place " + tag, s_sync, ref, exact)

            # reduce_scatter (lists) and reduce (emulated)
            def rsl(g, a, s=seed, op=op):
                ins = list(data(s, numel * n, dtype, op=op).chunk(n)) if numel else \
                    [torch.empty(0, dtype=dtype) for _ in range(n)]
                out = torch.empty(numel, dtype=dtype)
                w = dist.reduce_scatter(out, ins, op=op, group=g, async_op=a)
                return (lambda: out), w
            s_sync, _, ref = both(rsl)
            same("reduce_scatter " + tag, s_sync, ref, exact)
            if op != R.AVG:  # gloo has no AVG for reduce
                root = seed % n

                def red(g, a, s=seed, op=op, root=root):
                    t = data(s, numel, dtype, op=op)
                    w = dist.reduce(t, dst=root, op=op, group=g, async_op=a)
                    return (lambda: t if rank == root else torch.zeros(0)), w
                s_sync, _, ref = both(red)
                same("reduce to %d " % root + tag, s_sync, ref, exact)

        seed += 1
        tag = "%s numel %d" % (dtype, numel)

        # all_gather_into_tensor, out of place and in place
        def ag(g, a, s=seed):
            inp = data(s, numel, dtype)
            out = torch.empty(numel * n, dtype=dtype)
            w = dist.all_gather_into_tensor(out, inp, group=g, async_op=a)
            return (lambda: out), w
        s_sync, s_async, ref = both(ag)
        same("all_gather_into_tensor " + tag, s_sync, ref)
        same("all_gather_into_tensor async " + tag, s_async, ref)

        def ag_inplace(g, a, s=seed):
            out = torch.empty(numel * n, dtype=dtype)
            inp = out.narrow(0, rank * numel, numel)
            inp.copy_(data(s, numel, dtype))
            w = dist.all_gather_into_tensor(out, inp, group=g, async_op=a)
            return (lambda: out), w
        s_sync, _, ref = both(ag_inplace)
        same("all_gather_into_tensor in place " + tag, s_sync, ref)

        def agl(g, a, s=seed):
            inp = data(s, numel, dtype)
            outs = [torch.empty(numel, dtype=dtype) for _ in range(n)]
            w = dist.all_gather(outs, inp, group=g, async_op=a)
            return (lambda: outs), w
        s_sync, _, ref = both(agl)
        same("all_gather " + tag, s_sync, ref)

        # all_gather_coalesced: k inputs of different sizes; torch indexes the outputs
        # [rank][tensor]. Against gloo, and against what each rank sent (k == n is the case a
        # [tensor][rank] reading would return transposed without an error)
        for k in (1, n, n + 1):
            def agc(g, a, s=seed, k=k):
                ins = [data(s + i, numel + i, dtype) for i in range(k)]
                outs = [[torch.empty(numel + i, dtype=dtype) for i in range(k)]
                        for _ in range(n)]
                w = dist.all_gather_coalesced(outs, ins, group=g, async_op=a)
                return (lambda: [t for lst in outs for t in lst]), w
            s_sync, s_async, ref = both(agc)
            sent = [data(seed + i, numel + i, dtype, r=r) for r in range(n) for i in range(k)]
            same("all_gather_coalesced of %d " % k + tag, s_sync, sent)
            same("all_gather_coalesced of %d async " % k + tag, s_async, sent)
            same("all_gather_coalesced of %d, gloo " % k + tag, ref, sent)

        for root in range(n):
            def bc(g, a, s=seed, root=root):
                t = data(s, numel, dtype)
                w = dist.broadcast(t, src=root, group=g, async_op=a)
                return (lambda: t), w
            s_sync, s_async, ref = both(bc)
            same("broadcast from %d " % root + tag, s_sync, ref)

        root = seed % n

        def gat(g, a, s=seed, root=root):
            inp = data(s, numel, dtype)
            outs = [torch.empty(numel, dtype=dtype) for _ in range(n)] if rank == root else None
            w = dist.gather(inp, outs, dst=root, group=g, async_op=a)
            return (lambda: outs or []), w
        s_sync, _, ref = both(gat)
        same("gather to %d " % root + tag, s_sync, ref)

        def sca(g, a, s=seed, root=root):
            out = torch.empty(numel, dtype=dtype)
            ins = list(data(s, numel * n, dtype).chunk(n)) if rank == root and numel else (
                [torch.empty(0, dtype=dtype)] * n if rank == root else None)
            w = dist.scatter(out, ins, src=root, group=g, async_op=a)
            return (lambda: out), w
        s_sync, _, ref = both(sca)
        same("scatter from %d " % root + tag, s_sync, ref)

        # all_to_all_single: equal blocks, then uneven split sizes (rank-dependent)
        def a2a(g, a, s=seed):
            inp = data(s, numel * n, dtype)
            out = torch.empty(numel * n, dtype=dtype)
            w = dist.all_to_all_single(out, inp, group=g, async_op=a)
            return (lambda: out), w
        s_sync, s_async, ref = both(a2a)
        same("all_to_all_single " + tag, s_sync, ref)
        same("all_to_all_single async " + tag, s_async, ref)

        def splits(r):  # rows rank r sends to each peer
            return [(numel + 3 * r + 5 * j) % 7 for j in range(n)]

        in_splits = splits(rank)
        out_splits = [splits(j)[rank] for j in range(n)]

        def a2av(g, a, s=seed):
            inp = data(s, sum(in_splits) * 3, dtype).view(-1, 3)
            out = torch.empty(sum(out_splits), 3, dtype=dtype)
            w = dist.all_to_all_single(out, inp, out_splits, in_splits, group=g, async_op=a)
            return (lambda: out), w
        s_sync, s_async, ref = both(a2av)
        same("all_to_all_single uneven " + tag, s_sync, ref)
        same("all_to_all_single uneven async " + tag, s_async, ref)

        # all_to_all, equal blocks: against what each peer sent (gloo has no all_to_all in
        # every torch: 2.11's lacks it)
        ref = [data(seed + rank, numel, dtype, r=j) for j in range(n)]
        for a in (False, True):
            torch.set_default_device(args.device)
            ins = [data(seed + j, numel, dtype) for j in range(n)]
            outs = [torch.empty(numel, dtype=dtype) for j in range(n)]
            w = dist.all_to_all(outs, ins, async_op=a)
            torch.set_default_device("cpu")
            if a:
                w.wait()
            same("all_to_all%s %s" % (" async" if a else "", tag), outs, ref)
        # blocks of any size: against what each peer sent (its inputs are known here)
        ins = [data(seed + j, in_splits[j], dtype) for j in range(n)]
        outs = [torch.empty(out_splits[j], dtype=dtype) for j in range(n)]
        dist.all_to_all(outs, ins)
        same("all_to_all uneven " + tag, outs,
             [data(seed + rank, out_splits[j], dtype, r=j) for j in range(n)])

# the other dtypes sharc has, and those it moves but does not reduce
for dtype in (torch.float64, torch.float16, torch.int32, torch.uint8):
    for op in (R.SUM, R.MAX):
        t = data(7, 33, dtype)
        x, y = t.clone(), t.clone()
        dist.all_reduce(x, op=op)
        dist.all_reduce(y, op=op, group=GLOO)
        same("all_reduce %s %s" % (op, dtype), x, y)
for dtype in (torch.int8, torch.int16, torch.bool, torch.complex64):  # gloo has none of these
    seed += 1
    out = torch.empty(10 * n, dtype=dtype)
    dist.all_gather_into_tensor(out, data(seed, 10, torch.int64).to(dtype))
    same("all_gather_into_tensor %s (moved as bytes)" % dtype, out,
         torch.cat([data(seed, 10, torch.int64, r=j).to(dtype) for j in range(n)]))
z = torch.complex(data(3, 8, torch.float32), data(4, 8, torch.float32))
dist.all_reduce(z)
same("all_reduce SUM complex64", z, sum(torch.complex(data(3, 8, torch.float32, r=j),
                                                     data(4, 8, torch.float32, r=j))
                                       for j in range(n)))
b = data(5, 16, torch.int64) > 0
bs, bg = b.clone(), b.clone()
dist.all_reduce(bs, op=R.MAX)
dist.all_reduce(bg, op=R.MAX, group=GLOO)
same("all_reduce MAX bool", bs, bg)

# several in flight, of different kinds, waited for in reverse order
for dtype in DTYPES:
    seed += 1
    res = {}
    for g in (SHARC, GLOO):
        ts = [data(seed + i, 4097, dtype) for i in range(6)]
        ag_out = torch.empty(4097 * n, dtype=dtype)
        rs_out = torch.empty(4097 // n + 1, dtype=dtype)
        rs_in = data(seed + 9, (4097 // n + 1) * n, dtype)
        works = [dist.all_reduce(t, group=g, async_op=True) for t in ts[:4]]
        works.append(dist.all_gather_into_tensor(ag_out, ts[4], group=g, async_op=True))
        works.append(dist.reduce_scatter_tensor(rs_out, rs_in, op=R.MAX, group=g,
                                                async_op=True))
        works.append(dist.broadcast(ts[5], src=n - 1, group=g, async_op=True))
        for w in reversed(works):
            w.wait()
        res[g] = ts[:4] + [ag_out, rs_out, ts[5]]
    same("7 collectives in flight, %s" % dtype, res[SHARC], res[GLOO])

# non-contiguous tensors are handled (copied to and from contiguous stand-ins)
for dtype in DTYPES:
    seed += 1
    res = {}
    for g in (SHARC, GLOO):
        m = data(seed, 12 * 5, dtype).view(12, 5)
        t = m.t()  # (5, 12), not contiguous
        dist.all_reduce(t, group=g)
        col = data(seed + 1, 12 * 2, dtype).view(12, 2)[:, 1]  # strided input
        out = torch.empty(12 * n * 2, dtype=dtype).view(-1, 2)[:, 0]  # strided output
        dist.all_gather_into_tensor(out, col, group=g)
        res[g] = [m, out]
    same("non-contiguous all_reduce / all_gather_into_tensor %s" % dtype, res[SHARC], res[GLOO])

# a sharc subgroup (every rank calls new_group; the members use it) against a gloo one
if n >= 2:
    members = list(range(0, n, 2)) if n > 2 else [0, 1]
    sub_s = dist.new_group(ranks=members, backend="sharc")
    sub_g = dist.new_group(ranks=members, backend="gloo")
    if rank in members:
        for dtype in DTYPES:
            seed += 1
            a, b = data(seed, 999, dtype), data(seed, 999, dtype)
            dist.all_reduce(a, group=sub_s)
            dist.all_reduce(b, group=sub_g)
            same("subgroup %s all_reduce %s" % (members, dtype), a, b)

dist.barrier()
w = dist.barrier(async_op=True)
w.wait()
print("rank %d of %d (%s): %d checks, %d failed" % (rank, n, sharc.torch.implementation, checks,
                                                   failures), flush=True)
dist.destroy_process_group()
sys.exit(1 if failures or checks == 0 else 0)
