#!/bin/bash
# sharc-llama over quantized wires, briefly: the tiny config for 20 steps on 2 pretended nodes
# x 2 ranks (so that the reductions are quantized between the nodes and hpZ's secondary
# shards are 1/2 of a unit), int8 and fp8 gathers and reductions with reshard-after-forward
# node, against the same run over full wires: every loss finite, within 1% of the full run's
# at every step, yet not equal to it (the wires were quantized), and the secondary shards'
# memory reported. The 300-step convergence check of the 15m config is a benchmark
# (tools/bench-quant.sh), too long for make check.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

LLAMA="$top_builddir/trainer/sharc-llama"
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-trainer-wire.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between pretended nodes)"
    exit 77
fi
mkdir -p "$work/data"
make_tokens "$work/data/train.bin" 20000 512 512
make_tokens "$work/data/val.bin" 3000 512 512

# train NAME ARGS...: tiny model, 20 steps, 2 nodes x 2 ranks, JSONL log in $work/NAME.jsonl
train() {
    local name=$1; shift
    env UCX_TLS=tcp,self "$LAUNCH" --mode env --nodes 2 -n 4 -- "$LLAMA" train --config tiny \
        --data "$work/data" --seq 32 --batch 2 --steps 20 --warmup 5 --threads 1 \
        --val-every 0 --print-every 5 --log "$work/$name.jsonl" "$@"
}

# close NAME: every loss finite and within 1% of the full run's, and some loss different
close() {
    python3 - "$work/full.jsonl" "$work/$1.jsonl" <<'PY'
import json, math, sys
def steps(path):
    return {e["step"]: e for e in map(json.loads, open(path)) if e["event"] == "step"}
a, b = steps(sys.argv[1]), steps(sys.argv[2])
assert sorted(a) == sorted(b) and a, "steps differ"
assert all(math.isfinite(e["loss"]) for e in b.values()), "a loss is not finite"
worst = max(abs(a[s]["loss"] - b[s]["loss"]) / a[s]["loss"] for s in a)
print("largest relative loss difference %.2e over %d steps" % (worst, len(a)))
assert worst <= 0.01, "beyond 1%"
assert worst > 0, "the losses equal the full run's: was anything quantized?"
PY
}

run_ok "full wires" train full
run_ok "int8 gathers and reductions, hpZ" train int8 --param-wire int8 --reduce-wire int8 \
    --reshard-after-forward node
run_ok "int8: the losses stay within 1% of the full run's" close int8
run_ok "int8, hpZ: the secondary shards' memory is reported" python3 -c '
import json, sys
s = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "step"]
assert all(e["secondary_mib"] > 0 for e in s[1:]), [e["secondary_mib"] for e in s]
print("secondary shards: %.3f MiB" % s[-1]["secondary_mib"])' "$work/int8.jsonl"
run_ok "fp8 gathers and reductions (blocks of 64)" train fp8 --param-wire fp8 --reduce-wire fp8 \
    --wire-block 64
run_ok "fp8: the losses stay within 1% of the full run's" close fp8
run_fail "a bad wire is refused, naming the option" 30 "--param-wire: 'int4' is not full, int8 or fp8" \
    "$LLAMA" train --config tiny --param-wire int4
finish
