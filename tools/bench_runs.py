#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench_runs.py KIND OUTDIR: the tables of tools/bench-ab.sh (KIND ab) or tools/bench-wait.sh
(KIND wait) from the JSON files of their runs in OUTDIR, SIDE.NAME.repN.json (SIDE: a or b),
so that a sweep's runs can be summed up again without running them again."""
import glob
import json
import os
import statistics
import sys

med = statistics.median


def load(out):
    """{(name, side): [each run's JSON]}"""
    runs = {}
    for path in sorted(glob.glob(out + "/*.json")):
        side, name, _, _ = os.path.basename(path).split(".")
        with open(path) as f:
            runs.setdefault((name, side), []).append(json.load(f))
    return runs


def series(runs, coll, side, i, key):
    """Each run's median (us) of size index i on one side: key out_of_place, in_place, mpi."""
    return [d["results"][i][key]["median_us"] for d in runs[(coll, side)]]


def table_ab(runs):
    print("| collective | size | A time (us) | B time (us) | B / A |")
    print("|---|---|---|---|---|")
    for coll in ("allgather", "reduce_scatter", "allreduce"):
        sizes = [r["size"] for r in runs[(coll, "a")][0]["results"]]
        for i, size in enumerate(sizes):
            t = {s: med(series(runs, coll, s, i, "out_of_place")) for s in "ab"}
            print("| %s | %d | %.1f | %.1f | %.3f |" % (coll, size, t["a"], t["b"],
                                                        t["b"] / t["a"]))
    print()
    print("| overlap (16 units, sleep x4) | A efficiency | B efficiency | A step (ms) | "
          "B step (ms) |")
    print("|---|---|---|---|---|")
    for p in ("1", "auto"):
        e = {s: med(d["overlap_efficiency"] for d in runs[("overlap-p" + p, s)]) for s in "ab"}
        st = {s: med(1e3 * d["overlapped_s"] for d in runs[("overlap-p" + p, s)]) for s in "ab"}
        print("| prefetch %s | %.1f%% | %.1f%% | %.2f | %.2f |" % (p, 100 * e["a"], 100 * e["b"],
                                                             st["a"], st["b"]))


def table_wait(runs):
    """Medians over the runs; X / MPI is the median of each run's ratio to OpenMPI in the same
    job (a load spike slows both); max / min spans a build's run medians (two modes show)."""
    print("| collective | size | A (us) | B (us) | OpenMPI (us) | B / A | A / MPI | B / MPI | "
          "A max/min | B max/min |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for coll in ("sendrecv", "allreduce"):
        sizes = [r["size"] for r in runs[(coll, "a")][0]["results"]]
        for i, size in enumerate(sizes):
            t = {s: series(runs, coll, s, i, "out_of_place") for s in "ab"}
            mpi = {s: series(runs, coll, s, i, "mpi") for s in "ab"}
            ratio = {s: med(x / m for x, m in zip(t[s], mpi[s])) for s in "ab"}
            print("| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.1f | %.1f |" % (
                coll, size, med(t["a"]), med(t["b"]), med(mpi["a"] + mpi["b"]),
                med(t["b"]) / med(t["a"]), ratio["a"], ratio["b"], max(t["a"]) / min(t["a"]),
                max(t["b"]) / min(t["b"])))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("ab", "wait"):
        sys.exit(__doc__)
    (table_ab if sys.argv[1] == "ab" else table_wait)(load(sys.argv[2]))
