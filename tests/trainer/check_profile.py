#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_profile.py OUTPUT JSON --layers L [--accum A] [--recompute] [--param-cast]
[--grad-cast] [--trace TRACE [--device-times]]

Checks what `sharc-llama train --profile --profile-json JSON` printed (its console OUTPUT) and
wrote: the table lists every op site, in order, each with the calls a step of a model of L
blocks and A micro-batches makes (with recomputation the blocks' forward twice; --param-cast:
gathers in another dtype than the compute's, each unit cast; --grad-cast: bf16 reductions);
the sites' shares of the step add up to 100% and their mean times to the step's mean
(every moment of a step is one site's); every site with work has a floor and its gap is
its time over it; the JSON parses and has the table's rows. With --trace (the run had --trace
too): the trace holds the op track with a span of every forward and backward site, and each
such span lies inside one of the shard engine's compute spans of rank 0 (the two timelines
agree), unless --device-times (a GPU's: its spans run behind the host's calls), and no read
of the device (readback) lies between a step's last backward site and its AdamW. Exits 1 on
failure.
"""
import argparse
import json
import re
import sys

SITES = ["embed_fwd", "rmsnorm_fwd", "qkv_fwd", "rope_fwd", "attention_fwd", "attn_out_fwd",
         "residual_add", "gate_up_fwd", "swiglu_fwd", "down_fwd", "lm_head_fwd",
         "cross_entropy", "lm_head_bwd", "down_bwd", "swiglu_bwd", "gate_up_bwd",
         "rmsnorm_bwd", "attn_out_bwd", "attention_bwd", "rope_bwd", "qkv_bwd", "embed_bwd",
         "zero_fill", "cast_params", "cast_grads", "shard_gather", "shard_reduce", "grad_sumsq",
         "allreduce", "adamw", "readback", "data", "host_gaps"]
COMPUTE = SITES[:SITES.index("embed_bwd") + 1]


def expected_calls(a):
    L, A, R = a.layers, a.accum, 2 if a.recompute else 1
    units = L + 2
    fwd = {s: A * L * R for s in ("qkv_fwd", "rope_fwd", "attention_fwd", "attn_out_fwd",
                                  "gate_up_fwd", "swiglu_fwd", "down_fwd")}
    bwd = {s: A * L for s in ("down_bwd", "swiglu_bwd", "gate_up_bwd", "attn_out_bwd",
                              "attention_bwd", "rope_bwd", "qkv_bwd")}
    return dict(fwd, **bwd, embed_fwd=A, rmsnorm_fwd=A * (2 * L * R + 1),
                residual_add=2 * A * L * R, lm_head_fwd=A, cross_entropy=A, lm_head_bwd=A,
                rmsnorm_bwd=A * (2 * L + 1), embed_bwd=A,
                zero_fill=A + 3,  # the residual's gradient, the loss, the norm's sums, the grads
                cast_params=A * (2 * units - 1) if a.param_cast else 0,
                cast_grads=2 * A * units if a.grad_cast else 0,
                shard_gather=3 * A * units, shard_reduce=A * units + 1, grad_sumsq=1,
                allreduce=2, adamw=1, readback=2, data=A)


def table_rows(text):
    rows = []
    for line in text.splitlines():
        line = re.sub(r"^\[rank \d+\] ", "", line)  # (the launcher's prefix)
        m = re.match(r"^profile: (\w+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)%\s+(.*)$", line)
        if m and m.group(1) != "site":
            rows.append((m.group(1), int(m.group(2)), float(m.group(3)), float(m.group(4))))
    m = re.search(r"^(?:\[rank \d+\] )?profile: sum\s+([0-9.]+)\s+([0-9.]+)%", text, re.M)
    return rows, (float(m.group(2)) if m else None)


def check_trace(path, bad, device_times):
    trace = json.load(open(path))
    ev = trace["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "op" and e["pid"] == 0]
    computes = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                      if e.get("cat") == "compute" and e["pid"] == 0)
    if not ops:
        bad.append(f"{path}: no op track")
        return
    if not computes:
        bad.append(f"{path}: no compute spans of the engine")
        return
    outside = []
    for e in ops:
        if e["name"] not in COMPUTE or device_times:
            continue
        t0, t1 = e["ts"], e["ts"] + e["dur"]
        if not any(c0 - 1.0 <= t0 and t1 <= c1 + 1.0 for c0, c1 in computes):
            outside.append(e)
    print(f"trace: {len(ops)} op spans on rank 0's track, {len(outside)} of the compute sites' "
          f"outside the engine's compute spans")
    if outside:
        bad.append(f"op spans outside the engine's compute spans, e.g. {outside[:3]}")
    names = {e["name"] for e in ops}
    missing = [s for s in COMPUTE if s not in names]
    if missing:
        bad.append(f"sites without spans in the trace: {missing}")
    # the host reads the device (loss, norm) only once the update is queued: no read between a
    # step's last backward site and its AdamW, where the device would idle while the host waits
    # and then queues the optimizer
    spans = sorted((e["ts"], e["name"]) for e in ops)
    last_bwd, early = None, 0
    for ts, name in spans:
        if name == "embed_bwd":
            last_bwd = ts
        elif name == "adamw":
            last_bwd = None
        elif name == "readback" and last_bwd is not None:
            early += 1
    print(f"trace: {early} reads of the device between a backward and its update")
    if early:
        bad.append(f"{early} readback spans between the last backward site and AdamW")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("json")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--param-cast", action="store_true")
    ap.add_argument("--grad-cast", action="store_true")
    ap.add_argument("--trace")
    ap.add_argument("--device-times", action="store_true")
    a = ap.parse_args()
    bad = []

    rows, sum_share = table_rows(open(a.output).read())
    shares = sum(r[3] for r in rows)
    names = [r[0] for r in rows]
    if names != SITES:
        bad.append(f"table sites {names}, want {SITES}")
    calls = expected_calls(a)
    for name, n, ms, share in rows:
        if name in calls and n != calls[name]:
            bad.append(f"{name}: {n} calls per step, want {calls[name]}")
    # (each share printed to 0.1%: 33 roundings)
    if sum_share is None or abs(sum_share - 100.0) > 0.15 or abs(shares - 100.0) > 2.0:
        bad.append(f"the sites' shares add up to {shares}% of the step (the sum row: "
                   f"{sum_share}%)")

    doc = json.load(open(a.json))
    sites = doc["sites"]
    if [s["site"] for s in sites] != SITES:
        bad.append(f"JSON sites {[s['site'] for s in sites]}")
    for (name, n, ms, share), s in zip(rows, sites):
        if s["site"] != name or round(s["calls"]) != n or abs(s["ms"] - ms) > 6e-4 or \
                abs(100 * s["share"] - share) > 0.06:
            bad.append(f"table row {(name, n, ms, share)} is not the JSON's {s}")
        if s["kind"] != "wait" and s["calls"] > 0 and s["ms"] > 0 and \
                (s["flops"] > 0 or s["bytes"] > 0):
            if not s["floor_ms"] or abs(s["gap"] - s["ms"] / s["floor_ms"]) > 1e-6 * s["gap"]:
                bad.append(f"{name}: floor {s['floor_ms']} ms, gap {s['gap']}")
        if s["kind"] == "flops" and s["calls"] > 0 and not s["flops"] > 0:
            bad.append(f"{name}: a product without FLOPs")
    total = sum(s["mean_ms"] for s in sites)
    if abs(total - doc["step_mean_ms"]) > 1e-6 * doc["step_mean_ms"] + 1e-9:
        bad.append(f"the sites' means add up to {total} ms, the step's is {doc['step_mean_ms']}")
    if not (doc["gemm_flops_per_s"] > 0 and doc["copy_bytes_per_s"] > 0):
        bad.append(f"floors {doc['gemm_flops_per_s']} FLOP/s, {doc['copy_bytes_per_s']} B/s")
    print(f"profile: {len(rows)} sites, step {doc['step_ms']:.3f} ms (median; mean "
          f"{doc['step_mean_ms']:.3f}, the sites' means {total:.3f}), shares add up to "
          f"{shares:.1f}%; GEMM {doc['gemm_flops_per_s'] / 1e9:.1f} GFLOP/s, copy "
          f"{doc['copy_bytes_per_s'] / 1e9:.1f} GB/s")
    if a.trace:
        check_trace(a.trace, bad, a.device_times)
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
