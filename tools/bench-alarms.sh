#!/bin/bash
# bench-alarms.sh [OUTDIR]: no false alarm under load. 8 ranks on 4 namespace nodes
# (tools/nodes.sh, 2 ranks a node, the env bootstrap: shm within a node, UCX between; root)
# run sharc-perf jobs back to back for DURATION seconds (default 1200): allreduce, allgather
# and reduce_scatter in turn, each from 1 KiB to 16 MiB (-f 4, ITERS timed iterations a size,
# default 10, in place and not, results checked), beside a CPU hog of HOGS busy loops
# (default 2 per core, nice 0), every SHARC_* knob at its default. A false alarm is any sharc
# warning or error about a stall (a verdict), a silent rank or store (heartbeats), a rank
# gone or lost, or a timeout; any failed collective, wrong result or job that did not end
# with status 0. Prints each job as it ends and a Markdown table for docs/perf.md; exits 1
# on any false alarm. Keeps every rank's output under OUTDIR (default: a temporary one,
# removed).
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
top_srcdir=$top
top_builddir=${SHARC_BUILD_DIR:-$top/build}
unset SHARC_BUILD_DIR # (the script's own setting, not a knob of the library's)
duration=${DURATION:-1200}
iters=${ITERS:-10}
hogs=${HOGS:-$((2 * $(nproc)))}
. "$top/tests/lib.sh"
if env | grep -q '^SHARC_'; then
    echo "bench-alarms.sh: unset these to run at the defaults: $(env | grep -o '^SHARC_[A-Z_]*' | tr '\n' ' ')" >&2
    exit 2
fi
# shellcheck disable=SC2119
setup_nodes 4
out=${1:-}
keep=1
[ -n "$out" ] || { out=$(mktemp -d "${TMPDIR:-/tmp}/sharc-bench-alarms.XXXXXX"); keep=0; }
mkdir -p "$out"
declare -a hog_pids=()
stop_hogs() {
    local p
    for p in "${hog_pids[@]}"; do kill "$p" 2> /dev/null; done
    hog_pids=()
}
trap 'stop_hogs; nodes_down; [ $keep = 1 ] || rm -rf "$out"' EXIT

# what counts as an alarm, in sharc's warnings and errors
ALARM="stall verdict|has waited|silent for|heartbeat|is gone|lost (the store|rank|its connection)|did not complete|timed out|unreachable|failed"

for ((i = 0; i < hogs; i++)); do
    nice -n 0 sh -c 'while :; do :; done' &
    hog_pids+=($!)
done
echo "# $hogs busy loops started; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
t0=$(date +%s)
end=$((t0 + duration))
jobs=0 failed=0 wrong=0 alarms=0 colls=0 loads=""
declare -A per_coll=()
while [ "$(date +%s)" -lt $end ]; do
    for coll in allreduce allgather reduce_scatter; do
        [ "$(date +%s)" -lt $end ] || break
        dir=$out/job$jobs.$coll
        mkdir -p "$dir"
        "$LAUNCH" --mode env --node-exec "$NODE_EXEC" --out-dir "$dir" --timeout 900 -n 8 \
            --nodes 4 -- "$top_builddir/perf/sharc-perf" $coll -b 1K -e 16M -f 4 -n "$iters" \
            -w 2 > "$dir/job.out" 2>&1
        rc=$?
        loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
        # rows of rank 0's table: size ... #wrong (out of place) ... #wrong (in place)
        w=$(awk '$1 ~ /^[0-9]+$/ && NF >= 13 { w += $9 + $13; n++ } END { print w + 0, n + 0 }' "$dir/out.0")
        rows=${w#* }
        w=${w% *}
        a=$(cat "$dir"/out.* | grep -E "sharc (WARN|ERROR) " | grep -Ec "$ALARM")
        jobs=$((jobs + 1))
        per_coll[$coll]=$((${per_coll[$coll]:-0} + 1))
        [ $rc = 0 ] && [ "$rows" = 8 ] || failed=$((failed + 1))
        wrong=$((wrong + w))
        alarms=$((alarms + a))
        colls=$((colls + rows * 2 * (iters + 2)))
        echo "job $jobs ($coll): status $rc, $rows sizes, $w wrong, $a alarm line(s), $(($(date +%s) - t0)) s in, load $(cut -d' ' -f1 /proc/loadavg)" >&2
        if [ "$a" != 0 ] || [ $rc != 0 ]; then
            grep -hE "sharc (WARN|ERROR) " "$dir"/out.* | sed 's/^.*sharc /  /' | sort | uniq -c | head -8 >&2
        fi
    done
done
took=$(($(date +%s) - t0))
stop_hogs
others=$(cat "$out"/job*/out.* 2> /dev/null | grep -E "sharc (WARN|ERROR) " | grep -Evc "$ALARM")
loadmed=$(printf '%s\n' $loads | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }')
echo "| run | jobs (allreduce / allgather / reduce_scatter) | collectives | load average (median at job ends) | false alarms | failed jobs | wrong results | other sharc warnings |"
echo "|---|---|---|---|---|---|---|---|"
echo "| $took s, 8 ranks on 4 nodes, $hogs busy loops on $(nproc) cores | $jobs (${per_coll[allreduce]:-0} / ${per_coll[allgather]:-0} / ${per_coll[reduce_scatter]:-0}) | $colls | $loadmed | $alarms | $failed | $wrong | $others |"
[ $alarms = 0 ] && [ $failed = 0 ] && [ $wrong = 0 ]
