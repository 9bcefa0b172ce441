#!/bin/bash
# bench-recorder.sh [OUTDIR]: what the flight recorder costs a small collective. 2 local ranks
# (the env bootstrap, as launch.sh starts them) run `sharc-perf allreduce -b 1K -e 1K -n ITERS`
# (default 20000 timed iterations, 500 warm-up) with SHARC_FLIGHT_RECORDER=0 (A: off) and at
# its default (B: 2048 entries), A and B alternating REPS times (default 9), with the
# variables of EXTRA on both sides (e.g. EXTRA=SHARC_PROGRESS_THREAD=1). Small-message latency
# here is bimodal (a few us, or ~100 us when a rank's poller has backed off into a sleep), so
# for each run it prints the median, the 10th and 90th percentiles and the share of
# iterations under 20 us of every iteration's time (in place and out of place together, from
# sharc-perf's JSON), then per side the median of the runs' medians and their range, and B / A
# of the medians and the median of the per-pair ratios. The load average is printed before
# and after. Keeps the JSON under OUTDIR (default: a temporary directory, removed).
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SHARC_BUILD_DIR:-$top/build}
reps=${REPS:-9}
iters=${ITERS:-20000}
extra=${EXTRA:-}
out=${1:-}
keep=1
[ -n "$out" ] || { out=$(mktemp -d); keep=0; }
mkdir -p "$out"
trap '[ $keep = 1 ] || rm -rf "$out"' EXIT
rm -f "$out"/*.json
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg); EXTRA='$extra'"
for rep in $(seq 1 "$reps"); do
    for side in a b; do
        rec=()
        [ $side = a ] && rec=(SHARC_FLIGHT_RECORDER=0)
        # shellcheck disable=SC2086 # EXTRA is words
        env "${rec[@]}" $extra "$top/tests/launch.sh" --mode env -n 2 -- \
            "$build/perf/sharc-perf" allreduce -b 1K -e 1K -n "$iters" -w 500 \
            -J "$out/$side.rep$rep.json" > "$out/$side.rep$rep.out" 2>&1 ||
            { echo "run $side.$rep failed:"; tail -5 "$out/$side.rep$rep.out"; exit 1; }
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$reps" <<'EOF'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])

def run(side, rep):
    r = json.load(open("%s/%s.rep%d.json" % (out, side, rep)))["results"][0]
    t = sorted(r["out_of_place"]["times_us"] + r["in_place"]["times_us"])
    q = lambda f: t[min(len(t) - 1, int(f * len(t)))]
    return {"med": statistics.median(t), "p10": q(0.1), "p90": q(0.9),
            "fast": sum(x < 20 for x in t) / len(t)}

runs = {s: [run(s, i) for i in range(1, reps + 1)] for s in "ab"}
print("| rep | A (recorder off): median, p10-p90 (us), share < 20 us | "
      "B (2048, default): median, p10-p90 (us), share < 20 us | B / A |")
print("|---|---|---|---|")
for i in range(reps):
    a, b = runs["a"][i], runs["b"][i]
    print("| %d | %.2f, %.2f-%.2f, %.0f%% | %.2f, %.2f-%.2f, %.0f%% | %.3f |" % (
        i + 1, a["med"], a["p10"], a["p90"], 100 * a["fast"], b["med"], b["p10"], b["p90"],
        100 * b["fast"], b["med"] / a["med"]))
ma = [r["med"] for r in runs["a"]]
mb = [r["med"] for r in runs["b"]]
print()
print("A: median of medians %.2f us (range %.2f-%.2f); B: %.2f us (range %.2f-%.2f); "
      "B / A of the medians %.3f, median of the per-pair ratios %.3f" % (
          statistics.median(ma), min(ma), max(ma), statistics.median(mb), min(mb), max(mb),
          statistics.median(mb) / statistics.median(ma),
          statistics.median([b / a for a, b in zip(ma, mb)])))
EOF
