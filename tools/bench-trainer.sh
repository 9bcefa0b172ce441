#!/bin/bash
# bench-trainer.sh: the trainer's benchmark of docs/perf.md. Single-process training speed of
# sharc-llama against PyTorch on CPU (trainer/bench_torch.py: the same config, batch, data
# and optimizer), alternated ROUNDS times in one run so both see the same machine, then the
# weak-scaling curve of sharc-llama (trainer/scale.sh) at RANKS.
#
#   tools/bench-trainer.sh [--config 15m] [--batch 8] [--seq 256] [--steps 20] [--rounds 3]
#                          [--threads N] [--ranks 1,2,4] [--data DIR] [--out DIR]
#                          [--torch-python PYTHON]
#
# PYTHON must import torch and transformers (for example a venv with PyPI's CPU torch); without
# one the PyTorch side is skipped. --threads is the BLAS / torch thread count of the
# single-process runs (default: all cores).
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
[ -f "$data/train.bin" ] || "${PYTHON:-/usr/bin/python3}" "$top/trainer/prepare_data.py" --out "$data"
mkdir -p "$out"
have_torch=1
"$torch_python" -c 'import torch, transformers' 2> /dev/null || have_torch=0
[ "$config" = 15m ] || have_torch=0 # bench_torch.py builds the 15m config
[ $have_torch = 1 ] || echo "bench-trainer: $torch_python has no torch/transformers; PyTorch side skipped"

echo "bench-trainer: $(date -u +%F), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
common=(--config "$config" --data "$data" --batch "$batch" --seq "$seq" --steps "$steps"
        --val-every 0 --print-every "$steps")
for r in $(seq 1 "$rounds"); do
    "$llama" train "${common[@]}" --threads "$threads" --log "$out/sharc_$r.jsonl" |
        grep summary: | sed "s/^/round $r sharc-llama: /"
    if [ $have_torch = 1 ]; then
        "$torch_python" "$top/trainer/bench_torch.py" --data "$data/train.bin" \
            --batch "$batch" --seq "$seq" --steps "$steps" --threads "$threads" |
            grep '^bench_torch:' | tee "$out/torch_$r.txt" | sed "s/^/round $r /"
    fi
done
"${PYTHON:-/usr/bin/python3}" - "$out" "$rounds" "$have_torch" <<'PY'
import json, statistics, sys
out, rounds, have_torch = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def summary(path):
    return [json.loads(l) for l in open(path) if '"summary"' in l][-1]
s = [summary(f"{out}/sharc_{r}.jsonl")["tokens_per_s"] for r in range(1, rounds + 1)]
line = f"sharc-llama 1 process: median {statistics.median(s):.0f} tokens/s over {rounds} rounds {['%.0f' % v for v in s]}"
if have_torch:
    t = []
    for r in range(1, rounds + 1):
        kv = dict(f.split("=", 1) for f in open(f"{out}/torch_{r}.txt").read().split()[1:])
        t.append(float(kv["tokens_per_s"]))
    ratios = [a / b for a, b in zip(s, t)]
    line += (f"\nPyTorch 1 process:     median {statistics.median(t):.0f} tokens/s {['%.0f' % v for v in t]}"
             f"\nratio sharc-llama / PyTorch: median {statistics.median(ratios):.2f}x (per round {['%.2f' % v for v in ratios]})")
print(line)
PY
bash "$top/trainer/scale.sh" --ranks "$ranks" --out "$out/scale" --bin "$llama" -- \
    "${common[@]}" | grep -v '^step '
