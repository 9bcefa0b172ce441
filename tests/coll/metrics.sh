#!/bin/bash
# The metrics as an operator gets them. The text of made-up communicators is exact and lints
# clean (promtool check metrics); the dashboard's straggler expression names the slow rank of a
# synthetic job and none of a clean one (promtool test rules), and every dashboard query
# parses. Real jobs (1 to 4 ranks over shm): each rank's file and /metrics hold the counts it
# made and lint clean; node_exporter's textfile collector serves the files; a file is replaced
# whole while the job runs; bad requests to the endpoint are refused (test_metrics); a rank
# late to an all-reduce shows as a stall blaming it, then as the rank inside collectives least;
# sharc-perf's and sharc-llama's runs export too (the trainer's exposed communication agrees
# with its log); a port already taken is a clear error; and a real Prometheus, given a
# generated configuration, scrapes 4-rank jobs: it answers for every rank's series, and the
# straggler expression names the slow rank of one and no rank of the other.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes"; then
    echo "SKIP: sharc was built without UCX (no transport between ranks)"
    exit 77
fi
PROG="$BIN/coll/test_metrics"
export SHARC_TIMEOUT=60s
dir=$(mktemp -d)
prom_pid=
cleanup() {
    [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

have_http=0
"$top_builddir/perf/sharc-info" -b | grep -q "^microhttpd: yes" && have_http=1
have_promtool=0
command -v promtool >/dev/null && have_promtool=1
[ $have_promtool = 1 ] || echo "note: no promtool (Debian's prometheus): the text is not linted"

# promtool_ok DESCRIPTION FILE: promtool finds nothing to say of FILE
promtool_ok() {
    [ $have_promtool = 1 ] || return 0
    run_ok "promtool check metrics: $1" sh -c "promtool check metrics < '$2'"
}

# grep_ok DESCRIPTION FILE PATTERN: FILE has a line matching the extended regex
grep_ok() {
    if grep -Eq -- "$3" "$2"; then
        echo "ok: $1"
    else
        echo "FAIL: $1: no line of $2 matches /$3/"
        head -40 "$2"
        failures=$((failures + 1))
    fi
}

# a port where nobody listens, nor on the next 3 (a rank serves the base plus its local rank)
free_ports() {
    local p
    for _ in $(seq 1 50); do
        p=$(free_port)
        if ! ss -Htln "( sport >= :$p and sport <= :$((p + 3)) )" 2>/dev/null | grep -q .; then
            echo "$p"; return
        fi
    done
    free_port
}

# the exposition of made-up communicators: exact samples (the program), and promtool's lint
run_ok "the text of made-up communicators" "$BIN/coll/test_metrics_text"
"$BIN/coll/test_metrics_text" print > "$dir/made_up.prom"
promtool_ok "made-up communicators" "$dir/made_up.prom"

# the dashboard's straggler expression (tools/grafana/straggler.promql), under promtool's rule
# tests: of 4 ranks, the one whose time inside collectives is a tenth of the others' is named,
# and only it; a job whose ranks differ by 20% names none, nor a quiet job (its ranks inside
# collectives 0.1% of the time) where one rank is inside them a tenth as long
if [ $have_promtool = 1 ]; then
    {
        echo "groups:"
        echo "  - name: sharc"
        echo "    rules:"
        echo "      - alert: SharcStraggler"
        echo "        expr: |"
        sed 's/^/          /' "$top_srcdir/tools/grafana/straggler.promql"
    } > "$dir/rules.yml"
    series() { # JOB RANK NODE PER_15S
        echo "      - series: 'sharc_collective_seconds_sum{job=\"$1\",rank=\"$2\",node=\"$3\",comm=\"w0\",transport=\"shm\",collective=\"allreduce\",size_class=\"1MiB\"}'"
        echo "        values: '0+${4}x40'"
    }
    {
        echo "rule_files: [rules.yml]"
        echo "evaluation_interval: 15s"
        echo "tests:"
        echo "  - interval: 15s"
        echo "    input_series:"
        series slow 0 a 6; series slow 1 a 6; series slow 2 b 0.6; series slow 3 b 6
        series clean 0 a 6; series clean 1 a 5; series clean 2 b 6; series clean 3 b 4.8
        series quiet 0 a 0.015; series quiet 1 a 0.015; series quiet 2 b 0.0015
        series quiet 3 b 0.015
        echo "    alert_rule_test:"
        echo "      - eval_time: 5m"
        echo "        alertname: SharcStraggler"
        echo "        exp_alerts:"
        echo "          - exp_labels: {job: slow, rank: \"2\", node: b}"
    } > "$dir/rules_test.yml"
    run_ok "the straggler expression names the slow rank, and none of a clean job" \
        promtool test rules "$dir/rules_test.yml"
    # every query of the dashboard parses (as a recording rule; its variables given values)
    if python3 - "$top_srcdir/tools/grafana/sharc-dashboard.json" "$dir/dash_rules.yml" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
assert len(exprs) >= 10, len(exprs)
with open(sys.argv[2], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "1m").replace("$job", ".*").replace("$comm", ".*")
        f.write("      - record: sharc:dashboard_%d\n        expr: %s\n" % (i, json.dumps(e)))
PY
    then
        run_ok "every query of the Grafana dashboard parses" promtool check rules \
            "$dir/dash_rules.yml"
    else
        echo "FAIL: the Grafana dashboard is not JSON with its queries"
        failures=$((failures + 1))
    fi
fi

# SHARC_METRICS_FILE: one file a rank (%r), the final figures after the job
for n in 1 3; do
    rm -f "$dir"/file.*
    run_ok_match "metrics files of a $n-rank job" "metrics ok" env \
        SHARC_METRICS_FILE="$dir/file.r%r.prom" SHARC_METRICS_INTERVAL=100ms \
        "$LAUNCH" --mode env -n $n -- "$PROG"
    for r in $(seq 0 $((n - 1))); do
        f="$dir/file.r$r.prom"
        if [ ! -s "$f" ]; then
            echo "FAIL: rank $r of $n wrote no $f"
            failures=$((failures + 1))
            continue
        fi
        promtool_ok "rank $r of $n's file" "$f"
        grep_ok "rank $r of $n's file counts its 5 all-reduces" "$f" \
            "^sharc_collective_seconds_count\{rank=\"$r\",local_rank=\"$r\",node=\"[^\"]+\",comm=\"[^\"]+\",transport=\"[a-z]+\",collective=\"allreduce\",size_class=\"4KiB\"\} 5$"
        grep_ok "rank $r of $n's file has its all-gathers' bytes" "$f" \
            "^sharc_collective_bytes_total\{rank=\"$r\",.*collective=\"allgather\".*\} $((3 * 4096 * 4 * n))$"
    done
    if ls "$dir"/file.*.tmp.* >/dev/null 2>&1; then
        echo "FAIL: files written aside were left behind: $(ls "$dir")"
        failures=$((failures + 1))
    fi
done

# node_exporter's textfile collector reads the files of a 2-rank job (one a local rank)
if command -v prometheus-node-exporter >/dev/null; then
    mkdir -p "$dir/textfile"
    run_ok_match "metrics files of a 2-rank job into a textfile directory" "metrics ok" env \
        SHARC_METRICS_FILE="$dir/textfile/sharc.%l.prom" "$LAUNCH" --mode env -n 2 -- "$PROG"
    np=$(free_ports)
    prometheus-node-exporter --collector.disable-defaults --collector.textfile \
        --collector.textfile.directory="$dir/textfile" --web.listen-address="127.0.0.1:$np" \
        > "$dir/node_exporter.log" 2>&1 &
    ne=$!
    body=
    for _ in $(seq 1 50); do
        body=$(curl -sf "http://127.0.0.1:$np/metrics" 2>/dev/null) && break
        sleep 0.1
    done
    kill $ne 2>/dev/null
    wait $ne 2>/dev/null
    if echo "$body" | grep -Eq '^sharc_collective_seconds_count\{.*collective="allreduce".*rank="0".*\} 5$' &&
       echo "$body" | grep -Eq '^sharc_collective_seconds_count\{.*collective="allreduce".*rank="1".*\} 5$' &&
       echo "$body" | grep -Eq '^node_textfile_scrape_error 0$'; then
        echo "ok: node_exporter serves both ranks' series from the textfile directory"
    else
        echo "FAIL: node_exporter does not serve both ranks' series from the files"
        echo "$body" | grep -E "sharc_collective_seconds_count|textfile" | head -10
        tail -5 "$dir/node_exporter.log"
        failures=$((failures + 1))
    fi
else
    echo "note: no prometheus-node-exporter: the textfile collector is not tried"
fi

# the file is rewritten while the job runs (node_exporter reads it then)
rm -f "$dir"/live.*
SHARC_METRICS_FILE="$dir/live.r%r.prom" SHARC_METRICS_INTERVAL=200ms SHARCTEST_METRICS_HOLD=3 \
    "$LAUNCH" --mode env -n 2 -- "$PROG" > "$dir/live.out" 2>&1 &
job=$!
sleep 2
c1=$(grep -E '^sharc_collective_seconds_count\{rank="0".*collective="allreduce"' \
    "$dir/live.r0.prom" 2>/dev/null | awk '{ print $NF }')
sleep 0.6
c2=$(grep -E '^sharc_collective_seconds_count\{rank="0".*collective="allreduce"' \
    "$dir/live.r0.prom" 2>/dev/null | awk '{ print $NF }')
if wait $job && [ -n "$c1" ] && [ -n "$c2" ] && [ "$c2" -gt "$c1" ]; then
    echo "ok: the file is rewritten as the job runs ($c1, then $c2 all-reduces)"
else
    echo "FAIL: the file is not rewritten as the job runs ('$c1', then '$c2')"
    cat "$dir/live.out"
    failures=$((failures + 1))
fi

if [ $have_http = 0 ]; then
    run_fail "SHARC_METRICS_PORT without libmicrohttpd is refused" 60 \
        "built without libmicrohttpd" env SHARC_METRICS_PORT=$(free_ports) \
        "$LAUNCH" --mode env -n 1 -- "$PROG"
    finish
fi

# HTTP: each rank scrapes its own endpoint; rank 0 sends it bad requests
for n in 1 3; do
    p=$(free_ports)
    rm -f "$dir"/scrape.*
    run_ok_match "/metrics of a $n-rank job, bad requests refused" "metrics ok" env \
        SHARC_METRICS_PORT=$p SHARCTEST_METRICS_PORT=$p SHARCTEST_METRICS_OUT="$dir" \
        "$LAUNCH" --mode env -n $n -- "$PROG"
    for r in $(seq 0 $((n - 1))); do
        if [ -s "$dir/scrape.r$r.prom" ]; then
            promtool_ok "rank $r of $n's scrape" "$dir/scrape.r$r.prom"
        else
            echo "FAIL: rank $r of $n saved no scrape"
            failures=$((failures + 1))
        fi
    done
done

# a rank 6 s late to an all-reduce: while the others wait, rank 0's endpoint shows the stall
# and blames rank 2 within SHARC_STALL_WARN and the verdict's round (about 4 s); afterwards
# the files show the straggler, the late rank, inside the all-reduces ~6 s less than the others
p=$(free_ports)
rm -f "$dir"/late.* "$dir/polls"
SHARC_METRICS_PORT=$p SHARC_METRICS_FILE="$dir/late.r%r.prom" SHARC_STALL_WARN=1s \
    SHARCTEST_METRICS_LATE=2:6 "$LAUNCH" --mode env -n 3 -- "$PROG" > "$dir/late.out" 2>&1 &
job=$!
t0=$(date +%s.%N)
seen=
while kill -0 $job 2>/dev/null; do
    body=$(curl -sf --max-time 1 "http://127.0.0.1:$p/metrics" 2>/dev/null)
    if echo "$body" | grep -Eq '^sharc_stall\{rank="0".*\} 1$' &&
       echo "$body" | grep -Eq '^sharc_stall_culprit_rank\{rank="0".*\} 2$'; then
        seen=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        break
    fi
    sleep 0.25
done
if wait $job && [ -n "$seen" ] && awk -v s="$seen" 'BEGIN { exit !(s < 6) }'; then
    echo "ok: a stall and its culprit, rank 2, are in rank 0's metrics ${seen} s after the start"
else
    echo "FAIL: a stall and its culprit (rank 2) not seen in rank 0's metrics in time ('$seen' s)"
    tail -20 "$dir/late.out"
    failures=$((failures + 1))
fi
sums=$(for r in 0 1 2; do
    grep -E "^sharc_collective_seconds_sum\{rank=\"$r\",.*collective=\"allreduce\"" \
        "$dir/late.r$r.prom" | awk '{ print $NF }'
done | tr '\n' ' ')
if python3 -c "
import sys
s = [float(x) for x in sys.argv[1].split()]
sys.exit(0 if len(s) == 3 and s[2] < 1 and min(s[0], s[1]) > 5 else 1)" "$sums"; then
    echo "ok: the late rank spent the least time inside the all-reduces (s: $sums)"
else
    echo "FAIL: the late rank is not the one inside the all-reduces least (s: $sums)"
    failures=$((failures + 1))
fi

# the tools export through it as any program does: sharc-perf's all-reduces and sharc-llama's
# gathers and reductions of a 2-rank run are in both ranks' files, which promtool passes
rm -f "$dir"/perf.* "$dir"/llama.*
run_ok "sharc-perf allreduce, 2 ranks, with SHARC_METRICS_FILE" env \
    SHARC_METRICS_FILE="$dir/perf.r%r.prom" "$LAUNCH" --mode env -n 2 -- \
    "$top_builddir/perf/sharc-perf" allreduce -b 4K -e 4K -n 50 -w 5
for r in 0 1; do
    promtool_ok "sharc-perf's rank $r" "$dir/perf.r$r.prom"
    n=$(grep -E "^sharc_collective_seconds_count\{rank=\"$r\",.*collective=\"allreduce\",size_class=\"4KiB\"\}" \
        "$dir/perf.r$r.prom" | awk '{ print $NF }')
    if [ -n "$n" ] && [ "$n" -ge 110 ]; then
        echo "ok: sharc-perf's rank $r counted its $n all-reduces (110 timed and warm-up)"
    else
        echo "FAIL: sharc-perf's rank $r counted '$n' all-reduces, not 110 or more"
        failures=$((failures + 1))
    fi
done
LLAMA="$top_builddir/trainer/sharc-llama"
if [ -x "$LLAMA" ]; then
    mkdir -p "$dir/data"
    make_tokens "$dir/data/train.bin" 20000 512 512
    make_tokens "$dir/data/val.bin" 3000 512 512
    run_ok "sharc-llama, 2 ranks, 5 steps, with SHARC_METRICS_FILE" env \
        SHARC_METRICS_FILE="$dir/llama.r%r.prom" "$LAUNCH" --mode env -n 2 -- "$LLAMA" train \
        --config tiny --data "$dir/data" --seq 32 --steps 5 --warmup 1 --threads 1 \
        --val-every 0 --batch 2 --log "$dir/llama.jsonl"
    for r in 0 1; do
        grep_ok "sharc-llama's rank $r: its sharding group's 5 steps" "$dir/llama.r$r.prom" \
            "^sharc_shard_steps_total\{rank=\"$r\",.*\} 5$"
        promtool_ok "sharc-llama's rank $r" "$dir/llama.r$r.prom"
        for c in allgather reduce_scatter; do
            grep_ok "sharc-llama's rank $r counted its ${c}s" "$dir/llama.r$r.prom" \
                "^sharc_collective_seconds_count\{rank=\"$r\",.*collective=\"$c\".*\} [1-9][0-9]*$"
        done
    done
    # the exposed communication rank 0's metrics give is the sum of its log's, within 5%
    exposed=$(grep -E '^sharc_shard_exposed_comm_seconds_total\{rank="0",' "$dir/llama.r0.prom" |
        awk '{ print $NF }')
    if python3 -c "
import json, sys
log = sum(json.loads(l)['comm_exposed_s'] for l in open(sys.argv[1]) if '\"event\":\"step\"' in l)
m = float(sys.argv[2])
print('metrics %.6f s, log %.6f s' % (m, log))
sys.exit(0 if abs(m - log) <= 0.05 * log + 1e-6 else 1)" "$dir/llama.jsonl" "${exposed:-nan}"; then
        echo "ok: sharc-llama's exposed communication agrees with its log"
    else
        echo "FAIL: sharc-llama's exposed communication in the metrics ('$exposed') is not its log's"
        failures=$((failures + 1))
    fi
fi

# one file for the ranks of a node is refused at the start, naming the fix
run_fail "SHARC_METRICS_FILE without %r or %l on a node of 2 ranks is refused" 60 \
    "names one file for the 2 ranks of this node.*put %l" env \
    SHARC_METRICS_FILE="$dir/one.prom" "$LAUNCH" --mode env -n 2 -- "$PROG"

# a port already taken is said at the start, and the communicator is not made
p=$(free_ports)
python3 -c "
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $p)); s.listen(1); print('listening', flush=True); time.sleep(60)" \
    > "$dir/holder.out" 2>&1 &
