#!/bin/bash
# bench-quant.sh: the quantized wires' benchmarks of docs/perf.md, each side by side in one run.
#
#   tools/bench-quant.sh [--nodes 4] [--per-node 2] [--rate 1gbit] [--rounds 3] [--steps 12]
#                        [--batch 1] [--seq 16] [--data DIR] [--out DIR] [--only ag|train|learn]
#
# 1. ag: on --nodes namespace nodes (tools/nodes.sh, prefix "qb<pid>") of --per-node ranks
#    each, links shaped to --rate: sharc-perf allgather of 64 MiB (f32) over the full wire and
#    over int8, alternated --rounds times; the median algbw (f32 bytes delivered per second)
#    of each, and their ratio.
# 2. train: sharc-llama 15m on the same nodes, --steps steps of --batch x --seq tokens per
#    rank (a batch small enough that the links, not this machine's two cores, bound the
#    step, as a GPU's compute would leave them): bf16 gathers + f32 reductions against int8
#    gathers + int8 reductions + reshard-after-forward node, alternated --rounds times; the
#    median step time (steps after the first two, which record the schedule) and the bytes
#    each node's interface sent per step (tools/nodes.sh bytes, over the run, divided by its
#    steps), and their ratios.
# 3. learn: the convergence check: 300 steps of 15m (2 ranks x 2 x 128 tokens, as
#    tests/trainer/trainer_learn.sh) on 2 pretended nodes (one rank each, so every reduction
#    is quantized), bf16 gathers + f32 reductions against int8 gathers (dequantized into f32,
#    the CPU trainer's param dtype) + int8 reductions, seeds fixed; the final validation
#    losses and their relative difference (target: within 1%).
# Needs root for the nodes (parts 1 and 2), python3-sentencepiece and bible-kjv for the corpus.
# SPDX-License-Identifier: BSD-3-Clause
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bld=${SHARC_BUILD_DIR:-$top/build}
nodes=4 per=2 rate=1gbit rounds=3 steps=12 batch=1 seq=16 only="" data=$bld/data/kjv
out=$bld/bench-quant
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) nodes=$2 ;; --per-node) per=$2 ;; --rate) rate=$2 ;; --rounds) rounds=$2 ;;
        --steps) steps=$2 ;; --batch) batch=$2 ;; --seq) seq=$2 ;; --data) data=$2 ;;
        --out) out=$2 ;; --only) only=$2 ;;
        -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "bench-quant: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift 2
done
perf=$bld/perf/sharc-perf llama=$bld/trainer/sharc-llama launch=$top/tests/launch.sh
[ -x "$perf" ] && [ -x "$llama" ] || { echo "bench-quant: build sharc first" >&2; exit 2; }
mkdir -p "$out"
[ -f "$data/train.bin" ] || "${PYTHON:-/usr/bin/python3}" "$top/trainer/scripts/prepare_data.py" \
    --out "$data" > "$out/prepare.log" 2>&1 || { echo "bench-quant: no corpus" >&2; exit 2; }
summary=$out/summary.md
echo "# bench-quant: $(date -u +%F), $(nproc) cores, $(uname -r); $nodes nodes x $per ranks at" \
    "$rate; $rounds rounds" | tee "$summary"
n=$((nodes * per))

