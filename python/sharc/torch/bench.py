# SPDX-License-Identifier: BSD-3-Clause
"""Collectives and an FSDP2 step through torch.distributed: sharc against gloo, same job.

    torchrun --nproc-per-node 2 -m sharc.torch.bench [-b 1M] [-e 256M] [-f 4] [--sizes LIST]
        [-n 10] [-w 3]
        [--rounds 3]
        [--colls all_gather_into_tensor,reduce_scatter_tensor,all_reduce,sendrecv]
        [--backends sharc,gloo] [--groups N] [--ddp] [--fsdp] [--fsdp-only]
        [--json FILE]

The default group is "sharc", and a gloo group spans the same ranks; every round runs each
backend in turn (alternated, so both see the same machine), and the table is the median
over the rounds. A measurement is sharc-perf's: warm-up calls, a barrier, then back-to-back
calls each timed, the slowest rank's time per call, the median over the calls. Sizes and
busbw follow nccl-tests: the size is the larger buffer (all-gather's output,
reduce-scatter's input), busbw = size / time x (n-1)/n for all-gather and reduce-scatter,
x 2(n-1)/n for all-reduce. sendrecv is a round trip of point-to-point between ranks 0 and 1
(rank 0 sends, rank 1 receives and sends it back: dist.send / dist.recv), its busbw the two
messages' bytes per round trip (the other ranks wait). Tensors are plain torch.empty CPU
tensors (float32); all_reduce is in place (torch's only form), the others out of place.

--groups N adds the creation of a process group of every rank (new_group), N times per
backend and round: the slowest rank's time per creation, the median.

--fsdp adds a training step of FSDP2 (fully_shard on each decoder layer and the model) on a
Llama of ~34M parameters (transformers' LlamaForCausalLM: 8 layers of width 512, vocabulary
8192; --fsdp-batch x --fsdp-seq tokens per rank), timed per step (forward, backward,
optimizer) over "sharc" with sharc's FSDP2 hooks (sharc.torch.fsdp), "sharc" without them,
and gloo. --ddp adds a DDP step on a model whose gradients make many small buckets
(--ddp-buckets of --ddp-bucket-kib: 50 x 64 KiB), on every backend.
"""

import argparse
import json
import statistics
import sys
import time

import torch
import torch.distributed as dist

import sharc.torch

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
FACTORS = {"all_gather_into_tensor": lambda n: (n - 1) / n,
           "reduce_scatter_tensor": lambda n: (n - 1) / n,
           "all_reduce": lambda n: 2 * (n - 1) / n,
           "sendrecv": lambda n: 2}


def parse_size(text):
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def slowest_median(times, group):
    """The median over calls of the slowest rank's time per call."""
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return statistics.median(t.tolist())


