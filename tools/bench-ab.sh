#!/bin/bash
# bench-ab.sh A_BUILD B_BUILD [OUTDIR]: two builds of sharc side by side on this machine, for
# a change that must not change speed (a restructuring). For 2 local ranks it runs sharc-perf
# allgather, reduce_scatter and allreduce from 1 KiB to 64 MiB (-f 4) and the overlap
# benchmark of docs/perf.md (16 units of 4M f32, sleep compute at 4x, prefetch 1 and auto),
# REPS times each (default 3), A and B alternating within each repetition so that the
# machine's drift hits both alike; writes every run's JSON to OUTDIR and prints the medians
# of both and B / A. The load average is printed before and after.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
a=$(cd "$1" && pwd)
b=$(cd "$2" && pwd)
out=${3:-$(mktemp -d)}
reps=${REPS:-3}
mkdir -p "$out"
rm -f "$out"/*.json
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # run BUILD TAG NAME REP ARGS...
    local build=$1 tag=$2 name=$3 rep=$4
    shift 4
    mpirun --oversubscribe -np 2 --mca btl self,vader "$build/perf/sharc-perf" "$@" \
        -J "$out/$tag.$name.rep$rep.json" > /dev/null
}
for rep in $(seq 1 "$reps"); do
    for coll in allgather reduce_scatter allreduce; do
        for side in a b; do
            build=$a
            [ $side = b ] && build=$b
            run "$build" $side "$coll" "$rep" "$coll" -b 1K -e 64M -f 4 -n 20 -w 3
        done
    done
    for prefetch in 1 auto; do
        for side in a b; do
            build=$a
            [ $side = b ] && build=$b
            run "$build" $side "overlap-p$prefetch" "$rep" overlap -p 4M -n 10 -w 2 -u 16 \
                --compute sleep --compute-factor 4 --prefetch "$prefetch"
        done
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/bench_runs.py" ab "$out"