# median of numbers on stdin
median() { python3 -c 'import statistics, sys
v = [float(x) for x in sys.stdin.read().split()]
print("%.6g" % statistics.median(v) if v else "nan")'; }

# sum of the bytes every node's interface sent
sent() {
    local total=0 k tx
    for ((k = 0; k < nodes; k++)); do
        read -r tx _ < <($N bytes "$k")
        total=$((total + tx))
    done
    echo "$total"
}

run_ag() { # run_ag ROUND WIRE: one sharc-perf allgather; its out-of-place algbw
    "$launch" --mode env -n "$n" --nodes "$nodes" --node-exec "$N exec" --timeout 600 -- \
        "$perf" allgather -b 64M -e 64M -n 5 -w 2 -c 0 ${2:+--wire $2} \
        > "$out/ag-${2:-full}.$1.txt" 2>&1 || return 1
    awk '/^\[rank 0\] +[0-9]/ { print $9 }' "$out/ag-${2:-full}.$1.txt"
}

run_train() { # run_train ROUND NAME ARGS...: sharc-llama; its median step and bytes per step
    local r=$1 name=$2 b0 b1
    shift 2
    b0=$(sent)
    "$launch" --mode env -n "$n" --nodes "$nodes" --node-exec "$N exec" --timeout 900 -- \
        "$llama" train --config 15m --data "$data" --batch "$batch" --seq "$seq" \
        --steps "$steps" --warmup 2 --threads 1 --val-every 0 --print-every "$steps" \
        --param-dtype bf16 --log "$out/train-$name.$r.jsonl" "$@" > "$out/train-$name.$r.txt" 2>&1 ||
        return 1
    b1=$(sent)
    python3 - "$out/train-$name.$r.jsonl" "$((b1 - b0))" "$steps" "$nodes" << 'PY'
import json, statistics, sys
s = [e["step_s"] for e in map(json.loads, open(sys.argv[1])) if e["event"] == "step"][2:]
print("%.6g %.6g" % (statistics.median(s), int(sys.argv[2]) / int(sys.argv[3]) / int(sys.argv[4])))
PY
}

if [ -z "$only" ] || [ "$only" = ag ] || [ "$only" = train ]; then
    . "$top/tools/nodes.sh"
    NODES_PREFIX=qb$$
    NODES_OWNER_PID=$$
    trap 'nodes_down' EXIT
    trap 'exit 130' INT TERM HUP
    nodes_up "$nodes" --rate "$rate" > "$out/nodes.log" 2>&1 || { echo "bench-quant: no nodes" >&2; exit 2; }
    N="$top/tools/nodes.sh -p $NODES_PREFIX"
fi

if [ -z "$only" ] || [ "$only" = ag ]; then
    : > "$out/ag.full" && : > "$out/ag.int8"
    for ((r = 1; r <= rounds; r++)); do
        run_ag "$r" "" >> "$out/ag.full"
        run_ag "$r" int8 >> "$out/ag.int8"
    done
    f=$(median < "$out/ag.full") q=$(median < "$out/ag.int8")
    {
        echo
        echo "| allgather 64 MiB f32, $n ranks | algbw (GB/s, f32 bytes delivered) |"
        echo "|---|---|"
        echo "| full wire | $f |"
        echo "| int8 wire | $q |"
        echo "| int8 / full | $(python3 -c "print('%.2f' % ($q / $f))") |"
    } | tee -a "$summary"
fi

if [ -z "$only" ] || [ "$only" = train ]; then
    : > "$out/train.base" && : > "$out/train.quant"
    for ((r = 1; r <= rounds; r++)); do
        run_train "$r" base >> "$out/train.base"
        run_train "$r" quant --param-wire int8 --reduce-wire int8 \
            --reshard-after-forward node >> "$out/train.quant"
    done
    bs=$(cut -d' ' -f1 "$out/train.base" | median) bb=$(cut -d' ' -f2 "$out/train.base" | median)
    qs=$(cut -d' ' -f1 "$out/train.quant" | median) qb=$(cut -d' ' -f2 "$out/train.quant" | median)
    {
        echo
        echo "| 15m, $n ranks, batch $batch x $seq | step (s, median) | MB sent per node per step |"
        echo "|---|---|---|"
        echo "| bf16 gathers, f32 reductions | $bs | $(python3 -c "print('%.2f' % ($bb / 1e6))") |"
        echo "| int8 gathers, int8 reductions, hpZ | $qs | $(python3 -c "print('%.2f' % ($qb / 1e6))") |"
        echo "| speedup; bytes quantized / full | $(python3 -c "print('%.2fx' % ($bs / $qs))") |" \
            "$(python3 -c "print('%.0f%%' % (100 * $qb / $bb))") |"
    } | tee -a "$summary"
fi

if [ -z "$only" ] || [ "$only" = learn ]; then
    for name in base quant; do
        args=(--param-dtype bf16)
        [ $name = quant ] && args=(--param-dtype f32 --param-wire int8 --reduce-wire int8)
        env UCX_TLS=tcp,self "$launch" --mode env --nodes 2 -n 2 --timeout 1800 -- "$llama" train \
            --config 15m --data "$data" --batch 2 --seq 128 --steps 300 --warmup 20 --lr 2e-3 \
            --min-lr 2e-4 --val-every 50 --val-seqs 32 --print-every 50 \
            --seed 1 --data-seed 1234 --log "$out/learn-$name.jsonl" "${args[@]}" \
            > "$out/learn-$name.txt" 2>&1 || echo "bench-quant: learn $name failed" >&2
    done
    python3 - "$out/learn-base.jsonl" "$out/learn-quant.jsonl" << 'PY' | tee -a "$summary"
import json, sys
def val(p):
    return [(e["step"], e["val_loss"]) for e in map(json.loads, open(p)) if e["event"] == "val"]
a, b = val(sys.argv[1]), val(sys.argv[2])
print("\n| 300 steps of 15m, 2 nodes x 1 rank | final val loss | curve (step: loss) |")
print("|---|---|---|")
for name, v in (("bf16 gathers, f32 reductions", a), ("int8 gathers (into f32), int8 reductions", b)):
    print("| %s | %.4f | %s |" % (name, v[-1][1], ", ".join("%d: %.3f" % x for x in v)))
d = abs(b[-1][1] - a[-1][1]) / a[-1][1]
print("| relative difference | %.2f%% (target: within 1%%) | |" % (100 * d))
PY
fi
