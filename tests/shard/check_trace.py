#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_trace.py TRACE.json [--ranks N] [--steps-max N] [--stats FILE] [--auto]

Checks a shard trace (SHARC_SHARD_TRACE) as Perfetto and chrome://tracing need it and as the
engine promises it: the file parses as JSON with traceEvents; every rank has its process and
caller track; complete events ("X") have a start and a non-negative duration and nest on
every track (two spans of one track are disjoint or one holds the other); every collective
of a rank has its unit and its phases inside it; each step's waits on the caller track add up
to the exposed time the step span reports. With --stats, a file of lines
"stats RANK STEP EXPOSED_S GATHER_WAIT_S DEPTH" (what sharc_shard_stats said after each
finish), the waits of each step in the trace must add up to that rank's exposed time and its
gather waits to the gather wait, and the depth must be the one the step span reports. With
--auto, the prefetch depth is on a counter track and the same on every rank in every step.
Prints what it checked; exits 1 on the first failure class found (all failures listed).
"""
import argparse
import collections
import json
import sys

EPS_US = 0.002  # the trace's times are rounded to nanoseconds


def check_nesting(events, bad):
    """Spans nest on every track; returns the tracks and the number of spans."""
    tracks = collections.defaultdict(list)
    for e in events:
        if e.get("ph") != "X":
            continue
        if not isinstance(e.get("ts"), (int, float)) or e.get("dur", -1) < 0:
            bad.append(f"span without a start or with a negative duration: {e}")
            continue
        tracks[(e["pid"], e["tid"])].append(e)
    nspans = 0
    for key, spans in tracks.items():
        spans.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in spans:
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + EPS_US:
                stack.pop()
            if stack and end > stack[-1] + EPS_US:
                bad.append(f"rank {key[0]} track {key[1]}: '{e['name']}' at {e['ts']} us ends at "
                           f"{end}, past the span it starts in (ends {stack[-1]})")
            stack.append(end)
            nspans += 1
    return tracks, nspans


def check_steps(events, bad, steps_max):
    """Per rank and step, the waits against the step span's exposed time; returns the steps
    by (rank, step), and the waits and all-gather waits (ms) by the same keys."""
    steps = {}
    waits = collections.defaultdict(float)
    gwaits = collections.defaultdict(float)
    for e in events:
        args = e.get("args", {})
        if e.get("cat") == "step":
            steps[(e["pid"], args["step"])] = e
        elif e.get("cat") == "wait":
            waits[(e["pid"], args["step"])] += args["ms"]
            if e["name"].startswith("wait all-gather"):
                gwaits[(e["pid"], args["step"])] += args["ms"]
    if not steps:
        bad.append("no step spans")
    for key, s in sorted(steps.items()):
        want = s["args"]["exposed_ms"]
        if abs(waits[key] - want) > 1e-3 + 1e-6 * len(steps):
            bad.append(f"rank {key[0]} step {key[1]}: waits add up to {waits[key]:.6f} ms, the "
                       f"step reports {want:.6f} ms exposed")
    per_rank_steps = collections.Counter(k[0] for k in steps)
    if steps_max is not None and any(n > steps_max for n in per_rank_steps.values()):
        bad.append(f"steps kept per rank {dict(per_rank_steps)}, at most {steps_max} wanted")
    return steps, waits, gwaits


def check_stats(path, steps, waits, gwaits, bad):
    """The steps' figures against sharc_shard_stats' lines in @path; returns how many."""
    nstats = 0
    for line in open(path):
        f = line.split()
        f = f[f.index("stats"):] if "stats" in f else []  # (a launcher may prefix the rank)
        if len(f) != 6:
            continue
        rank, step, depth = int(f[1]), int(f[2]), int(f[5])
        exposed, gwait = float(f[3]), float(f[4])
        key = (rank, step)
        if key not in steps:
            continue  # a step the trace dropped (only the last ones are kept)
        nstats += 1
        if abs(waits[key] - exposed * 1e3) > 1e-3:
            bad.append(f"rank {rank} step {step}: the trace's waits add up to "
                       f"{waits[key]:.6f} ms, sharc_shard_stats said {exposed * 1e3:.6f} ms")
        if abs(gwaits[key] - gwait * 1e3) > 1e-3:
            bad.append(f"rank {rank} step {step}: the trace's gather waits add up to "
                       f"{gwaits[key]:.6f} ms, sharc_shard_stats said {gwait * 1e3:.6f} ms")
        if steps[key]["args"]["prefetch_depth"] != depth:
            bad.append(f"rank {rank} step {step}: depth {steps[key]['args']['prefetch_depth']}"
                       f" in the trace, {depth} in the statistics")
    if nstats == 0:
        bad.append(f"no step of {path} is in the trace")
    return nstats


def check_auto(events, steps, bad):
    """Prefetch auto: the depth counter is there, and every rank ran a step at one depth."""
    counters = [e for e in events if e.get("ph") == "C" and e["name"] == "prefetch depth"]
    if not counters:
        bad.append("prefetch auto, but no 'prefetch depth' counter")
    by_step = collections.defaultdict(set)
    for (rank, step), s in steps.items():
        by_step[step].add(s["args"]["prefetch_depth"])
    for step, depths in sorted(by_step.items()):
        if len(depths) != 1:
            bad.append(f"step {step}: the ranks ran with depths {sorted(depths)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--steps-max", type=int)
    ap.add_argument("--stats")
    ap.add_argument("--auto", action="store_true")
    a = ap.parse_args()
    bad = []

    try:
        with open(a.trace) as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: {a.trace} does not parse as JSON: {e}")
        return 1
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        print("FAIL: no traceEvents")
        return 1
    ranks = sorted({e["pid"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"})
    if a.ranks is not None and ranks != list(range(a.ranks)):
        bad.append(f"ranks {ranks}, want 0..{a.ranks - 1}")
    tracks, nspans = check_nesting(events, bad)
    # collectives: a unit, phases inside (nesting covers inside), known kinds
    colls = [e for e in events if e.get("cat") == "collective"]
    for e in colls:
        if e["args"].get("unit", -1) < 0 or e["name"].split()[0] not in (
                "all-gather", "reduce-scatter", "all-reduce"):
            bad.append(f"collective without a unit or of an unknown kind: {e}")
    if not colls:
        bad.append("no collectives in the trace")
    steps, waits, gwaits = check_steps(events, bad, a.steps_max)
    nstats = check_stats(a.stats, steps, waits, gwaits, bad) if a.stats else 0
    if a.auto:
        check_auto(events, steps, bad)

    for b in bad:
        print("FAIL:", b)
    print(f"trace: {len(ranks)} rank(s), {nspans} spans on {len(tracks)} tracks nest, "
          f"{len(colls)} collectives, {len(steps)} rank-steps, {nstats} checked against the "
          f"statistics: {'bad' if bad else 'ok'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