holder=$!
for _ in $(seq 1 50); do grep -q listening "$dir/holder.out" && break; sleep 0.1; done
run_fail "a metrics port already taken fails the communicator's creation, naming the port" 60 \
    "port $p on every address is taken" env SHARC_METRICS_PORT=$p \
    "$LAUNCH" --mode env -n 1 -- "$PROG"
kill $holder 2>/dev/null
wait $holder 2>/dev/null

# a real Prometheus scrapes 4-rank jobs at 1 s: its HTTP API answers for every rank's series,
# and the dashboard's straggler expression, asked for a moment in the middle of each job (over
# 4 s), names rank 2 of a job where rank 2 takes 40 ms longer between all-reduces, and no rank
# of the same job without it
if ! command -v prometheus >/dev/null; then
    echo "note: no prometheus (Debian's package): the scrape by a real one is not tried"
    finish
fi
p=$(free_ports)
pp=$(free_ports)
cat > "$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sharc
    static_configs:
      - targets: ['127.0.0.1:$p', '127.0.0.1:$((p + 1))', '127.0.0.1:$((p + 2))', '127.0.0.1:$((p + 3))']
YML
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$pp" > "$dir/prometheus.log" 2>&1 &
prom_pid=$!
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$pp/-/ready" >/dev/null 2>&1 && break
    sleep 0.2
