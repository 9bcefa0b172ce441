#!/bin/bash
# tools/nodes.sh itself: nodes with their own host names and addresses that reach each other
# through the bridge and nothing else; idempotent up and down; a slowed link is slow (a lower
# bound from its rate, which noise cannot break); a cut link cuts; kill empties a node; down,
# "run" (on success, failure and SIGTERM) and gc leave no namespace, state or process behind;
# the Slurm it starts runs steps on the right nodes and stops with the set. Needs root.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

NODES_SH="$top_srcdir/tools/nodes.sh"
setup_nodes 2 --rate 200mbit --slow 1:20mbit
P=$NODES_PREFIX

# leftovers PREFIX: what a set left behind (namespaces, state, processes); nothing is good
leftovers() {
    local p=$1
    ip netns list | awk '{ print $1 }' | grep -E "^$p-(n[0-9]+|ctl|sw)$" && return 1
    [ ! -e "$NODES_DIR/$p" ] || { echo "state $NODES_DIR/$p"; return 1; }
    for _ in $(seq 1 20); do # processes may take a moment to go
        pgrep -f "nodes-test-$p" > /dev/null || return 0
        sleep 0.1
    done
    pgrep -af "nodes-test-$p"
    return 1
}

# xfer FROM TO BYTES: seconds to send BYTES over TCP from node FROM to node TO
xfer() {
    local from=$1 to=$2 bytes=$3 port=5$RANDOM
    $NODES exec "$to" timeout 30 python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0
while True:
    d = c.recv(1 << 20)
    if not d: break
    n += len(d)
c.sendall(b"%d" % n)' "${port:0:5}" > "$work/srv" &
    for _ in $(seq 1 50); do grep -q ready "$work/srv" 2> /dev/null && break; sleep 0.1; done
    $NODES exec "$from" timeout 30 python3 -c '
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((host, port)); t = time.time(); buf = b"x" * 65536; left = n
while left > 0:
    s.sendall(buf[:min(left, len(buf))]); left -= min(left, len(buf))
s.shutdown(socket.SHUT_WR); got = s.recv(64)
assert int(got) == n, (got, n)
print("%.3f" % (time.time() - t))' "$($NODES host "$to")" "${port:0:5}" "$bytes"
    wait
}
# run_eq DESCRIPTION EXPECTED COMMAND...: the command's output is EXPECTED
run_eq() {
    local what=$1 want=$2 got
    shift 2
    got=$("$@" 2>&1)
    run_ok "$what" test "$got" = "$want"
    [ "$got" = "$want" ] || echo "got '$got', expected '$want'"
}
work=$(mktemp -d "${TMPDIR:-/tmp}/sharc-net-nodes.XXXXXX")
trap 'nodes_down; rm -rf "$work"' EXIT

run_eq "each node its host name, and the set's names resolve" "node0 10.77.0.2 node1 10.77.0.254 ctl" \
    $NODES exec 0 sh -c 'echo $(hostname) $(getent hosts node1) $(getent hosts ctl)'
run_eq "a node sees only its own interfaces in /sys" "eth0 lo" \
    $NODES exec 1 sh -c 'echo $(ls /sys/class/net)'
ns_id() { stat -L -c %i "/run/netns/$P-sw"; }
before=$(ns_id)
run_ok "up again with the same K keeps the set" nodes_up 2 --rate 200mbit --slow 1:20mbit
run_ok "... the same namespaces" test "$before" = "$(ns_id)"
run_ok_match "the slow node's link is shaped both ways" "tbf .*rate 20Mbit.*tbf .*rate 20Mbit" \
    sh -c "tc -n $P-n1 qdisc show dev eth0; tc -n $P-sw qdisc show dev p1"

# 3 MB into node 1 at 20 Mbit/s (2.5 MB/s, a 64 KiB bucket): at least 1.1 s, whatever the load
t=$(xfer 0 1 3000000)
run_ok "3 MB into the 20 Mbit/s node took ${t:-?} s (at least 1.1 s)" \
    awk -v t="${t:-0}" 'BEGIN { exit !(t >= 1.1) }'
