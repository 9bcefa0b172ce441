#!/bin/bash
# The Python package's ctypes declarations (python/sharc/_lib.py) against the C headers
# (tests/check_pyapi.py), and that the check catches a drift. SKIP without python3.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/lib.sh"

command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
run_ok_match "the Python package's declarations match the headers; a drift is caught" \
    "ok: a doctored prototype and a doctored struct are caught.*ok: [0-9]+ functions" \
    python3 "$top_srcdir/tests/check_pyapi.py" "$top_srcdir" --self-test
finish
