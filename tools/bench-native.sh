#!/bin/bash
# bench-native.sh: the per-call cost of the torch backend (docs/perf.md, "The C++ torch
# backend"). In one job, alternated ROUNDS times so all see the same machine: sharc-perf's C
# path (mpirun, 2 ranks) and, through torch.distributed (torchrun, 2 ranks, python -m
# sharc.torch.bench), the C++ backend ("sharc") and gloo on
# all_reduce and all_gather_into_tensor of 1 KiB, 64 KiB and 1 MiB; a DDP step of 50 buckets of
# 64 KiB and an FSDP2 step of a small Llama on each; and, on one rank, what a call costs with no
# peer to wait for. Prints the medians and writes OUT/bench-native.md.
#
#   tools/bench-native.sh [--rounds 3] [-n 200] [--out DIR]
#
# Needs a build (tools/build.sh), the PyTorch venv (tools/install-deps.sh --torch) and the C++
# backend built against it (tests/torch/native.py, as make check builds it).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 iters=200 out=
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        -n) iters=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "bench-native: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
name=bench-native
. "$top/tools/torch-env.sh"
out=${out:-$build/bench-native}
TORCH_SHARC_NATIVE=$(MAX_JOBS=2 "$venv/bin/python" "$top/tests/torch/native.py" "$top" \
    "$build" "$build/python-native" 2> /dev/null | tail -1)
export TORCH_SHARC_NATIVE
mkdir -p "$out"
rm -f "$out"/perf-*.json "$out"/torch-*.json

echo "bench-native: $(date -u +%F), $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $rounds rounds"
for r in $(seq 1 "$rounds"); do
    for coll in allreduce allgather; do
        mpirun --oversubscribe -np 2 --mca btl self,vader "$perf" "$coll" -b 1K -e 1M -f 2 \
            -n "$iters" -w 20 -J "$out/perf-$coll-$r.json" > "$out/perf-$coll-$r.log"
    done
    port=$((12000 + RANDOM % 20000))
    "$venv/bin/torchrun" --nproc-per-node 2 --master-port "$port" -m sharc.torch.bench \
        --sizes 1K,64K,1M -n "$iters" -w 20 --rounds 1 --colls all_reduce,all_gather_into_tensor \
        --backends sharc,gloo --ddp --fsdp --fsdp-layers 2 --fsdp-dim 256 \
        --fsdp-steps 5 --json "$out/torch-$r.json" > "$out/torch-$r.log" 2>&1 ||
        { tail -30 "$out/torch-$r.log"; exit 1; }
    # one rank: what a call costs with no peer to wait for (the binding, torch's dispatcher)
    "$venv/bin/torchrun" --nproc-per-node 1 --master-port "$port" -m sharc.torch.bench \
        --sizes 1K -n "$iters" -w 20 --rounds 1 --colls all_reduce --backends sharc,gloo \
        --json "$out/torch1-$r.json" > "$out/torch1-$r.log" 2>&1 ||
        { tail -30 "$out/torch1-$r.log"; exit 1; }
    echo "round $r of $rounds done"
done

"$venv/bin/python" - "$out" "$rounds" <<'PY'
# medians over the rounds; the ratios are the medians of each round's ratio (the figures of one
# round were measured minutes apart at most, on the same load)
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
colls = {"all_reduce": ("allreduce", "in_place"),
         "all_gather_into_tensor": ("allgather", "out_of_place")}
runs = [json.load(open("%s/torch-%d.json" % (out, r))) for r in range(1, rounds + 1)]
med = lambda xs: statistics.median(list(xs))
lines = ["| collective | size | sharc-perf (C) | C++ backend | gloo | C++ / C | gloo / C++ |",
         "|---|---|---|---|---|---|---|"]
for coll, (pcoll, place) in colls.items():
    perf = [json.load(open("%s/perf-%s-%d.json" % (out, pcoll, r))) for r in range(1, rounds + 1)]
    for size in sorted(int(s) for s in runs[0]["rounds"][0]["colls"][coll]):
        per = []  # each round's figures, in us
        for x, p in zip(runs, perf):
            t = {be: x["rounds"][0]["colls"][coll][str(size)][be] * 1e6
                 for be in ("sharc", "gloo")}
            t["c"] = [y[place]["median_us"] for y in p["results"] if y["size"] == size][0]
            per.append(t)
        m = {k: med(t[k] for t in per) for k in per[0]}
        r = lambda a, b: med(t[a] / t[b] for t in per)
        unit = "%d MiB" % (size >> 20) if size >= 1 << 20 else "%d KiB" % (size >> 10)
        lines.append("| %s | %s | %.1f us | **%.1f us** | %.1f us | %.2f | %.1f |"
                     % (coll, unit, m["c"], m["sharc"], m["gloo"], r("sharc", "c"),
                        r("gloo", "sharc")))
one = [json.load(open("%s/torch1-%d.json" % (out, r)))["rounds"][0]["colls"]["all_reduce"]["1024"]
       for r in range(1, rounds + 1)]
lines += ["", "| 1 rank, 1 KiB all_reduce (no peer) | C++ backend | gloo |",
          "|---|---|---|", "| per call | **%.1f us** | %.1f us |"
          % tuple(med(o[be] for o in one) * 1e6 for be in ("sharc", "gloo"))]
for kind, unit, scale in (("ddp", "ms", 1e3), ("fsdp", "s", 1)):
    steps = [x["rounds"][0][kind] for x in runs if x["rounds"][0].get(kind)]
    if not steps:
        continue
    title = ("DDP step, 50 buckets of 64 KiB" if kind == "ddp" else
             "FSDP2 step (%.1fM params)" % (runs[0].get("fsdp_params", 0) / 1e6))
    lines += ["", "| %s | median step | this / the C++ backend's |" % title, "|---|---|---|"]
    for k in steps[0]:
        lines.append("| %s | %.3f %s | %s |" % (
            k, med(s[k] for s in steps) * scale, unit,
            "**%.2f**" % med(s[k] / s["sharc"] for s in steps) if k != "sharc" else "1"))
text = "\n".join(lines)
open(out + "/bench-native.md", "w").write(text + "\n")
print(text)
PY
