#!/bin/bash
# nodes.sh: K "nodes" on one machine, for multi-node tests and benchmarks. A node is a network
# namespace with its own address on a private bridge; every command run on it also gets a UTS
# namespace (the node's host name) and a mount namespace (an /etc/hosts naming every node, the
# /sys of its network namespace). Links can be rate-limited with tc tbf, cut and restored, and
# a real Slurm (munged, slurmctld, one slurmd per node) can run on the nodes. Needs root.
# Not containers: the nodes share the file system, /dev/shm and the process table.
#
#   nodes.sh [-p PREFIX] up K [--rate RATE] [--slow NODE:RATE]... [--slurm] [--cpus N]
#   nodes.sh [-p PREFIX] run K [up options] -- COMMAND...   up, COMMAND, down (on any exit)
#   nodes.sh [-p PREFIX] down
#   nodes.sh [-p PREFIX] exec NODE [--] COMMAND...          NODE: 0..K-1, or ctl
#   nodes.sh [-p PREFIX] srun ARGS...                       srun on ctl (needs --slurm)
#   nodes.sh [-p PREFIX] rsh HOST COMMAND...                 ssh's stand-in (mpirun's agent)
#   nodes.sh [-p PREFIX] rate NODE RATE|none                 e.g. 1gbit, 100mbit, 50MBps
#   nodes.sh [-p PREFIX] link NODE up|down                   cut or restore the node's link
#   nodes.sh [-p PREFIX] kill NODE [SIGNAL [NAME]]           the node's processes (named NAME)
#   nodes.sh [-p PREFIX] host|addr|bytes|pids NODE           name, IPv4, "tx rx" bytes, pids
#   nodes.sh [-p PREFIX] count                               K
#   nodes.sh [-p PREFIX] status
#   nodes.sh list | gc | check [--slurm]
#
# PREFIX (default $SHARC_NODES_PREFIX, else "sharc") names everything of one set: namespaces
# PREFIX-n0.., PREFIX-ctl (the login/controller node) and PREFIX-sw (the switch: the bridge,
# one port per node), and the state directory $SHARC_NODES_DIR/PREFIX (default
# /run/sharc-nodes). Sets with different prefixes never touch each other; within a set, nodes
# are node0..node{K-1} at 10.77.0.1.. and ctl at 10.77.0.254 (only inside the set's
# namespaces). "run" and scripts that source this file and call nodes_up tear the set down on
# exit, error and signals; "gc" removes sets whose owner process is gone.
#
# Sourced (". tools/nodes.sh"), it defines the nodes_* functions and runs nothing.

# SPDX-License-Identifier: BSD-3-Clause
NODES_DIR=${SHARC_NODES_DIR:-/run/sharc-nodes}
NODES_PREFIX=${SHARC_NODES_PREFIX:-sharc}
NODES_SUBNET=10.77.0
NODES_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

nodes_err() { echo "nodes.sh: $*" >&2; }
nodes_state() { echo "$NODES_DIR/$NODES_PREFIX"; }
nodes_ns() { # nodes_ns NODE: the network namespace of node NODE (index, ctl or sw)
    case "$1" in
        ctl | sw) echo "$NODES_PREFIX-$1" ;;
        *) echo "$NODES_PREFIX-n$1" ;;
    esac
}
nodes_host() { case "$1" in ctl) echo ctl ;; *) echo "node$1" ;; esac; }
nodes_addr() { case "$1" in ctl) echo "$NODES_SUBNET.254" ;; *) echo "$NODES_SUBNET.$(($1 + 1))" ;; esac; }
nodes_count() { # the set's K, or nothing when it is not up
    local s
    s=$(nodes_state)
    [ -f "$s/k" ] && cat "$s/k"
}
nodes_valid_node() {
    local k
    k=$(nodes_count)
    [ -n "$k" ] || { nodes_err "set '$NODES_PREFIX' is not up"; return 1; }
    case "$1" in
        ctl) return 0 ;;
        '' | *[!0-9]*) ;;
        *) [ "$1" -lt "$k" ] && return 0 ;;
    esac
    nodes_err "no node '$1' in set '$NODES_PREFIX' (nodes 0..$((k - 1)), ctl)"
    return 1
}

