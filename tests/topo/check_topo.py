#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_topo.py CASE FILE: asserts what `sharc-topo --json` said about one fixture (GPUs,
NICs, fabric, rails, distances, recommendations), or for the export-* cases what
`sharc-topo --export-xml` wrote. Prints each failed check and exits 1."""
import json
import sys
import xml.etree.ElementTree as ET

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def rec(t, key):
    """The recommendation for key: its value, "unset", or None."""
    for r in t["recommendations"]:
        if r["key"] == key:
            check(r["reason"] != "", "%s has a reason" % key)
            return "unset" if r["unset"] else r["value"]
    return None


def rec_reason(t, key):
    for r in t["recommendations"]:
        if r["key"] == key:
            return r["reason"]
    return ""


def transport_auto(t):
    """SHARC_TRANSPORT=auto everywhere; on GPU nodes the reason says what auto does there."""
    check(rec(t, "SHARC_TRANSPORT") == "auto", "SHARC_TRANSPORT=auto, got %s"
          % rec(t, "SHARC_TRANSPORT"))
    check(t["backend"]["transport"] == "auto", "backend line under SHARC_TRANSPORT=auto")
    check(t["backend"]["host"] == "shm+ucx", "host buffers through shm+ucx")
    why = rec_reason(t, "SHARC_TRANSPORT")
    if t["gpus"]:
        check(t["backend"]["gpu"] == "nccl", "GPU buffers through nccl")
        check("GPU buffers through NCCL" in why and "host buffers through shm" in why,
              "the reason says what auto does: %s" % why)
    else:
        check(t["backend"]["gpu"] == "-", "no GPU buffers")
    check(isinstance(t["backend"]["not_built"], list), "backends not built are listed")


def nic_names(t):
    return [n["name"] for n in t["nics"]]


def p5(t):
    check(len(t["gpus"]) == 8, "8 GPUs")
    check(all(g["model"] == "H100 SXM5 80GB" and g["sm"] == 90 for g in t["gpus"]), "H100 model")
    check(all(g["pci_id"] == "10de:2330" for g in t["gpus"]), "PCI ids")
    check(len(t["nics"]) == 32, "32 EFA devices, got %d" % len(t["nics"]))
    check(all(n["fabric"] == "EFA" and n["driver"] == "efa" for n in t["nics"]), "EFA by driver")
    check(t["nvswitches"] == 4, "4 NVSwitches")
    check(t["intra"] == "NVSwitch" and t["fabric"] == "EFA", "NVSwitch + EFA")
    check(t["gpu_gpu"][0][7] == "NV18" and t["gpu_gpu"][3][3] == "X", "NV18 between GPUs")
    g0 = t["gpus"][0]
    check(len(g0["nearest_nics"]) == 4 and len(g0["rails"]) == 32, "GPU0: 4 nearest of 32")
    check(g0["nearest_nics"] == ["rdmap20s0", "rdmap21s0", "rdmap22s0", "rdmap23s0"],
          "GPU0 rails: %s" % g0["nearest_nics"])
    check(abs(g0["net_gbps"] - 400) < 1e-6, "400 Gb/s per GPU, got %s" % g0["net_gbps"])
    names = nic_names(t)
    check(t["gpu_nic"][0][names.index("rdmap20s0")] == "PIX", "GPU0-own EFA PIX")
    check(t["gpu_nic"][0][names.index("rdmap36s0")] == "NODE", "GPU0-GPU1's EFA NODE")
    check(t["gpu_nic"][0][names.index("rdmap84s0")] == "SYS", "GPU0-GPU4's EFA SYS")
    check(rec(t, "FI_EFA_USE_DEVICE_RDMA") == "unset", "FI_EFA_USE_DEVICE_RDMA unset")
    check(rec(t, "NCCL_PROTO") == "unset", "NCCL_PROTO unset")
    check(rec(t, "NCCL_IB_HCA") is None, "no NCCL_IB_HCA on EFA")
    check(rec(t, "UCX_NET_DEVICES") == "ens32", "UCX over ENA")
    transport_auto(t)
    check(t["cpu"] == {"sockets": 2, "numa_nodes": 2}, "2 sockets, 2 NUMA nodes")
    check([n["name"] for n in t["netdevs"]] == ["ens32"], "virtual interfaces skipped: %s"
          % [n["name"] for n in t["netdevs"]])


def p4de(t):
    check(len(t["gpus"]) == 8 and len(t["nics"]) == 4, "8 GPUs, 4 NICs")
    check(all(g["model"] == "A100 SXM4 80GB" for g in t["gpus"]), "A100 model")
    check(t["intra"] == "NVSwitch" and t["fabric"] == "EFA", "NVSwitch + EFA")
    check(t["gpu_gpu"][1][6] == "NV12", "NV12")
    for g in range(8):
        gpu = t["gpus"][g]
        check(gpu["nearest_nics"] == [t["nics"][g // 2]["name"]], "GPU%d rail" % g)
        check(abs(gpu["net_gbps"] - 50) < 1e-6, "GPU%d: 100 Gb/s shared by 2 GPUs" % g)
    check(t["gpu_nic"][0][0] == "PIX" and t["gpu_nic"][0][1] == "NODE"
          and t["gpu_nic"][0][2] == "SYS", "GPU0 distances")
    check(rec(t, "NCCL_PROTO") == "unset", "NCCL_PROTO unset")


def dgx_h100(t):
    check(len(t["gpus"]) == 8 and len(t["nics"]) == 12, "8 GPUs, 12 RDMA devices")
    fabrics = [n["fabric"] for n in t["nics"]]
    check(fabrics.count("InfiniBand") == 10 and fabrics.count("RoCE") == 2, "8+2 IB, 2 RoCE")
    check(t["fabric"] == "InfiniBand" and t["intra"] == "NVSwitch", "IB + NVSwitch")
    for g in range(8):
        check(t["gpus"][g]["nearest_nics"] == ["mlx5_%d" % g], "GPU%d rail mlx5_%d" % (g, g))
        check(abs(t["gpus"][g]["net_gbps"] - 400) < 1e-6, "GPU%d 400 Gb/s" % g)
    check(t["gpu_nic"][0][0] == "PIX", "GPU0-mlx5_0 PIX")
    hca = rec(t, "NCCL_IB_HCA")
    check(hca == "=" + ",".join("mlx5_%d:1" % i for i in range(8)),
          "NCCL_IB_HCA exact, active IB ports only: %s" % hca)
    check(rec(t, "UCX_TLS") == "rc,sm,self", "UCX_TLS rc")
    check(rec(t, "NCCL_IB_GID_INDEX") is None, "no GID index on IB")
    net = {n["name"]: n for n in t["netdevs"]}
    check("bond0" not in net and "br0" not in net and "docker0" not in net, "virtual skipped")
    check(net["enp170s0f0np0"]["rdma"] == "mlx5_8", "RoCE netdev paired with mlx5_8")
    transport_auto(t)


def roce(t):
    check(len(t["gpus"]) == 2 and t["gpus"][0]["model"] == "A100 PCIe 80GB", "2 A100 PCIe")
    check(t["fabric"] == "RoCE", "RoCE fabric")
    check(t["intra"] == "host memory", "GPUs on two sockets: host memory")
    check(t["gpu_gpu"][0][1] == "SYS", "GPU0-GPU1 SYS")
    port = t["nics"][0]["ports"][0]
    check(len(port["gids"]) == 4, "4 GIDs")
    check([g["type"] for g in port["gids"]] == ["IB/RoCE v1", "RoCE v2"] * 2, "GID types")
    check(port["gids"][3]["ipv4"] and not port["gids"][1]["ipv4"], "IPv4-mapped GID")
    check(rec(t, "NCCL_IB_GID_INDEX") == "3", "GID index 3 (RoCE v2, IPv4)")
    check(rec(t, "NCCL_IB_HCA") == "=mlx5_0:1,mlx5_1:1", "NCCL_IB_HCA")
    check(t["gpu_nic"][0][0] == "PIX" and t["gpu_nic"][0][1] == "SYS"
          and t["gpu_nic"][1][0] == "SYS" and t["gpu_nic"][1][1] == "PIX",
          "GPU-NIC distances: own switch PIX, other socket SYS: %s" % t["gpu_nic"])
    check(t["gpus"][1]["nearest_nics"] == ["mlx5_1"], "GPU1 rail")
    check(abs(t["gpus"][0]["net_gbps"] - 100) < 1e-6, "100 Gb/s")
    check(t["notes"] == [], "no notes: %s" % t["notes"])


def roce_nogid(t):
    """The RoCE node whose interfaces have no IPv4 address: no GID index to recommend, and a
    note that says why and what to do."""
    check(t["fabric"] == "RoCE" and len(t["nics"][0]["ports"][0]["gids"]) == 3, "RoCE, 3 GIDs")
    check(rec(t, "NCCL_IB_GID_INDEX") is None and rec(t, "UCX_IB_GID_INDEX") is None,
          "no GID index recommended")
    check(rec(t, "NCCL_IB_HCA") == "=mlx5_0:1,mlx5_1:1", "NCCL_IB_HCA still")
    notes = [n for n in t["notes"] if n["key"] == "NCCL_IB_GID_INDEX"]
    check(len(notes) == 1, "a note on NCCL_IB_GID_INDEX: %s" % t["notes"])
    text = notes[0]["text"] if notes else ""
    for needle in ["RoCE v2 GID with an IPv4 address", "mlx5_0 port 1 on ens1f0np0",
                   "mlx5_1 port 1 on ens2f0np0", "configure an IPv4 address"]:
        check(needle in text, "note says '%s': %s" % (needle, text))


def cloud_vm(t):
    check(len(t["gpus"]) == 1 and t["gpus"][0]["model"] == "L4", "one L4")
    check(len(t["nics"]) == 0, "no RDMA")
    check(t["intra"] == "single GPU" and t["fabric"] == "Ethernet", "single GPU, Ethernet")
    check(t["eth_best"] == "ens4", "ens4 (up) beats ens5 (down)")
    check(rec(t, "NCCL_SOCKET_IFNAME") == "=ens4" and rec(t, "NCCL_IB_DISABLE") == "1",
          "socket recommendations")
    check(rec(t, "UCX_TLS") == "tcp,sm,self", "UCX over TCP")
    check(abs(t["gpus"][0]["net_gbps"] - 50) < 1e-6, "50 Gb/s")
    check(t["gpus"][0]["rails"] == [] and t["gpus"][0]["nearest_nics"] == [],
          "no rails on Ethernet: no RDMA NIC of its own")
    check({n["name"]: n["driver"] for n in t["netdevs"]} == {"ens4": "gve", "ens5": "gve"},
          "gve interfaces")
    transport_auto(t)


def cloud_vm_virtio(t):
    """virtio_net reports no speed: the bandwidth is unknown (null), not 0."""
    check(t["fabric"] == "Ethernet" and t["eth_best"] == "eth0", "TCP on eth0")
    check(t["netdevs"][0]["driver"] == "virtio_net" and t["netdevs"][0]["speed_mbps"] == -1,
          "virtio_net, speed unknown: %s" % t["netdevs"])
    check(t["gpus"][0]["rails"] == [], "no rails")
    check(t["gpus"][0]["net_gbps"] is None, "bandwidth unknown: %s" % t["gpus"][0]["net_gbps"])
    check(rec(t, "NCCL_SOCKET_IFNAME") == "=eth0" and "speed unknown" in rec_reason(
        t, "NCCL_SOCKET_IFNAME"), "eth0 recommended, its speed said unknown")


def eth_bond(t):
    """Ethernet with a bond and a bridge: their ports are never the interface to use."""
    net = {n["name"]: n for n in t["netdevs"]}
    check(sorted(net) == ["bond0", "eno1", "eno2", "enp3s0f0", "enp3s0f1", "enp5s0", "vmbr0"],
          "ports, bond and bridge listed; empty bridges and container interfaces not: %s"
          % sorted(net))
    check(net["bond0"]["kind"] == "bond" and net["bond0"]["speed_mbps"] == 50000, "bond0 50G")
    check(net["vmbr0"]["kind"] == "bridge" and net["vmbr0"]["speed_mbps"] == 10000,
          "vmbr0 at its port's 10G")
    check(net["enp3s0f0"]["master"] == "bond0" and net["eno2"]["master"] == "vmbr0"
          and net["eno1"]["master"] == "", "masters")
    check(all(n["ipv4"] is None for n in t["netdevs"]), "addresses unknown in a fixture")
    check(t["fabric"] == "Ethernet" and t["eth_best"] == "bond0",
          "TCP on bond0, not on a port of it: %s" % t["eth_best"])
    check(rec(t, "NCCL_SOCKET_IFNAME") == "=bond0" and rec(t, "UCX_NET_DEVICES") == "bond0",
          "bond0 recommended")
    check(t["gpus"][0]["numa"] == 0 and t["gpus"][1]["numa"] == -1, "GPU1 without a NUMA node")


def cpu_only(t):
    check(len(t["gpus"]) == 0 and t["intra"] == "none", "no GPU")
    check(len(t["nics"]) == 0 and t["gpu_nic"] == [], "no RDMA NIC")
    check(t["fabric"] == "Ethernet" and t["eth_best"] == "enp2s0", "Ethernet on enp2s0")
    check(rec(t, "NCCL_SOCKET_IFNAME") == "=enp2s0", "NCCL sockets on enp2s0")
    check(rec(t, "NCCL_IB_DISABLE") == "1", "no verbs probe")
    check(rec(t, "UCX_NET_DEVICES") == "enp2s0" and rec(t, "UCX_TLS") == "tcp,sm,self",
          "UCX over TCP on enp2s0")
    check(rec(t, "NCCL_IB_HCA") is None and rec(t, "NCCL_IB_GID_INDEX") is None, "no IB settings")
    transport_auto(t)
    check(t["cpu"] == {"sockets": 1, "numa_nodes": 1}, "1 socket")


def broken(t):
    check(len(t["warnings"]) >= 8, "warnings for the damage: %d" % len(t["warnings"]))
    check(len(t["gpus"]) == 2, "two readable GPUs of four")
    check(t["gpus"][0]["model"] == "H100 SXM5 80GB", "the good GPU is whole")
    check(t["gpus"][1]["numa"] == -1 and t["gpus"][1]["model"] == "", "garbage numa/device")
    check(all("escape0" != n["name"] for n in t["netdevs"]), "no escape from the tree")
    w = "\n".join(t["warnings"])
    for needle in ["cannot resolve", "outside the tree", "rate unreadable", "no readable state",
                   "no readable vendor", "without a readable class"]:
        check(needle in w, "warning '%s'" % needle)


def smi_common(t):
    """An nvidia-smi capture names NICs but not their kind, ports or rates: the fabric is
    unknown, nothing about the network is recommended, bandwidth unknown."""
    check(t["fabric"] == "unknown", "fabric not in the text")
    check([r["key"] for r in t["recommendations"]] == ["SHARC_TRANSPORT"],
          "SHARC_TRANSPORT only: %s" % [r["key"] for r in t["recommendations"]])
    transport_auto(t)
    check(all(g["net_gbps"] is None for g in t["gpus"]), "bandwidth unknown")
    check(all(n["ports"] == [] and n["fabric"] == "unknown" for n in t["nics"]), "NICs by name")


def smi_nvswitch(t):
    smi_common(t)
    check(len(t["gpus"]) == 8 and nic_names(t) == ["mlx5_%d" % i for i in range(4)],
          "8 GPUs, NIC legend names")
    check(t["intra"] == "NVSwitch", "NVSwitch inferred from NV18 to all 7 peers")
    check(t["gpu_gpu"][2][5] == "NV18", "NV18")
    check(t["gpus"][5]["nearest_nics"] == ["mlx5_2"], "GPU5 rail mlx5_2")
    check(t["gpus"][5]["rails"][:3] == ["mlx5_2", "mlx5_3", "mlx5_0"], "rails nearest first: %s"
          % t["gpus"][5]["rails"])
    check(t["gpus"][4]["numa"] == 1, "NUMA affinity column")
    check(t["fabric"] == "unknown", "fabric not in the text")
    check(all(g["pci_id"] == "" and g["model"] == "" for g in t["gpus"]), "no PCI ids in the text")


def smi_pcie(t):
    smi_common(t)
    check(len(t["gpus"]) == 4 and nic_names(t) == ["mlx5_0"], "4 GPUs, old-style NIC column")
    check(t["intra"] == "host memory", "PCIe-only across sockets: host memory")
    check(t["gpu_gpu"][2][3] == "PHB" and t["gpu_gpu"][0][2] == "SYS", "PHB/SYS cells")
    check(t["gpu_nic"][1][0] == "NODE", "GPU1-NIC NODE")


def smi_shared_switch(t):
    smi_common(t)
    check(len(t["gpus"]) == 2 and nic_names(t) == ["mlx5_0", "mlx5_bond_0"], "legend")
    check(t["intra"] == "PCIe P2P", "PCIe P2P under one switch")
    for g in range(2):
        check(t["gpus"][g]["nearest_nics"] == ["mlx5_0"], "GPU%d shares mlx5_0" % g)
        check(t["gpus"][g]["rails"] == ["mlx5_0", "mlx5_bond_0"], "rails order")


def nccl_xml(t):
    check(len(t["gpus"]) == 3 and nic_names(t) == ["mlx5_0", "mlx5_1"], "3 GPUs, 2 NICs")
    check(t["intra"] == "NVSwitch" and t["nvswitches"] == 1, "NVSwitch from nvlink tclass")
    check(t["gpu_gpu"][0][2] == "NV18", "NV18 through the switch")
    check(t["gpu_nic"][0][0] == "PIX" and t["gpu_nic"][1][0] == "PHB"
          and t["gpu_nic"][0][1] == "SYS", "distances from nesting")
    check(t["gpus"][0]["nearest_nics"] == ["mlx5_0"], "GPU0 rail")
    check(t["gpus"][0]["sm"] == 90 and t["gpus"][2]["numa"] == 1, "sm, numa")
    check(all(g["pci_id"] == "10de:2330" and g["model"] == "H100 SXM5 80GB" for g in t["gpus"]),
          "PCI ids and model from the <pci> elements")
    check(abs(t["gpus"][2]["net_gbps"] - 400) < 1e-6, "400 Gb/s from speed=400000")


def xml_truncated(t):
    """nccl_topo.xml cut inside the first NIC: what came before it, and a warning."""
    check(len(t["gpus"]) == 1 and t["gpus"][0]["busid"] == "0000:11:00.0", "the first GPU")
    check(nic_names(t) == ["mlx5_0"], "the NIC cut short, by name: %s" % nic_names(t))
    check(t["gpu_nic"][0][0] == "PIX", "its distance")
    check(any("not well-formed" in w and "line" in w for w in t["warnings"]),
          "a warning that says where: %s" % t["warnings"])


def xml_roundtrip(t):
    """p5 exported as NCCL XML and read back: distances and rails survive."""
    check(len(t["gpus"]) == 8 and len(t["nics"]) == 32, "8 GPUs, 32 NICs back")
    check(t["intra"] == "NVSwitch", "NVSwitch back")
    check(all(g["pci_id"] == "10de:2330" for g in t["gpus"]), "PCI ids back")
    check(t["gpus"][0]["nearest_nics"] == ["rdmap20s0", "rdmap21s0", "rdmap22s0", "rdmap23s0"],
          "GPU0 rails back: %s" % t["gpus"][0]["nearest_nics"])
    names = nic_names(t)
    check(t["gpu_nic"][0][names.index("rdmap20s0")] == "PIX", "PIX back")
    check(t["gpu_nic"][0][names.index("rdmap84s0")] == "SYS", "SYS back")
    check(abs(t["gpus"][0]["net_gbps"] - 400) < 1e-6, "bandwidth back")


def export_common(x):
    """What any NCCL XML export must be: one <cpu> per NUMA node, no <nic> without a <net>."""
    ids = [c.get("numaid") for c in x.iter("cpu")]
    check(len(ids) == len(set(ids)), "one <cpu> per numaid: %s" % ids)
    check(all(n.find("net") is not None for n in x.iter("nic")), "no empty <nic>")


def export_dgx_h100(x):
    """dgx-h100: the active InfiniBand ports only (not the down mlx5_10/11, not RoCE)."""
    export_common(x)
    nets = sorted((n.get("name") for n in x.iter("net")), key=lambda s: int(s.split("_")[1]))
    check(nets == ["mlx5_%d" % i for i in range(8)], "nets: %s" % nets)
    check(len(list(x.iter("nic"))) == 8, "8 <nic> elements")


def export_eth_bond(x):
    """eth-bond: GPU0 on node 0 and GPU1 on no known node share node 0's element."""
    export_common(x)
    cpus = list(x.iter("cpu"))
    check(len(cpus) == 1 and cpus[0].get("numaid") == "0", "one <cpu numaid=0>")
    check(len(list(x.iter("gpu"))) == 2, "both GPUs")


