#!/bin/bash
# sharc-perf --wire: allgather and reduce_scatter over int8 and fp8 wires on 2 pretended nodes
# x 2 ranks print each size's error against the full-precision collective beside the
# bandwidth (int8's all-gather within 1/254 of the largest value, and not exact; the
# reduce-scatter quantized between the nodes only), exact on one node where the
# reduce-scatter sums at full precision; the JSON has the errors; --wire is refused for the
# other collectives.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

PERF="$top_builddir/perf/sharc-perf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between pretended nodes)"
    exit 77
fi

# errors_within LO HI < OUTPUT: every data row's err max within (LO, HI] (rank 0's lines)
errors_within() {
    python3 -c '
import sys
rows = [l.split()[2:] for l in sys.stdin if l.startswith("[rank 0] ") and len(l.split()) > 2]
rows = [r for r in rows if r[0].isdigit()]
assert rows, "no data rows"
lo, hi = float(sys.argv[1]), float(sys.argv[2])
for r in rows:
    emax, erms = float(r[-2]), float(r[-1])
    print("%s B: err max %.2e, rms %.2e" % (r[0], emax, erms))
    assert lo < emax <= hi and erms <= emax, "err out of (%g, %g]" % (lo, hi)
' "$@"
}

run_ok_match "allgather --wire int8, 2 nodes x 2 ranks" "err max   err rms" env UCX_TLS=tcp,self \
    "$LAUNCH" --mode env --nodes 2 -n 4 -- "$PERF" allgather -b 64K -e 1M -f 4 -n 3 -w 1 \
    --wire int8 -J "$tmp/ag.json"
run_ok "int8 all-gather: within 1/254 of the largest value, not exact" errors_within 0 0.00394 \
    <<< "$last_out"
run_ok "the JSON has the errors" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["wire"] == "int8" and d["wire_block"] == 256
assert all(0 < r["err_max_rel"] < 0.004 for r in d["results"])' "$tmp/ag.json"
run_ok_match "reduce_scatter --wire int8, 2 nodes x 2 ranks" "err max   err rms" \
    env UCX_TLS=tcp,self "$LAUNCH" --mode env --nodes 2 -n 4 -- "$PERF" reduce_scatter -b 64K \
    -e 1M -f 4 -n 3 -w 1 --wire int8 --wire-block 64
run_ok "int8 reduce-scatter: quantized between the nodes" errors_within 0 0.02 <<< "$last_out"
run_ok_match "allgather --wire fp8, bf16, 3 ranks" "over a fp8 wire" "$LAUNCH" --mode env -n 3 \
    -- "$PERF" allgather -b 48K -e 48K -n 3 -w 1 -d bf16 --wire fp8
run_ok "fp8 all-gather: within 2^-4 of the largest value" errors_within 0 0.0625 <<< "$last_out"
run_ok_match "reduce_scatter --wire int8 on one node: summed at full precision" \
    "0\.00e\+00 +0\.00e\+00" "$LAUNCH" --mode env -n 2 -- "$PERF" reduce_scatter -b 64K -e 64K \
    -n 3 -w 1 --wire int8
run_fail "--wire refused for allreduce" 20 "--wire is for allgather and reduce_scatter" \
    "$PERF" allreduce --wire int8
finish
