#!/bin/bash
# bench-nodes.sh: bandwidth between two namespace nodes (tools/nodes.sh; root), one rank
# each, through their veth pairs, in one run: UCX's own tag bandwidth (ucx_perftest tag_bw,
# one direction, over the TCP transport UCX picks between the nodes), and sharc-perf
# all-gather and all-reduce with OpenMPI's own (--vs-mpi, its TCP BTL) in the same job,
# started by mpirun on the login node (tools/nodes.sh rsh for ssh). Writes the raw outputs
# to OUT (default build/bench-nodes) and prints a table of medians.
#
#   tools/bench-nodes.sh [-e MAXSIZE (64M)] [-n ITERS (10)] [-r ROUNDS (3)] [--rate RATE]
#
# Every figure is the median over ROUNDS rounds (sharc-perf's own figure is the median over
# its iterations of the slowest rank). all-gather busbw at 2 ranks is what each rank sends a
# second while it also receives as much; ucx_perftest sends one way only.
# SPDX-License-Identifier: BSD-3-Clause
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bld=${SHARC_BUILD_DIR:-$top/build}
out=${OUT:-$bld/bench-nodes}
maxsize=64M iters=10 rate="" rounds=3
while [ $# -gt 0 ]; do
    case "$1" in
        -e) maxsize=$2; shift 2 ;;
        -n) iters=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        -r) rounds=$2; shift 2 ;;
        *) echo "bench-nodes: unknown option $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
. "$top/tools/nodes.sh"
NODES_PREFIX=bn$$
NODES_OWNER_PID=$$
trap 'nodes_down' EXIT
trap 'exit 130' INT TERM HUP
nodes_up 2 ${rate:+--rate "$rate"}
N="$top/tools/nodes.sh -p $NODES_PREFIX"
printf 'node0 slots=1\nnode1 slots=1\n' > "$out/hosts"
export OMPI_MCA_plm_rsh_agent="$N rsh"

echo "# $(date -u +%F), $(nproc) cores, $(uname -r); link rate ${rate:-unshaped}; $rounds rounds" |
    tee "$out/summary.txt"
for ((round = 1; round <= rounds; round++)); do
    # UCX alone: server on node1, client on node0, 50 messages a size, one direction
    for size in 1048576 4194304 16777216 67108864; do
        $N exec 1 timeout 120 ucx_perftest -p 13337 > "$out/ucx-server-$size.$round.txt" 2>&1 &
        sleep 1
        $N exec 0 timeout 120 ucx_perftest node1 -p 13337 -t tag_bw -s $size -n 50 -w 5 \
            > "$out/ucx-$size.$round.txt" 2>&1
        wait
    done
    # sharc and OpenMPI in one job
    for coll in allgather allreduce; do
        $N exec ctl timeout 600 mpirun --allow-run-as-root -np 2 --hostfile "$out/hosts" \
            --mca btl self,tcp --mca btl_tcp_if_include eth0 \
            "$bld/perf/sharc-perf" $coll -b 1M -e "$maxsize" -f 4 -n "$iters" -w 3 --vs-mpi \
            > "$out/sharc-$coll.$round.txt" 2>&1
    done
done
# the median over the rounds of each figure
python3 - "$out" "$rounds" << 'PY' | tee -a "$out/summary.txt"
import glob, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def med(v):
    return statistics.median(v) if v else float("nan")
ucx = {}
for f in glob.glob(out + "/ucx-[0-9]*.txt"):
    size = int(f.split("-")[-1].split(".")[0])
    for line in open(f):
        if line.startswith("Final:") and float(line.split()[6]) > 0:
            ucx.setdefault(size, []).append(float(line.split()[6]) / 1e3)  # overall MB/s
print("| collective | size | sharc busbw (GB/s) | in place | OpenMPI busbw | sharc / MPI | UCX tag_bw, one way (GB/s) |")
print("|---|---|---|---|---|---|---|")
for coll in ("allgather", "allreduce"):
    rows = {}
    for f in glob.glob(out + "/sharc-%s.*.txt" % coll):
        for line in open(f):
            w = line.split()
            if len(w) >= 16 and re.fullmatch(r"[0-9]+", w[0]):
                rows.setdefault(int(w[0]), []).append((float(w[7]), float(w[11]), float(w[14])))
    for size in sorted(rows):
        r = rows[size]
        s, ip, m = med([x[0] for x in r]), med([x[1] for x in r]), med([x[2] for x in r])
        print("| %s | %d MiB | %.3f | %.3f | %.3f | %.2f | %.3f |" % (
            coll, size >> 20, s, ip, m, s / m if m else 0, med(ucx.get(size, []))))
PY
