#!/bin/bash
# bench-overlap.sh [OUTDIR]: the sharding engine's overlap benchmark recorded in docs/perf.md.
# On 2 local ranks it runs `sharc-perf overlap` (8 and 16 units of 4M f32 parameters) with
# simulated accelerator compute (sleep) of 1, 2, 4 and 8 times one unit's all-gather time,
# with prefetch 1 and prefetch auto, and with real CPU compute (SGEMM), REPS times each (the
# repetitions interleaved, so that the machine's drift hits every configuration alike);
# writes every run's JSON to OUTDIR and prints a markdown table of medians over the runs (each
# run's figures are themselves medians over its steps), then the target's check: 16 units,
# factor 4, median efficiency >= 90%. With TRACE=1 it also traces the 16-unit factor-4 run
# with reductions behind gathers on one queue (SHARC_SHARD_REDUCE_QUEUE=no, the engine before
# issue 21) and on their own, and draws a step of each (tools/trace-plot). Needs a build in
# build/ (tools/build.sh). The load average is printed before and after: say it with the
# numbers.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/bench-overlap}
reps=${REPS:-3}
perf="$top/build/perf/sharc-perf"
mkdir -p "$out"
rm -f "$out"/*.json
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # run NAME REP ARGS...: one run of one configuration
    local name=$1 rep=$2
    shift 2
    mpirun --oversubscribe -np 2 --mca btl self,vader "$perf" overlap -p 4M -n 10 -w 2 \
        "$@" -J "$out/$name.rep$rep.json" > /dev/null
}
for rep in $(seq 1 "$reps"); do
    for units in 8 16; do
        for f in 1 2 4 8; do
            for k in 1 auto; do
                run "sleep.u$units.f$f.k$k" "$rep" -u "$units" --compute sleep --compute-factor "$f" \
                    --prefetch "$k"
            done
        done
    done
    run "gemm.u8.f4.k1" "$rep" -u 8 --compute gemm --compute-factor 4
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${TRACE:-0}" = 1 ]; then
    for q in no yes; do
        SHARC_SHARD_REDUCE_QUEUE=$q mpirun --oversubscribe -np 2 --mca btl self,vader \
            -x SHARC_SHARD_REDUCE_QUEUE "$perf" overlap -p 4M -n 10 -w 2 -u 16 --compute sleep \
            --compute-factor 4 --trace "$out/trace.queue-$q.json" > "$out/trace.queue-$q.txt"
        python3 "$top/tools/trace-plot" "$out/trace.queue-$q.json" -o "$out/trace.queue-$q.png" \
            --title "16 units, factor 4, reductions $([ $q = yes ] && echo 'on their own queue' ||
                echo 'behind gathers (one queue)'): the last step"
    done
fi
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(out + "/*.rep*.json")):
    d = json.load(open(path))
    key = (d["compute"], d["units"], round(d["compute_forward_unit_s"] / d["allgather_unit_s"]),
           "auto" if d.get("prefetch_auto") else str(d["prefetch"]))
    runs.setdefault(key, []).append(d)
print("| compute | units | fwd compute / all-gather | prefetch (depth) | all-gather of a unit (ms) | comm only (ms) | compute only (ms) | overlapped (ms) | exposed (ms) | overlap efficiency (runs) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (compute, units, factor, k), ds in sorted(runs.items()):
    med = lambda f: statistics.median(f(d) for d in ds)
    depths = sorted({d.get("prefetch_depth", d["prefetch"]) for d in ds})
    effs = ", ".join(f"{d['overlap_efficiency'] * 100:.1f}" for d in ds)
    print(f"| {compute} | {units} | {factor} | {k} ({'/'.join(map(str, depths))}) | "
          f"{med(lambda d: d['allgather_unit_s']) * 1e3:.2f} | {med(lambda d: d['comm_only_s']) * 1e3:.1f} | "
          f"{med(lambda d: d['compute_only_s']) * 1e3:.1f} | {med(lambda d: d['overlapped_s']) * 1e3:.1f} | "
          f"{med(lambda d: d['exposed_s']) * 1e3:.1f} | **{med(lambda d: d['overlap_efficiency']) * 100:.1f}%** ({effs}) |")
for k in ("1", "auto"):
    ds = runs.get(("sleep", 16, 4, k), [])
    if ds:
        eff = statistics.median(d["overlap_efficiency"] for d in ds) * 100
        print(f"# target (16 units, sleep, factor 4, prefetch {k}): median {eff:.1f}% of {len(ds)} "
              f"runs: {'met' if eff >= 90 else 'not met'} (>= 90%)")
PY
