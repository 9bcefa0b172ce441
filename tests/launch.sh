#!/bin/bash
# launch.sh: a small local launcher for sharc's multi-rank tests. It starts N processes on
# this machine with the variables a real launcher would set, waits for all of them, prints
# each rank's output prefixed with its rank, and exits with the first nonzero status.
#
#   launch.sh --mode env|slurm|explicit [options] -- PROGRAM [ARGS...]
#     -n N              number of ranks (default 2)
#     --nodes K         pretend the ranks run on K nodes, in contiguous blocks, and say so the
#                       way the launcher would (GROUP_RANK / SLURM_NODEID, local ranks)
#     --bare            env mode as a Kubeflow PyTorchJob pod sets it: RANK, WORLD_SIZE,
#                       MASTER_ADDR, MASTER_PORT only (nodes come from host names)
#     --ranks "0 1 1"   start these ranks instead of 0..N-1 (fault tests)
#     --port P          MASTER_PORT (default: a free port)
#     --delay R:S       start rank R after S seconds
#     --rank-env R:VAR=VALUE   an extra variable for rank R (repeatable); R:-VAR unsets VAR
#     --timeout S       kill every rank after S seconds (default 120)
#     --node-exec "CMD" start each rank as CMD NODE -- PROGRAM..., NODE its node index (with
#                       --nodes K on tools/nodes.sh's namespace nodes: "tools/nodes.sh -p P
#                       exec"); MASTER_ADDR is then --master-addr (default node0), and with
#                       --bare the expected nodes still follow the blocks (host names differ)
#     --master-addr A   MASTER_ADDR (default 127.0.0.1; node0 with --node-exec)
#     --out-dir DIR     write the I-th rank started (rank I without --ranks) to DIR/out.I as
#                       it comes, and keep it (fault tests watch it); default a temporary one
# Every rank also gets SHARCTEST_RANK, _SIZE, _NODE, _NNODES, _LOCAL_RANK, _LOCAL_SIZE: what
# sharc should report. In explicit mode PROGRAM gets "--explicit MASTER:PORT" appended.
# SPDX-License-Identifier: BSD-3-Clause
set -u
. "$(dirname "$0")/lib.sh"

mode=env; n=2; nodes=1; bare=0; ranks=""; port=""; timeout_s=120; node_exec=""; master=""
outdir=""
declare -A delay rank_env
while [ $# -gt 0 ]; do
    case "$1" in
        --mode) mode=$2; shift 2 ;;
        -n) n=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --bare) bare=1; shift ;;
        --ranks) ranks=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --delay) delay[${2%%:*}]=${2#*:}; shift 2 ;;
        --rank-env) r=${2%%:*}; rank_env[$r]="${rank_env[$r]:-} ${2#*:}"; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --node-exec) node_exec=$2; shift 2 ;;
        --master-addr) master=$2; shift 2 ;;
        --out-dir) outdir=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "launch.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "launch.sh: no program given" >&2; exit 2; }
[ -n "$ranks" ] || ranks=$(seq 0 $((n - 1)))

[ -n "$port" ] || port=$(free_port)
[ -n "$master" ] || master=$([ -n "$node_exec" ] && echo node0 || echo 127.0.0.1)

# Block distribution: node i holds base (+1 for the first n % nodes nodes) ranks.
base=$((n / nodes)); extra=$((n % nodes))
node_of() {
    local r=$1 i start=0 cnt
    for ((i = 0; i < nodes; i++)); do
        cnt=$((base + (i < extra ? 1 : 0)))
        if [ "$r" -lt $((start + cnt)) ]; then echo "$i $((r - start)) $cnt"; return; fi
        start=$((start + cnt))
    done
    echo "0 0 1" # ranks beyond n (fault tests)
}

if [ -z "$outdir" ]; then
    outdir=$(mktemp -d)
    trap 'rm -rf "$outdir"' EXIT
fi
mkdir -p "$outdir" || exit 2
# Ports stay below Linux's ephemeral range (32768+), where a client socket could hold them.
job_id=$((port - 12000 + 100000)) # the Slurm port rule, 12000 + job % 20000, gives $port
declare -a pids
i=0
for r in $ranks; do
    read -r node lrank lsize < <(node_of "$r")
    vars=(SHARCTEST_RANK=$r SHARCTEST_SIZE=$n SHARCTEST_NODE=$node SHARCTEST_NNODES=$nodes
          SHARCTEST_LOCAL_RANK=$lrank SHARCTEST_LOCAL_SIZE=$lsize)
    args=("$@")
    case "$mode" in
        env)
            vars+=(RANK=$r WORLD_SIZE=$n MASTER_ADDR=$master MASTER_PORT=$port)
            if [ $bare = 0 ]; then
                vars+=(LOCAL_RANK=$lrank LOCAL_WORLD_SIZE=$lsize GROUP_RANK=$node)
            elif [ -z "$node_exec" ]; then
                vars+=(SHARCTEST_NODE=0 SHARCTEST_NNODES=1 SHARCTEST_LOCAL_RANK=$r
                       SHARCTEST_LOCAL_SIZE=$n)
            fi ;;
        slurm)
            vars+=(SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$lrank SLURM_NODEID=$node
                   SLURM_STEP_ID=0 SLURM_JOB_ID=$job_id
                   "SLURM_JOB_NODELIST=localhost,node[02-$(printf %02d $((nodes + 1)))]") ;;
        explicit)
            args+=(--explicit "$master:$port") ;;
        *) echo "launch.sh: unknown mode $mode" >&2; exit 2 ;;
    esac
    extra_vars=(); unset_vars=()
    for v in ${rank_env[$r]:-}; do
        case "$v" in
            -*) unset_vars+=(-u "${v#-}") ;;
            *) extra_vars+=("$v") ;;
        esac
    done
    wrap=()
    # shellcheck disable=SC2206 # the wrapper is words, as given
    [ -z "$node_exec" ] || wrap=($node_exec "$node" --)
    (
        sleep "${delay[$r]:-0}"
        exec "${wrap[@]}" env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u GROUP_RANK \
            -u MASTER_ADDR -u MASTER_PORT -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_STEP_ID \
            -u OMPI_COMM_WORLD_SIZE \
            SHARC_BOOTSTRAP_TIMEOUT="${SHARC_BOOTSTRAP_TIMEOUT:-30s}" \
            "${vars[@]}" "${extra_vars[@]}" \
            env "${unset_vars[@]}" timeout -k 5 "$timeout_s" "${args[@]}"
    ) > "$outdir/out.$i" 2>&1 &
    pids[$i]=$!
    i=$((i + 1))
done

rc=0
i=0
for r in $ranks; do
    wait "${pids[$i]}"
    st=$?
    sed "s/^/[rank $r] /" "$outdir/out.$i"
    if [ $st -ne 0 ]; then
        echo "[rank $r] exited with status $st"
        [ $rc -ne 0 ] || rc=$st
    fi
    i=$((i + 1))
done
exit $rc
