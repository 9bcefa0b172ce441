#!/bin/bash
# sharc-topo on fixture trees laid out like /sys (built by tests/topo/mkfixture.py), on
# nvidia-smi topo -m captures and on NCCL topology XML; tests/topo/check_topo.py asserts the
# JSON. Also the other output formats and malformed input that must not crash.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

TOPO="$top_builddir/perf/sharc-topo"
PY=/usr/bin/python3
FIX="$top_srcdir/tests/topo"
if [ ! -x "$PY" ]; then
    echo "SKIP: no $PY to build the fixtures"
    exit 77
fi
if ! "$TOPO" --json --sysfs-root / > /dev/null 2>&1; then
    echo "SKIP: sharc-topo was built without json-c"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# check_json CASE ARGS...: sharc-topo --json ARGS must succeed and pass CASE's checks
check_json() {
    local case=$1 st; shift
    "$TOPO" --json "$@" > "$work/$case.json" 2> "$work/$case.err"
    st=$?
    if [ $st -ne 0 ]; then
        echo "FAIL: $case: sharc-topo exited $st"
        cat "$work/$case.err"
        failures=$((failures + 1))
    elif ! "$PY" "$FIX/check_topo.py" "$case" "$work/$case.json"; then
        failures=$((failures + 1))
    else
        echo "ok: $case"
    fi
}

for m in p5 p4de dgx-h100 roce roce-nogid cloud-vm cloud-vm-virtio eth-bond cpu-only broken \
        hgx-h100-ib h100-roce gcp-a3 l40s-eth p4d g5-efa; do
    "$PY" "$FIX/mkfixture.py" "$m" "$work/$m" || { echo "FAIL: mkfixture $m"; exit 1; }
    check_json "$m" --sysfs-root "$work/$m"
done
for s in smi_nvswitch smi_pcie smi_shared_switch; do
    check_json "${s//_/-}" --nvidia-smi-topo "$FIX/$s.txt"
done
check_json nccl-xml --nccl-xml "$FIX/nccl_topo.xml"
if "$TOPO" --export-xml --sysfs-root "$work/p5" > "$work/p5.xml"; then
    check_json xml-roundtrip --nccl-xml "$work/p5.xml"
else
    echo "FAIL: --export-xml"
    failures=$((failures + 1))
fi
# export: NICs whose ports are all down stay out; devices on no known NUMA node join node 0;
# GPUs numbered by PCI address
for m in dgx-h100 eth-bond hgx-h100-ib; do
    if "$TOPO" --export-xml --sysfs-root "$work/$m" > "$work/$m.xml" &&
            "$PY" "$FIX/check_topo.py" "export-$m" "$work/$m.xml"; then
        echo "ok: export-$m"
    else
        echo "FAIL: export-$m"; cat "$work/$m.xml"; failures=$((failures + 1))
    fi
done
check_json xml-roundtrip-eth-bond --nccl-xml "$work/eth-bond.xml"
check_json xml-roundtrip-hgx --nccl-xml "$work/hgx-h100-ib.xml"

# GPU numbering by PCI address against an nvidia-smi capture of the same machine: the same
# order, no warning; with two rows swapped, a warning for each and no renumbering
check_json hgx-smi --sysfs-root "$work/hgx-h100-ib" --nvidia-smi-topo "$FIX/smi_hgx_h100.txt"
sed -e 's/^GPU0\t/GPUx\t/' -e 's/^GPU4\t/GPU0\t/' -e 's/^GPUx\t/GPU4\t/' \
    "$FIX/smi_hgx_h100.txt" > "$work/smi_swapped.txt"
check_json hgx-smi-swapped --sysfs-root "$work/hgx-h100-ib" --nvidia-smi-topo "$work/smi_swapped.txt"

# the listing, the matrix and the rails agree on GPU0 = the lowest bus id
out=$("$TOPO" --sysfs-root "$work/hgx-h100-ib")
if echo "$out" | grep -qx " GPU0 0000:18:00.0 \[10de:2330\] H100 SXM5 80GB" &&
        echo "$out" | grep -qx " GPU4 0000:9a:00.0 \[10de:2330\] H100 SXM5 80GB" &&
        echo "$out" | grep -Eq "^GPU0 +X +(NV18 +){7}PIX +NODE" &&
        echo "$out" | grep -qx "  GPU0 rails: mlx5_0 (PIX), 400 Gb/s expected" &&
        echo "$out" | grep -qx "machine: NVIDIA DGXH100"; then
    echo "ok: GPUs in PCI order in the text report"
