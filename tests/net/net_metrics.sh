#!/bin/bash
# Metrics across nodes, scraped the way an operator's Prometheus does: 8 ranks on 4 namespace
# nodes (2 a node, the env bootstrap: shm within a node, UCX between), each serving /metrics at
# its node's address, SHARC_METRICS_PORT plus its local rank; a real Prometheus on the
# controller node scrapes the 8 at 1 s. Rank 5 (node2) takes 40 ms longer between all-reduces
# (tests/coll/test_metrics.c, SHARCTEST_METRICS_SLOW): the dashboard's straggler expression
# (tools/grafana/straggler.promql over 4 s windows), asked for a moment in the middle of the
# job, names rank 5 and its node alone; the same job without the delay, no rank. Needs root
# (SKIP otherwise) and Debian's prometheus.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between nodes)"
    exit 77
fi
if ! "$top_builddir/perf/sharc-info" -b | grep -q "^microhttpd: yes"; then
    echo "SKIP: sharc was built without libmicrohttpd (no metrics endpoint)"
    exit 77
fi
if ! command -v prometheus > /dev/null; then
    echo "SKIP: no prometheus (Debian's package; tools/install-deps.sh installs it)"
    exit 77
fi
setup_nodes 4
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-net-metrics.XXXXXX")
prom_pid=
trap '[ -n "$prom_pid" ] && kill $prom_pid 2>/dev/null; nodes_down; rm -rf "$work"' EXIT
SLOW=5
PORT=9450 # (each node its own address: nothing else listens there)
PPORT=9090

targets=
for n in 0 1 2 3; do
    a=$($NODES addr $n)
    targets="$targets${targets:+, }'$a:$PORT', '$a:$((PORT + 1))'"
done
cat > "$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sharc
    static_configs:
      - targets: [$targets]
YML
$NODE_EXEC ctl prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="0.0.0.0:$PPORT" > "$work/prometheus.log" 2>&1 &
prom_pid=$!
ctl=$($NODES addr ctl)
query() { # PROMQL [TIME]: Prometheus' JSON answer, asked on the controller node
    $NODE_EXEC ctl curl -sf "http://$ctl:$PPORT/api/v1/query" --data-urlencode "query=$1" \
        ${2:+--data-urlencode "time=$2"}
}
for _ in $(seq 1 100); do
    $NODE_EXEC ctl curl -sf "http://$ctl:$PPORT/-/ready" > /dev/null 2>&1 && break
    sleep 0.2
done
strag=$(sed 's/\[1m\]/[4s]/g' "$top_srcdir/tools/grafana/straggler.promql")
named() { # TIME: "rank@node ..." the expression names at TIME
    query "$strag" "$1" | python3 -c "
import json, sys
r = json.load(sys.stdin)['data']['result']
print(' '.join(sorted(x['metric']['rank'] + '@' + x['metric']['node'] for x in r)))"
}
job() { # DESCRIPTION ENV...: the 8-rank job, all-reducing for 12 s
    local what=$1
    shift
    run_ok_match "$what" "rank 0: metrics ok" env SHARC_METRICS_PORT=$PORT \
        SHARCTEST_METRICS_HOLD=12 SHARC_BOOTSTRAP_TIMEOUT=60s "$@" "$LAUNCH" --mode env \
        --node-exec "$NODE_EXEC" --timeout 120 -n 8 --nodes 4 -- "$BIN/coll/test_metrics"
}

t0=$(date +%s.%N)
job "8 ranks on 4 nodes, rank $SLOW slower by 40 ms a step" SHARCTEST_METRICS_SLOW=$SLOW:40
mid_slow=$(awk -v a="$t0" 'BEGIN { printf "%.3f", a + 10 }')
sleep 6
t1=$(date +%s.%N)
job "the same job, no rank slower"
mid_clean=$(awk -v a="$t1" 'BEGIN { printf "%.3f", a + 10 }')

got=$(named "$mid_slow")
if [ "$got" = "$SLOW@node2" ]; then
    echo "ok: the straggler expression names rank $SLOW on node2, and no other"
else
    echo "FAIL: the straggler expression names '$got', not '$SLOW@node2'"
    query "sum by (rank) (rate(sharc_collective_seconds_sum[4s]))" "$mid_slow"
    tail -5 "$work/prometheus.log"
    failures=$((failures + 1))
fi
got=$(named "$mid_clean")
if [ -z "$got" ]; then
    echo "ok: the straggler expression names no rank of the clean job"
else
    echo "FAIL: the straggler expression names '$got' of the clean job"
    query "sum by (rank) (rate(sharc_collective_seconds_sum[4s]))" "$mid_clean"
    failures=$((failures + 1))
fi

# a stall: every waiting rank's metrics blame rank 5, as Prometheus sees them
t2=$(date +%s.%N)
env SHARC_METRICS_PORT=$PORT SHARC_BOOTSTRAP_TIMEOUT=60s SHARC_STALL_WARN=2s \
    SHARCTEST_METRICS_LATE=$SLOW:12 "$LAUNCH" --mode env --node-exec "$NODE_EXEC" --timeout 120 \
    -n 8 --nodes 4 -- "$BIN/coll/test_metrics" > "$work/stall.out" 2>&1 &
stalljob=$!
seen=
while kill -0 $stalljob 2>/dev/null; do
    n=$(query "count(sharc_stall == 1 and on (rank, comm) sharc_stall_culprit_rank == $SLOW)" |
        python3 -c "
import json, sys
r = json.load(sys.stdin)['data']['result']
print(int(float(r[0]['value'][1])) if r else 0)" 2>/dev/null)
    if [ "${n:-0}" -ge 7 ]; then
        seen=$(awk -v a="$t2" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        break
    fi
    sleep 0.5
done
wait $stalljob
st=$?
grep -q "rank 0: metrics ok" "$work/stall.out" || st=1
if [ $st = 0 ] && [ -n "$seen" ] && awk -v s="$seen" 'BEGIN { exit !(s <= 12) }'; then
    echo "ok: Prometheus sees the 7 waiting ranks' stall blaming rank $SLOW ${seen} s after the job's start"
else
    echo "FAIL: the stall blaming rank $SLOW not seen by Prometheus on 7 ranks in 12 s ('$seen' s, job status $st)"
    query 'sharc_stall_culprit_rank'
    show_out "$(cat "$work/stall.out")"
    failures=$((failures + 1))
fi

ans=$(query 'count by (node) (last_over_time(sharc_comm_ranks[5m]))')
if python3 -c "
import json, sys
r = json.loads(sys.argv[1])['data']['result']
got = {x['metric']['node']: int(x['value'][1]) for x in r}
sys.exit(0 if got == {'node0': 2, 'node1': 2, 'node2': 2, 'node3': 2} else 1)" "$ans"; then
    echo "ok: Prometheus scraped both ranks of every node"
else
    echo "FAIL: Prometheus did not scrape both ranks of every node: $ans"
    failures=$((failures + 1))
fi
finish
