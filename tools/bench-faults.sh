#!/bin/bash
# bench-faults.sh [RUNS (default 10)] [short|defaults]: how long the ranks of a job take to
# learn of a failure, on namespace nodes (tools/nodes.sh; root): 3 nodes x 1 rank (env
# bootstrap) running `sharc-perf allreduce -b 256M -n 1000`, and a fault 4 s after rank 0
# printed its table's head (the job under way).
#   short (default): node 2's job process is killed (SIGKILL) or node 2's link is cut (ip link
#     set down), with SHARC_TIMEOUT at 10 s unless set. Per case, over RUNS runs: the median
#     and the largest time from the fault to each surviving rank's failed all-reduce, and to
#     the job's end (ranks left running are killed 30 s after the start).
#   defaults: node 2's link cut with every setting at its default (SHARC_TIMEOUT 10 minutes;
#     SHARC_BOOTSTRAP_TIMEOUT at its 120 s, which launch.sh would set to 30 s): the store's
#     heartbeats must find it. A run passes when ranks 0 and 1 name node 2's rank and no
#     other rank or node in their warnings and errors, node 2's rank names the store unreachable, every
#     rank's all-reduce failed and the job ended within 30 s of the cut, and nothing crashed.
#     The medians and largest times, and how many runs passed.
# Prints a Markdown table for docs/perf.md.
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
mode=${2:-short}
case $mode in short | defaults) ;; *) sed -n '2,16p' "$0"; exit 2 ;; esac
top_srcdir=$top
top_builddir=${SHARC_BUILD_DIR:-$top/build}
unset SHARC_BUILD_DIR # (the script's own setting, not a knob of the library's)
. "$top/tests/lib.sh"
if [ $mode = defaults ] && env | grep -q '^SHARC_'; then
    echo "bench-faults.sh defaults: unset these first: $(env | grep -o '^SHARC_[A-Z_]*' | tr '\n' ' ')" >&2
    exit 2
fi
# shellcheck disable=SC2119
setup_nodes 3
if [ $mode = short ]; then
    export SHARC_TIMEOUT=${SHARC_TIMEOUT:-10s} SHARC_BOOTSTRAP_TIMEOUT=30s
else
    export SHARC_BOOTSTRAP_TIMEOUT=120s # (the default; launch.sh's own is 30 s)
fi
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

# run_fault I CMD TIMEOUT: run I of the job with the fault CMD 4 s into its all-reduce, the
# link restored after the job
run_fault() {
    FAULT_READY="^# sharc-perf allreduce" # 4 s after rank 0's table head: the job under way
    fault_job "$work/$1" 4 "$2" -- "$LAUNCH" --mode env --node-exec "$NODE_EXEC" \
        --out-dir "$work/$1" --timeout "$3" -n 3 --nodes 3 -- \
        "$top_builddir/perf/sharc-perf" allreduce -b 256M -e 256M -n 1000 -w 1
    $NODES link 2 up
}

# defaults_pass I: whether run I passed (see the head); says why not on stderr
defaults_pass() {
    local d=$work/$1 r why=""
    for r in 0 1 2; do
        [ -n "${FAULT_SEEN[$r]:-}" ] && awk -v t="${FAULT_SEEN[$r]}" 'BEGIN { exit !(t <= 30) }' ||
            why="$why rank $r failed at ${FAULT_SEEN[$r]:-never};"
    done
    awk -v t="$FAULT_END" 'BEGIN { exit !(t <= 30) }' || why="$why the job ended at $FAULT_END s;"
    for r in 0 1; do
        grep -Eq "sharc (ERROR|WARN) .*rank 2 \(node2\)" "$d/out.$r" || why="$why rank $r did not name rank 2 (node2);"
        # any other mention of a healthy rank (this rank's own aside): "lost its connection
        # to rank 0" blames as much as "rank 0 (node0) is gone"
        ! grep -E "sharc (ERROR|WARN) " "$d/out.$r" | sed -E "s/^.*sharc (ERROR|WARN) //; s/\brank $r\b//g" |
            grep -Eq "\brank [01]\b|node[01]\b" || why="$why rank $r named a healthy rank;"
    done
    grep -Eq "lost the store at .*unreachable" "$d/out.2" || why="$why rank 2 did not name the store unreachable;"
    grep -Eq "Assertion .* failed|Segmentation fault|Aborted" "$d"/out.* && why="$why a rank crashed;"
    [ -z "$why" ] && return 0
    echo "run $1 failed:$why" >&2
    return 1
}

if [ $mode = defaults ]; then
    declare -a seen0=() seen1=() seen2=() ends=()
    passed=0
    for ((i = 0; i < runs; i++)); do
        run_fault "$i" "$NODES link 2 down" 60
        seen0+=("${FAULT_SEEN[0]:--}"); seen1+=("${FAULT_SEEN[1]:--}"); seen2+=("${FAULT_SEEN[2]:--}")
        ends+=("$FAULT_END")
        defaults_pass "$i" && passed=$((passed + 1))
        echo "run $i: ranks ${FAULT_SEEN[0]:--} ${FAULT_SEEN[1]:--} ${FAULT_SEEN[2]:--}, end $FAULT_END, passed $passed of $((i + 1))" >&2
        grep -hE "sharc (ERROR|WARN) " "$work/$i"/out.* | sed 's/^.*sharc /  /; s/:[0-9]\{4,5\}:/:PORT:/; s/[0-9][0-9.]* s\b/N s/g' | sort | uniq -c | head -8 >&2
    done
    echo "| node 2's link cut, every setting at its default ($runs runs) | rank | to its failure: median, max (s) | to the job's end: median, max (s) | runs passed (bound 30 s) |"
    echo "|---|---|---|---|---|"
    for r in 0 1 2; do
        eval "v=(\"\${seen$r[@]}\")"
        echo "| $([ $r = 2 ] && echo "node 2's rank (the store unreachable)" || echo "names rank 2 (node2)") | $r | $(stats "${v[@]}") | $(stats "${ends[@]}") | $passed of $runs |"
    done
    [ $passed = "$runs" ]
    exit
fi

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
        run_fault "$i" "$cmd" 30
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
