#!/bin/bash
# bench-host.sh [OUTDIR]: the host-memory benchmark recorded in docs/perf.md. For 2 and 4
# ranks on this machine it runs sharc-perf allgather / reduce_scatter / allreduce from 1 MiB
# to 256 MiB with --vs-mpi and --vs-memcpy, on heap buffers (-R 0) and on sharc_mem_alloc
# buffers (-R 1), REPS times each, writes every run's JSON to OUTDIR, and prints a markdown
# table of medians over the runs (each run's figure is itself the median over its
# iterations). Needs a build in build/ (tools/build.sh). NPS, COLLS and REGS narrow it;
# MINB and MAXB set the sizes (e.g. COLLS=sendrecv NPS=2 MINB=1K MAXB=64M: point-to-point).
# SHARC_BUILD_DIR names another build directory.
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SHARC_BUILD_DIR:-$top/build}
unset SHARC_BUILD_DIR # not a sharc knob
out=${1:-$build/bench}
reps=${REPS:-3}
perf="$build/perf/sharc-perf"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for np in ${NPS:-2 4}; do
    for coll in ${COLLS:-allgather reduce_scatter allreduce}; do
        for reg in ${REGS:-0 1}; do
            for rep in $(seq 1 "$reps"); do
                mpirun --oversubscribe -np "$np" --mca btl self,vader "$perf" "$coll" \
                    -b "${MINB:-1M}" -e "${MAXB:-256M}" -f 4 -n 10 -w 3 -R "$reg" --vs-mpi \
                    --vs-memcpy \
                    -J "$out/$coll.np$np.R$reg.rep$rep.json" > /dev/null
            done
        done
    done
done
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(out + "/*.json")):
    d = json.load(open(path))
    for r in d["results"]:
        key = (d["collective"], d["nranks"], d.get("registered", 0), r["size"])
        rows.setdefault(key, []).append(r)
print("| collective | ranks | buffers | size | sharc busbw (GB/s) | in-place | OpenMPI busbw | sharc / MPI | memcpy (GB/s) | sharc / memcpy | in-place / memcpy | sharc time (us) | MPI time (us) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (coll, n, reg, size), rs in sorted(rows.items()):
    med = lambda f: statistics.median(f(r) for r in rs)
    s, ip, m, mc = (med(lambda r: r["out_of_place"]["busbw_gbps"]), med(lambda r: r["in_place"]["busbw_gbps"]),
                    med(lambda r: r["mpi"]["busbw_gbps"]), med(lambda r: r["memcpy_gbps"]))
    bufs = "sharc_mem_alloc" if reg else "heap"
    ts, tm = med(lambda r: r["out_of_place"]["median_us"]), med(lambda r: r["mpi"]["median_us"])
    label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    print(f"| {coll} | {n} | {bufs} | {label} | {s:.2f} | {ip:.2f} | {m:.2f} | {s / m:.2f} | {mc:.2f} | {s / mc:.2f} | {ip / mc:.2f} | {ts:.1f} | {tm:.1f} |")
PY