# The owner of a set: "pid starttime" of the process whose exit ends it, or "manual".
nodes_proc_id() { awk '{ print $22 }' "/proc/$1/stat" 2>/dev/null | sed "s/^/$1 /"; }
nodes_owner_alive() { # nodes_owner_alive STATE_DIR
    local owner pid
    owner=$(cat "$1/owner" 2>/dev/null) || return 1
    [ "$owner" = manual ] && return 0
    pid=${owner%% *}
    [ "$(nodes_proc_id "$pid")" = "$owner" ]
}

# nodes_check [--slurm]: can sets be made here? Prints why not and returns 1.
nodes_check() {
    local tool probe="sharc-probe-$$"
    [ "$(id -u)" -eq 0 ] || { echo "namespace nodes need root"; return 1; }
    for tool in ip tc nsenter unshare; do
        command -v $tool > /dev/null || { echo "$tool is not installed"; return 1; }
    done
    if ! ip netns add "$probe" 2> /dev/null; then
        echo "'ip netns add' is refused here (no network namespaces)"
        return 1
    fi
    if ! nsenter --net="/run/netns/$probe" -- unshare --mount --uts -- sh -c \
        'hostname probe && umount -l /sys && mount -t sysfs sysfs /sys' 2> /dev/null; then
        ip netns del "$probe"
        echo "mount and UTS namespaces are refused here"
        return 1
    fi
    if ! ip -n "$probe" link add vprobe0 type veth peer name vprobe1 2> /dev/null; then
        ip netns del "$probe"
        echo "veth pairs are refused here"
        return 1
    fi
    ip netns del "$probe"
    if [ "${1:-}" = --slurm ]; then
        for tool in slurmctld slurmd srun sinfo scontrol munged; do
            command -v $tool > /dev/null || [ -x "/usr/sbin/$tool" ] ||
                { echo "$tool is not installed (tools/install-deps.sh: slurm-wlm, munge)"; return 1; }
        done
    fi
    return 0
}

# nodes_exec NODE COMMAND...: run COMMAND on the node (in the foreground; the caller may put
# it in the background). The environment passes through. /sys/fs/cgroup shows the machine's
# cgroups, or with NODES_CGROUP=empty an empty tmpfs (Slurm's daemons: see nodes_slurm_up).
nodes_exec() {
    local node=$1 s
    shift
    [ "${1:-}" = -- ] && shift
    nodes_valid_node "$node" || return 2
    s=$(nodes_state)
    ${NODES_EXEC_REPLACE:+exec} nsenter --net="/run/netns/$(nodes_ns "$node")" -- unshare --mount --uts -- /bin/sh -c '
        hostname "$1" && mount --bind "$2" /etc/hosts || exit 125
        [ ! -e /etc/hostname ] || mount --bind "$3" /etc/hostname || exit 125
        cg=""
        if [ "$5" = host ] && mountpoint -q /sys/fs/cgroup; then
            cg=$4 && mount --rbind /sys/fs/cgroup "$cg" || exit 125
        fi
        umount -l /sys 2> /dev/null; mount -t sysfs -o ro sysfs /sys || exit 125
        if [ -n "$cg" ]; then
            mount --move "$cg" /sys/fs/cgroup || exit 125
        elif [ "$5" = empty ]; then
            mount -t tmpfs -o size=4k,mode=755 cgroup /sys/fs/cgroup || exit 125
        fi
        shift 5; exec "$@"' nodes-exec "$(nodes_host "$node")" "$s/hosts" "$s/hostname.$node" \
        "$s/cgroup" "${NODES_CGROUP:-host}" "$@"
}

