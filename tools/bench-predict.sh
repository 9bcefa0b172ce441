#!/bin/bash
# bench-predict.sh: calibrate `sharc-perf predict` on this machine and check it, in one run.
# Each round, so that the fit and the measurements see the same machine:
#  1. fit: all-gather and reduce-scatter at 2 ranks (sharc-perf, 1M..32M, sharc_mem_alloc
#     buffers as the engine's) give alpha and the bandwidth of each (least squares on the
#     medians); a 1-rank sharc-llama run gives the compute rate of its forward and backward
#     and the optimizer's time;
#  2. measure: sharc-perf overlap (2 ranks, -p 4M -u 16 --compute sleep --compute-factor 4),
#     sharc-llama on 1 rank and on 2 ranks (the same batch per rank);
#  3. predict each from that round's fit alone.
# Prints predicted, measured (medians over the rounds) and the ratio, and each round's ratio.
#
#   tools/bench-predict.sh [--reps 3] [--config 15m] [--batch 4] [--seq 64] [--steps 10]
#                          [--out DIR]
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
reps=3 config=15m batch=4 seq=64 steps=10 out=$top/build/bench-predict
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps=$2 ;; --config) config=$2 ;; --batch) batch=$2 ;; --seq) seq=$2 ;;
        --steps) steps=$2 ;; --out) out=$2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "bench-predict: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift 2
done
perf=$top/build/perf/sharc-perf llama=$top/build/trainer/sharc-llama
[ -x "$perf" ] && [ -x "$llama" ] || { echo "bench-predict: build sharc first" >&2; exit 2; }
mkdir -p "$out/data"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none -np 2 --mca btl self,vader)
vocab=512
# random tokens (a step's time does not depend on them)
python3 - "$out/data" $vocab <<'PY'
import random, struct, sys
for name, n in (("train.bin", 200000), ("val.bin", 5000)):
    r = random.Random(n)
    ids = [r.randrange(int(sys.argv[2])) for _ in range(n)]
    with open(sys.argv[1] + "/" + name, "wb") as f:
        f.write(b"SHARCTOK" + struct.pack("<IIQII", 1, 2, n, int(sys.argv[2]), 0))
        f.write(struct.pack("<%dH" % n, *ids))
PY
echo "bench-predict: $(date -u +%F), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

train() { # train NAME RANKS
    local launch=()
    [ "$2" = 1 ] || launch=("${mpi[@]}")
    "${launch[@]}" "$llama" train --config "$config" --data "$out/data" --seq "$seq" \
        --batch "$batch" --steps "$steps" --warmup 2 --threads 1 --val-every 0 \
        --print-every "$steps" --log "$out/$1.jsonl" > /dev/null
}
for r in $(seq 1 "$reps"); do
    for c in allgather reduce_scatter; do
        "${mpi[@]}" "$perf" $c -b 1M -e 32M -f 2 -n 10 -w 3 -R 1 -c 0 --vs-memcpy \
            -J "$out/${c}_$r.json" \
            > /dev/null
    done
    train "calib_$r" 1
    "${mpi[@]}" "$perf" overlap -p 4M -u 16 --compute sleep --compute-factor 4 -n 10 -w 2 \
        -J "$out/overlap_$r.json" > "$out/overlap_$r.txt"
    train "t1_$r" 1
    train "t2_$r" 2
done

python3 - "$out" "$perf" "$reps" "$config" "$batch" "$seq" $vocab <<'PY'
import json, re, statistics, subprocess, sys
out, perf, reps, config, batch, seq, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
med = statistics.median

