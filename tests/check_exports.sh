#!/bin/bash
# libsharc.so exports the public API only: every dynamic symbol it defines starts with
# sharc_, and every function declared SHARC_API in the installed headers is exported.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/lib.sh"

lib="$top_builddir/.libs/libsharc.so"
if [ ! -f "$lib" ]; then
    echo "SKIP: no shared library was built"
    exit 77
fi
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRB]$/ {print $3}' | sort)
bad=$(echo "$exported" | grep -v '^sharc_' || true)
if [ -n "$bad" ]; then
    echo "FAIL: symbols outside the public API are exported:"
    echo "$bad"
    failures=$((failures + 1))
else
    echo "ok: $(echo "$exported" | wc -l) exported symbols, all sharc_*"
fi
declared=$(cat "$top_srcdir"/include/sharc/*.h "$top_builddir"/include/sharc/version.h 2>/dev/null |
    grep -v '^#' | tr '\n' ' ' | grep -o 'SHARC_API [^;(]*(' | sed 's/($//; s/.*[ *]//' | sort -u)
for f in $declared; do
    if ! echo "$exported" | grep -qx "$f"; then
        echo "FAIL: $f is declared SHARC_API but not exported"
        failures=$((failures + 1))
    fi
done
[ $failures -ne 0 ] || echo "ok: all $(echo "$declared" | wc -l) declared functions are exported"
if nm -D --defined-only "$lib" | grep -q ' sharc_store_\| sharc_boot_\| sharc_tp_'; then
    echo "FAIL: internal functions leak"
    failures=$((failures + 1))
fi
finish
