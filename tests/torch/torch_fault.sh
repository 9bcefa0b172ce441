#!/bin/bash
# Failures through the sharc torch backend (tests/torch/fault.py): a rank killed mid-training
# makes the others raise an exception naming it, within SHARC_TIMEOUT (DDP and FSDP2); a rank
# that skips an all_reduce makes the others raise, at SHARC_TIMEOUT, with the ranks' stall
# verdict naming it (4 ranks on one host); sizes
# that differ across ranks under SHARC_CHECK=1 give sharc's message on every rank; bad input
# (unsupported ops and dtypes, mismatched tensors) raises an exception naming the op and the
# reason, and the group goes on working.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/env.sh"

line='[^[:cntrl:]]*' # the rest of one line (the patterns span lines)
# the ranks start slowly on a loaded machine (importing torch): the wall bound is generous;
# how fast the survivors notice is bounded in fault.py (--bound, from the start of training)
run_fail "DDP: rank 1 killed at step 5, ranks 0 and 2 raise naming it" 150 \
    "rank 0 caught ${line}rank 1 .*rank 2 caught ${line}rank 1 " \
    env SHARC_TIMEOUT=20s "$LAUNCH" -n 3 --timeout 120 -- \
    "$PY" "$TT/fault.py" kill --mode ddp --victim 1 --at 5 --bound 25
run_fail "FSDP2: rank 0 killed at step 3, rank 1 raises naming it" 150 \
    "rank 1 caught ${line}rank 0" \
    env SHARC_TIMEOUT=20s "$LAUNCH" -n 2 --timeout 120 -- \
    "$PY" "$TT/fault.py" kill --mode fsdp --victim 0 --at 3 --bound 25
# a rank skips an all_reduce: at SHARC_TIMEOUT every other rank's exception carries the
# ranks' stall verdict naming it (logged at SHARC_STALL_WARN by every rank, the skipper too)
run_ok_match "a rank skips an all_reduce: every other rank raises with the verdict naming it" \
    "\[rank 0\] rank 0 caught the verdict.*\[rank 1\] rank 1 caught the verdict.*\[rank 2\] .*stall verdict: ${line}rank 2 \([^)]*\) has not posted it.*\[rank 3\] rank 3 caught the verdict" \
    env SHARC_STALL_WARN=4s SHARC_TIMEOUT=12s "$LAUNCH" -n 4 --timeout 120 -- \
    "$PY" "$TT/fault.py" skip --victim 2 --idle 20
run_ok_match "SHARC_CHECK=1: all_reduce sizes differ, every rank gets sharc's message" \
    "rank 0 ok mismatched.*rank 1 ok mismatched" \
    env SHARC_CHECK=1 "$LAUNCH" -n 2 --timeout 120 -- \
    "$PY" "$TT/fault.py" check-mismatch
run_ok_match "bad input raises a clear exception, the group goes on" \
    "rank 0: bad input ok.*rank 1: bad input ok" \
    "$LAUNCH" -n 2 --timeout 120 -- "$PY" "$TT/fault.py" bad-input
finish
