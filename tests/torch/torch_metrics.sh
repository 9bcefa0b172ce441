#!/bin/bash
# The torch backend exports through sharc's metrics as any program does: a 2-rank job of
# tests/torch/metrics.py (7 all-reduces, 3 all-gathers of 1000 f32) leaves each rank's counts
# in its SHARC_METRICS_FILE, which promtool passes.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run_ok_match "torch backend (native), 2 ranks, with SHARC_METRICS_FILE" \
    "rank 0 of 2: collectives ok" env SHARC_METRICS_FILE="$dir/torch.r%r.prom" \
    "$LAUNCH" -n 2 --timeout 300 -- "$PY" "$TT/metrics.py"
for r in 0 1; do
    f="$dir/torch.r$r.prom"
    if command -v promtool >/dev/null; then
        run_ok "promtool check metrics: the torch job's rank $r" sh -c "promtool check metrics < '$f'"
    fi
    for c in "allreduce 7" "allgather 3"; do
        set -- $c
        if grep -Eq "^sharc_collective_seconds_count\{rank=\"$r\",.*collective=\"$1\",size_class=\"(4KiB|64KiB)\"\} $2$" "$f"; then
            echo "ok: the torch job's rank $r counted its $2 ${1}s"
        else
            echo "FAIL: the torch job's rank $r did not count $2 ${1}s:"
            grep -E "_count\{" "$f" | head -10
            failures=$((failures + 1))
        fi
    done
done
finish
