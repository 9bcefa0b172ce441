#!/bin/bash
# bench-check.sh [RUNS (default 10)]: sharc-perf check's verdicts on namespace nodes
# (tools/nodes.sh; root): 4 nodes x 1 rank (env bootstrap), every link at RATE (default
# 400mbit, tc tbf). RUNS runs with one node's link slowed to SLOW (default 100mbit: 4x; node
# i % 4 in run i) and RUNS runs with none slowed, each `sharc-perf check --budget 15s -b 1M
# -e 2M -n 5 -J ...`. Per run: the exit status, what was named, the slowed node's best link
# and the slowest link between the other nodes as shares of the job's median, the time. Prints Markdown tables
# for docs/perf.md and exits 1 unless every slowed run named the slowed node and nothing
# else, and no clean run named anything. RATE, SLOW and CHECK_ARGS may be set.
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
rate=${RATE:-400mbit}
slow=${SLOW:-100mbit}
top_srcdir=$top
top_builddir=${SHARC_BUILD_DIR:-$top/build}
. "$top/tests/lib.sh"
# shellcheck disable=SC2119
setup_nodes 4 --rate "$rate"
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-bench-check.XXXXXX")
trap 'nodes_down; rm -rf "$work"' EXIT
read -r -a args <<< "${CHECK_ARGS:---budget 15s -b 1M -e 2M -n 5}"
good_slow=0
good_clean=0

# summary JSON SLOWED: "named|slowed node's %|others' lowest %|size x iters|elapsed"
summary() {
    python3 - "$1" "$2" << 'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
k = int(sys.argv[2])
named = [("node%d" % n["node"]) for n in d["nodes"] if n["named"]]
named += ["link %d-%d" % (l["node_a"], l["node_b"]) for l in d["links"] if l["named"]]
named += ["rank %d" % r["rank"] for r in d["ranks"] if r["named"]]
named += ["pair %d-%d" % (l["rank_a"], l["rank_b"]) for l in d["intra_links"] if l["named"]]
pct = lambda n: 100 * n["first_pass_best_gbps"] / d["median_gbps"]
others = [100 * l["busbw_gbps"] / d["median_gbps"] for l in d["links"]
          if k not in (l["node_a"], l["node_b"])]
print("%s|%s|%.0f%%|%d B x %d|%.1f" % (
    ", ".join(named) or "nothing",
    "%.0f%%" % pct(d["nodes"][k]) if k >= 0 else "-",
    min(others), d["size"], d["iters"], d["elapsed_s"]))
EOF
}

run_one() { # run_one SLOWED (-1: none) I: a row of the table
    local k=$1 i=$2 out st row
    [ "$k" -ge 0 ] && $NODES rate "$k" "$slow"
    out=$("$LAUNCH" --mode env --node-exec "$NODE_EXEC" --timeout 120 -n 4 --nodes 4 -- \
        "$top_builddir/perf/sharc-perf" check "${args[@]}" -J "$work/$i.json" 2>&1)
    st=$?
    [ "$k" -ge 0 ] && $NODES rate "$k" "$rate"
    if [ ! -s "$work/$i.json" ]; then
        echo "run $i: no result (exit $st)" >&2
        printf '%s\n' "$out" | grep -E "^\[rank 0\]|ERROR" | tail -20 >&2
        echo "| $i | ${k/#-1/none} | $st | (no result) | | | | |"
        return 1
    fi
    row=$(summary "$work/$i.json" "$k")
    echo "| $i | $([ "$k" -ge 0 ] && echo "node$k" || echo none) | $st | ${row//|/ | } |"
    if [ "$k" -ge 0 ]; then
        [ $st = 1 ] && [ "${row%%|*}" = "node$k" ]
    else
        [ $st = 0 ] && [ "${row%%|*}" = nothing ]
    fi
}

echo "| run | slowed ($slow, others $rate) | exit | named | slowed node's best link / median | slowest other link / median | exchanges | took (s) |"
echo "|---|---|---|---|---|---|---|---|"
for ((i = 0; i < runs; i++)); do
    run_one $((i % 4)) "$i" && good_slow=$((good_slow + 1))
done
for ((i = 0; i < runs; i++)); do
    run_one -1 "$((runs + i))" && good_clean=$((good_clean + 1))
done
echo
echo "slowed node named, and nothing else: $good_slow of $runs runs; nothing named with no node slowed: $good_clean of $runs runs"
[ $good_slow = "$runs" ] && [ $good_clean = "$runs" ]