# Rates: "1gbit", "100mbit", "50mbps" (bytes), as tc reads them. The bucket holds 10 ms of
# traffic (at least 64 KiB: veth hands tbf GSO packets of up to 64 KiB).
nodes_rate_bytes() {
    echo "$1" | awk '{
        if (!match(tolower($0), /^[0-9.]+/)) exit 1
        v = substr($0, 1, RLENGTH); u = tolower(substr($0, RLENGTH + 1))
        m["bit"] = 1/8; m["kbit"] = 1e3/8; m["mbit"] = 1e6/8; m["gbit"] = 1e9/8; m["tbit"] = 1e12/8
        m["bps"] = 1; m["kbps"] = 1e3; m["mbps"] = 1e6; m["gbps"] = 1e9
        if (!(u in m) || v <= 0) exit 1
        printf "%.0f\n", v * m[u] }'
}
nodes_set_rate() { # nodes_set_rate NODE RATE|none: both directions of the node's link
    local node=$1 rate=$2 bytes burst ns sw
    nodes_valid_node "$node" || return 2
    [ "$node" != ctl ] || { nodes_err "ctl's link is not shaped"; return 2; }
    ns=$(nodes_ns "$node"); sw=$(nodes_ns sw)
    if [ "$rate" = none ]; then
        tc -n "$ns" qdisc del dev eth0 root 2> /dev/null
        tc -n "$sw" qdisc del dev "p$node" root 2> /dev/null
        rm -f "$(nodes_state)/rate.$node"
        return 0
    fi
    bytes=$(nodes_rate_bytes "$rate") || { nodes_err "'$rate' is not a rate (1gbit, 100mbit, 50mbps)"; return 2; }
    burst=$((bytes / 100 > 65536 ? bytes / 100 : 65536))
    tc -n "$ns" qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms &&
        tc -n "$sw" qdisc replace dev "p$node" root tbf rate "$rate" burst "$burst" latency 50ms ||
        return 1
    echo "$rate" > "$(nodes_state)/rate.$node"
}

nodes_link() { # nodes_link NODE up|down: the switch's port to the node (the node loses carrier)
    local t i
    nodes_valid_node "$1" || return 2
    case "$2" in
        down) ip -n "$(nodes_ns sw)" link set "p$1" down ;;
        up)
            ip -n "$(nodes_ns sw)" link set "p$1" up || return 1
            # back when the node's end has its carrier again and no node keeps a neighbour
            # entry that failed while the link was down (a connection right after would be
            # refused "no route to host")
            for ((t = 0; t < 100; t++)); do
                ip -n "$(nodes_ns "$1")" -o link show eth0 | grep -q LOWER_UP && break
                sleep 0.05
            done
            for i in ctl $(seq 0 $(($(nodes_count) - 1))); do
                ip -n "$(nodes_ns "$i")" neigh flush all 2> /dev/null
            done
            return 0
            ;;
        *) nodes_err "link $1: say up or down"; return 2 ;;
    esac
}

nodes_pids() { ip netns pids "$(nodes_ns "$1")" 2> /dev/null; }
# nodes_kill NODE [SIGNAL [NAME]]: every process of the node (a node that dies), or those
# whose command name is NAME (a job's processes, leaving the node's Slurm daemons)
nodes_kill() {
    local pids="" p
    nodes_valid_node "$1" || return 2
    for p in $(nodes_pids "$1"); do
        if [ -z "${3:-}" ] || [ "$(cat "/proc/$p/comm" 2> /dev/null)" = "$3" ]; then
            pids="$pids $p"
        fi
    done
    [ -z "${pids// /}" ] || kill -s "${2:-KILL}" $pids 2> /dev/null
    return 0
}
nodes_bytes() { # nodes_bytes NODE: "TX RX" bytes of the node's interface
    nodes_valid_node "$1" || return 2
    ip -n "$(nodes_ns "$1")" -s link show eth0 | awk '
        /RX:/ { getline; rx = $1 } /TX:/ { getline; tx = $1 } END { print tx, rx }'
}

# nodes_down: stops every process in the set's namespaces, deletes them and the state.
# Idempotent; removes only this prefix's set.
nodes_down() {
    local s ns pids i sig
    s=$(nodes_state)
    local all
    all=$(ip netns list 2> /dev/null | awk '{ print $1 }' | grep -E "^$NODES_PREFIX-(n[0-9]+|ctl|sw)$" || true)
    for sig in TERM KILL; do
        pids=""
        for ns in $all; do pids="$pids $(ip netns pids "$ns" 2> /dev/null)"; done
        [ -n "${pids// /}" ] || break
        kill -s $sig $pids 2> /dev/null
        for i in $(seq 1 20); do # up to 2 s for them to go
            pids=""
            for ns in $all; do pids="$pids $(ip netns pids "$ns" 2> /dev/null)"; done
            [ -n "${pids// /}" ] || break
            sleep 0.1
        done
    done
    for ns in $all; do ip netns del "$ns" 2> /dev/null; done
    rm -rf "$s"
    return 0
}

