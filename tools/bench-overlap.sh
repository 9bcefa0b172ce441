#!/bin/bash
# bench-overlap.sh [OUTDIR]: the sharding engine's overlap benchmark recorded in docs/perf.md.
# On 2 local ranks it runs `sharc-perf overlap` (8 and 16 units of 4M f32 parameters) with
# simulated accelerator compute (sleep) of 1, 2, 4 and 8 times one unit's all-gather time,
# and with real CPU compute (SGEMM), REPS times each; writes every run's JSON to OUTDIR and
# prints a markdown table of medians over the runs (each run's figures are themselves
# medians over its steps). Needs a build in build/ (tools/build.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/build/bench-overlap}
reps=${REPS:-3}
perf="$top/build/perf/sharc-perf"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { # run NAME ARGS...: REPS runs of one configuration
    local name=$1
    shift
    for rep in $(seq 1 "$reps"); do
        mpirun --oversubscribe -np 2 --mca btl self,vader "$perf" overlap -p 4M -n 10 -w 2 \
            "$@" -J "$out/$name.rep$rep.json" > /dev/null
    done
}
for units in 8 16; do
    for f in 1 2 4 8; do
        run "sleep.u$units.f$f" -u "$units" --compute sleep --compute-factor "$f"
    done
done
run "gemm.u8.f4" -u 8 --compute gemm --compute-factor 4
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(out + "/*.json")):
    d = json.load(open(path))
    key = (d["compute"], d["units"], round(d["compute_forward_unit_s"] / d["allgather_unit_s"]))
    runs.setdefault(key, []).append(d)
print("| compute | units | fwd compute / all-gather | all-gather of a unit (ms) | comm only (ms) | compute only (ms) | overlapped (ms) | exposed (ms) | overlap efficiency |")
print("|---|---|---|---|---|---|---|---|---|")
for (compute, units, factor), ds in sorted(runs.items()):
    med = lambda k: statistics.median(d[k] for d in ds)
    print(f"| {compute} | {units} | {factor} | {med('allgather_unit_s') * 1e3:.2f} | {med('comm_only_s') * 1e3:.1f} | "
          f"{med('compute_only_s') * 1e3:.1f} | {med('overlapped_s') * 1e3:.1f} | {med('exposed_s') * 1e3:.1f} | "
          f"{med('overlap_efficiency') * 100:.1f}% |")
PY