def xml_roundtrip_eth_bond(t):
    check(len(t["gpus"]) == 2 and all(g["numa"] == 0 for g in t["gpus"]), "2 GPUs on node 0")
    check(all(g["model"] == "L40S" for g in t["gpus"]), "L40S from the PCI ids")


def bus_order(t, buses):
    """GPUs numbered by PCI address: GPUn is the n-th lowest bus id, in the list, the JSON
    indices and the matrix rows alike."""
    got = [g["busid"] for g in t["gpus"]]
    check(got == ["0000:%02x:00.0" % b for b in buses] if isinstance(buses[0], int) else
          got == buses, "GPUs in PCI order: %s" % got)
    check([g["index"] for g in t["gpus"]] == list(range(len(got))), "index is position")
    check(len(t["gpu_gpu"]) == len(got) and all(t["gpu_gpu"][i][i] == "X"
                                                 for i in range(len(got))), "matrix rows")
    busids = [n["busid"] for n in t["nics"]]
    check(busids == sorted(busids), "NICs in PCI order: %s" % busids)


def hgx_h100_ib(t):
    """DGX H100 layout: GPU buses 18 2a 3a 5d 9a ab ba db, each GPU with its own NDR HCA on
    its PCIe switch; the IPoIB interfaces are not Ethernet."""
    bus_order(t, [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB])
    check(t["fabric"] == "InfiniBand" and t["intra"] == "NVSwitch", "IB + NVSwitch")
    check(nic_names(t) == ["mlx5_%d" % i for i in range(8)], "mlx5_0..7: %s" % nic_names(t))
    for g in range(8):
        gpu = t["gpus"][g]
        check(gpu["nearest_nics"] == ["mlx5_%d" % g], "GPU%d rail mlx5_%d: %s"
              % (g, g, gpu["nearest_nics"]))
        check(t["gpu_nic"][g][g] == "PIX" and gpu["numa"] == g // 4, "GPU%d PIX, NUMA" % g)
        check(abs(gpu["net_gbps"] - 400) < 1e-6, "GPU%d 400 Gb/s" % g)
    check(t["gpu_nic"][0] == ["PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"],
          "GPU0's row follows the NICs: %s" % t["gpu_nic"][0])
    net = {n["name"]: n for n in t["netdevs"]}
    check(all(net[n]["ipoib"] for n in net if n.startswith("ibp")) and not net["eno1"]["ipoib"],
          "IPoIB interfaces marked")
    check(t["eth_best"] == "eno1" and t["socket_ifs"] == ["eno1"],
          "IPoIB is not counted as Ethernet: %s %s" % (t["eth_best"], t["socket_ifs"]))
    check(rec(t, "NCCL_IB_HCA") == "=" + ",".join("mlx5_%d:1" % i for i in range(8)), "IB_HCA")
    check(t["machine"] == {"product": "DGXH100", "vendor": "NVIDIA"}, "DMI: %s" % t["machine"])
    check(t["warnings"] == [], "no warnings: %s" % t["warnings"])


def h100_roce(t):
    """Two 200G RoCE ports per GPU: both are the GPU's nearest rails."""
    bus_order(t, [0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xBB, 0xCB, 0xDB])
    check(t["fabric"] == "RoCE" and len(t["nics"]) == 16, "16 RoCE ports")
    check(nic_names(t) == ["mlx5_%d" % i for i in range(16)], "names in PCI order")
    for g in range(8):
        gpu = t["gpus"][g]
        check(gpu["nearest_nics"] == ["mlx5_%d" % (2 * g), "mlx5_%d" % (2 * g + 1)],
              "GPU%d rails: %s" % (g, gpu["nearest_nics"]))
        check(abs(gpu["net_gbps"] - 400) < 1e-6, "GPU%d 2 x 200 Gb/s" % g)
    check(rec(t, "NCCL_IB_HCA") == "=" + ",".join("mlx5_%d:1" % i for i in range(16)), "IB_HCA")
    check(rec(t, "NCCL_IB_GID_INDEX") == "3", "GID 3")
    check(rec(t, "NCCL_SOCKET_IFNAME") is None, "no sockets on RoCE")


def gcp_a3(t):
    """Five 200G gVNIC interfaces: all of them for NCCL's sockets and UCX, each GPU's nearest
    first; NCCL tunes its socket threads for Google's NICs itself."""
    bus_order(t, [0x04, 0x05, 0x0A, 0x0B, 0x84, 0x85, 0x8A, 0x8B])
    ifs = ["enp0s12", "enp6s0", "enp12s0", "enp134s0", "enp140s0"]
    check(t["fabric"] == "Ethernet" and t["socket_ifs"] == ifs, "5 interfaces: %s"
          % t["socket_ifs"])
    check(rec(t, "NCCL_SOCKET_IFNAME") == "=" + ",".join(ifs), "NCCL_SOCKET_IFNAME: %s"
          % rec(t, "NCCL_SOCKET_IFNAME"))
    why = rec_reason(t, "NCCL_SOCKET_IFNAME")
    check("5 interfaces" in why and "leaves 4 idle" in why and "Google Cloud" in why,
          "reason: %s" % why)
    check(rec(t, "UCX_NET_DEVICES") == ",".join(ifs), "UCX_NET_DEVICES: %s"
          % rec(t, "UCX_NET_DEVICES"))
    check(rec(t, "UCX_MAX_RNDV_RAILS") == "4", "UCX_MAX_RNDV_RAILS=4")
    check(rec(t, "NCCL_SOCKET_NTHREADS") is None and rec(t, "NCCL_NSOCKS_PERTHREAD") is None,
          "NCCL tunes gVNIC sockets itself")
    for g, nic in enumerate(["enp6s0"] * 2 + ["enp12s0"] * 2 + ["enp134s0"] * 2 +
                            ["enp140s0"] * 2):
        gpu = t["gpus"][g]
        check(gpu["nearest_nics"] == [nic] and gpu["rails"][0] == nic and
              sorted(gpu["rails"]) == sorted(ifs), "GPU%d rails: %s" % (g, gpu["rails"]))
        check(abs(gpu["net_gbps"] - 100) < 1e-6, "GPU%d: 200 Gb/s shared by 2" % g)
    check(all(n["pci_vendor"] == "1ae0" for n in t["netdevs"]), "gVNIC vendor")


def l40s_eth(t):
    """Four 100G E810 ports and a 1G management port: the four for sockets, with NCCL's
    socket threads raised (NCCL does not tune Intel NICs itself)."""
    bus_order(t, [0x18, 0x19, 0x3A, 0x3B, 0x9A, 0x9B, 0xBA, 0xBB])
    ifs = ["enp26s0", "enp60s0", "enp156s0", "enp188s0"]
    check(t["socket_ifs"] == ifs, "the 100G ports, not eno1: %s" % t["socket_ifs"])
    check(rec(t, "NCCL_SOCKET_IFNAME") == "=" + ",".join(ifs), "NCCL_SOCKET_IFNAME")
    check(rec(t, "NCCL_SOCKET_NTHREADS") == "4" and rec(t, "NCCL_NSOCKS_PERTHREAD") == "4",
          "socket threads for 100G")
    check(rec(t, "UCX_NET_DEVICES") == ",".join(ifs) and rec(t, "UCX_MAX_RNDV_RAILS") == "4",
          "UCX multi-rail")
    check(t["intra"] == "host memory", "pairs on switches, across sockets: host memory")
    for g in range(8):
        check(t["gpus"][g]["nearest_nics"] == [ifs[g // 2]], "GPU%d rail" % g)
        check(abs(t["gpus"][g]["net_gbps"] - 50) < 1e-6, "GPU%d 50 Gb/s" % g)


def p4d(t):
    """p4d.24xlarge: four ENIs and four EFA devices: UCX over all four ENIs, FI_PROVIDER=efa."""
    bus_order(t, ["0000:10:1c.0", "0000:10:1d.0", "0000:20:1c.0", "0000:20:1d.0",
                  "0000:90:1c.0", "0000:90:1d.0", "0000:a0:1c.0", "0000:a0:1d.0"])
    efa = ["rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27"]
    check(t["fabric"] == "EFA" and nic_names(t) == efa, "4 EFA: %s" % nic_names(t))
    check(all(n["pci_id"] == "1d0f:efa1" for n in t["nics"]), "EFA PCI ids")
    check(t["socket_ifs"] == ["ens16", "ens32", "ens144", "ens160"], "4 ENIs")
    check(rec(t, "UCX_NET_DEVICES") == "ens16,ens32,ens144,ens160", "UCX over the 4 ENIs: %s"
          % rec(t, "UCX_NET_DEVICES"))
    check(rec(t, "UCX_MAX_RNDV_RAILS") == "4", "UCX_MAX_RNDV_RAILS")
    check(rec(t, "FI_PROVIDER") == "efa", "FI_PROVIDER=efa")
    check(rec(t, "FI_EFA_USE_DEVICE_RDMA") == "unset" and "p4d.24xlarge: its EFA reads remote "
          "memory" in rec_reason(t, "FI_EFA_USE_DEVICE_RDMA"), "device RDMA by instance type")
    for g in range(8):
        check(t["gpus"][g]["nearest_nics"] == [efa[g // 2]], "GPU%d rail %s" % (g, efa[g // 2]))
    check(t["machine"]["product"] == "p4d.24xlarge", "instance type")


def g5_efa(t):
    check(t["fabric"] == "EFA" and all(g["model"] == "A10G" for g in t["gpus"]), "g5: A10G, EFA")
    why = rec_reason(t, "FI_EFA_USE_DEVICE_RDMA")
    check(rec(t, "FI_EFA_USE_DEVICE_RDMA") == "unset" and "no RDMA read" in why and
          "abort" in why, "no device RDMA on g5: %s" % why)


def hgx_smi(t):
    """sysfs and a capture of the same machine: the capture's GPU order is sysfs's."""
    hgx_h100_ib(t)


def hgx_smi_swapped(t):
    """A capture whose rows GPU0 and GPU4 are swapped: warnings, no renumbering."""
    bus_order(t, [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB])
    w = "\n".join(t["warnings"])
    check("the capture's GPU0 looks like the GPU at 0000:9a:00.0 (GPU4 by PCI address" in w and
          "the capture's GPU4 looks like the GPU at 0000:18:00.0 (GPU0" in w,
          "order warnings: %s" % w)
    check(t["gpus"][0]["numa"] == 0 and t["gpus"][4]["numa"] == 1, "sysfs NUMA kept")


def xml_roundtrip_hgx(t):
    """hgx-h100-ib exported and read back: still in PCI order, each GPU's rail its own HCA."""
    bus_order(t, [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB])
    for g in range(8):
        check(t["gpus"][g]["nearest_nics"] == ["mlx5_%d" % g], "GPU%d rail back" % g)


def export_hgx_h100_ib(x):
    """<gpu dev=N> is the N-th GPU by PCI address, in the <pci> element of its bus id."""
    export_common(x)
    devs = {}
    for pci in x.iter("pci"):
        for gpu in pci.findall("gpu"):
            devs[int(gpu.get("dev"))] = pci.get("busid")
    want = ["0000:%02x:00.0" % b for b in [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]]
    check([devs.get(i) for i in range(8)] == want, "dev numbers by bus id: %s" % devs)


XML_CASES = {"export-dgx-h100": export_dgx_h100, "export-eth-bond": export_eth_bond,
             "export-hgx-h100-ib": export_hgx_h100_ib}

CASES = {f.__name__.replace("_", "-"): f for f in [
    p5, p4de, dgx_h100, roce, roce_nogid, cloud_vm, cloud_vm_virtio, eth_bond, cpu_only, broken, smi_nvswitch, smi_pcie,
    smi_shared_switch, nccl_xml, xml_truncated, xml_roundtrip, xml_roundtrip_eth_bond,
    hgx_h100_ib, h100_roce, gcp_a3, l40s_eth, p4d, g5_efa, hgx_smi, hgx_smi_swapped,
    xml_roundtrip_hgx]}

if __name__ == "__main__":
    case, path = sys.argv[1], sys.argv[2]
    try:
        if case in XML_CASES:
            XML_CASES[case](ET.parse(path).getroot())
        else:
            with open(path) as f:
                CASES[case](json.load(f))
    except (KeyError, IndexError, TypeError) as e:
        # a field missing from the output fails the case after what was checked before it
        failures.append("%s %s" % (type(e).__name__, e))
    for what in failures:
        print("FAIL: %s: %s" % (case, what))
    sys.exit(1 if failures else 0)
