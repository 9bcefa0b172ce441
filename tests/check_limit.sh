#!/bin/bash
# The harness's time limit (tests/limit.sh): a test that runs past it is stopped, with its
# children, and fails by name; one within it keeps its own status (0, 77, a failure).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/lib.sh"

limit="$top_srcdir/tests/limit.sh"
run_fail "a test past its limit is stopped and fails by name" 20 \
    "FAIL: .*hang.sh ran past its time limit of 2 s" \
    env SHARC_TEST_LIMIT=2 bash "$limit" bash -c 'sleep 59.7 & sleep 59.7; wait' hang.sh
pid_alive=$(pgrep -f "sleep 59.7" || true)
if [ -n "$pid_alive" ]; then
    echo "FAIL: the stopped test's children are still running ($pid_alive)"
    failures=$((failures + 1))
else
    echo "ok: the stopped test's children are gone"
fi
run_ok "a test within its limit passes" env SHARC_TEST_LIMIT=20 bash "$limit" true
st=0
env SHARC_TEST_LIMIT=20 bash "$limit" bash -c 'exit 77' > /dev/null 2>&1 || st=$?
if [ $st -eq 77 ]; then
    echo "ok: a skip stays a skip"
else
    echo "FAIL: a skip came back as $st"
    failures=$((failures + 1))
fi
finish
