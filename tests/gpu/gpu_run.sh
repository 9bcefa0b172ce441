#!/bin/bash
# The GPU run's logic without a GPU (tests/gpu/run.sh, parts.sh, device.sh):
#  - a part runs within its time box and the budget: one that ends is ok, one that overruns
#    its box is stopped and failed, one the budget's time left cannot fit is skipped, one that
#    exits 77 is skipped with its reason, and the summary has a line for each, in order;
#  - tests/gpu/device.sh --dry-run on this build: every part of the run says it skipped (and
#    its box), the report and summary.txt are written, the logs archived, the summary printed
#    last; --parts takes a list and prefixes; run.sh without a GPU and without --dry-run is a
#    SKIP (77).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GPU="$top_srcdir/tests/gpu"

# the parts' time boxes, against a budget of 6 s (reserve 0, parts of 1 s at least)
unit=$(
    out=$work/unit report=$work/unit/report.md dry_run=0 only="" budget=6 reserve=0 min_box=1
    mkdir -p "$out"
    t_start=$SECONDS
    . "$GPU/parts.sh"
    part quick 2 sleep 0.1 && figure "fast"
    part slow 3 sleep 10
    part later 10 true
    part short 2 sh -c 'echo "SKIP: no device here"; exit 77'
    only="other,pick*"
    part unselected 2 true
    part picked 2 true
    summary
)
echo "$unit" | sed 's/^/  /'
run_ok_match "a part within its box is ok, with its figure" "quick +ok +[0-9]+ +fast" echo "$unit"
run_ok_match "a part past its box is stopped and failed" \
    "slow +FAILED \(stopped after 3 s\)" echo "$unit"
run_ok_match "a part the budget cannot fit is skipped" \
    "later +skipped \(the budget's [0-9] s left; box 10 s\)" echo "$unit"
run_ok_match "a part that exits 77 is skipped with its reason" \
    "short +skipped \(SKIP: no device here\)" echo "$unit"
run_ok_match "--parts: a prefix is taken, the others are left out" \
    "picked +ok.*5 part\(s\): 2 ok, 1 failed, 2 skipped" echo "$unit"
run_ok "--parts: a part not named has no line" bash -c '! grep -q unselected <<< "$1"' _ "$unit"

# the whole run, dry
run_ok_match "device.sh --dry-run: every part listed, skipped, the summary last" \
    "llama-1b-profile +skipped \(dry run; box 90 s\).*torch_backend +skipped.*perf-allgather-int8 +skipped.*overlap-gemm +skipped.*[0-9]+ part\(s\): 0 ok, 0 failed, [0-9]+ skipped; [0-9]+ s" \
    bash "$GPU/device.sh" --dry-run "$top_builddir" "$work/dry"
n=$(grep -c "skipped (dry run" "$work/dry/summary.txt")
run_ok "... 30 parts or more ($n)" test "$n" -ge 30
run_ok "... the report, the summary and the logs' archive in OUT_DIR" \
    test -s "$work/dry/report.md" -a -s "$work/dry/summary.txt" -a -s "$work/dry/logs.tar.gz"
run_ok "... the summary is the last thing printed" \
    test "$(echo "$last_out" | tail -n 1)" = "$(tail -n 1 "$work/dry/summary.txt")"
run_ok_match "--dry-run --parts 'kernels,llama-1b*': those parts only" \
    "part .*kernels .*llama-1b .*llama-1b-profile .*llama-1b-recompute +skipped \(dry run; box 90 s\)
6 part\(s\): 0 ok, 0 failed, 6 skipped" \
    bash "$GPU/run.sh" --dry-run --parts 'kernels,llama-1b*' "$top_builddir" "$work/parts"
if ! nvidia-smi -L > /dev/null 2>&1; then
    run_ok "run.sh without a GPU is a SKIP (77)" sh -c \
        "bash '$GPU/run.sh' '$top_builddir' '$work/none' > /dev/null; test \$? = 77"
fi
finish
