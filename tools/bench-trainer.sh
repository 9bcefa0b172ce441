#!/bin/bash
# bench-trainer.sh: the trainer's benchmark of docs/perf.md. Single-process training speed of
# sharc-llama against PyTorch on CPU (trainer/scripts/bench_torch.py: the same config, batch, data
# and optimizer) on all cores and on one, and sharc-llama with one rank per core on the same
# global batch; alternated ROUNDS times in one run so all see the same machine; then the
# weak-scaling curve of sharc-llama (trainer/scripts/scale.sh) at RANKS.
#
#   tools/bench-trainer.sh [--config 15m] [--batch 8] [--seq 256] [--steps 20] [--rounds 3]
#                          [--threads N] [--ranks 1,2,4] [--data DIR] [--out DIR]
#                          [--torch-python PYTHON]
#
# PYTHON must import torch and transformers (for example a venv with PyPI's CPU torch); without
# one the PyTorch side is skipped. --threads is the BLAS / torch thread count of the
# single-process runs (default: all cores).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
config=15m batch=8 seq=256 steps=20 rounds=3 threads=$(nproc) ranks=1,2,4
data=$top/build/data/kjv out=$top/build/bench-trainer torch_python=python3
while [ $# -gt 0 ]; do
    case "$1" in
        --config) config=$2 ;; --batch) batch=$2 ;; --seq) seq=$2 ;; --steps) steps=$2 ;;
        --rounds) rounds=$2 ;; --threads) threads=$2 ;; --ranks) ranks=$2 ;;
        --data) data=$2 ;; --out) out=$2 ;; --torch-python) torch_python=$2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "bench-trainer: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift 2
done
llama=$top/build/trainer/sharc-llama
[ -x "$llama" ] || { echo "bench-trainer: build sharc first (tools/build.sh)" >&2; exit 2; }
[ -f "$data/train.bin" ] ||
    "${PYTHON:-/usr/bin/python3}" "$top/trainer/scripts/prepare_data.py" --out "$data"
mkdir -p "$out"
have_torch=1
"$torch_python" -c 'import torch, transformers' 2> /dev/null || have_torch=0
case $config in tiny|15m|42m|110m|1b) ;; *) have_torch=0 ;; esac # bench_torch.py's configs
[ $have_torch = 1 ] || echo "bench-trainer: PyTorch side skipped ($torch_python has no" \
    "torch/transformers, or bench_torch.py does not build $config)"

echo "bench-trainer: $(date -u +%F), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
common=(--config "$config" --data "$data" --seq "$seq" --steps "$steps" --val-every 0
        --print-every "$steps")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# per round, alternated: one process on all cores (sharc-llama, then PyTorch); one process
# on one core (both); sharc-llama with one rank per core and the same global batch
for r in $(seq 1 "$rounds"); do
    for t in "$threads" 1; do
        "$llama" train "${common[@]}" --batch "$batch" --threads "$t" \
            --log "$out/sharc_t${t}_$r.jsonl" | grep 'summary: .*tok/s' |
            sed "s/^/round $r sharc-llama, $t thread(s): /"
        if [ $have_torch = 1 ]; then
            "$torch_python" "$top/trainer/scripts/bench_torch.py" --config "$config" \
                --data "$data/train.bin" --batch "$batch" --seq "$seq" --steps "$steps" \
                --threads "$t" |
                grep '^bench_torch: tokens_per_s=' | tee "$out/torch_t${t}_$r.txt" |
                sed "s/^/round $r PyTorch, $t thread(s): /"
        fi
    done
    if [ "$threads" -gt 1 ] && [ $((batch % threads)) -eq 0 ]; then
        mpirun --oversubscribe --bind-to none -np "$threads" "$llama" train "${common[@]}" \
            --batch $((batch / threads)) --threads 1 --log "$out/sharc_r${threads}_$r.jsonl" |
            grep 'summary: .*tok/s' | sed "s/^/round $r sharc-llama, $threads ranks: /"
    fi
done
"${PYTHON:-/usr/bin/python3}" - "$out" "$rounds" "$have_torch" "$threads" <<'PY'
import json, os, statistics, sys
out, rounds, have_torch, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
def sharc(tag):
    v = []
    for r in range(1, rounds + 1):
        path = f"{out}/sharc_{tag}_{r}.jsonl"
        if os.path.exists(path):
            v.append([json.loads(l) for l in open(path) if '"summary"' in l][-1]["tokens_per_s"])
    return v
def torch(tag):
    v = []
    for r in range(1, rounds + 1):
        kv = dict(f.split("=", 1) for f in open(f"{out}/torch_{tag}_{r}.txt").read().split()[1:])
        v.append(float(kv["tokens_per_s"]))
    return v
def show(name, v):
    print(f"{name:<44} median {statistics.median(v):7.0f} tokens/s  {' '.join('%.0f' % x for x in v)}")
def ratio(name, a, b):
    q = [x / y for x, y in zip(a, b)]
    print(f"{name:<44} median {statistics.median(q):7.2f}x        {' '.join('%.2f' % x for x in q)}")
rows = [(f"t{threads}", f"1 process, {threads} threads"), ("t1", "1 process, 1 thread")]
for tag, what in rows:
    s = sharc(tag)
    show(f"sharc-llama, {what}", s)
    if have_torch:
        t = torch(tag)
        show(f"PyTorch, {what}", t)
        ratio(f"sharc-llama / PyTorch, {what}", s, t)
multi = sharc(f"r{threads}")
if multi:
    show(f"sharc-llama, {threads} ranks x 1 thread, same batch", multi)
    if have_torch:
        ratio(f"... / PyTorch 1 process, {threads} threads", multi, torch(f"t{threads}"))
PY
bash "$top/trainer/scripts/scale.sh" --ranks "$ranks" --out "$out/scale" --bin "$llama" -- \
    "${common[@]}" --batch "$batch" | grep -v '^step '
