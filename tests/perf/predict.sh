#!/bin/bash
# sharc-perf predict replays the engine's decisions: the real engine (sharc-perf overlap, one
# rank) and the simulation of the same schedule prefetch as many units and hold as many at
# the peak, at several depths and bounds; auto prefetch runs; offload (7B on one 80 GB GPU
# fits with it, not without); the outputs (table labelled a prediction, JSON, the gnuplot
# script); clear errors for a bad model, cluster and option.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

PERF="$top_builddir/perf/sharc-perf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# engine_vs_sim PREFETCH MAX_UNSHARDED: the engine's last step against the simulation's
engine_vs_sim() {
    local eng sim
    eng=$("$PERF" overlap -u 6 -p 64K --compute-us 300 --prefetch "$1" --max-unsharded "$2" \
        -n 2 -w 1 2>&1 | sed -n 's/.* \([0-9]*\) prefetched, depth [0-9]*; peak \([0-9]*\) units.*/\1 \2/p')
    "$PERF" predict -m synthetic:6:64K --prefetch "$1" --max-unsharded "$2" -C local \
        --set gpus_per_node=1 -N 1 --param-dtype f32 -J "$tmp/p.json" > /dev/null || return 1
    sim=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["rows"][0]
print(r["prefetches"], r["peak_unsharded"])' "$tmp/p.json")
    echo "engine: $eng; simulation: $sim"
    [ -n "$eng" ] && [ "$eng" = "$sim" ]
}
for spec in "0 0" "1 0" "2 0" "2 2" "3 0"; do
    run_ok "engine and simulation agree: prefetch, bound $spec" engine_vs_sim $spec
done

run_ok_match "a table labelled a prediction, 1..16 nodes" \
    "PREDICTED, not measured.*as given +16 +128" \
    "$PERF" predict -m llama2-7b -C p5 -N 1,2,4,8,16 -J "$tmp/out.json" --plot "$tmp/out.png"
run_ok "its JSON says it is a prediction" python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); assert d["prediction"] is True and len(d["rows"]) == 5' \
    "$tmp/out.json"
run_ok "the gnuplot script is written (the picture where gnuplot is)" test -s "$tmp/out.gp"
run_ok_match "auto prefetch and every sweep run" "prefetch auto" \
    "$PERF" predict -m llama3-8b -C hgx-h100-ib -N 1,4 --sweep prefetch
run_ok_match "offload: Llama 2 7B does not fit one 80 GB GPU without, fits with" \
    "offload none +1 +1[ 0-9.]* no.*offload host +1 +1[ 0-9.]* yes.*offload managed +1 +1[ 0-9.]* yes" \
    "$PERF" predict -m llama2-7b -C p5 --set gpus_per_node=1 -N 1 --sweep offload
run_ok_match "offload on NVLink-C2C" "host link c2c 450 GB/s" \
    "$PERF" predict -m llama2-7b -C gh200 -N 1 --offload host
for w in hsdp reduce nics wire; do
    run_ok "sweep $w" "$PERF" predict -m 15m -C p4d -N 1,2 --sweep $w
done
run_ok_match "the wires and hpZ: bytes between nodes and secondary shards in the JSON"     "int8\+hpZ" "$PERF" predict -m llama2-7b -C eth100 -N 1,16 --sweep wire -J "$tmp/wire.json"
run_ok "hpZ sends less between nodes than int8 alone, which sends less than full wires"     python3 -c 'import json, sys
r = {(x["variant"], x["nodes"]): x for x in json.load(open(sys.argv[1]))["rows"]}
b = [r[(v, 16)]["internode_bytes_per_gpu"] for v in ("full", "int8 both", "int8+hpZ")]
assert b[0] > b[1] > b[2] > 0, b
assert r[("int8+hpZ", 16)]["secondary_bytes_per_gpu"] > 0' "$tmp/wire.json"
run_ok_match "a Hugging Face config.json as the model" "config.json \\(0.03293 M params" \
    "$PERF" predict -m "$top_srcdir/tests/trainer/hf_tiny/config.json" -C local \
    --set unit_fwd_ms=1 -N 1 -b 2 -t 32
run_fail "an unknown model names the models" 5 "unknown model.*llama2-7b" \
    "$PERF" predict -m llama9
run_fail "an unknown cluster names the presets" 5 "no such preset.*p4d, p5" \
    "$PERF" predict -C nowhere
run_fail "a bad --set says which key" 5 "unknown key 'nics_count'" \
    "$PERF" predict --set nics_count=3
run_fail "a shard size that does not fit the nodes" 5 "must divide the GPUs of a node" \
    "$PERF" predict --shard-size 3
run_fail "a bad sweep" 5 "prefetch, hsdp, reduce, nics, offload or wire" "$PERF" predict --sweep depth
run_fail "a bad wire" 5 "bad or missing value" "$PERF" predict --param-wire int4
finish
