#!/bin/bash
# sharc-topo doctor on fixture trees with a controlled environment (env -i) and conf file:
# every rule both flagged and clean, the exit status (1 = harmful found), and the conf file
# (NCCL_CONF_FILE, --nccl-conf) with the environment taking precedence.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

TOPO="$top_builddir/perf/sharc-topo"
PY=/usr/bin/python3
FIX="$top_srcdir/tests/topo"
[ -x "$PY" ] || { echo "SKIP: no $PY to build the fixtures"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for m in p5 dgx-h100 roce roce-nogid cloud-vm eth-bond cpu-only p4d g5-efa gcp-a3 l40s-eth; do
    "$PY" "$FIX/mkfixture.py" "$m" "$work/$m" || { echo "FAIL: mkfixture $m"; exit 1; }
done
: > "$work/empty.conf"

# docm RC REGEX MACHINE [VAR=VALUE...]: the doctor, on MACHINE with only the given
# environment, exits RC and prints a line matching the extended REGEX. DOCTOR_ARGS (an array)
# adds options, such as the library path of an EFA node.
DOCTOR_ARGS=()
docm() {
    local rc=$1 re=$2 machine=$3; shift 3
    local out st
    out=$(env -i PATH="$PATH" "$@" "$TOPO" doctor --sysfs-root "$work/$machine" \
        --nccl-conf "$work/empty.conf" "${DOCTOR_ARGS[@]}" 2>&1)
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

# NCCL's socket threads: 4 x 4 on Intel 100G; threads alone fine; sockets without threads do
# nothing on a NIC NCCL does not tune itself; past NCCL's limits; stale on an RDMA node
doc 0 ok NCCL_SOCKET_NTHREADS l40s-eth NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4
doc 0 suggest NCCL_SOCKET_NTHREADS l40s-eth
docm 0 '^stale +NCCL_NSOCKS_PERTHREAD=4 .*set NCCL_SOCKET_NTHREADS too' l40s-eth NCCL_NSOCKS_PERTHREAD=4
docm 0 '^stale +NCCL_SOCKET_NTHREADS=32 .*16 threads at most' l40s-eth NCCL_SOCKET_NTHREADS=32
docm 0 '^stale +NCCL_NSOCKS_PERTHREAD=8 .*is 128: NCCL cuts it to 64' l40s-eth \
    NCCL_SOCKET_NTHREADS=16 NCCL_NSOCKS_PERTHREAD=8
doc 1 HARMFUL NCCL_SOCKET_NTHREADS l40s-eth NCCL_SOCKET_NTHREADS=many
docm 0 '^stale +NCCL_SOCKET_NTHREADS=4 .*runs over InfiniBand here' dgx-h100 NCCL_SOCKET_NTHREADS=4
# several interfaces of the fastest class: one of them differs from the list, the list is ok
docm 0 '^differs +NCCL_SOCKET_IFNAME==enp6s0 .*recommended NCCL_SOCKET_IFNAME==enp0s12,enp6s0,enp12s0,enp134s0,enp140s0: the 5 interfaces' \
    gcp-a3 NCCL_SOCKET_IFNAME==enp6s0
doc 0 ok NCCL_SOCKET_IFNAME gcp-a3 NCCL_SOCKET_IFNAME==enp140s0,enp134s0,enp12s0,enp6s0,enp0s12
docm 0 '^differs +UCX_NET_DEVICES=enp6s0 .*recommended UCX_NET_DEVICES=enp0s12,enp6s0,' gcp-a3 \
    UCX_NET_DEVICES=enp6s0
doc 0 suggest UCX_MAX_RNDV_RAILS gcp-a3

# EFA: the NET plugin, libfabric and fi_info of fixture library directories (fake libraries
# built here, never the machine's own); --lib-path and --fi-info stand in for the node's
CC=${CC:-cc}
if command -v "$CC" > /dev/null; then
    L="$work/libs"
    mkdir -p "$L/ok" "$L/none" "$L/ofi" "$L/broken" "$L/ibext" "$L/old" "$L/dep"
    fake_fabric() { "$CC" -shared -fPIC -Wl,-soname,"$(basename "$1")" -o "$1" "$FIX/fake_libfabric.c" "${@:2}"; }
    fake_plugin() { "$CC" -shared -fPIC -o "$1" "$FIX/fake_net_plugin.c" "${@:2}"; }
    fake_fabric "$L/ok/libfabric.so.1" && cp "$L/ok/libfabric.so.1" "$L/none/" &&
        cp "$L/ok/libfabric.so.1" "$L/ofi/" &&
        fake_fabric "$L/old/libfabric.so.1" -DSHARC_FAKE_FI_MINOR=17 &&
        fake_fabric "$L/dep/libsharc_fake_fabric.so.1" &&
        fake_plugin "$L/ok/libnccl-net.so" -DSHARC_FAKE_VERSION='"1.13.2-aws"' &&
        fake_plugin "$L/old/libnccl-net.so" -DSHARC_FAKE_VERSION='"1.5.0-aws"' &&
        fake_plugin "$L/ofi/libnccl-net-ofi.so" -DSHARC_FAKE_VERSION='"1.14.0"' &&
        fake_plugin "$L/ibext/libnccl-net.so" -DSHARC_FAKE_NAME='"IBext"' &&
        fake_plugin "$L/broken/libnccl-net.so" -DSHARC_FAKE_NEEDS_FABRIC \
            "$L/dep/libsharc_fake_fabric.so.1" ||
        { echo "FAIL: building the fake libraries"; exit 1; }

    # the chain complete: plugin, libfabric with its efa provider on the four devices
    DOCTOR_ARGS=(--lib-path "$L/ok" --fi-info "$FIX/fi_info_p4d.txt")
    docm 0 "^ok +NET plugin \($L/ok/libnccl-net.so\): loads: network 'Libfabric', aws-ofi-nccl 1.13.2-aws, NCCL NET API v6 to v9" p4d
    docm 0 "^ok +libfabric \(.*fi_info_p4d.txt\): the efa provider of libfabric 1.22, 4 RDM domain\(s\): rdmap16s27-rdm, rdmap32s27-rdm" p4d
    docm 0 '^ok +GPUDirect RDMA \(topology\): p4d.24xlarge: its EFA reads remote memory' p4d
    docm 0 "^ok +NCCL network \(summary\): the NET plugin 'Libfabric' over EFA \(4 device" p4d
    doc 0 suggest FI_PROVIDER p4d
    doc 0 ok FI_PROVIDER p4d FI_PROVIDER=efa
    docm 1 '^HARMFUL +FI_PROVIDER=tcp .*other than efa' p4d FI_PROVIDER=tcp
    docm 1 '^HARMFUL +NCCL network \(summary\): FI_PROVIDER=tcp leaves no efa provider' p4d \
        FI_PROVIDER=tcp
    docm 1 '^HARMFUL +FI_PROVIDER=\^efa .*excludes efa' p4d FI_PROVIDER=^efa
    doc 0 ok NCCL_NET p4d NCCL_NET=Libfabric
    doc 0 ok NCCL_NET p4d "NCCL_NET=AWS Libfabric"
    doc 0 ok NCCL_NET p4d NCCL_NET=ofi
    docm 1 "^HARMFUL +NCCL_NET=Foo .*registers network 'Libfabric', not 'Foo'" p4d NCCL_NET=Foo
    docm 1 "^HARMFUL +NCCL network \\(summary\\): NCCL_NET=Foo names no network here" p4d NCCL_NET=Foo
    docm 0 "^ok +NCCL network \\(summary\\): the NET plugin 'Libfabric' over EFA" p4d NCCL_NET=OFI
    docm 1 '^HARMFUL +NCCL_NET=Socket .*forces NCCL.s TCP sockets on this EFA node' p4d NCCL_NET=Socket
    docm 1 '^HARMFUL +NCCL network \(summary\): NCCL_NET=Socket' p4d NCCL_NET=Socket
    docm 1 '^HARMFUL +NCCL_NET=IB .*no active InfiniBand or RoCE port' p4d NCCL_NET=IB
    docm 1 '^HARMFUL +NCCL_NET_PLUGIN=none .*TCP sockets over the ENA' p4d NCCL_NET_PLUGIN=none
    docm 1 "^HARMFUL +NCCL_NET_PLUGIN=nosuch .*finds none of nosuch, libnccl-net-nosuch.so in $L/ok" p4d \
        NCCL_NET_PLUGIN=nosuch
    docm 0 "^ok +NCCL_NET_PLUGIN=$L/ok/libnccl-net.so .*loads" p4d NCCL_NET_PLUGIN="$L/ok/libnccl-net.so"
    docm 0 '^stale +FI_EFA_USE_DEVICE_RDMA=1 .*libfabric 1.18\+ enables device RDMA' p4d \
        FI_EFA_USE_DEVICE_RDMA=1
    # libfabric's efa provider missing, or seeing fewer devices than sysfs
    DOCTOR_ARGS=(--lib-path "$L/ok" --fi-info "$FIX/fi_info_noefa.txt")
    docm 1 '^HARMFUL +libfabric \(.*fi_info_noefa.txt\): no efa provider \(fi_getinfo: -61 \(No data available\)\)' p4d
    docm 1 '^HARMFUL +NCCL network \(summary\): libfabric has no efa provider: NCCL falls back to TCP' p4d
    head -24 "$FIX/fi_info_p4d.txt" > "$work/fi_info_2dev.txt"
    DOCTOR_ARGS=(--lib-path "$L/ok" --fi-info "$work/fi_info_2dev.txt")
    docm 0 '^warn +libfabric .*2 RDM domain\(s\) \(rdmap16s27-rdm, rdmap32s27-rdm\), sysfs 4 EFA devices' p4d
    # no plugin: sockets; the plugin under its newer name: NCCL_NET_PLUGIN=ofi
    DOCTOR_ARGS=(--lib-path "$L/none")
    docm 1 '^HARMFUL +NET plugin .*NCCL looks for libnccl-net.so and finds none' p4d
    docm 1 '^HARMFUL +NCCL network \(summary\): no NET plugin: NCCL falls back to TCP sockets over the ENA' p4d
    docm 1 "^HARMFUL +NCCL_NET=Libfabric .*no NET plugin loads" p4d NCCL_NET=Libfabric
    docm 1 '^ok +libfabric \(.*/none/libfabric.so.1\): libfabric 1.22 loads' p4d NCCL_NET_PLUGIN=none
    DOCTOR_ARGS=(--lib-path "$L/ofi")
    docm 1 "^HARMFUL +NET plugin .*aws-ofi-nccl is at $L/ofi/libnccl-net-ofi.so, a name NCCL does not try; set NCCL_NET_PLUGIN=ofi" p4d
    docm 1 '^suggest NCCL_NET_PLUGIN=ofi \(recommendation\)' p4d
    docm 0 "^ok +NCCL_NET_PLUGIN=ofi \(environment\): loads $L/ofi/libnccl-net-ofi.so" p4d NCCL_NET_PLUGIN=ofi
    docm 0 "^ok +NET plugin \($L/ofi/libnccl-net-ofi.so\): loads: network 'Libfabric', aws-ofi-nccl 1.14.0" p4d \
        NCCL_NET_PLUGIN=ofi
    # a plugin that does not load (its libfabric is not on the loader's path), then loads
    DOCTOR_ARGS=(--lib-path "$L/broken")
    docm 1 '^HARMFUL +NET plugin \(.*/broken/libnccl-net.so\): does not load \(libsharc_fake_fabric.so.1: cannot open shared object file' p4d
    docm 0 '^ok +NET plugin \(.*/broken/libnccl-net.so\): loads' p4d LD_LIBRARY_PATH="$L/dep"
    # a NET plugin of another network (SHARP's) where EFA needs libfabric's
    DOCTOR_ARGS=(--lib-path "$L/ibext")
    docm 1 "^HARMFUL +NET plugin .*registers network 'IBext', not libfabric's" p4d
    # libfabric older than 1.18 on the p4d's 0xefa1: device RDMA must be asked for
    DOCTOR_ARGS=(--lib-path "$L/old")
    docm 0 '^suggest FI_EFA_USE_DEVICE_RDMA=1 \(recommendation\): libfabric 1.17 is older than 1.18' p4d
    docm 0 '^ok +FI_EFA_USE_DEVICE_RDMA=1 .*needed: libfabric 1.17' p4d FI_EFA_USE_DEVICE_RDMA=1
    docm 1 '^HARMFUL +FI_EFA_USE_DEVICE_RDMA=0 ' p4d FI_EFA_USE_DEVICE_RDMA=0
    DOCTOR_ARGS=()
else
    echo "SKIP (part): no C compiler ($CC) to build the fake NET plugin and libfabric"
fi
# offline without libraries: said, not guessed; g5's EFA has no RDMA read
docm 0 '^note +NET plugin \(not checked\): .*give --lib-path DIRS' p4d
docm 0 '^note +GPUDirect RDMA \(topology\): g5.48xlarge: its EFA has no RDMA read' g5-efa
docm 1 '^HARMFUL +FI_EFA_USE_DEVICE_RDMA=1 .*g5.48xlarge: its EFA has no RDMA read: libfabric aborts' \
    g5-efa FI_EFA_USE_DEVICE_RDMA=1
docm 0 '^stale +FI_EFA_USE_DEVICE_RDMA=0 .*nothing to turn off' g5-efa FI_EFA_USE_DEVICE_RDMA=0
docm 1 '^HARMFUL +FI_EFA_USE_DEVICE_RDMA=maybe .*not a boolean' p4d FI_EFA_USE_DEVICE_RDMA=maybe
# the EFA settings elsewhere
doc 0 stale FI_PROVIDER dgx-h100 FI_PROVIDER=efa
doc 0 ok NCCL_NET dgx-h100 NCCL_NET=IB
doc 1 HARMFUL NCCL_NET dgx-h100 NCCL_NET=Socket
doc 1 HARMFUL NCCL_NET cloud-vm NCCL_NET=IB

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
if env -i PATH="$PATH" "$TOPO" doctor --json --sysfs-root "$work/p4d" \
    --nccl-conf "$work/empty.conf" | "$PY" -c '
import json, sys
f = [x for x in json.load(sys.stdin) if x["key"] in ("NET plugin", "GPUDirect RDMA")]
sys.exit(0 if len(f) == 2 and all(x["value"] is None for x in f) else 1)'; then
    echo "ok: doctor --json, findings about the node"
else
    echo "FAIL: doctor --json, findings about the node"; failures=$((failures + 1))
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