else
    echo "FAIL: GPUs in PCI order in the text report"; echo "$out"; failures=$((failures + 1))
fi
# Ethernet with several interfaces: the TCP line names them all, each GPU its nearest
out=$("$TOPO" --sysfs-root "$work/gcp-a3")
if echo "$out" | grep -qx "inter-node: Ethernet (TCP on enp0s12,enp6s0,enp12s0,enp134s0,enp140s0)" &&
        echo "$out" | grep -qx "  GPU0 rails: enp6s0 (PIX), 100 Gb/s expected" &&
        echo "$out" | grep -qx "  GPU7 rails: enp140s0 (PIX), 100 Gb/s expected"; then
    echo "ok: Ethernet rails on a multi-NIC node"
else
    echo "FAIL: Ethernet rails on a multi-NIC node"; echo "$out"; failures=$((failures + 1))
fi
out=$("$TOPO" --env --sysfs-root "$work/l40s-eth")
if echo "$out" | grep -qx "NCCL_SOCKET_IFNAME==enp26s0,enp60s0,enp156s0,enp188s0" &&
        echo "$out" | grep -qx "NCCL_SOCKET_NTHREADS=4" &&
        echo "$out" | grep -qx "NCCL_NSOCKS_PERTHREAD=4" &&
        echo "$out" | grep -qx "UCX_NET_DEVICES=enp26s0,enp60s0,enp156s0,enp188s0" &&
        echo "$out" | grep -qx "UCX_MAX_RNDV_RAILS=4"; then
    echo "ok: multi-NIC settings in the env-file format"
else
    echo "FAIL: multi-NIC settings in the env-file format"; echo "$out"; failures=$((failures + 1))
fi

# the other formats carry the same recommendations
run_ok "shell exports parse" bash -n <("$TOPO" --shell --sysfs-root "$work/roce")
out=$("$TOPO" --shell --sysfs-root "$work/roce")
echo "$out" | grep -qx "export NCCL_IB_GID_INDEX='3'" && echo "ok: shell format" ||
    { echo "FAIL: shell format"; echo "$out"; failures=$((failures + 1)); }
out=$("$TOPO" --sysfs-root "$work/roce-nogid")
echo "$out" | grep -Eq '^notes:$' && echo "$out" | grep -Eq '^  NCCL_IB_GID_INDEX: no active RoCE port' &&
    echo "ok: notes in the text report" ||
    { echo "FAIL: notes in the text report"; echo "$out"; failures=$((failures + 1)); }
out=$("$TOPO" --shell --sysfs-root "$work/roce-nogid")
echo "$out" | grep -q '^# note on NCCL_IB_GID_INDEX: ' && ! echo "$out" | grep -q GID_INDEX= &&
    echo "ok: notes in shell exports" ||
    { echo "FAIL: notes in shell exports"; echo "$out"; failures=$((failures + 1)); }
out=$("$TOPO" --env --sysfs-root "$work/cloud-vm")
echo "$out" | grep -qx "NCCL_SOCKET_IFNAME==ens4" && echo "$out" | grep -qx "NCCL_IB_DISABLE=1" &&
    echo "ok: env-file format" || { echo "FAIL: env format"; echo "$out"; failures=$((failures + 1)); }
out=$("$TOPO" --sysfs-root "$work/p4de")
echo "$out" | grep -Eq '^GPU0 +X +NV12' && echo "$out" | grep -q "inter-node: EFA" &&
    echo "ok: text matrix" || { echo "FAIL: text matrix"; echo "$out"; failures=$((failures + 1)); }

out=$("$TOPO" --sysfs-root "$work/dgx-h100")
echo "$out" | grep -q "^ GPU0 0000:13:00.0 \[10de:2330\] H100 SXM5 80GB$" &&
    echo "ok: GPU PCI ids in the text report" ||
    { echo "FAIL: GPU PCI ids in the text report"; echo "$out"; failures=$((failures + 1)); }

# the backend line: what auto picks for each kind of buffer, and what this build lacks
out=$("$TOPO" --sysfs-root "$work/cpu-only")
echo "$out" | grep -qx "backend (SHARC_TRANSPORT=auto): shm+ucx for host buffers (no GPU)" &&
    echo "ok: backend line without GPUs" ||
    { echo "FAIL: backend line without GPUs"; echo "$out"; failures=$((failures + 1)); }
