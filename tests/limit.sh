#!/bin/bash
# limit.sh [INTERPRETER] TEST: how make check runs each test: under a time limit, so that a
# hung test fails with its name instead of holding the suite. The limit is the test's line
# in tests/time_limits (its path and seconds), else SHARC_TEST_LIMIT, else 900 s; past it the
# test's whole process group is stopped (TERM, then KILL 10 s later) and it fails.
# SPDX-License-Identifier: BSD-3-Clause
set -u
test=${!#}
limit=${SHARC_TEST_LIMIT:-900}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=${test#"${top_srcdir:-.}"/}
name=${name#./}
own=$(awk -v t="$name" '$1 == t { print $2 }' "$here/time_limits" 2> /dev/null)
[ -n "$own" ] && limit=$own
timeout -k 10 "$limit" "$@"
status=$?
if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    echo "FAIL: $name ran past its time limit of $limit s (tests/time_limits, SHARC_TEST_LIMIT) and was stopped"
    exit 1
fi
exit $status
