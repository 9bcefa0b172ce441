#!/bin/bash
# bench-torch.sh: the PyTorch benchmark of docs/perf.md. Collectives through torch.distributed
# with the "sharc" backend against gloo (python -m sharc.torch.bench, 2 ranks under torchrun),
# and sharc-perf on the same collectives and sizes (mpirun, heap buffers), alternated ROUNDS
# times in one run so all see the same machine; then an FSDP2 training step over sharc and
# over gloo (in the same rounds). Prints the medians and writes OUT/bench-torch.md.
#
#   tools/bench-torch.sh [--rounds 3] [-b 1M] [-e 256M] [--no-fsdp] [--out DIR]
#
# Needs a build (tools/build.sh) and the PyTorch venv (tools/install-deps.sh --torch).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 minb=1M maxb=256M fsdp=--fsdp out=
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        -b) minb=$2; shift 2 ;;
        -e) maxb=$2; shift 2 ;;
        --no-fsdp) fsdp=""; shift ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "bench-torch: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
name=bench-torch
. "$top/tools/torch-env.sh"
out=${out:-$build/bench-torch}
mkdir -p "$out"
rm -f "$out"/perf-*.json "$out"/torch-*.json

echo "bench-torch: $(date -u +%F), $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $rounds rounds"
for r in $(seq 1 "$rounds"); do
    for coll in allgather reduce_scatter allreduce; do
        mpirun --oversubscribe -np 2 --mca btl self,vader "$perf" "$coll" -b "$minb" -e "$maxb" \
            -f 4 -n 10 -w 3 -J "$out/perf-$coll-$r.json" > "$out/perf-$coll-$r.log"
    done
    port=$((12000 + RANDOM % 20000))
    "$venv/bin/torchrun" --nproc-per-node 2 --master-port "$port" -m sharc.torch.bench \
        -b "$minb" -e "$maxb" -f 4 -n 10 -w 3 --rounds 1 $fsdp --json "$out/torch-$r.json" \
        > "$out/torch-$r.log" 2>&1 || { tail -30 "$out/torch-$r.log"; exit 1; }
    echo "round $r of $rounds done"
done

"$venv/bin/python" - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
colls = {"all_gather_into_tensor": ("allgather", "out_of_place", 0.5),
         "reduce_scatter_tensor": ("reduce_scatter", "out_of_place", 0.5),
         "all_reduce": ("allreduce", "in_place", 1.0)}
torch_runs = [json.load(open("%s/torch-%d.json" % (out, r))) for r in range(1, rounds + 1)]
n = torch_runs[0]["nranks"]
lines = ["| torch collective | size | sharc via torch busbw | gloo busbw | sharc / gloo | "
         "sharc-perf busbw | via torch / sharc-perf |", "|---|---|---|---|---|---|---|"]
for coll, (pcoll, place, _) in colls.items():
    perf_runs = [json.load(open("%s/perf-%s-%d.json" % (out, pcoll, r)))
                 for r in range(1, rounds + 1)]
    factor = (n - 1) / n * (2 if coll == "all_reduce" else 1)
    for size in sorted(int(s) for s in torch_runs[0]["rounds"][0]["colls"][coll]):
        ts = statistics.median(t["rounds"][0]["colls"][coll][str(size)]["sharc"] for t in torch_runs)
        tg = statistics.median(t["rounds"][0]["colls"][coll][str(size)]["gloo"] for t in torch_runs)
        ps = statistics.median(
            [x for p in perf_runs for x in p["results"] if x["size"] == size][i][place]["median_us"]
            for i in range(rounds)) / 1e6
        bs, bg, bp = (size / t / 1e9 * factor for t in (ts, tg, ps))
        mib = "%d MiB" % (size >> 20) if size >= 1 << 20 else "%d KiB" % (size >> 10)
        lines.append("| %s | %s | %.2f | %.2f | **%.2f** | %.2f (%s) | **%.2f** |"
                     % (coll, mib, bs, bg, bs / bg, bp, place.replace("_", " "), bs / bp))
fs = [t["rounds"][0]["fsdp"] for t in torch_runs if t["rounds"][0].get("fsdp")]
if fs:
    med = {k: statistics.median(f[k] for f in fs) for k in fs[0]}
    lines += ["", "| FSDP2 step (%.1fM params) | median step time | gloo / this |"
              % (torch_runs[0].get("fsdp_params", 0) / 1e6), "|---|---|---|"]
    for k, v in med.items():
        lines.append("| %s | %.3f s | %s |" % (k, v, "**%.2f**" % (med["gloo"] / v)
                                                 if k != "gloo" else "1.00"))
text = "\n".join(lines)
open(out + "/bench-torch.md", "w").write(text + "\n")
print(text)
PY
