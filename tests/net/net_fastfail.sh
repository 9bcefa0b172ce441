#!/bin/bash
# Fast failure across the job (issue 18, part 4): a node's processes of the job are killed
# (SIGKILL) in the middle of 256 MiB all-reduces, on namespace nodes; every surviving rank must fail
# its pending operation within 2 s with SHARC_ERR_REMOTE ("remote peer error"), its log naming
# a dead rank and that rank's host, and the job must end within 2 s more: not at
# SHARC_TIMEOUT (6 s here), never a crash. At 3 nodes x 1 rank and 2 nodes x 2 ranks with
# the env bootstrap, and under srun. Needs root (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
slurm=""
(. "$top_srcdir/tools/nodes.sh" && nodes_check --slurm > /dev/null) && slurm=--slurm
setup_nodes 3 $slurm
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-net-fastfail.XXXXXX")
trap 'nodes_down; [ -n "${SHARCTEST_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
export SHARC_BOOTSTRAP_TIMEOUT=30s SHARC_TIMEOUT=6s
BOUND=2
END_BOUND=4
FAULT_LINE="sharc-perf: rank [0-9]+: allreduce of [0-9]+ bytes failed"
perf=("$top_builddir/perf/sharc-perf" allreduce -b 256M -e 256M -n 1000 -w 1)
# remote DIR RANKS...: each rank's failure was SHARC_ERR_REMOTE
remote() {
    local dir=$1 r
    shift
    for r in "$@"; do
        run_ok_match "rank $r's all-reduce failed with SHARC_ERR_REMOTE" "failed: remote peer error" \
            grep -E "$FAULT_LINE" "$dir/out.$r"
    done
}
# the kill comes 4 s after rank 0 printed its table's head: every rank's communicator is up
# and an all-reduce under way (each takes about a second through the veth pairs)
AT=4
FAULT_READY="^# sharc-perf allreduce"

fault_job "$work/a" $AT "$NODES kill 2 KILL sharc-perf" -- "$LAUNCH" --mode env --node-exec "$NODE_EXEC" \
    --out-dir "$work/a" --timeout 30 -n 3 --nodes 3 -- "${perf[@]}"
fault_check "env, 3 nodes x 1, node 2 killed" "$work/a" $BOUND $END_BOUND \
    "rank 2\b.*node2\b|node2\b.*rank 2\b" 0 1
remote "$work/a" 0 1

fault_job "$work/b" $AT "$NODES kill 1 KILL sharc-perf" -- "$LAUNCH" --mode env --node-exec "$NODE_EXEC" \
    --out-dir "$work/b" --timeout 30 -n 4 --nodes 2 -- "${perf[@]}"
fault_check "env, 2 nodes x 2, node 1 killed" "$work/b" $BOUND $END_BOUND \
    "rank [23]\b.*node1\b|node1\b.*rank [23]\b" 0 1
remote "$work/b" 0 1

if [ -n "$slurm" ]; then
    fault_job "$work/c" $AT "$NODES kill 1 KILL sharc-perf" -- timeout -k 5 30 $NODES srun -N 2 \
        --ntasks-per-node 2 -o "$work/c/out.%t" "${perf[@]}"
    fault_check "srun -N 2 --ntasks-per-node 2, node 1 killed" "$work/c" $BOUND $END_BOUND \
        "rank [23]\b.*node1\b|node1\b.*rank [23]\b" 0 1
    remote "$work/c" 0 1
else
    echo "skipped: the srun case (no Slurm)"
fi
finish
