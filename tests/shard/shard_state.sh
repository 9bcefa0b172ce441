#!/bin/bash
# Sharded checkpoints: round trips; loads onto other world sizes (4 -> 2, 2 -> 4, 3 -> 2,
# HSDP -> flat); saves killed at random points leave the previous checkpoint loadable;
# truncated, edited, mismatched and missing checkpoints are refused on every rank.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^json-c: yes" ||
   ! "$top_builddir/perf/sharc-info" -b | grep -q "^xxhash: yes"; then
    echo "SKIP: sharc was built without json-c or xxHash (checkpoints need both)"
    exit 77
fi
T="$BIN/shard/test_shard_state"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_ok "round trip, 1 rank" "$T" roundtrip "$work/rt1"
run_ok "round trip, 3 ranks" "$LAUNCH" --mode env -n 3 -- "$T" roundtrip "$work/rt3"
if [ "$(ls "$work/rt3" | sort | tr '\n' ' ')" != "sharc-shard.json shard-g2-r0.bin shard-g2-r1.bin shard-g2-r2.bin " ]; then
    echo "FAIL: the second save left other files: $(ls "$work/rt3")"
    failures=$((failures + 1))
fi

# re-sharding: a checkpoint from N ranks loads onto M
run_ok "save on 4 ranks" "$LAUNCH" --mode env -n 4 -- "$T" save "$work/c4" 41
for m in 4 2 1 3; do
    run_ok "load 4 -> $m ranks" "$LAUNCH" --mode env -n $m -- "$T" load "$work/c4" 41
done
run_ok "save on 2 ranks" "$LAUNCH" --mode env -n 2 -- "$T" save "$work/c2" 21
run_ok "load 2 -> 4 ranks" "$LAUNCH" --mode env -n 4 -- "$T" load "$work/c2" 21
run_ok "save on 3 ranks" "$LAUNCH" --mode env -n 3 -- "$T" save "$work/c3" 31
run_ok "load 3 -> 2 ranks" "$LAUNCH" --mode env -n 2 -- "$T" load "$work/c3" 31
run_ok "save on 4 ranks, HSDP shard size 2" env SHARCTEST_SHARD_SIZE=2 "$LAUNCH" --mode env \
    -n 4 -- "$T" save "$work/h4" 42
if [ "$(ls "$work/h4" | grep -c '\.bin$')" != 2 ]; then
    echo "FAIL: HSDP save wrote $(ls "$work/h4" | grep -c '\.bin$') shard files, not 2"
    failures=$((failures + 1))
fi
run_ok "load HSDP 4x2 -> flat 3 ranks" "$LAUNCH" --mode env -n 3 -- "$T" load "$work/h4" 42
run_ok "load HSDP 4x2 -> HSDP 6x3" env SHARCTEST_SHARD_SIZE=3 "$LAUNCH" --mode env -n 6 \
    -- "$T" load "$work/h4" 42

# a save killed at random points: the checkpoint loads, either the old one or the new one
run_ok "save step 1 (large)" env SHARCTEST_MODEL=big "$T" save "$work/kill" 1
for i in $(seq 2 13); do
    delay=$(awk -v s=$RANDOM 'BEGIN { printf "%.3f", (s % 400) / 1000 }')
    { SHARCTEST_MODEL=big timeout -s KILL "$delay" "$T" save "$work/kill" "$i"; } > /dev/null 2>&1
    out=$(SHARCTEST_MODEL=big "$T" load "$work/kill" any 2>&1)
    if [ $? -ne 0 ]; then
        echo "FAIL: after a save of step $i killed at $delay s, the checkpoint does not load"
        echo "$out" | tail -5
        failures=$((failures + 1))
    fi
    loaded="$loaded $(echo "$out" | sed -n 's/.*loaded step \([0-9]*\).*/\1/p')@${delay}s"
done
echo "ok: saves of steps 2..13 killed at random points; each time a checkpoint loaded:$loaded"
run_ok "save step 21 on 2 ranks (large)" env SHARCTEST_MODEL=big "$LAUNCH" --mode env -n 2 \
    -- "$T" save "$work/k2" 21
run_ok_match "a rank killed while it writes its shard: the other fails, no hang" \
    "save: remote peer error" env SHARCTEST_MODEL=big SHARC_BOOTSTRAP_TIMEOUT=10s "$LAUNCH" \
    --mode env -n 2 -- sh -c \
    'if [ "$SHARCTEST_RANK" = 1 ]; then "$0" savedie "$1" 99; exit 0; fi; "$0" save "$1" 99; exit 0' \
    "$T" "$work/k2"
run_ok "... and the old checkpoint loads as before" env SHARCTEST_MODEL=big "$LAUNCH" --mode env \
    -n 2 -- "$T" load "$work/k2" 21

# refused: every rank fails, and nothing in the group changes
cp -r "$work/c2" "$work/trunc"
truncate -s -4 "$work/trunc/shard-g1-r1.bin"
run_fail "a truncated shard file is refused" 20 "has [0-9]+ bytes, the metadata says" \
    "$LAUNCH" --mode env -n 2 -- sh -c '"$0" fail "$1" >&2 && exit 1; exit 0' "$T" "$work/trunc"
cp -r "$work/c2" "$work/flip"
printf '\x42' | dd of="$work/flip/shard-g1-r0.bin" bs=1 seek=200 conv=notrunc 2> /dev/null
run_fail "a corrupt shard file is refused" 20 "has checksum [0-9a-f]+, the metadata says" \
    "$LAUNCH" --mode env -n 2 -- sh -c '"$0" fail "$1" >&2 && exit 1; exit 0' "$T" "$work/flip"
cp -r "$work/c2" "$work/edit"
sed -i 's/layer0.w1/layer0.wX/' "$work/edit/sharc-shard.json"
run_fail "a checkpoint of another model is refused" 20 "is 'layer0.wX' with 37 elements" \
    "$LAUNCH" --mode env -n 2 -- sh -c '"$0" fail "$1" >&2 && exit 1; exit 0' "$T" "$work/edit"
run_fail "a parameter with another count is refused" 20 \
    "'layer0.w1' with 37 elements in the checkpoint, 'layer0.w1' with 38" \
    env SHARCTEST_MODEL=other "$LAUNCH" --mode env -n 2 -- sh -c '"$0" fail "$1" >&2 && exit 1; exit 0' \
    "$T" "$work/c2"
run_fail "a missing optimizer state is refused" 20 "the checkpoint has no state 'lr_scale'" \
    env SHARCTEST_STATES=exp_avg,lr_scale "$LAUNCH" --mode env -n 2 -- sh -c \
    '"$0" fail "$1" >&2 && exit 1; exit 0' "$T" "$work/c2"
cp -r "$work/c2" "$work/garbage"
echo '{"format": "sharc-shard-checkpoint", "version": 1, "units": [' > "$work/garbage/sharc-shard.json"
run_fail "garbage metadata is refused" 20 "is not a JSON object" \
    "$LAUNCH" --mode env -n 2 -- sh -c '"$0" fail "$1" >&2 && exit 1; exit 0' "$T" "$work/garbage"
run_fail "a missing checkpoint is refused" 20 "cannot read the checkpoint" \
    "$LAUNCH" --mode env -n 2 -- sh -c '"$0" fail "$1" >&2 && exit 1; exit 0' "$T" "$work/none"
finish