run_ok "rate none lifts the limit" $NODES rate 1 none
run_ok "... no qdisc left" sh -c "! tc -n $P-n1 qdisc show dev eth0 | grep -q tbf"

run_ok "link down" $NODES link 1 down
run_fail "node 0 cannot reach node 1 over a cut link" 10 "" \
    $NODES exec 0 timeout 3 python3 -c 'import socket; socket.create_connection(("node1", 22), 2)'
run_ok "link up" $NODES link 1 up
run_ok_match "node 0 reaches node 1 again" "[0-9]" xfer 0 1 100000

$NODES exec 1 bash -c "exec -a nodes-test-$P sleep 300" &
disown
sleep 0.5
run_ok "a process runs on node 1" test -n "$($NODES pids 1)"
run_ok "kill empties node 1" sh -c "$NODES kill 1; sleep 0.5; test -z \"\$($NODES pids 1)\""

# down with a process still running on a node; then down again
$NODES exec 0 bash -c "exec -a nodes-test-$P sleep 300" &
disown
sleep 0.5
run_ok "down stops the processes and removes everything" sh -c "$NODES down; sleep 0.3"
run_ok "... nothing left" leftovers "$P"
run_ok "down again is harmless" $NODES down

# run: the set lives as long as the command, whatever way the command ends
run_eq "run: the command runs with the set up" node1 \
    "$NODES_SH" -p "${P}r" run 2 -- sh -c '"$SHARC_NODES" -p "$SHARC_NODES_PREFIX" exec 1 hostname'
run_ok "... and nothing is left" leftovers "${P}r"
run_fail "run: a failing command's status comes back" 20 "" "$NODES_SH" -p "${P}r" run 1 -- false
run_ok "... and nothing is left" leftovers "${P}r"
"$NODES_SH" -p "${P}t" run 1 -- sh -c "\"\$SHARC_NODES\" -p ${P}t exec 0 bash -c 'exec -a nodes-test-${P}t sleep 300'" &
runner=$!
for _ in $(seq 1 50); do pgrep -f "nodes-test-${P}t" > /dev/null && break; sleep 0.1; done
kill -TERM $runner
wait $runner
run_ok "run killed with SIGTERM: nothing is left" leftovers "${P}t"

# gc: a set whose owner exited without cleaning up is removed; a manual set is kept
bash -c ". '$NODES_SH'; NODES_PREFIX=${P}g; NODES_OWNER_PID=\$\$; nodes_up 1" > /dev/null
run_ok "an orphaned set exists" test -d "$NODES_DIR/${P}g"
run_ok "gc removes it" "$NODES_SH" gc
run_ok "... nothing is left" leftovers "${P}g"

# Slurm on the set: nodes named as the hosts, steps where srun says, stopped by down
if ! why=$(nodes_check --slurm); then
    echo "skipped: Slurm ($why)"
else
    run_ok "up --slurm" "$NODES_SH" -p "$P" up 2 --slurm
    run_ok_match "sinfo: node0 and node1 idle" "node0 +1 +nodes\* +idle.*node1 +1 +nodes\* +idle" \
        $NODES exec ctl env SLURM_CONF="$NODES_DIR/$P/slurm/slurm.conf" sinfo -N
    run_eq "srun -N 2 --ntasks-per-node 2 runs two tasks on each node" \
        "0 node0 0,1 node0 1,2 node1 0,3 node1 1," sh -c "$NODES srun -N 2 --ntasks-per-node 2 \
        sh -c 'echo \$SLURM_PROCID \$(hostname) \$SLURM_LOCALID' | sort | tr '\n' ,"
    slurm_gone() { ! pgrep -af "$NODES_DIR/$P/"; }
    run_ok "down stops Slurm too" $NODES down
    run_ok "... no Slurm or munge daemon of the set runs" slurm_gone
    run_ok "... nothing is left" leftovers "$P"
fi
finish
