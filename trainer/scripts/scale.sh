#!/bin/bash
# scale.sh: weak-scaling curve of sharc-llama. Runs the same per-rank batch at each world size
# (one job per size through the launcher), then writes DIR/scale.csv with tokens/s, scaling
# efficiency = throughput(N) / (N x throughput(1)) and the exposed-communication share per
# point, and DIR/scale.png (gnuplot) when gnuplot is installed.
#
#   trainer/scripts/scale.sh [--ranks 1,2,4] [--out DIR] [--launch TEMPLATE] [--bin PATH] \
#       -- TRAIN ARGS
#
# TEMPLATE is the launch command with {N} for the rank count (default:
# "mpirun --oversubscribe --bind-to none -np {N}"; srun users give "srun -n {N}"). Every run
# gets --threads 1 unless TRAIN ARGS set --threads, so that each rank has the same compute
# at every size; ranks beyond the machine's cores share them, and the curve shows it.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ranks=1,2,4
out=scale
launch="mpirun --oversubscribe --bind-to none -np {N}"
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) ranks=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --launch) launch=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "scale.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ]; then
    for b in "$here/sharc-llama" "$(cd "$here/../.." && pwd)/build/trainer/sharc-llama" \
        "$(command -v sharc-llama || true)"; do
        if [ -n "$b" ] && [ -x "$b" ]; then bin=$b; break; fi
    done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "scale.sh: sharc-llama not found (build it, or give --bin)" >&2
    exit 2
fi
case " $* " in *" --threads "*) extra=() ;; *) extra=(--threads 1) ;; esac
if ! [[ "$ranks" =~ ^[0-9]+(,[0-9]+)*$ ]]; then
    echo "scale.sh: --ranks wants a list like 1,2,4 (got '$ranks')" >&2
    exit 2
fi
if [ "$(id -u)" -eq 0 ]; then # OpenMPI refuses root unless told
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p "$out"
IFS=, read -r -a sizes <<< "$ranks"
for n in "${sizes[@]}"; do
    log="$out/scale_$n.jsonl"
    rm -f "$log"
    cmd=${launch//\{N\}/$n}
    echo "scale.sh: $n rank(s): $cmd $bin train $* ${extra[*]} --log $log"
    # shellcheck disable=SC2086 # the template is split into words on purpose
    if ! $cmd "$bin" train "$@" "${extra[@]}" --log "$log" 2>&1 | tee "$out/scale_$n.out"; then
        echo "scale.sh: the $n-rank run failed (its output: $out/scale_$n.out)" >&2
        exit 1
    fi
done

python3 - "$out" "${sizes[@]}" <<'PY'
import json, sys
out, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
rows = []
for n in sizes:
    summ = [json.loads(l) for l in open(f"{out}/scale_{n}.jsonl") if '"summary"' in l]
    if not summ:
        sys.exit(f"scale.sh: no summary in {out}/scale_{n}.jsonl")
    rows.append((n, summ[-1]))
base = dict(rows).get(1)
with open(f"{out}/scale.csv", "w") as f:
    f.write("ranks,tokens_per_s,tokens_per_s_rank,efficiency,comm_exposed_share,mfu,step_s\n")
    for n, s in rows:
        eff = s["tokens_per_s"] / (n * base["tokens_per_s"]) if base else float("nan")
        f.write(f"{n},{s['tokens_per_s']:.1f},{s['tokens_per_s_rank']:.1f},{eff:.4f},"
                f"{s['comm_exposed_share']:.4f},{s['mfu']:.4f},{s['step_s']:.4f}\n")
print("\nweak scaling (same per-rank batch at each size):")
print(f"{'ranks':>5} {'tokens/s':>10} {'tokens/s/rank':>13} {'efficiency':>10} "
      f"{'exposed comm':>12} {'MFU':>6}")
for n, s in rows:
    eff = s["tokens_per_s"] / (n * base["tokens_per_s"]) if base else float("nan")
    print(f"{n:>5} {s['tokens_per_s']:>10.0f} {s['tokens_per_s_rank']:>13.0f} {eff:>10.1%} "
          f"{s['comm_exposed_share']:>12.1%} {s['mfu']:>6.1%}")
PY

if command -v gnuplot > /dev/null; then
    # ideal scaling: the smallest run's tokens/s per rank, times the ranks
    per=$(awk -F, 'NR == 2 && $1 > 0 { print $2 / $1 }' "$out/scale.csv")
    ticks=$(awk -F, 'NR > 1 { printf "%s\"%s\" %s", (NR > 2 ? ", " : ""), $1, $1 }' "$out/scale.csv")
    gnuplot <<GP
set terminal pngcairo size 900,540 font ",11"
set output "$out/scale.png"
set datafile separator ","
set key autotitle columnhead top left
set title "sharc-llama weak scaling"
set xlabel "ranks"
set ylabel "tokens/s (global)"
set y2label "scaling efficiency, exposed comm share"
set y2range [0:1.2]
set ytics nomirror
set y2tics 0.2
set xrange [0:*]
set yrange [0:*]
set xtics (${ticks:-1})
set grid
plot "$out/scale.csv" using 1:2 with linespoints lw 2 pt 7 title "tokens/s", \
     ${per:-0} * x with lines lw 1 dt 3 lc rgb "gray40" title "ideal (linear) scaling", \
     "" using 1:4 axes x1y2 with linespoints lw 2 pt 5 title "efficiency", \
     "" using 1:5 axes x1y2 with linespoints lw 2 dt 2 pt 9 title "exposed comm share"
GP
    echo "scale.sh: wrote $out/scale.csv and $out/scale.png"
else
    echo "scale.sh: wrote $out/scale.csv (no gnuplot, so no plot)"
fi
