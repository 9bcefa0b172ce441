#!/bin/bash
# bench-faults.sh [RUNS (default 10)]: how long the ranks of a job take to learn of a failure,
# on namespace nodes (tools/nodes.sh; root): 3 nodes x 1 rank (env bootstrap) running
# `sharc-perf allreduce -b 256M -n 1000`, and 4 s in either node 2's job process is killed
# (SIGKILL) or node 2's link is cut (ip link set down). Per case, over RUNS runs: the median
# and the largest time from the fault to each surviving rank's failed all-reduce, and to the
# job's end (ranks left running are killed 30 s after the start). SHARC_TIMEOUT is 10 s
# unless set. Prints a Markdown table for docs/perf.md.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
top_srcdir=$top
top_builddir=${SHARC_BUILD_DIR:-$top/build}
. "$top/tests/lib.sh"
# shellcheck disable=SC2119
setup_nodes 3
export SHARC_TIMEOUT=${SHARC_TIMEOUT:-10s} SHARC_BOOTSTRAP_TIMEOUT=30s
FAULT_LINE="sharc-perf: rank [0-9]+: allreduce of [0-9]+ bytes failed"
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-bench-faults.XXXXXX")
trap 'nodes_down; rm -rf "$work"' EXIT

stats() { # stats VALUES...: "median max" ("-" marks a run where the rank never failed)
    local sorted n miss
    sorted=$(printf '%s\n' "$@" | grep -v '^-$' | sort -g)
    n=$(printf '%s' "$sorted" | grep -c .)
    miss=$(printf '%s\n' "$@" | grep -c '^-$')
    [ "$n" -gt 0 ] || { echo "never"; return; }
    printf '%s\n' "$sorted" | awk -v n="$n" -v miss="$miss" '{ v[NR] = $1 }
        END { m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
              printf "%.2f, %.2f%s\n", m, v[n], miss ? " (" miss " runs: never)" : "" }'
}

echo "| fault (SHARC_TIMEOUT=$SHARC_TIMEOUT, $runs runs) | rank | to its failure: median, max (s) | to the job's end: median, max (s) | statuses returned (all ranks, all runs) |"
echo "|---|---|---|---|---|"
for fault in kill down; do
    declare -a seen0=() seen1=() seen2=() ends=()
    statuses=""
    for ((i = 0; i < runs; i++)); do
        case $fault in
            kill) what="node 2's process killed"; cmd="$NODES kill 2 KILL sharc-perf" ;;
            down) what="node 2's link cut"; cmd="$NODES link 2 down" ;;
        esac
        fault_job "$work/$i" 4 "$cmd" -- "$LAUNCH" --mode env --node-exec "$NODE_EXEC" \
            --out-dir "$work/$i" --timeout 30 -n 3 --nodes 3 -- \
            "$top_builddir/perf/sharc-perf" allreduce -b 256M -e 256M -n 1000 -w 1
        $NODES link 2 up
        seen0+=("${FAULT_SEEN[0]:--}"); seen1+=("${FAULT_SEEN[1]:--}"); seen2+=("${FAULT_SEEN[2]:--}")
        ends+=("$FAULT_END")
        statuses="$statuses$(grep -hoE "allreduce of [0-9]+ bytes failed: .*" "$work/$i"/out.* |
            sed 's/.*failed: //; s/ /_/g' | tr '\n' ' ')"
        echo "run $i ($what): ranks ${FAULT_SEEN[0]:--} ${FAULT_SEEN[1]:--} ${FAULT_SEEN[2]:--}, end $FAULT_END" >&2
    done
    # shellcheck disable=SC2086
    st=$(printf '%s\n' $statuses | sort | uniq -c | awk '{ gsub("_", " ", $2); printf "%s%d x %s", s, $1, $2; s = ", " }')
    for r in 0 1 $([ $fault = down ] && echo 2); do
        eval "v=(\"\${seen$r[@]}\")"
        echo "| $what | $r | $(stats "${v[@]}") | $(stats "${ends[@]}") | $st |"
    done
done