def fit(path):
    """t = alpha + (n-1)/n * bytes / bw over the out-of-place medians (n = 2)."""
    rows = json.load(open(path))["results"]
    xs = [r["size"] / 2 for r in rows]
    ys = [r["out_of_place"]["median_us"] * 1e-6 for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return max(my - k * mx, 0.0), 1.0 / k

def steps(path):
    return [json.loads(l) for l in open(path) if '"event":"step"' in l][2:]  # after 2 steps

def predict(base, args):
    subprocess.run([perf, "predict", "-C", "local"] + base + args + ["-J", out + "/p.json"],
                   check=True, capture_output=True, text=True)
    return json.load(open(out + "/p.json"))["rows"][0]["step_s"]

names = ["overlap, comm only (2 ranks)", "overlap, overlapped (2 ranks)",
         "sharc-llama %s, 1 rank, batch %d x %d" % (config, batch, seq),
         "sharc-llama %s, 2 ranks, batch %d x %d each" % (config, batch, seq)]
pred = {n: [] for n in names}
meas = {n: [] for n in names}
for r in range(1, reps + 1):
    a_ag, bw_ag = fit("%s/allgather_%d.json" % (out, r))
    # the caller's memory bandwidth (the engine zeroes gradient buffers): one thread's memcpy
    # of the largest size, measured in the same run
    mem = json.load(open("%s/allgather_%d.json" % (out, r)))["results"][-1]["memcpy_gbps"]
    a_rs, bw_rs = fit("%s/reduce_scatter_%d.json" % (out, r))
    cal = steps("%s/calib_%d.jsonl" % (out, r))
    # the forward and backward's compute rate: the trainer's FLOPs (mfu x peak x step) over
    # its compute less the optimizer; and the optimizer's time
    peak = json.loads(open("%s/calib_%d.jsonl" % (out, r)).readline())["gemm_peak_gflops"] * 1e9
    rate = med([s["mfu"] * peak * s["step_s"] / (s["compute_s"] - s["optim_s"]) for s in cal])
    optim = med([s["optim_s"] for s in cal])
    print("round %d fit: all-gather alpha %.1f us, %.2f GB/s; reduce-scatter alpha %.1f us, "
          "%.2f GB/s; memcpy %.2f GB/s; compute %.1f GFLOP/s (GEMM peak %.1f); optimizer %.1f ms"
          % (r, a_ag * 1e6, bw_ag / 1e9, a_rs * 1e6, bw_rs / 1e9, mem, rate / 1e9, peak / 1e9,
             optim * 1e3))
    base = ["--set", "intra_GBps=%g" % (bw_ag / 1e9), "--set", "intra_rs_GBps=%g" % (bw_rs / 1e9),
            "--set", "intra_lat_us=%g" % (a_ag * 1e6), "-N", "1"]
    # sharc-perf overlap: its compute per forward unit is set in the run (4 x an all-gather)
    txt = open("%s/overlap_%d.txt" % (out, r)).read()
    fwd = float(re.search(r"sleep ([0-9.]+) ms per forward unit", txt).group(1))
    ovl = lambda key: float(re.search(r"^%s\s+([0-9.]+)" % key, txt, re.M).group(1)) / 1e3
    syn = ["-m", "synthetic:16:4M", "--param-dtype", "f32", "--reduce-dtype", "f32",
           "--prefetch", "1", "--set", "gpus_per_node=2"]
    pred[names[0]].append(predict(base, syn + ["--set", "unit_fwd_ms=0"]))
    meas[names[0]].append(ovl("comm only"))
    pred[names[1]].append(predict(base, syn + ["--set", "unit_fwd_ms=%g" % fwd]))
    meas[names[1]].append(ovl("overlapped"))
    model = ["-m", config, "--vocab", str(vocab), "-b", str(batch), "-t", str(seq),
             "--param-dtype", "f32", "--reduce-dtype", "f32", "--set",
             "peak_tflops=%g" % (rate / 1e12), "--set", "mfu=1", "--set",
             "optim_ms=%g" % (optim * 1e3), "--set", "shared_cores=1",
             # the trainer's gradient buffers are zeroed by the engine (sharc-perf overlap
             # writes every gradient itself, assign_grads: nothing to zero there)
             "--set", "mem_GBps=%g" % mem]
    for n, name in ((1, names[2]), (2, names[3])):
        pred[name].append(predict(base, model + ["--set", "gpus_per_node=%d" % n]))
        meas[name].append(med([s["step_s"] for s in steps("%s/t%d_%d.jsonl" % (out, n, r))]))
print("%-44s %14s %13s %6s  %s" % ("(medians over the rounds)", "predicted (ms)",
                                   "measured (ms)", "ratio", "each round"))
for n in names:
    ratios = [p / m for p, m in zip(pred[n], meas[n])]
    ratio = med(ratios)
    print("%-44s %14.1f %13.1f %6.2f  %s  %s" % (n, med(pred[n]) * 1e3, med(meas[n]) * 1e3,
          ratio, " ".join("%.2f" % x for x in ratios),
          "within 15%" if abs(ratio - 1) <= 0.15 else "OFF by more than 15%"))
PY
