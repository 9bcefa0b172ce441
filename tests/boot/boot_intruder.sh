#!/bin/bash
# A foreign client hammers the store with garbage, wrong tokens, oversized, truncated and
# out-of-order messages while a 4-rank job starts (rank 0 late) and creates its communicator
# over and over: the job must succeed, and rank 0 must have logged the rejections.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

port=$(free_port)
"$BIN/boot/store_intruder" 127.0.0.1 "$port" 6 2>/dev/null &
intruder=$!
out=$("$LAUNCH" --mode env -n 4 --port "$port" --delay 0:0.5 \
      --rank-env 0:SHARC_LOG_LEVEL=warn -- "$BIN/comm/test_comm" --creates 25 2>&1)
st=$?
wait $intruder
if [ $st -ne 0 ]; then
    echo "FAIL: the job failed under a foreign client"
    echo "$out" | tail -40
    failures=$((failures + 1))
else
    echo "ok: the job succeeded under a foreign client"
fi
for why in "garbage" "wrong job token" "oversized message" "truncated message" \
           "a request before HELLO"; do
    if echo "$out" | grep -q "rejected connection from 127.0.0.1:[0-9]*: .*$why"; then
        echo "ok: rank 0 logged a rejection for: $why"
    else
        echo "FAIL: no rejection logged for: $why"
        failures=$((failures + 1))
    fi
done
finish