out=$("$TOPO" --sysfs-root "$work/p5")
echo "$out" | grep -Eqx "backend \(SHARC_TRANSPORT=auto\): nccl for GPU buffers, shm\+ucx for host buffers(; not in this build: .*)?" &&
    echo "ok: backend line with GPUs" ||
    { echo "FAIL: backend line with GPUs"; echo "$out"; failures=$((failures + 1)); }

# rails on Ethernet: none, the interface shared; a speed that is not known is not "0 Gb/s"
out=$("$TOPO" --sysfs-root "$work/cloud-vm")
echo "$out" | grep -qx "  GPU0 rails: none, TCP on ens4 shared by 1 GPU(s), 50 Gb/s expected" &&
    echo "ok: Ethernet rails" || { echo "FAIL: Ethernet rails"; echo "$out"; failures=$((failures + 1)); }
out=$("$TOPO" --sysfs-root "$work/cloud-vm-virtio")
echo "$out" | grep -qx "  GPU0 rails: none, TCP on eth0 shared by 1 GPU(s), bandwidth unknown" &&
    ! echo "$out" | grep -q "0 Gb/s" && echo "ok: unknown speed shown as unknown" ||
    { echo "FAIL: unknown speed"; echo "$out"; failures=$((failures + 1)); }
out=$("$TOPO" --nvidia-smi-topo "$FIX/smi_pcie.txt")
echo "$out" | grep -qx "  NIC0: mlx5_0       unknown    ports and rate unknown" &&
    echo "$out" | grep -qx "  GPU2 rails: mlx5_0 (SYS), bandwidth unknown" &&
    echo "ok: capture without rates" ||
    { echo "FAIL: capture without rates"; echo "$out"; failures=$((failures + 1)); }

# the CPU affinity column holds the longest list and stays apart from NUMA: dgx-h100's second
# socket has 56-111,168-223 (14 characters), and NUMA sits under its header on every row
out=$("$TOPO" --sysfs-root "$work/dgx-h100")
if echo "$out" | grep -Eq '^GPU4 .* 56-111,168-223 +1$' && echo "$out" | awk '
        /^ +GPU0 / { col = index($0, "NUMA"); hdr = 1; next }
        hdr && /^GPU[0-9]/ { if (substr($0, col) !~ /^[0-9]+$/ || substr($0, col - 1, 1) != " ") bad = 1; n++ }
        END { exit !(hdr && n == 8 && !bad) }'; then
    echo "ok: CPU affinity and NUMA columns apart"
else
    echo "FAIL: CPU affinity runs into NUMA"; echo "$out" | head -10; failures=$((failures + 1))
fi

# malformed input: partial results or a clean error, never a crash
head -c 300 "$FIX/smi_nvswitch.txt" > "$work/trunc.txt"
run_ok "truncated nvidia-smi text" "$TOPO" --json --nvidia-smi-topo "$work/trunc.txt"
{ printf '\tGPU0\tGPU1\n'; printf 'GPU0\t X \t%s\n' "$(head -c 2000000 /dev/zero | tr '\0' 'N')";
  printf 'GPU1\tNV4\t X \n'; } > "$work/huge.txt"
run_ok "huge line in nvidia-smi text" "$TOPO" --json --nvidia-smi-topo "$work/huge.txt"
printf 'no matrix here\n' > "$work/none.txt"
run_fail "text without a matrix" 10 "no nvidia-smi topo -m matrix" \
    "$TOPO" --nvidia-smi-topo "$work/none.txt"
head -c 700 "$FIX/nccl_topo.xml" > "$work/trunc.xml"
check_json xml-truncated --nccl-xml "$work/trunc.xml"
printf '<html/>' > "$work/html.xml"
run_fail "XML that is no topology" 10 "not an NCCL topology" "$TOPO" --nccl-xml "$work/html.xml"
run_fail "text that is no XML" 10 "not XML" "$TOPO" --nccl-xml "$FIX/smi_pcie.txt"
run_fail "missing file" 10 "cannot open" "$TOPO" --nccl-xml "$work/absent.xml"
run_fail "sysfs root that is no directory" 10 "not a directory" \
    "$TOPO" --sysfs-root "$work/absent"
finish
