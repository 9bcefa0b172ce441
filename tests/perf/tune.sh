#!/bin/bash
# sharc-perf tune for real at 2 ranks on this machine (host collectives, sharc's and UCX's
# knobs, a small budget): every output written and readable, a second run resumed from the
# journal, sharc using the table it wrote, --check (a match, and a fingerprint mismatch); and
# the failures: a candidate that hangs (killed at the timeout) or crashes (the sweep goes on),
# a launch template that fails, an unknown knob, an empty size range, an interrupted sweep
# that resumes.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between ranks)"
    exit 77
fi
if ! setup_mpirun; then
    echo "SKIP: no mpirun"
    exit 77
fi
PERF="$top_builddir/perf/sharc-perf"
d=$(mktemp -d /tmp/sharc-test-tune.XXXXXX)
trap 'rm -rf "$d"' EXIT
launch="${MPIRUN_CMD[*]} -np {np} {cmd}"
cat > "$d/space" <<'SPACE'
# a small space: two chunk sizes, one UCX transport list and threshold, sharc's algorithms
values SHARC_COLL_CHUNK 256k 2m
values UCX_TLS sm,self
values UCX_RNDV_THRESH 32k
drop UCX_ZCOPY_THRESH UCX_RNDV_SCHEME
SPACE
tune=("$PERF" tune --np 2 --launch "$launch" --colls allgather,allreduce -b 64K -e 1M --iters 5
      --warmup 1 --rounds 3 --budget 120s --timeout 60s --env SHARC_TRANSPORT=ucx
      --space "$d/space")

run_ok_match "tune at 2 ranks over sharc and UCX knobs" \
    "UCX_TLS.*SHARC_ALLGATHER_ALGO.*finals, 3 interleaved rounds.*launches \(0 from the journal\)" \
    "${tune[@]}" --out "$d/run"
for f in tuned.env tuned.sh sharc-tune.conf nccl-tuner.csv report.md tune.json results.jsonl; do
    if [ ! -s "$d/run/$f" ]; then
        echo "FAIL: tune wrote no $f"
        failures=$((failures + 1))
    fi
done
# the env file is KEY=VALUE lines and comments (nccl.conf); the exports source in a shell
if grep -Ev '^(#.*|[A-Z][A-Z0-9_]*=[^ ]*)$' "$d/run/tuned.env"; then
    echo "FAIL: tuned.env has lines nccl.conf does not take"
    failures=$((failures + 1))
fi
run_ok "tuned.sh sources" bash -n "$d/run/tuned.sh"
run_ok_match "the report has a table per collective" "## allgather.*\| 65536 \|.*## allreduce" \
    cat "$d/run/report.md"

# resumed: everything from the journal
run_ok_match "tune again: every result from the journal" "# 0 launches \([1-9][0-9]* from the journal\)" \
    "${tune[@]}" --out "$d/run"

# sharc loads the table and uses its rows
rows=0
while read -r coll nranks min max algo; do
    case "$coll" in '#'* | '') continue ;; esac
    rows=$((rows + 1))
    run_ok_match "$coll at $min B through the tune file: $algo" \
        "$coll $min B on 2 ranks: $algo \(tune file [^)]*line [0-9]+\)" \
        env SHARC_TRANSPORT=ucx SHARC_TUNE_FILE="$d/run/sharc-tune.conf" SHARC_LOG_LEVEL=debug \
        SHARC_LOG_SUBSYS=coll "${MPIRUN_CMD[@]}" -np 2 "$PERF" "$coll" -b "$min" -e "$min" -n 1 \
        -w 0 < /dev/null # (mpirun would read the rest of the table from the loop's input)
done < "$d/run/sharc-tune.conf"
echo "the table has $rows row(s)"
run_ok_match "sharc loads the table" "tune file .*sharc-tune.conf: $rows rule" \
    env SHARC_TRANSPORT=ucx SHARC_TUNE_FILE="$d/run/sharc-tune.conf" SHARC_LOG_LEVEL=info \
    "${MPIRUN_CMD[@]}" -np 2 "$PERF" allgather -b 64K -e 64K -n 1 -w 0

# --check: the same machine (exit 0, or 1 when noise reads as a regression), then a file
# tuned elsewhere
out=$("$PERF" tune --check "$d/run" --launch "$launch" --rounds 1 --iters 5 --warmup 1 2>&1)
st=$?
if [ $st -gt 1 ] || ! echo "$out" | grep -q "fingerprint [0-9a-f]* matches" ||
   ! echo "$out" | grep -Eq "^check: (OK|FLAGGED)"; then
    echo "FAIL: --check on the same machine (exit $st)"; echo "$out" | tail -20
    failures=$((failures + 1))
else
    echo "ok: --check on the same machine ($(echo "$out" | tail -1))"
fi
sed -i 's/"fingerprint":"[0-9a-f]*"/"fingerprint":"00000000deadbeef"/; s/"fingerprint": "[0-9a-f]*"/"fingerprint": "00000000deadbeef"/; s/topology: fabric /topology: fabric InfiniBand was /' "$d/run/tune.json"
run_fail "--check of a file tuned elsewhere" 120 \
    "FINGERPRINT MISMATCH: tuned on 00000000deadbeef.*tuned on: topology: fabric InfiniBand.*check: FLAGGED" \
    "$PERF" tune --check "$d/run" --launch "$launch" --rounds 1 --iters 5 --warmup 1

# a hanging and a crashing candidate: marked failed, the sweep goes on
cat > "$d/space2" <<'SPACE'
only SHARC_COLL_CHUNK
values SHARC_COLL_CHUNK 256k 4m 2m
SPACE
run_ok_match "a hanging and a crashing candidate" \
    "SHARC_COLL_CHUNK=256k failed: timed out after 5 s.*SHARC_COLL_CHUNK=4m failed: killed by signal 11.*SHARC_COLL_CHUNK=2m .*x the current.*, 2 failed" \
    env TUNE_WRAP_LAUNCH="${MPIRUN_CMD[*]}" "$PERF" tune --np 2 --colls allgather -b 64K -e 256K \
    --iters 3 --warmup 1 --rounds 2 --timeout 5s --space "$d/space2" \
    --launch "$top_srcdir/tests/perf/tune_wrap.sh {np} {cmd}" --out "$d/faults"
run_ok "the failures are in the journal" grep -q '"ok":false,"error":"timed out' \
    "$d/faults/results.jsonl"

# bad input
run_fail "a launch template that fails" 60 "false.*defaults could not be measured" \
    "$PERF" tune --np 2 --colls allgather -b 64K -e 64K --launch "false {cmd}" --out "$d/bad"
echo "drop UCX_NOPE" > "$d/space3"
run_fail "an unknown knob in the space file" 30 "space3:1: unknown knob 'UCX_NOPE'" \
    "$PERF" tune --space "$d/space3" --out "$d/bad2"
run_fail "an empty size range" 10 "empty size range" "$PERF" tune -b 1M -e 64K --out "$d/bad3"
run_fail "a template without {cmd}" 10 "has no \{cmd\}" "$PERF" tune --launch "mpirun -np 2" \
    --out "$d/bad4"

# interrupted, then resumed from what it had
# (-k: the sanitizer build's leak check at exit has been seen to hang after the SIGINT)
timeout -s INT -k 30 8 "${tune[@]}" --out "$d/int" > /dev/null 2>&1
run_ok_match "an interrupted tune resumes" "launches \([1-9][0-9]* from the journal\)" \
    "${tune[@]}" --out "$d/int"

finish