# nodes_up K [--rate RATE] [--slow NODE:RATE]... [--slurm] [--cpus N]: makes the set (again,
# from scratch, unless the same K is up already). When sourced, the caller's exit ends it.
nodes_up() {
    local k=${1:-} rate="" slurm=0 cpus=4 s i ns sw
    local -a slow=()
    shift || true
    case "$k" in '' | *[!0-9]*) nodes_err "up: K, the number of nodes, is missing"; return 2 ;; esac
    [ "$k" -ge 1 ] && [ "$k" -le 200 ] || { nodes_err "up: K must be 1..200"; return 2; }
    while [ $# -gt 0 ]; do
        case "$1" in
            --rate) rate=$2; shift 2 ;;
            --slow) slow+=("$2"); shift 2 ;;
            --slurm) slurm=1; shift ;;
            --cpus) cpus=$2; shift 2 ;;
            *) nodes_err "up: unknown option $1"; return 2 ;;
        esac
    done
    case "$NODES_PREFIX" in
        '' | *[!A-Za-z0-9_]*) nodes_err "prefix '$NODES_PREFIX': letters, digits and _ only"; return 2 ;;
    esac
    [ ${#NODES_PREFIX} -le 24 ] || { nodes_err "prefix '$NODES_PREFIX' is over 24 characters"; return 2; }
    s=$(nodes_state)
    if [ "$(nodes_count)" = "$k" ] && [ -f "$s/complete" ] && ip netns list | grep -q "^$(nodes_ns sw)\b"; then
        :   # already up: only rates and Slurm below
    else
        nodes_down
        mkdir -p "$s" && chmod 755 "$s" || return 1
        if [ -n "${NODES_OWNER_PID:-}" ]; then
            nodes_proc_id "$NODES_OWNER_PID" > "$s/owner"
        else
            echo manual > "$s/owner"
        fi
        echo "$k" > "$s/k"
        {
            echo "127.0.0.1 localhost"
            echo "$(nodes_addr ctl) $(nodes_host ctl)"
            for ((i = 0; i < k; i++)); do echo "$(nodes_addr $i) $(nodes_host $i)"; done
        } > "$s/hosts"
        for i in ctl $(seq 0 $((k - 1))); do nodes_host "$i" > "$s/hostname.$i"; done
        mkdir -p "$s/cgroup"
        sw=$(nodes_ns sw)
        ip netns add "$sw" || { nodes_down; return 1; }
        ip -n "$sw" link set lo up
        ip -n "$sw" link add br0 type bridge &&
            ip -n "$sw" link set br0 up || { nodes_down; return 1; }
        # bridged frames skip iptables (br_netfilter, where loaded, is per namespace)
        ip netns exec "$sw" sh -c 'for f in /proc/sys/net/bridge/bridge-nf-call-*; do
            [ -w "$f" ] && echo 0 > "$f"; done; true'
        for i in ctl $(seq 0 $((k - 1))); do
            ns=$(nodes_ns "$i")
            local port="p$i"
            ip netns add "$ns" &&
                ip -n "$ns" link set lo up &&
                ip -n "$ns" link add eth0 type veth peer name "$port" netns "$sw" &&
                ip -n "$sw" link set "$port" master br0 &&
                ip -n "$sw" link set "$port" up &&
                ip -n "$ns" addr add "$(nodes_addr "$i")/24" dev eth0 &&
                ip -n "$ns" link set eth0 up || { nodes_err "up: cannot make node $i"; nodes_down; return 1; }
            ip netns exec "$ns" sh -c 'for f in /proc/sys/net/ipv6/conf/*/disable_ipv6; do
                echo 1 > "$f"; done 2> /dev/null; true'
        done
        touch "$s/complete"
    fi
    for ((i = 0; i < k; i++)); do
        if [ -n "$rate" ]; then
            nodes_set_rate "$i" "$rate" || return 1
        fi
    done
    for i in "${slow[@]}"; do
        nodes_set_rate "${i%%:*}" "${i#*:}" || return 1
    done
    if [ $slurm = 1 ]; then
        nodes_slurm_up "$cpus" || return 1
    fi
    return 0
}

# ---- Slurm: munged and slurmctld on ctl, a slurmd per node; everything in the state dir ----
nodes_slurm_conf() {
    local s=$1 k=$2 cpus=$3 i
    cat << EOF
# generated by nodes.sh for set $NODES_PREFIX
ClusterName=sharc
SlurmctldHost=ctl($(nodes_addr ctl))
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
AuthInfo=socket=$s/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$s/slurm/ctld
SlurmdSpoolDir=$s/slurm/%n
SlurmctldPidFile=$s/slurm/slurmctld.pid
SlurmdPidFile=$s/slurm/%n/slurmd.pid
SlurmctldLogFile=$s/slurm/slurmctld.log
SlurmdLogFile=$s/slurm/%n/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# no cgroups needed: processes tracked through /proc, tasks not bound
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# the configured CPUs count, whatever the machine has (tasks may oversubscribe its cores)
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
EOF
    for ((i = 0; i < k; i++)); do
        echo "NodeName=$(nodes_host $i) NodeAddr=$(nodes_addr $i) CPUs=$cpus State=UNKNOWN"
    done
    echo "PartitionName=nodes Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
}

nodes_slurm_up() {
    local cpus=${1:-4} s k conf i t
    s=$(nodes_state); k=$(nodes_count)
    conf=$s/slurm/slurm.conf
    export SLURM_CONF=$conf
    if [ -f "$s/slurm/up" ] && nodes_exec ctl timeout 10 scontrol ping 2> /dev/null | grep -q UP; then
        return 0
    fi
    nodes_check --slurm > "$s/why" || { nodes_err "slurm: $(cat "$s/why")"; return 1; }
    mkdir -p "$s/munge/key" "$s/slurm/ctld" && chmod 700 "$s/munge/key" || return 1
    for ((i = 0; i < k; i++)); do mkdir -p "$s/slurm/$(nodes_host $i)"; done
    # a fresh key per set
    dd if=/dev/urandom of="$s/munge/key/munge.key" bs=1024 count=1 status=none &&
        chmod 400 "$s/munge/key/munge.key" || return 1
    nodes_slurm_conf "$s" "$k" "$cpus" > "$conf"
    echo "CgroupPlugin=cgroup/v1" > "$s/slurm/cgroup.conf"
    nodes_exec ctl munged --force --socket="$s/munge/munge.socket" \
        --key-file="$s/munge/key/munge.key" --pid-file="$s/munge/munged.pid" \
        --log-file="$s/munge/munged.log" --seed-file="$s/munge/munged.seed" ||
        { nodes_err "slurm: munged did not start ($s/munge/munged.log)"; return 1; }
    # the daemons fork into the background; their namespaces' teardown stops them
    # Slurm 22.05's daemons always load a cgroup plugin, though nothing here uses cgroups
    # (proctrack/linuxproc, task/none); on an empty tmpfs its v1 plugin loads and stays idle,
    # whatever the machine mounts (v1, hybrid or v2, which would need systemd's delegation)
    # and without several slurmd sharing one cgroup tree.
    NODES_CGROUP=empty nodes_exec ctl "$(command -v slurmctld || echo /usr/sbin/slurmctld)" -c -f "$conf" ||
        { nodes_err "slurm: slurmctld did not start ($s/slurm/slurmctld.log)"; return 1; }
    for ((i = 0; i < k; i++)); do
        NODES_CGROUP=empty nodes_exec "$i" "$(command -v slurmd || echo /usr/sbin/slurmd)" -f "$conf" ||
            { nodes_err "slurm: slurmd on node $i did not start ($s/slurm/$(nodes_host $i)/slurmd.log)"; return 1; }
    done
    # every node idle within 60 s
    for t in $(seq 1 120); do
        if [ "$(nodes_exec ctl timeout 5 sinfo -h -N -o '%t' 2> /dev/null | grep -c '^idle')" = "$k" ]; then
            touch "$s/slurm/up"
            return 0
        fi
        sleep 0.5
    done
    nodes_err "slurm: the nodes did not come up within 60 s:"
    nodes_exec ctl timeout 5 sinfo -N >&2
    tail -5 "$s/slurm/slurmctld.log" >&2
    return 1
}

# nodes_rsh HOST COMMAND...: ssh's part for launchers that start their daemons through it
# (OpenMPI: OMPI_MCA_plm_rsh_agent="nodes.sh -p PREFIX rsh"): the words of COMMAND joined
# into one shell command run on the node named HOST (nodeN, ctl, or its address).
nodes_rsh() {
    local host=$1 k i
    shift
    k=$(nodes_count)
    for i in ctl $(seq 0 $((k - 1))); do
        if [ "$host" = "$(nodes_host "$i")" ] || [ "$host" = "$(nodes_addr "$i")" ]; then
            nodes_exec "$i" /bin/sh -c "$*"
            return
        fi
    done
    nodes_err "rsh: no node '$host' in set '$NODES_PREFIX'"
    return 255
}

nodes_srun() {
    export SLURM_CONF
    SLURM_CONF=$(nodes_state)/slurm/slurm.conf
    [ -f "$SLURM_CONF" ] || { nodes_err "Slurm is not up in set '$NODES_PREFIX' (up --slurm)"; return 2; }
    nodes_exec ctl srun "$@"
}

nodes_status() {
    local s k i st
    s=$(nodes_state); k=$(nodes_count)
    [ -n "$k" ] || { echo "set '$NODES_PREFIX' is not up"; return 1; }
    echo "set $NODES_PREFIX: $k node(s), state $s, owner $(cat "$s/owner")"
    for i in ctl $(seq 0 $((k - 1))); do
        st=$(ip -n "$(nodes_ns sw)" -br link show "p$i" 2> /dev/null | awk '{ print $2 }')
        printf '  %-6s %-7s %-14s link %-5s rate %s\n' "$i" "$(nodes_host "$i")" \
            "$(nodes_addr "$i")" "${st:-?}" "$(cat "$s/rate.$i" 2> /dev/null || echo unlimited)"
    done
    if [ -f "$s/slurm/slurm.conf" ]; then
        echo "slurm: SLURM_CONF=$s/slurm/slurm.conf"
        SLURM_CONF=$s/slurm/slurm.conf nodes_exec ctl timeout 5 sinfo -N
    fi
}

nodes_list() {
    local d
    for d in "$NODES_DIR"/*/; do
        [ -f "$d/k" ] || continue
        printf '%s: %s node(s), owner %s%s\n' "$(basename "$d")" "$(cat "$d/k")" \
            "$(cat "$d/owner" 2> /dev/null)" "$(nodes_owner_alive "$d" || echo ' (gone)')"
    done
}

nodes_gc() { # removes the sets whose owner exited
    local d
    for d in "$NODES_DIR"/*/; do
        [ -f "$d/owner" ] || continue
        if ! nodes_owner_alive "$d"; then
            NODES_PREFIX=$(basename "$d") nodes_down
        fi
    done
    return 0
}

nodes_main() {
    local cmd k rc
    while [ $# -gt 0 ]; do
        case "$1" in
            -p) NODES_PREFIX=$2; shift 2 ;;
            *) break ;;
        esac
    done
    cmd=${1:-}
    shift || true
    case "$cmd" in
        up) nodes_up "$@" ;;
        down) nodes_down ;;
        run)
            k=${1:-}
            local -a upargs=()
            shift || true
            while [ $# -gt 0 ] && [ "$1" != -- ]; do upargs+=("$1"); shift; done
            [ "${1:-}" = -- ] && shift
            [ $# -gt 0 ] || { nodes_err "run: no command after --"; return 2; }
            NODES_OWNER_PID=$$
            local child=""
            trap 'nodes_down' EXIT
            # a signal ends the command too (bash runs traps only between commands: the
            # command runs in the background and wait returns at once on a signal)
            trap '[ -z "$child" ] || kill -TERM "$child" 2> /dev/null; exit 130' INT TERM HUP
            nodes_up "$k" "${upargs[@]}" || return 1
            SHARC_NODES_PREFIX=$NODES_PREFIX SHARC_NODES=$NODES_SELF "$@" &
            child=$!
            wait "$child"
            rc=$?
            child=""
            return $rc ;;
        exec) NODES_EXEC_REPLACE=1 nodes_exec "$@" ;;
        srun) NODES_EXEC_REPLACE=1 nodes_srun "$@" ;;
        rsh) NODES_EXEC_REPLACE=1 nodes_rsh "$@" ;;
        rate) [ $# -eq 2 ] || { nodes_err "rate NODE RATE|none"; return 2; }; nodes_set_rate "$@" ;;
        link) nodes_link "$@" ;;
        kill) nodes_kill "$@" ;;
        count) nodes_count ;;
        host) nodes_valid_node "${1:-}" && nodes_host "$1" ;;
        addr) nodes_valid_node "${1:-}" && nodes_addr "$1" ;;
        bytes) nodes_bytes "${1:-}" ;;
        pids) nodes_valid_node "${1:-}" && nodes_pids "$1" ;;
        status) nodes_status ;;
        list) nodes_list ;;
        gc) nodes_gc ;;
        check) nodes_check "$@" && echo "ok: namespace nodes${1:+ and Slurm} can run here" ;;
        *) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$NODES_SELF" >&2; return 2 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -u
    nodes_main "$@"
    exit $?
fi