def time_coll(coll, size, group, iters, warmup):
    n = dist.get_world_size(group)
    elems = size // 4
    if coll == "all_gather_into_tensor":
        inp, out = torch.ones(elems // n), torch.empty(elems // n * n)

        def call():
            dist.all_gather_into_tensor(out, inp, group=group)
    elif coll == "reduce_scatter_tensor":
        inp, out = torch.ones(elems // n * n), torch.empty(elems // n)

        def call():
            dist.reduce_scatter_tensor(out, inp, group=group)
    elif coll == "all_reduce":
        buf = torch.ones(elems)

        def call():
            dist.all_reduce(buf, group=group)
    elif coll == "sendrecv":
        buf, me = torch.ones(elems), dist.get_rank(group)

        def call():
            if me == 0:
                dist.send(buf, group=group, group_dst=1)
                dist.recv(buf, group=group, group_src=1)
            elif me == 1:
                dist.recv(buf, group=group, group_src=0)
                dist.send(buf, group=group, group_dst=0)
    else:
        raise SystemExit("bench: unknown collective %s" % coll)
    for _ in range(warmup):
        call()
    dist.barrier(group=group)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return slowest_median(times, group)


def group_time(backend, count):
    """new_group of every rank on @backend, @count times: the slowest rank's time per
    creation, the median (each creation starts after a barrier, so that none waits for a
    late rank). The groups are kept, as code built on DeviceMesh keeps them."""
    times = []
    for _ in range(count):
        dist.barrier()
        t0 = time.perf_counter()
        dist.new_group(backend=backend)
        times.append(time.perf_counter() - t0)
    return slowest_median(times, None)


def ddp_step_time(group, args):
    """A DDP step whose gradients make --ddp-buckets all-reduces of --ddp-bucket-kib each: as
    many bias-free square Linear layers of that size, DDP's bucket cap the same size (its
    first bucket too), a small batch so that the step is mostly communication."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    width = int((args.ddp_bucket_kib * 1024 // 4) ** 0.5)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width, bias=False)
                                  for _ in range(args.ddp_buckets)])
    cap = args.ddp_bucket_kib / 1024
    ddp = DDP(model, process_group=group, bucket_cap_mb=cap)  # (the first bucket too)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(4, width)
    times = []
    for step in range(3 + args.ddp_steps):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        ddp(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
        if step >= 3:
            times.append(time.perf_counter() - t0)
    return slowest_median(times, group)


def fsdp_step_time(group, hooks, args):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=8192, hidden_size=args.fsdp_dim,
                      intermediate_size=args.fsdp_dim * 43 // 16,
                      num_hidden_layers=args.fsdp_layers, num_attention_heads=8,
                      num_key_value_heads=8,
                      max_position_embeddings=max(args.fsdp_seq, 64),
                      attn_implementation="sdpa")
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    nparams = sum(p.numel() for p in model.parameters())
    mesh = DeviceMesh.from_group(group, "cpu")
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if hooks:
        import sharc.torch.fsdp

        sharc.torch.fsdp.apply(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(dist.get_rank())
    ids = torch.randint(0, cfg.vocab_size, (args.fsdp_batch, args.fsdp_seq), generator=g)
    times = []
    for step in range(args.fsdp_warmup + args.fsdp_steps):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
        if step >= args.fsdp_warmup:
            times.append(time.perf_counter() - t0)
    return slowest_median(times, group), nparams


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-b", "--minbytes", default="1M")
    ap.add_argument("-e", "--maxbytes", default="256M")
    ap.add_argument("-f", "--stepfactor", type=int, default=4)
    ap.add_argument("--sizes", help="these sizes (1K,64K,1M) instead of -b, -e and -f")
    ap.add_argument("-n", "--iters", type=int, default=10)
    ap.add_argument("-w", "--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--colls", default="all_gather_into_tensor,reduce_scatter_tensor,all_reduce")
    ap.add_argument("--backends", default="sharc,gloo")
    ap.add_argument("--fsdp", action="store_true", help="add an FSDP2 training step")
    ap.add_argument("--fsdp-only", action="store_true", help="the FSDP2 step alone")
    ap.add_argument("--fsdp-batch", type=int, default=1)
    ap.add_argument("--fsdp-seq", type=int, default=128)
    ap.add_argument("--fsdp-steps", type=int, default=5)
    ap.add_argument("--fsdp-warmup", type=int, default=2)
    ap.add_argument("--groups", type=int, default=0,
                    help="also time N creations of a group of every rank (new_group)")
    ap.add_argument("--ddp", action="store_true", help="add a DDP step with many small buckets")
    ap.add_argument("--ddp-buckets", type=int, default=50)
    ap.add_argument("--ddp-bucket-kib", type=int, default=64)
    ap.add_argument("--ddp-steps", type=int, default=20)
    ap.add_argument("--fsdp-layers", type=int, default=8)
    ap.add_argument("--fsdp-dim", type=int, default=512)
    ap.add_argument("--json", help="write every round's figures here (rank 0)")
    args = ap.parse_args()

    sharc.torch.init_env()
    dist.init_process_group("sharc")
    rank, n = dist.get_rank(), dist.get_world_size()
    backends = args.backends.split(",")
    groups = {"sharc": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    sizes = [parse_size(x) for x in args.sizes.split(",")] if args.sizes else []
    size = parse_size(args.minbytes)
    while not args.sizes and size <= parse_size(args.maxbytes):
        sizes.append(size)
        size *= args.stepfactor
    colls = [] if args.fsdp_only else [c for c in args.colls.split(",") if c]
    results = {"nranks": n, "torch": torch.__version__, "threads": torch.get_num_threads(),
               "rounds": []}
    if rank == 0:
        print("# sharc.torch.bench: %d ranks, float32, %d calls (+%d warm-up) per size, median "
              "of the slowest rank per call; %d rounds alternating %s; torch %s, %d thread(s) "
              "per rank"
              % (n, args.iters, args.warmup, args.rounds, " and ".join(backends),
                 torch.__version__, torch.get_num_threads()),
              flush=True)
    for rnd in range(args.rounds):
        one = {"colls": {}, "fsdp": {}, "ddp": {}, "groups": {}}
        for be in backends if args.groups else ():
            one["groups"][be] = t = group_time(be, args.groups)
            if rank == 0:
                print("round %d new_group (%d ranks) %-6s %8.2f ms" % (rnd + 1, n, be, t * 1e3),
                      flush=True)
        for coll in colls:
            for size in sizes:
                for be in backends:
                    t = time_coll(coll, size, groups[be], args.iters, args.warmup)
                    one["colls"].setdefault(coll, {}).setdefault(str(size), {})[be] = t
                    if rank == 0:
                        print("round %d %-24s %10d B %-6s %10.1f us  busbw %7.3f GB/s"
                              % (rnd + 1, coll, size, be, t * 1e6,
                                 size / t / 1e9 * FACTORS[coll](n)), flush=True)
        if args.ddp:
            for be in backends:
                t = ddp_step_time(groups[be], args)
                one["ddp"][be] = t
                if rank == 0:
                    print("round %d DDP step (%d buckets of %d KiB) %-12s %8.3f ms"
                          % (rnd + 1, args.ddp_buckets, args.ddp_bucket_kib, be, t * 1e3),
                          flush=True)
        if args.fsdp or args.fsdp_only:
            for be, hooks in (("sharc+hooks", True), ("sharc", False), ("gloo", False)):
                if be.split("+")[0] not in backends:
                    continue
                t, nparams = fsdp_step_time(groups[be.split("+")[0]], hooks, args)
                one["fsdp"][be] = t
                results["fsdp_params"] = nparams
                if rank == 0:
                    print("round %d FSDP2 step (%.1fM params, %d x %d tokens/rank) %-12s %8.3f s"
                          % (rnd + 1, nparams / 1e6, args.fsdp_batch, args.fsdp_seq, be, t),
                          flush=True)
        results["rounds"].append(one)

    if rank == 0:
        print_table(results, colls, sizes, backends, n)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    dist.destroy_process_group()


def print_table(results, colls, sizes, backends, n):
    rounds = results["rounds"]
    if colls:
        print("\n# medians over %d rounds; busbw in GB/s" % len(rounds))
        head = "%-24s %10s" % ("collective", "size (B)")
        for be in backends:
            head += " %10s %8s" % (be + " us", "busbw")
        if "sharc" in backends and "gloo" in backends:
            head += " %11s" % "sharc/gloo"
        print(head)
        for coll in colls:
            for size in sizes:
                line = "%-24s %10d" % (coll, size)
                med = {}
                for be in backends:
                    med[be] = statistics.median(r["colls"][coll][str(size)][be] for r in rounds)
                    line += " %10.1f %8.3f" % (med[be] * 1e6,
                                               size / med[be] / 1e9 * FACTORS[coll](n))
                if "sharc" in med and "gloo" in med:
                    line += " %11.2f" % (med["gloo"] / med["sharc"])
                print(line)
    if rounds and rounds[0].get("groups"):
        med = {be: statistics.median(r["groups"][be] for r in rounds) for be in rounds[0]["groups"]}
        print("\n# new_group of every rank, median over %d rounds" % len(rounds))
        for be, t in med.items():
            extra = " (this / gloo %.2f)" % (t / med["gloo"]) if "gloo" in med and \
                be != "gloo" else ""
            print("%-12s %8.2f ms%s" % (be, t * 1e3, extra))
    if rounds and rounds[0].get("ddp"):
        med = {be: statistics.median(r["ddp"][be] for r in rounds) for be in rounds[0]["ddp"]}
        print("\n# DDP step, median over %d rounds" % len(rounds))
        for be, t in med.items():
            print("%-12s %8.3f ms%s" % (be, t * 1e3, "".join(
                " (%s / this %.2f)" % (o, med[o] / t) for o in med if o != be)))
    if rounds and rounds[0]["fsdp"]:
        med = {be: statistics.median(r["fsdp"][be] for r in rounds) for be in rounds[0]["fsdp"]}
        print("\n# FSDP2 step, %.1fM parameters, median over %d rounds" %
              (results.get("fsdp_params", 0) / 1e6, len(rounds)))
        for be, t in med.items():
            extra = " (gloo / this %.2f)" % (med["gloo"] / t) if "gloo" in med and \
                be != "gloo" else ""
            print("%-12s %8.3f s%s" % (be, t, extra))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
