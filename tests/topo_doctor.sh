#!/bin/bash
# sharc-topo doctor on fixture trees with a controlled environment (env -i) and conf file:
# every rule both flagged and clean, the exit status (1 = harmful found), and the conf file
# (NCCL_CONF_FILE, --nccl-conf) with the environment taking precedence.
. "$(dirname "$0")/lib.sh"

TOPO="$top_builddir/perf/sharc-topo"
PY=/usr/bin/python3
FIX="$top_srcdir/tests/topo"
[ -x "$PY" ] || { echo "SKIP: no $PY to build the fixtures"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for m in p5 dgx-h100 roce roce-nogid cloud-vm eth-bond cpu-only; do
    "$PY" "$FIX/mkfixture.py" "$m" "$work/$m" || { echo "FAIL: mkfixture $m"; exit 1; }
done
: > "$work/empty.conf"

# docm RC REGEX MACHINE [VAR=VALUE...]: the doctor, on MACHINE with only the given
# environment, exits RC and prints a line matching the extended REGEX.
docm() {
    local rc=$1 re=$2 machine=$3; shift 3
    local out st
    out=$(env -i PATH="$PATH" "$@" "$TOPO" doctor --sysfs-root "$work/$machine" \
        --nccl-conf "$work/empty.conf" 2>&1)
    st=$?
    if [ $st -ne "$rc" ]; then
        echo "FAIL: $machine $*: exit $st, expected $rc"
        echo "$out"
        failures=$((failures + 1))
    elif ! echo "$out" | grep -Eq -- "$re"; then
        echo "FAIL: $machine $*: no line matches /$re/"
        echo "$out"
        failures=$((failures + 1))
    else
        echo "ok: $machine $* -> /$re/"
    fi
}

# doc RC SEVERITY KEY MACHINE [VAR=VALUE...]: the doctor exits RC and reports KEY with
# SEVERITY (ok, stale, HARMFUL, suggest, differs).
doc() {
    local rc=$1 sev=$2 key=$3 machine=$4; shift 4
    docm "$rc" "^$sev +$key=" "$machine" "$@"
}

# NCCL_IB_DISABLE
doc 1 HARMFUL NCCL_IB_DISABLE dgx-h100 NCCL_IB_DISABLE=1
doc 1 HARMFUL NCCL_IB_DISABLE roce NCCL_IB_DISABLE=1
doc 0 ok NCCL_IB_DISABLE dgx-h100 NCCL_IB_DISABLE=0
doc 0 ok NCCL_IB_DISABLE cloud-vm NCCL_IB_DISABLE=1
# NCCL_SOCKET_IFNAME: absent, down, prefix, exact, exclusion, bonds (virtual) count
doc 1 HARMFUL NCCL_SOCKET_IFNAME cloud-vm NCCL_SOCKET_IFNAME=eth0
doc 1 HARMFUL NCCL_SOCKET_IFNAME cloud-vm NCCL_SOCKET_IFNAME==ens5
doc 1 HARMFUL NCCL_SOCKET_IFNAME cloud-vm NCCL_SOCKET_IFNAME==ens
doc 0 differs NCCL_SOCKET_IFNAME cloud-vm NCCL_SOCKET_IFNAME=ens
doc 0 ok NCCL_SOCKET_IFNAME cloud-vm NCCL_SOCKET_IFNAME==ens4
doc 0 stale NCCL_SOCKET_IFNAME cloud-vm NCCL_SOCKET_IFNAME=^eth
doc 0 differs NCCL_SOCKET_IFNAME cloud-vm NCCL_SOCKET_IFNAME=^docker,lo
doc 0 ok NCCL_SOCKET_IFNAME dgx-h100 NCCL_SOCKET_IFNAME=bond0
# ports of a bond or bridge have no address: naming one is harmful, the bond is as recommended
doc 1 HARMFUL NCCL_SOCKET_IFNAME eth-bond NCCL_SOCKET_IFNAME==enp3s0f0
doc 1 HARMFUL NCCL_SOCKET_IFNAME eth-bond NCCL_SOCKET_IFNAME=enp3s0
doc 1 HARMFUL NCCL_SOCKET_IFNAME eth-bond NCCL_SOCKET_IFNAME==eno2
doc 0 ok NCCL_SOCKET_IFNAME eth-bond NCCL_SOCKET_IFNAME==bond0
doc 0 differs NCCL_SOCKET_IFNAME eth-bond NCCL_SOCKET_IFNAME==eno1
doc 1 HARMFUL UCX_NET_DEVICES eth-bond UCX_NET_DEVICES=enp3s0f1
doc 0 ok UCX_NET_DEVICES eth-bond UCX_NET_DEVICES=bond0
# NCCL_IB_HCA: absent device, absent port, down port, prefix pitfall, exact, exclusion
doc 1 HARMFUL NCCL_IB_HCA dgx-h100 NCCL_IB_HCA=mlx4_0
doc 1 HARMFUL NCCL_IB_HCA dgx-h100 NCCL_IB_HCA==mlx5_0:2
doc 1 HARMFUL NCCL_IB_HCA dgx-h100 NCCL_IB_HCA==mlx5_0:1,mlx5_10:1
doc 0 stale NCCL_IB_HCA dgx-h100 NCCL_IB_HCA=mlx5_1
docm 0 "^stale +NCCL_IB_HCA=mlx5_1 .*selects 3 devices \(mlx5_10, mlx5_11 too\)" dgx-h100 \
    NCCL_IB_HCA=mlx5_1
doc 0 differs NCCL_IB_HCA dgx-h100 NCCL_IB_HCA==mlx5_0:1,mlx5_1:1
doc 0 differs NCCL_IB_HCA dgx-h100 NCCL_IB_HCA=^mlx5_8,mlx5_9
doc 0 stale NCCL_IB_HCA dgx-h100 NCCL_IB_HCA=^mlx4
doc 0 stale NCCL_IB_HCA cloud-vm NCCL_IB_HCA=mlx5
# NCCL_IB_GID_INDEX: RoCE v1, link-local only, empty entry, garbage, right one, on IB
doc 1 HARMFUL NCCL_IB_GID_INDEX roce NCCL_IB_GID_INDEX=2
doc 1 HARMFUL NCCL_IB_GID_INDEX roce NCCL_IB_GID_INDEX=1
doc 1 HARMFUL NCCL_IB_GID_INDEX roce NCCL_IB_GID_INDEX=7
doc 1 HARMFUL NCCL_IB_GID_INDEX roce NCCL_IB_GID_INDEX=three
doc 0 ok NCCL_IB_GID_INDEX roce NCCL_IB_GID_INDEX=3
doc 0 stale NCCL_IB_GID_INDEX dgx-h100 NCCL_IB_GID_INDEX=3
# a RoCE node without a RoCE v2 IPv4 GID: a warning whatever is set; link-local RoCE v2 is
# then the best there is (stale, not harmful), RoCE v1 still harmful
docm 0 '^warn +NCCL_IB_GID_INDEX \(topology\): no active RoCE port has a RoCE v2 GID with an IPv4 address \(mlx5_0 port 1 on ens1f0np0, mlx5_1 port 1 on ens2f0np0\).*configure an IPv4 address' \
    roce-nogid
docm 0 '^stale +NCCL_IB_GID_INDEX=1 .*no RoCE v2 GID with an IPv4 address' roce-nogid \
    NCCL_IB_GID_INDEX=1
docm 1 '^HARMFUL +NCCL_IB_GID_INDEX=2 .*not RoCE v2.*no RoCE v2 GID with an IPv4 address' \
    roce-nogid NCCL_IB_GID_INDEX=2
docm 1 '^warn +NCCL_IB_GID_INDEX \(topology\)' roce-nogid NCCL_IB_GID_INDEX=2
if env -i PATH="$PATH" "$TOPO" doctor --json --sysfs-root "$work/roce-nogid" \
    --nccl-conf "$work/empty.conf" | "$PY" -c '
import json, sys
f = [x for x in json.load(sys.stdin) if x["severity"] == "warn"]
sys.exit(0 if len(f) == 1 and f[0]["value"] is None and f[0]["source"] == "topology" else 1)'; then
    echo "ok: doctor --json warning"
else
    echo "FAIL: doctor --json warning"; failures=$((failures + 1))
fi
# EFA: NCCL_PROTO=simple, FI_EFA_USE_DEVICE_RDMA
doc 1 HARMFUL NCCL_PROTO p5 NCCL_PROTO=simple
doc 0 differs NCCL_PROTO p5 NCCL_PROTO=LL128,Simple
doc 0 ok NCCL_PROTO dgx-h100 NCCL_PROTO=Simple
doc 0 stale FI_EFA_USE_DEVICE_RDMA p5 FI_EFA_USE_DEVICE_RDMA=1
doc 1 HARMFUL FI_EFA_USE_DEVICE_RDMA p5 FI_EFA_USE_DEVICE_RDMA=0
doc 0 stale FI_EFA_USE_DEVICE_RDMA dgx-h100 FI_EFA_USE_DEVICE_RDMA=1
# NCCL_DEBUG
doc 0 stale NCCL_DEBUG p5 NCCL_DEBUG=INFO
doc 0 ok NCCL_DEBUG p5 NCCL_DEBUG=WARN
# CUDA_VISIBLE_DEVICES
doc 1 HARMFUL CUDA_VISIBLE_DEVICES p5 CUDA_VISIBLE_DEVICES=0,8
doc 1 HARMFUL CUDA_VISIBLE_DEVICES p5 CUDA_VISIBLE_DEVICES=
doc 1 HARMFUL CUDA_VISIBLE_DEVICES p5 CUDA_VISIBLE_DEVICES=1,1
doc 0 stale CUDA_VISIBLE_DEVICES p5 CUDA_VISIBLE_DEVICES=0,1
doc 0 ok CUDA_VISIBLE_DEVICES p5 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
doc 0 note CUDA_VISIBLE_DEVICES cpu-only CUDA_VISIBLE_DEVICES=0
doc 0 note CUDA_VISIBLE_DEVICES cpu-only CUDA_VISIBLE_DEVICES=
doc 0 note CUDA_VISIBLE_DEVICES cpu-only CUDA_VISIBLE_DEVICES=GPU-5f1c3e2a,1
# SHARC_TRANSPORT: auto everywhere; nccl (GPU buffers only), self, unknown names are harmful
doc 1 HARMFUL SHARC_TRANSPORT dgx-h100 SHARC_TRANSPORT=nccl
doc 1 HARMFUL SHARC_TRANSPORT cloud-vm SHARC_TRANSPORT=NCCL
doc 1 HARMFUL SHARC_TRANSPORT cpu-only SHARC_TRANSPORT=nccl
doc 1 HARMFUL SHARC_TRANSPORT p5 SHARC_TRANSPORT=self
doc 1 HARMFUL SHARC_TRANSPORT p5 SHARC_TRANSPORT=verbs
doc 0 stale SHARC_TRANSPORT dgx-h100 SHARC_TRANSPORT=shm
doc 0 ok SHARC_TRANSPORT dgx-h100 SHARC_TRANSPORT=auto
doc 0 ok SHARC_TRANSPORT cpu-only SHARC_TRANSPORT=auto
doc 0 suggest SHARC_TRANSPORT dgx-h100
# a recommended key set to another value: "differs" with the recommended value and its reason,
# harmful where the value names a device that is missing or down; the rule's remark stays
docm 0 '^differs +UCX_TLS=tcp \(environment\): recommended UCX_TLS=rc,sm,self: reliable' \
    dgx-h100 UCX_TLS=tcp
docm 0 '^differs +SHARC_TRANSPORT=ucx .*recommended SHARC_TRANSPORT=auto: .*GPU buffers through NCCL' \
    dgx-h100 SHARC_TRANSPORT=ucx
docm 0 '^differs +NCCL_SOCKET_IFNAME==?ens \(environment\): names existing interfaces that are up; recommended NCCL_SOCKET_IFNAME==ens4' \
    cloud-vm NCCL_SOCKET_IFNAME=ens
docm 0 '^differs +NCCL_PROTO=LL128,Simple .*recommended to leave NCCL_PROTO unset' \
    p5 NCCL_PROTO=LL128,Simple
docm 0 '^stale +NCCL_IB_HCA=mlx5_1 .*; recommended: NCCL_IB_HCA==mlx5_0:1,' \
    dgx-h100 NCCL_IB_HCA=mlx5_1
doc 0 ok UCX_TLS dgx-h100 UCX_TLS=self,sm,rc
doc 0 differs UCX_TLS dgx-h100 UCX_TLS=rc_x,sm,self
# UCX_TLS with verbs transports only where no IB/RoCE port is active: nothing between nodes
doc 1 HARMFUL UCX_TLS cloud-vm UCX_TLS=rc,sm,self
doc 1 HARMFUL UCX_TLS p5 UCX_TLS=rc_x,ud_v,sm
doc 0 differs UCX_TLS cloud-vm UCX_TLS=rc,tcp,sm,self
doc 0 differs UCX_TLS cloud-vm UCX_TLS=^rc
doc 0 ok SHARC_TRANSPORT dgx-h100 SHARC_TRANSPORT=AUTO
doc 0 ok NCCL_IB_HCA dgx-h100 NCCL_IB_HCA==mlx5_7:1,mlx5_6:1,mlx5_5:1,mlx5_4:1,mlx5_3:1,mlx5_2:1,mlx5_1:1,mlx5_0:1
# UCX_NET_DEVICES: down port, absent port, absent device, RDMA device without its port,
# interface down or absent, the recommended ports in another order, a subset
docm 1 '^HARMFUL +UCX_NET_DEVICES=mlx5_10:1 .*port 1 is down.*recommended: UCX_NET_DEVICES=mlx5_0:1,' \
    dgx-h100 UCX_NET_DEVICES=mlx5_10:1
doc 1 HARMFUL UCX_NET_DEVICES dgx-h100 UCX_NET_DEVICES=mlx5_0:2
doc 1 HARMFUL UCX_NET_DEVICES dgx-h100 UCX_NET_DEVICES=mlx4_0:1
doc 1 HARMFUL UCX_NET_DEVICES dgx-h100 UCX_NET_DEVICES=mlx5_0
doc 1 HARMFUL UCX_NET_DEVICES cloud-vm UCX_NET_DEVICES=ens5
doc 1 HARMFUL UCX_NET_DEVICES cloud-vm UCX_NET_DEVICES=eth0
doc 0 ok UCX_NET_DEVICES cloud-vm UCX_NET_DEVICES=ens4
doc 0 ok UCX_NET_DEVICES dgx-h100 UCX_NET_DEVICES=mlx5_7:1,mlx5_6:1,mlx5_5:1,mlx5_4:1,mlx5_3:1,mlx5_2:1,mlx5_1:1,mlx5_0:1
doc 0 differs UCX_NET_DEVICES dgx-h100 UCX_NET_DEVICES=mlx5_0:1
doc 0 differs UCX_NET_DEVICES dgx-h100 UCX_NET_DEVICES=all

# recommended settings that are missing are suggested; a clean environment exits 0
doc 0 suggest NCCL_IB_GID_INDEX roce
doc 0 suggest NCCL_SOCKET_IFNAME cloud-vm

# the conf file: NCCL_CONF_FILE and --nccl-conf, '#' comments, the environment wins
printf '# site defaults\nNCCL_IB_DISABLE = 1\nNCCL_DEBUG=WARN\n' > "$work/nccl.conf"
out=$(env -i PATH="$PATH" NCCL_CONF_FILE="$work/nccl.conf" "$TOPO" doctor \
    --sysfs-root "$work/dgx-h100" 2>&1)
st=$?
if [ $st -eq 1 ] && echo "$out" | grep -q "^HARMFUL NCCL_IB_DISABLE=1 ($work/nccl.conf)"; then
    echo "ok: NCCL_CONF_FILE read"
else
    echo "FAIL: NCCL_CONF_FILE (exit $st)"; echo "$out"; failures=$((failures + 1))
fi
out=$(env -i PATH="$PATH" NCCL_IB_DISABLE=0 "$TOPO" doctor --sysfs-root "$work/dgx-h100" \
    --nccl-conf "$work/nccl.conf" 2>&1)
st=$?
if [ $st -eq 0 ] && echo "$out" | grep -q "^ok *NCCL_IB_DISABLE=0 (environment)"; then
    echo "ok: the environment overrides the conf file"
else
    echo "FAIL: precedence (exit $st)"; echo "$out"; failures=$((failures + 1))
fi
if env -i PATH="$PATH" NCCL_DEBUG=INFO "$TOPO" doctor --json --sysfs-root "$work/p5" \
    --nccl-conf "$work/empty.conf" | "$PY" -c '
import json, sys
f = json.load(sys.stdin)
sys.exit(0 if any(x["key"] == "NCCL_DEBUG" and x["severity"] == "stale" for x in f) else 1)'; then
    echo "ok: doctor --json"
else
    echo "FAIL: doctor --json"; failures=$((failures + 1))
fi
finish
