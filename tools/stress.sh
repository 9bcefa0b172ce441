#!/bin/bash
# stress.sh [-n RUNS] [-j AT_ONCE] [-b BUILD] [-o OUTDIR] [-l LOOPS] [TEST[:VAR=VALUE,...]...]:
# runs each test RUNS times (default 30), AT_ONCE of them at a time (default 3), interleaved
# so that different tests load the machine together, as make check runs them (tests/limit.sh,
# make check's environment) in the build tree BUILD (default build/, already built with
# `make check TESTS=`). -l LOOPS busy loops run beside, as further load. A test may carry
# settings for its runs (tests/torch/torch_suite.sh:SHARCTEST_SUITE_RUNS=DETAIL). Without
# tests: the ones that touch threads, processes, namespaces and torch (the list below).
# Prints, per test, its runs, failures, median and longest time and the first failure's log
# tail; every run's log stays in OUTDIR. Exit status 1 if any run failed.
# A failure found here is a bug to fix at its cause, never a reason to retry.
# SPDX-License-Identifier: BSD-3-Clause
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=30 jobs=3 build=${SHARC_BUILD_DIR:-$top/build} out="" loops=0
while getopts "n:j:b:o:l:h" opt; do
    case $opt in
        n) runs=$OPTARG ;;
        j) jobs=$OPTARG ;;
        b) build=$OPTARG ;;
        o) out=$OPTARG ;;
        l) loops=$OPTARG ;;
        *) sed -n '2,11p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    tests=(tests/shard/shard_offload.sh tests/torch/torch_p2p.sh
        tests/torch/torch_suite.sh:SHARCTEST_SUITE_RUNS=DETAIL tests/torch/torch_ops.sh
        tests/net/net_linkdown.sh tests/net/net_fastfail.sh tests/coll/flight.sh
        tests/net/net_stall.sh tests/coll/coll.sh)
fi
build=$(cd "$build" && pwd) || exit 2
[ -f "$build/Makefile" ] || { echo "stress: $build is not a configured build tree" >&2; exit 2; }
out=${out:-$build/stress/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 2
for t in "${tests[@]}"; do # a script of the source tree, or a program of the build
    [ -f "$top/${t%%:*}" ] || [ -x "$build/${t%%:*}" ] ||
        { echo "stress: no test ${t%%:*}" >&2; exit 2; }
done

# make check's environment (Makefile.am's AM_TESTS_ENVIRONMENT), from the build's Makefile
mkvar() { sed -n "s/^$1 = //p" "$build/Makefile" | head -1; }
export top_srcdir=$top top_builddir=. MPIRUN=$(mkvar MPIRUN)
export LIBTOOL="$(mkvar SHELL) $build/libtool" SHARCTEST_SANITIZE=$(mkvar SHARC_SAN_FLAGS)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset SHARC_BUILD_DIR SHARC_CONFIGURE_FLAGS

loop_pids=()
for ((i = 0; i < loops; i++)); do
    (while :; do :; done) &
    loop_pids+=($!)
done
trap '[ ${#loop_pids[@]} -gt 0 ] && kill "${loop_pids[@]}" 2> /dev/null' EXIT

# one run: RESULTS gets "NAME RUN STATUS SECONDS"
one() {
    local spec=$1 i=$2 name=${1%%:*} log t0 st sets=() cmd=("./${1%%:*}")
    [ "$spec" != "$name" ] && IFS=, read -r -a sets <<< "${spec#*:}"
    [ -f "$top/$name" ] && cmd=(bash "$top/$name")
    log="$out/$(basename "$name" .sh).$i.log"
    t0=$(date +%s.%N)
    (cd "$build" && env "${sets[@]}" bash "$top/tests/limit.sh" "${cmd[@]}") > "$log" 2>&1
    st=$?
    echo "$spec $i $st $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" \
        >> "$out/results"
}

echo "stress: ${#tests[@]} tests x $runs runs, $jobs at a time, $loops busy loop(s); logs in $out"
echo "stress: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$out/results"
active=() # the runs under way (the busy loops are no runs)
for ((i = 1; i <= runs; i++)); do
    for t in "${tests[@]}"; do
        while [ ${#active[@]} -ge "$jobs" ]; do
            wait -n -p ended "${active[@]}"
            for k in "${!active[@]}"; do
                [ "${active[$k]}" = "$ended" ] && unset "active[$k]"
            done
            active=("${active[@]}")
        done
        one "$t" "$i" &
        active+=($!)
    done
done
[ ${#active[@]} -gt 0 ] && wait "${active[@]}"
echo "stress: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

failed=0
printf '%-58s %5s %8s %9s %9s\n' test runs failures "median s" "longest s"
for t in "${tests[@]}"; do
    read -r n f med max < <(awk -v t="$t" '$1 == t { print $4, ($3 != 0 && $3 != 77) }' \
        "$out/results" | sort -n | awk '{ s[++n] = $1; f += $2 }
        END { if (n == 0) { print "0 0 - -"; exit }
              printf "%d %d %.1f %.1f\n", n, f,
                  (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2, s[n] }')
    printf '%-58s %5s %8s %9s %9s\n' "$t" "$n" "$f" "$med" "$max"
    skips=$(awk -v t="$t" '$1 == t && $3 == 77' "$out/results" | wc -l)
    [ "$skips" -gt 0 ] && echo "  ($skips of its runs skipped: see their logs)"
    failed=$((failed + f))
done
for t in "${tests[@]}"; do
    first=$(awk -v t="$t" '$1 == t && $3 != 0 && $3 != 77 { print $2; exit }' "$out/results")
    [ -z "$first" ] && continue
    log="$out/$(basename "${t%%:*}" .sh).$first.log"
    echo "--- $t: run $first failed; the end of $log"
    tail -n 25 "$log" | cut -c1-240
done
echo "stress: $failed failed run(s)"
[ $failed -eq 0 ]