done
# query PROMQL [TIME]: Prometheus' JSON answer
query() {
    curl -sf "http://127.0.0.1:$pp/api/v1/query" --data-urlencode "query=$1" \
        ${2:+--data-urlencode "time=$2"}
}
# the straggler expression over 4 s windows (the job is short)
strag=$(sed 's/\[1m\]/[4s]/g' "$top_srcdir/tools/grafana/straggler.promql")
# named TIME: the ranks the straggler expression names at TIME, sorted, space-separated
named() {
    query "$strag" "$1" | python3 -c "
import json, sys
r = json.load(sys.stdin)['data']['result']
print(' '.join(sorted(x['metric']['rank'] for x in r)))"
}
t0=$(date +%s.%N)
run_ok_match "a 4-rank job, rank 2 slower by 40 ms a step, scraped by Prometheus for 10 s" \
    "metrics ok" env SHARC_METRICS_PORT=$p SHARCTEST_METRICS_HOLD=10 SHARCTEST_METRICS_SLOW=2:40 \
    "$LAUNCH" --mode env -n 4 -- "$PROG"
mid_slow=$(awk -v a="$t0" 'BEGIN { printf "%.3f", a + 8 }')
sleep 6 # (the clean job's 4 s windows see none of the slow one's samples)
t1=$(date +%s.%N)
run_ok_match "the same job, no rank slower, scraped by Prometheus for 10 s" "metrics ok" env \
    SHARC_METRICS_PORT=$p SHARCTEST_METRICS_HOLD=10 "$LAUNCH" --mode env -n 4 -- "$PROG"
