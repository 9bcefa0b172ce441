#!/bin/bash
# SHARC_TUNE_FILE between ranks: a tune file's rule chooses the algorithm of every allgather
# (the coll debug log says which rule), the collectives stay correct under it, and a bad
# line fails every rank with a message naming the file and the line. The parser's cases are
# in test_tune_file.c.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between ranks)"
    exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat > "$dir/tune" <<'EOF'
# sharc tune file v1
# fingerprint tests/coll/tune_file.sh
allgather       2   0        18446744073709551615  direct
reduce_scatter  *   0        18446744073709551615  ring
EOF

# run_tuned DESCRIPTION PATTERN COMMAND...: run_ok_match, and no allgather on 2 ranks may
# have been chosen by anything but the tune file.
run_tuned() {
    local what=$1 before=$failures
    run_ok_match "$@"
    [ $failures -eq $before ] || return
    if echo "$last_out" | grep -E "allgather [0-9]+ B on 2 ranks: " | grep -vq "(tune file "; then
        echo "FAIL: $what: an allgather was not chosen by the tune file"
        echo "$last_out" | grep -E "allgather [0-9]+ B on 2 ranks: " | grep -v "(tune file " | head
        failures=$((failures + 1))
    fi
}

# Lines read "[rank R] host:pid:tid [R] sharc LEVEL subsys: message" ([-] before the rank is
# known); the patterns stay within a line by matching no blanks where the line has none.
tuned=(env SHARC_TUNE_FILE="$dir/tune" SHARC_LOG_LEVEL=debug SHARC_LOG_SUBSYS=coll)
run_tuned "the tune file chooses allgather's algorithm in test_coll, 2 ranks" \
    "\[rank 0\] [^ ]+ \[-\] sharc INFO coll: tune file $dir/tune: 2 rules.*\[0\] sharc DEBUG coll: allgather [0-9]+ B on 2 ranks: direct \(tune file $dir/tune line 3\).*\[rank 1\] [^ ]+ \[-\] sharc INFO coll: tune file $dir/tune: 2 rules.*\[1\] sharc DEBUG coll: allgather [0-9]+ B on 2 ranks: direct \(tune file $dir/tune line 3\)" \
    "${tuned[@]}" "$LAUNCH" --mode env -n 2 -- "$BIN/coll/test_coll" 100003
run_ok_match "reduce_scatter follows the tune file's '*' rule, 2 ranks" \
    "reduce_scatter [0-9]+ B on 2 ranks: ring \(tune file $dir/tune line 4\)" \
    "${tuned[@]}" "$LAUNCH" --mode env -n 2 -- "$BIN/coll/test_coll" 1003
run_tuned "the tune file chooses allgather's algorithm in sharc-perf, 2 ranks" \
    "allgather 65536 B on 2 ranks: direct \(tune file $dir/tune line 3\).*allgather 1048576 B on 2 ranks: direct \(tune file $dir/tune line 3\)" \
    "${tuned[@]}" "$LAUNCH" --mode env -n 2 -- "$top_builddir/perf/sharc-perf" allgather \
    -b 64K -e 1M -n 2 -w 1
# SHARC_<COLL>_ALGO still wins; 3 ranks fall through to the built-in table
run_ok_match "SHARC_ALLGATHER_ALGO wins over the tune file, 2 ranks" \
    "allgather [0-9]+ B on 2 ranks: ring \(SHARC_ALLGATHER_ALGO\)" \
    "${tuned[@]}" SHARC_ALLGATHER_ALGO=ring "$LAUNCH" --mode env -n 2 -- "$BIN/coll/test_coll" 1003
run_ok_match "no rule for 3 ranks: the built-in table" \
    "allgather [0-9]+ B on 3 ranks: [a-z_]+ \(built-in rule\)" \
    "${tuned[@]}" "$LAUNCH" --mode env -n 3 -- "$BIN/coll/test_coll" 1003

cp "$dir/tune" "$dir/bad"
echo "allgather       2   65536    1048575   rign" >> "$dir/bad"
run_fail "a bad tune file line fails every rank" 30 \
    "\[rank 0\] [^ ]+ \[-\] sharc ERROR coll: tune file $dir/bad line 5: allgather has no algorithm 'rign'.*\[rank 1\] [^ ]+ \[-\] sharc ERROR coll: tune file $dir/bad line 5: allgather has no algorithm 'rign'" \
    env SHARC_TUNE_FILE="$dir/bad" "$LAUNCH" --mode env -n 2 -- "$BIN/coll/test_coll"
run_fail "a missing tune file fails every rank" 30 \
    "tune file $dir/none \(SHARC_TUNE_FILE\): cannot open: No such file or directory" \
    env SHARC_TUNE_FILE="$dir/none" "$LAUNCH" --mode env -n 2 -- "$BIN/coll/test_coll"
finish
