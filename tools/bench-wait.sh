#!/bin/bash
# bench-wait.sh A_BUILD B_BUILD [OUTDIR]: how two builds of sharc wait, side by side on this
# machine (a change to the engine's waiting). For 2 local ranks it runs sharc-perf sendrecv
# and allreduce from 8 B to 1 MiB (-f 2, --vs-mpi: OpenMPI in the same job), REPS times each
# (default 5), A and B alternating within each repetition; writes every run's JSON to OUTDIR
# and prints (tools/bench_runs.py), per size, the median over the runs of each run's median for
# A, B and OpenMPI (every run's), B / A, each build's median ratio to OpenMPI in the same job,
# and the largest over the smallest run median of each build (a size whose runs land in two
# modes shows it). Then, for each build, the share of a core that rank 0 uses while it waits
# 10 s in an all-reduce for rank 1, stopped (SIGSTOP), read from /proc/PID/stat. The load
# average is printed before and after.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,11p' "$0"; exit 2; }
a=$(cd "$1" && pwd)
b=$(cd "$2" && pwd)
out=${3:-$(mktemp -d)}
reps=${REPS:-5}
mkdir -p "$out"
rm -f "$out"/*.json
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe -np 2 --mca btl self,vader)
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$reps"); do
    for coll in sendrecv allreduce; do
        for side in a b; do
            build=$a
            [ $side = b ] && build=$b
            "${MPIRUN[@]}" "$build/perf/sharc-perf" "$coll" -b 8 -e 1M -f 2 -n 100 -w 10 \
                --vs-mpi -J "$out/$side.$coll.rep$rep.json" > /dev/null
        done
    done
done

# idle_share BUILD: the share of a core rank 0 uses in 10 s of waiting for a stopped rank 1
idle_share() {
    local job pid0="" pid1="" p t0 t1 hz
    hz=$(getconf CLK_TCK)
    "${MPIRUN[@]}" "$1/perf/sharc-perf" allreduce -b 1K -e 1K -n 100000000 -w 0 \
        > /dev/null 2>&1 &
    job=$!
    sleep 3
    for p in $(pgrep -P $job); do
        case $(tr '\0' '\n' < "/proc/$p/environ" | grep '^OMPI_COMM_WORLD_RANK=') in
        *=0) pid0=$p ;;
        *=1) pid1=$p ;;
        esac
    done
    kill -STOP "$pid1"
    sleep 1 # rank 0 is now waiting for it
    t0=$(awk '{print $14 + $15}' "/proc/$pid0/stat")
    sleep 10
    t1=$(awk '{print $14 + $15}' "/proc/$pid0/stat")
    kill -CONT "$pid1"
    kill $job
    wait $job 2> /dev/null || true
    awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%.1f%%", 100 * d / hz / 10 }'
}
idle_a=$(idle_share "$a")
idle_b=$(idle_share "$b")
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/bench_runs.py" wait "$out"
echo
echo "| idle wait (10 s, peer stopped) | A | B |"
echo "|---|---|---|"
echo "| share of a core, rank 0 | $idle_a | $idle_b |"