mid_clean=$(awk -v a="$t1" 'BEGIN { printf "%.3f", a + 8 }')
got=$(named "$mid_slow")
if [ "$got" = "2" ]; then
    echo "ok: the straggler expression names rank 2, and only it, of the job where it is slow"
else
    echo "FAIL: the straggler expression names '$got' of the job where rank 2 is slow, not '2'"
    query "sum by (rank) (rate(sharc_collective_seconds_sum[4s]))" "$mid_slow"
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
# every rank's series, and how many all-reduces Prometheus saw last of each rank
ans=$(query 'max by (rank) (last_over_time(sharc_collective_seconds_count{collective="allreduce",size_class="4KiB"}[5m]))')
if python3 -c "
import json, sys
r = json.loads(sys.argv[1])['data']['result']
ranks = sorted(int(x['metric']['rank']) for x in r)
vals = [float(x['value'][1]) for x in r]
sys.exit(0 if ranks == [0, 1, 2, 3] and min(vals) >= 5 else 1)" "$ans" 2>/dev/null; then
    echo "ok: Prometheus has every rank's all-reduce counts"
else
    echo "FAIL: Prometheus's answer lacks a rank's all-reduce counts: $ans"
    tail -20 "$dir/prometheus.log"
    failures=$((failures + 1))
fi
for fam in sharc_collective_seconds_bucket sharc_collective_bytes_total sharc_comm_ranks \
    sharc_collectives_in_flight sharc_collective_oldest_seconds sharc_stall \
    sharc_stall_culprit_rank sharc_comm_failed sharc_peer_lost_rank; do
    ans=$(query "count(count_over_time(${fam}[5m])) by (rank)")
    if python3 -c "
import json, sys
r = json.loads(sys.argv[1])['data']['result']
sys.exit(0 if sorted(x['metric']['rank'] for x in r) == ['0', '1', '2', '3'] else 1)" "$ans" 2>/dev/null
    then
        echo "ok: Prometheus has $fam of every rank"
    else
        echo "FAIL: Prometheus lacks $fam of a rank: $ans"
        failures=$((failures + 1))
    fi
done
finish
