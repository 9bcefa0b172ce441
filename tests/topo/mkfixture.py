#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""mkfixture.py MACHINE DIR: writes a tree laid out like /sys for one machine type into DIR.

Devices live under devices/pciDDDD:BB/<root port>/<switch ports>/<function>, and the class
entries (bus/pci/devices, class/infiniband, class/net, driver links, class/dmi/id) are
relative symlinks into that tree, as on a real machine. Machines: p5 (8 H100, NVSwitch, 32
EFA), p4de (8 A100, NVSwitch, 4 EFA), dgx-h100 (8 H100, 8 InfiniBand HCAs, 2 RoCE storage
ports, 2 IB ports down), roce (2 A100 PCIe, 2 RoCE NICs with GID tables), roce-nogid (the same
without the RoCE v2 IPv4 GIDs), cloud-vm (1 L4, gve Ethernet), cloud-vm-virtio (the same with
a virtio_net interface of unknown speed), eth-bond (2 L40S, Ethernet with a bond and a bridge),
cpu-only (one Ethernet port), broken (malformed entries of every kind).

The 8-GPU machines laid out like real ones have GPUs on buses whose hexadecimal order is not
their name order (0x18 sorts after 0x9a by name), created in a shuffled order: hgx-h100-ib
(DGX H100: 8 NDR HCAs with IPoIB, NVSwitch), h100-roce (two 200G RoCE ports per GPU),
gcp-a3 (five 200G gVNIC interfaces, GPUDirect-TCPX style), l40s-eth (eight L40S, four 100G
E810 ports and a 1G management port), p4d (p4d.24xlarge: four ENIs and four EFA devices),
g5-efa (g5.48xlarge: EFA without RDMA read).
"""
import os
import random
import sys

NVIDIA = 0x10DE
MELLANOX = 0x15B3
AMAZON = 0x1D0F


class Tree:
    def __init__(self, root):
        self.root = root
        os.makedirs(root, exist_ok=True)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")

    def link(self, rel, target_rel):
        """Symlink root/rel -> root/target_rel, written relative like sysfs does."""
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        target = os.path.relpath(os.path.join(self.root, target_rel), os.path.dirname(path))
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)

    def pci(self, host, chain, vendor, device, cls, numa, driver=None):
        """A PCI function at devices/<host>/<chain...>; bridges on the way get bridge files."""
        rel = "devices/" + host
        for i, busid in enumerate(chain):
            rel += "/" + busid
            last = i == len(chain) - 1
            if not os.path.exists(os.path.join(self.root, rel, "class")) or last:
                self.write(rel + "/vendor", "0x%04x" % (vendor if last else 0x1000))
                self.write(rel + "/device", "0x%04x" % (device if last else 0xC030))
                self.write(rel + "/class", "0x%06x" % (cls if last else 0x060400))
                self.write(rel + "/numa_node", str(numa))
                self.link("bus/pci/devices/" + busid, rel)
        if driver:
            os.makedirs(os.path.join(self.root, "bus/pci/drivers", driver), exist_ok=True)
            self.link(rel + "/driver", "bus/pci/drivers/" + driver)
        return rel

    def rdma(self, pcirel, name, ports):
        rel = pcirel + "/infiniband/" + name
        for num, port in enumerate(ports, 1):
            prel = "%s/ports/%d" % (rel, num)
            self.write(prel + "/state", port.get("state", "4: ACTIVE"))
            self.write(prel + "/link_layer", port["link_layer"])
            self.write(prel + "/rate", port["rate"])
            for index, gid, gtype, ndev in port.get("gids", []):
                self.write("%s/gids/%d" % (prel, index), gid)
                self.write("%s/gid_attrs/types/%d" % (prel, index), gtype)
                self.write("%s/gid_attrs/ndevs/%d" % (prel, index), ndev)
        self.link(rel + "/device", pcirel)
        self.link("class/infiniband/" + name, rel)

    def net(self, pcirel, name, speed, up=True, master=None, arptype=None):
        """An interface; master names the bond or bridge it is a port of (made first);
        arptype is its "type" (1 Ethernet, 32 IPoIB), left out when None."""
        if pcirel is None:
            rel = "devices/virtual/net/" + name
        else:
            rel = pcirel + "/net/" + name
            self.link(rel + "/device", pcirel)
        if speed is not None:
            self.write(rel + "/speed", str(speed))
        if arptype is not None:
            self.write(rel + "/type", str(arptype))
        self.write(rel + "/operstate", "up" if up else "down")
        if master is not None:
            self.link(rel + "/master", "devices/virtual/net/" + master)
            self.link("devices/virtual/net/%s/lower_%s" % (master, name), rel)
        self.link("class/net/" + name, rel)
        return rel

    def bond(self, name, speed, up=True):
        rel = self.net(None, name, speed, up)
        self.write(rel + "/bonding/mode", "802.3ad 4")
        return rel

    def bridge(self, name, up=True):
        rel = self.net(None, name, None, up)
        os.makedirs(os.path.join(self.root, rel, "bridge"), exist_ok=True)
        return rel

    def dmi(self, vendor, product):
        """The DMI identity: the instance type on a cloud VM."""
        self.write("devices/virtual/dmi/id/sys_vendor", vendor)
        self.write("devices/virtual/dmi/id/product_name", product)
        self.link("class/dmi/id", "devices/virtual/dmi/id")

    def cpus(self, sockets, per_socket, numa_lists):
        for cpu in range(sockets * per_socket):
            self.write("devices/system/cpu/cpu%d/topology/physical_package_id" % cpu,
                       str(cpu // per_socket))
        for node, cpulist in enumerate(numa_lists):
            self.write("devices/system/node/node%d/cpulist" % node, cpulist)

    def virtual_ifaces(self):
        self.net(None, "lo", None)
        self.net(None, "docker0", None, up=False)
        self.net(None, "veth1a2b3c", 10000)
        bridge = self.net(None, "br0", None)
        os.makedirs(os.path.join(self.root, bridge, "bridge"), exist_ok=True)


def gid_v4(a, b, c, d):
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)


def ena(t, numa=0):
    rel = t.pci("pci0000:00", ["0000:00:05.0"], AMAZON, 0xEC20, 0x020000, numa, "ena")
    t.net(rel, "ens32", None)  # ena does not report a speed: reading it fails


def efa_port():
    return [{"link_layer": "Unspecified", "rate": "100 Gb/sec (4X EDR)",
             "gids": [(0, "fe80:0000:0000:0000:0000:0000:0000:0001", "", "")]}]


def nvswitches(t, count, device):
    for s in range(count):
        busid = "0000:%02x:00.0" % (0xC0 + s)
        t.pci("pci0000:%02x" % (0xC0 + s), ["0000:%02x:01.0" % (0xC0 + s), busid], NVIDIA,
              device, 0x068000, 1)


def p5(t):
    """8 H100: each behind its own PCIe switch with 4 EFA devices, one host bridge each."""
    t.dmi("Amazon EC2", "p5.48xlarge")
    t.cpus(2, 4, ["0-47,96-143", "48-95,144-191"])
    for g in range(8):
        base = 0x10 + g * 0x10
        host, rp, up = "pci0000:%02x" % base, "0000:%02x:01.0" % base, "0000:%02x:00.0" % (base + 1)
        numa = g // 4
        gpu_bus = base + 3
        t.pci(host, [rp, up, "0000:%02x:00.0" % (base + 2), "0000:%02x:00.0" % gpu_bus], NVIDIA,
              0x2330, 0x030200, numa, "nvidia")
        for n in range(4):
            bus = base + 4 + n
            rel = t.pci(host, [rp, up, "0000:%02x:%02x.0" % (base + 2, n + 1),
                               "0000:%02x:00.0" % bus], AMAZON, 0xEFA2, 0x020000, numa, "efa")
            t.rdma(rel, "rdmap%ds0" % bus, efa_port())
    nvswitches(t, 4, 0x22A3)
    ena(t)
    t.virtual_ifaces()


def p4de(t):
    """8 A100 in pairs behind 4 PCIe switches, one EFA device per switch."""
    t.cpus(2, 4, ["0-23,48-71", "24-47,72-95"])
    for s in range(4):
        base = 0x10 + s * 0x20
        host, rp, up = "pci0000:%02x" % base, "0000:%02x:01.0" % base, "0000:%02x:00.0" % (base + 1)
        numa = s // 2
        for g in range(2):
            t.pci(host, [rp, up, "0000:%02x:%02x.0" % (base + 2, g),
                         "0000:%02x:00.0" % (base + 3 + g)], NVIDIA, 0x20B2, 0x030200, numa,
                  "nvidia")
        bus = base + 8
        rel = t.pci(host, [rp, up, "0000:%02x:08.0" % (base + 2), "0000:%02x:00.0" % bus], AMAZON,
                    0xEFA1, 0x020000, numa, "efa")
        t.rdma(rel, "rdmap%ds0" % bus, efa_port())
    nvswitches(t, 6, 0x1AF1)
    ena(t)


def dgx_h100(t):
    """8 H100 each sharing a switch with one NDR HCA; a dual-port RoCE storage NIC; two
    more IB HCAs whose ports are down; a bond over the storage ports."""
    t.cpus(2, 4, ["0-55,112-167", "56-111,168-223"])
    for g in range(8):
        base = 0x10 + g * 0x10
        host, rp, up = "pci0000:%02x" % base, "0000:%02x:01.0" % base, "0000:%02x:00.0" % (base + 1)
        numa = g // 4
        t.pci(host, [rp, up, "0000:%02x:00.0" % (base + 2), "0000:%02x:00.0" % (base + 3)], NVIDIA,
              0x2330, 0x030200, numa, "nvidia")
        rel = t.pci(host, [rp, up, "0000:%02x:01.0" % (base + 2), "0000:%02x:00.0" % (base + 4)],
                    MELLANOX, 0x1021, 0x020700, numa, "mlx5_core")
        t.rdma(rel, "mlx5_%d" % g, [{"link_layer": "InfiniBand", "rate": "400 Gb/sec (4X NDR)",
                                     "gids": [(0, "fe80:0000:0000:0000:a088:c203:0012:3450",
                                               "IB/RoCE v1", "")]}])
        t.net(rel, "ibp%ds0" % (base + 4), 400000)  # IPoIB
    for f in range(2):
        rel = t.pci("pci0000:a0", ["0000:a0:01.0", "0000:aa:00.%d" % f], MELLANOX, 0x1021,
                    0x020000, 1, "mlx5_core")
        ifname = "enp170s0f%dnp%d" % (f, f)
        t.rdma(rel, "mlx5_%d" % (8 + f), [{"link_layer": "Ethernet", "rate": "200 Gb/sec (2X NDR)",
                                           "gids": [(3, gid_v4(10, 1, 0, 10 + f), "RoCE v2",
                                                     ifname)]}])
        t.net(rel, ifname, 200000)
    for d in range(2):
        rel = t.pci("pci0000:b0", ["0000:b0:01.0", "0000:b%d:00.0" % (1 + d)], MELLANOX, 0x1021,
                    0x020700, 1, "mlx5_core")
        t.rdma(rel, "mlx5_%d" % (10 + d), [{"link_layer": "InfiniBand", "state": "1: DOWN",
                                            "rate": "10 Gb/sec (4X SDR)"}])
    nvswitches(t, 4, 0x22A3)
    t.net(None, "bond0", None)
    t.virtual_ifaces()


def roce(t, v2_ipv4=True):
    """2 A100 PCIe on two sockets, each with a 100G RoCE NIC on its switch. Without v2_ipv4
    the RoCE v2 GIDs with an IPv4 address are missing, as when the interfaces have no IPv4
    address."""
    t.cpus(2, 2, ["0-31", "32-63"])
    for g in range(2):
        base = 0x20 + g * 0x60
        host, rp, up = "pci0000:%02x" % base, "0000:%02x:01.0" % base, "0000:%02x:00.0" % (base + 1)
        t.pci(host, [rp, up, "0000:%02x:00.0" % (base + 2), "0000:%02x:00.0" % (base + 3)], NVIDIA,
              0x20B5, 0x030200, g, "nvidia")
        rel = t.pci(host, [rp, up, "0000:%02x:01.0" % (base + 2), "0000:%02x:00.0" % (base + 4)],
                    MELLANOX, 0x101D, 0x020000, g, "mlx5_core")
        ifname = "ens%df0np0" % (g + 1)
        ll = "fe80:0000:0000:0000:0e42:a1ff:fe00:%04x" % g
        gids = [(0, ll, "IB/RoCE v1", ifname), (1, ll, "RoCE v2", ifname),
                (2, gid_v4(192, 168, 10 + g, 5), "IB/RoCE v1", ifname)]
        if v2_ipv4:
            gids.append((3, gid_v4(192, 168, 10 + g, 5), "RoCE v2", ifname))
        t.rdma(rel, "mlx5_%d" % g, [{"link_layer": "Ethernet", "rate": "100 Gb/sec (4X EDR)",
                                     "gids": gids}])
        t.net(rel, ifname, 100000)
    rel = t.pci("pci0000:00", ["0000:00:1f.6"], 0x8086, 0x15B8, 0x020000, 0, "e1000e")
    t.net(rel, "eno1", 1000)
    t.virtual_ifaces()


def cloud_vm(t, virtio=False):
    """One L4 and a gVNIC, as on a cloud VM; a second interface that is down. With virtio,
    one virtio_net interface instead, which reports its speed as -1 (unknown)."""
    t.cpus(1, 4, ["0-3"])
    t.pci("pci0000:00", ["0000:00:03.0"], NVIDIA, 0x27B8, 0x030200, -1, "nvidia")
    if virtio:
        vrel = t.pci("pci0000:00", ["0000:00:04.0"], 0x1AF4, 0x1041, 0x020000, -1,
                     "virtio-pci") + "/virtio1"
        os.makedirs(os.path.join(t.root, "bus/virtio/drivers/virtio_net"), exist_ok=True)
        t.link(vrel + "/driver", "bus/virtio/drivers/virtio_net")
        t.net(vrel, "eth0", -1)
    else:
        t.net(t.pci("pci0000:00", ["0000:00:04.0"], 0x1AE0, 0x0042, 0x020000, -1, "gve"),
              "ens4", 50000)
        t.net(t.pci("pci0000:00", ["0000:00:05.0"], 0x1AE0, 0x0042, 0x020000, -1, "gve"),
              "ens5", 50000, up=False)
    t.virtual_ifaces()


def eth_bond(t):
    """Two L40S and Ethernet only: bond0 (802.3ad over two 25G ports), a VM bridge vmbr0 over a
    10G port, a 1G management port, and a 100G port that is down. The ports of the bond and
    the bridge have no address of their own: bond0 is the interface to use. The firmware
    leaves GPU1's numa_node at -1, GPU0 on node 0."""
    t.cpus(1, 16, ["0-15"])
    t.pci("pci0000:00", ["0000:00:01.0", "0000:01:00.0"], NVIDIA, 0x26B9, 0x030200, 0, "nvidia")
    t.pci("pci0000:00", ["0000:00:02.0", "0000:02:00.0"], NVIDIA, 0x26B9, 0x030200, -1, "nvidia")
    t.bond("bond0", 50000)
    t.bridge("vmbr0")
    for f in range(2):
        rel = t.pci("pci0000:00", ["0000:00:03.0", "0000:03:00.%d" % f], 0x8086, 0x159B,
                    0x020000, 0, "ice")
        t.net(rel, "enp3s0f%d" % f, 25000, master="bond0")
    t.net(t.pci("pci0000:00", ["0000:00:1c.0", "0000:04:00.0"], 0x8086, 0x1563, 0x020000, 0,
                "ixgbe"), "eno2", 10000, master="vmbr0")
    t.net(t.pci("pci0000:00", ["0000:00:1f.6"], 0x8086, 0x15B8, 0x020000, 0, "e1000e"), "eno1",
          1000)
    t.net(t.pci("pci0000:00", ["0000:00:05.0", "0000:05:00.0"], 0x15B3, 0x101D, 0x020000, 0,
                "mlx5_core"), "enp5s0", 100000, up=False)
    t.virtual_ifaces()


def cpu_only(t):
    t.cpus(1, 8, ["0-7"])
    t.net(t.pci("pci0000:00", ["0000:00:19.0", "0000:02:00.0"], 0x8086, 0x10FB, 0x020000, 0,
                "ixgbe"), "enp2s0", 10000)
    t.net(None, "lo", None)


def broken(t):
    """Every kind of damage: garbage values, dangling and escaping links, unreadable
    entries (directories where files belong), a huge attribute, a truncated tree."""
    t.cpus(1, 2, ["0-1"])
    t.write("devices/system/node/node1/cpulist/oops", "a directory, not a file")
    # a good GPU, so the result is partial rather than empty
    t.pci("pci0000:00", ["0000:00:01.0", "0000:01:00.0"], NVIDIA, 0x2330, 0x030200, 0, "nvidia")
    # garbage numa node and a device id that is not hex
    rel = t.pci("pci0000:00", ["0000:00:02.0", "0000:02:00.0"], NVIDIA, 0x2330, 0x030200, 0)
    t.write(rel + "/numa_node", "banana")
    t.write(rel + "/device", "0xZZZZ")
    # an NVIDIA device whose class is a directory (unreadable)
    rel = t.pci("pci0000:00", ["0000:00:03.0", "0000:03:00.0"], NVIDIA, 0x2330, 0x030200, 0)
    os.remove(os.path.join(t.root, rel, "class"))
    os.makedirs(os.path.join(t.root, rel, "class"))
    # a vendor file with a megabyte on one line
    rel = t.pci("pci0000:00", ["0000:00:04.0", "0000:04:00.0"], NVIDIA, 0x2330, 0x030200, 0)
    t.write(rel + "/vendor", "0x10de" + "f" * (1 << 20))
    # dangling PCI and RDMA entries; a class/net entry pointing out of the tree
    os.symlink("../../../devices/pci0000:00/0000:00:09.0/0000:09:00.0",
               os.path.join(t.root, "bus/pci/devices/0000:09:00.0"))
    os.makedirs(os.path.join(t.root, "class/infiniband"), exist_ok=True)
    os.symlink("../../devices/pci0000:00/nowhere/infiniband/mlx5_9",
               os.path.join(t.root, "class/infiniband/mlx5_9"))
    os.makedirs(os.path.join(t.root, "class/net"), exist_ok=True)
    os.symlink("/sys/devices/virtual/net/lo", os.path.join(t.root, "class/net/escape0"))
    # an RDMA device with a garbage rate, a state that is a directory, garbage GIDs
    rel = t.pci("pci0000:00", ["0000:00:05.0", "0000:05:00.0"], MELLANOX, 0x1017, 0x020000, 0,
                "mlx5_core")
    t.rdma(rel, "mlx5_0", [{"link_layer": "Ethernet", "rate": "fast",
                            "gids": [(0, "zz" * 200, "RoCE v9", ""), (70000, "x", "y", "")]}])
    os.remove(os.path.join(t.root, rel, "infiniband/mlx5_0/ports/1/state"))
    os.makedirs(os.path.join(t.root, rel, "infiniband/mlx5_0/ports/1/state"))
    # an RDMA device with neither ports nor a device link
    os.makedirs(os.path.join(t.root, "devices/virtual/infiniband/rxe0"))
    t.link("class/infiniband/rxe0", "devices/virtual/infiniband/rxe0")
    # an interface with a garbage speed and no operstate
    rel = t.net(t.pci("pci0000:00", ["0000:00:06.0"], 0x8086, 0x1533, 0x020000, 0, "igb"), "eth0",
                None)
    t.write(rel + "/speed", "-" * 5000)
    os.remove(os.path.join(t.root, rel, "operstate"))


def shuffled(seed, items):
    """Devices are created in this order: a real /sys lists directories in no useful order."""
    items = list(items)
    random.Random(seed).shuffle(items)
    return items


def switch(t, host, base, numa, devices):
    """A PCIe switch on its own host bridge: root port base:01.0, upstream port (base+1):00.0,
    a downstream port (base+2):NN.0 per device; devices are (bus, make) with make(t, chain)
    creating the function at the end of chain."""
    root, up = "0000:%02x:01.0" % base, "0000:%02x:00.0" % (base + 1)
    for n, (bus, make) in enumerate(devices):
        make(t, host, [root, up, "0000:%02x:%02x.0" % (base + 2, n), bus], numa)


def h100(t, host, chain, numa):
    t.pci(host, chain, NVIDIA, 0x2330, 0x030200, numa, "nvidia")


def hgx_h100_ib(t):
    """DGX H100: each GPU shares a PCIe switch with one NDR InfiniBand HCA (its IPoIB
    interface too); GPU buses 18, 2a, 3a, 5d on socket 0 and 9a, ab, ba, db on socket 1; a
    10G management port on the chipset. HCAs are named mlx5_0..7 in PCI order."""
    t.dmi("NVIDIA", "DGXH100")
    t.cpus(2, 4, ["0-55,112-167", "56-111,168-223"])
    buses = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]

    def hca(g, bus):
        def make(t, host, chain, numa):
            rel = t.pci(host, chain, MELLANOX, 0x1021, 0x020700, numa, "mlx5_core")
            t.rdma(rel, "mlx5_%d" % g, [{"link_layer": "InfiniBand",
                                        "rate": "400 Gb/sec (4X NDR)"}])
            t.net(rel, "ibp%ds0" % bus, 400000, arptype=32)
        return make

    for g, bus in shuffled(1, enumerate(buses)):
        base = bus - 5
        switch(t, "pci0000:%02x" % base, base, g // 4,
               [("0000:%02x:00.0" % bus, h100), ("0000:%02x:00.0" % (bus + 1), hca(g, bus + 1))])
    nvswitches(t, 4, 0x22A3)
    t.net(t.pci("pci0000:00", ["0000:00:1f.6"], 0x8086, 0x1563, 0x020000, 0, "ixgbe"), "eno1",
          10000, arptype=1)
    t.virtual_ifaces()


def h100_roce(t):
    """8 H100 on a RoCE fabric, two 200G ports (one dual-function ConnectX-7) per GPU on its
    switch, RoCE v2 GIDs with IPv4 at index 3; GPU buses 19, 3b, 4c, 5d, 9b, bb, cb, db."""
    t.dmi("Supermicro", "SYS-821GE-TNHR")
    t.cpus(2, 4, ["0-47,96-143", "48-95,144-191"])
    buses = [0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xBB, 0xCB, 0xDB]

    def nic(g, bus):
        def make(t, host, chain, numa):
            for f in range(2):
                fchain = chain[:-1] + ["0000:%02x:00.%d" % (bus, f)]
                rel = t.pci(host, fchain, MELLANOX, 0x1021, 0x020000, numa, "mlx5_core")
                ifname = "ens%df%dnp%d" % (g + 1, f, f)
                ll = "fe80:0000:0000:0000:0e42:a1ff:fe%02x:%04x" % (g, f)
                t.rdma(rel, "mlx5_%d" % (2 * g + f), [
                    {"link_layer": "Ethernet", "rate": "200 Gb/sec (2X NDR)",
                     "gids": [(0, ll, "IB/RoCE v1", ifname), (1, ll, "RoCE v2", ifname),
                              (2, gid_v4(10, 10 + g, f, 5), "IB/RoCE v1", ifname),
                              (3, gid_v4(10, 10 + g, f, 5), "RoCE v2", ifname)]}])
                t.net(rel, ifname, 200000, arptype=1)
        return make

    for g, bus in shuffled(2, enumerate(buses)):
        base = bus - 5
        switch(t, "pci0000:%02x" % base, base, g // 4,
               [("0000:%02x:00.0" % bus, h100), ("0000:%02x:00.0" % (bus + 1), nic(g, bus + 1))])
    nvswitches(t, 4, 0x22A3)
    t.net(t.pci("pci0000:00", ["0000:00:1f.6"], 0x8086, 0x15B8, 0x020000, 0, "e1000e"), "eno1",
          1000, arptype=1)
    t.virtual_ifaces()


def gvnic(name):
    def make(t, host, chain, numa):
        t.net(t.pci(host, chain, 0x1AE0, 0x0042, 0x020000, numa, "gve"), name, 200000, arptype=1)
    return make


def gcp_a3(t):
    """a3-highgpu-8g: 8 H100 in pairs behind four PCIe switches, each with one 200G gVNIC for
    GPU traffic (enp6s0, enp12s0, enp134s0, enp140s0), and a fifth 200G gVNIC for the host
    (enp0s12); GPU buses 04, 05, 0a, 0b, 84, 85, 8a, 8b."""
    t.dmi("Google", "Google Compute Engine")
    t.cpus(2, 4, ["0-51,104-155", "52-103,156-207"])
    groups = [(0x02, 0, [0x04, 0x05], 0x06), (0x08, 0, [0x0A, 0x0B], 0x0C),
              (0x81, 1, [0x84, 0x85], 0x86), (0x87, 1, [0x8A, 0x8B], 0x8C)]
    for base, numa, gpus, nic in shuffled(3, groups):
        devices = [("0000:%02x:00.0" % b, h100) for b in gpus]
        devices.append(("0000:%02x:00.0" % nic, gvnic("enp%ds0" % nic)))
        switch(t, "pci0000:%02x" % (0x80 if numa else 0x00), base, numa, shuffled(base, devices))
    gvnic("enp0s12")(t, "pci0000:00", ["0000:00:0c.0"], 0)
    nvswitches(t, 4, 0x22A3)
    t.virtual_ifaces()


def l40s_eth(t):
    """8 L40S in pairs behind four PCIe switches, each with a 100G E810 port (ice), and a 1G
    management port; Ethernet only. GPU buses 18, 19, 3a, 3b, 9a, 9b, ba, bb."""
    t.dmi("Dell Inc.", "PowerEdge XE8640")
    t.cpus(2, 8, ["0-31", "32-63"])
    groups = [(0x15, 0, [0x18, 0x19], 0x1A), (0x37, 0, [0x3A, 0x3B], 0x3C),
              (0x97, 1, [0x9A, 0x9B], 0x9C), (0xB7, 1, [0xBA, 0xBB], 0xBC)]

    def l40s(t, host, chain, numa):
        t.pci(host, chain, NVIDIA, 0x26B9, 0x030200, numa, "nvidia")

    def e810(bus):
        def make(t, host, chain, numa):
            t.net(t.pci(host, chain, 0x8086, 0x1592, 0x020000, numa, "ice"), "enp%ds0" % bus,
                  100000, arptype=1)
        return make

    for base, numa, gpus, nic in shuffled(4, groups):
        devices = [("0000:%02x:00.0" % b, l40s) for b in gpus]
        devices.append(("0000:%02x:00.0" % nic, e810(nic)))
        switch(t, "pci0000:%02x" % base, base, numa, devices)
    t.net(t.pci("pci0000:00", ["0000:00:1c.0", "0000:02:00.0"], 0x8086, 0x1533, 0x020000, 0,
                "igb"), "eno1", 1000, arptype=1)
    t.virtual_ifaces()


def aws_group(t, bus, numa, gpus, gpu_device, efa_device, eni):
    """Devices on one bus behind a switch, as Nitro shows them: GPUs at slots 1c/1d, the EFA
    device at slot 1b, its ENI (ena, no speed) at slot 1a."""
    host, chain = "pci0000:%02x" % (bus - 2), ["0000:%02x:01.0" % (bus - 2),
                                               "0000:%02x:00.0" % (bus - 1)]
    for slot in gpus:
        t.pci(host, chain + ["0000:%02x:%02x.0" % (bus, slot)], NVIDIA, gpu_device, 0x030200,
              numa, "nvidia")
    rel = t.pci(host, chain + ["0000:%02x:1b.0" % bus], AMAZON, efa_device, 0x020000, numa, "efa")
    t.rdma(rel, "rdmap%ds27" % bus, efa_port())
    if eni:
        rel = t.pci(host, chain + ["0000:%02x:1a.0" % bus], AMAZON, 0xEC20, 0x020000, numa, "ena")
        t.net(rel, "ens%d" % bus, None, arptype=1)


def p4d(t):
    """p4d.24xlarge: 8 A100 40GB, two per bus with one EFA device (0xefa1, 100G) and its ENI
    (ena): four ENIs and four EFA devices; NVSwitch."""
    t.dmi("Amazon EC2", "p4d.24xlarge")
    t.cpus(2, 4, ["0-23,48-71", "24-47,72-95"])
    for bus, numa in shuffled(5, [(0x10, 0), (0x20, 0), (0x90, 1), (0xA0, 1)]):
        aws_group(t, bus, numa, [0x1C, 0x1D], 0x20B0, 0xEFA1, True)
    nvswitches(t, 6, 0x1AF1)
    t.virtual_ifaces()


def g5_efa(t):
    """g5.48xlarge: 8 A10G on PCIe, one EFA device (0xefa1) that has no RDMA read, one ENI."""
    t.dmi("Amazon EC2", "g5.48xlarge")
    t.cpus(2, 4, ["0-47", "48-95"])
    for bus, numa in shuffled(6, [(0x10, 0), (0x20, 0), (0x90, 1), (0xA0, 1)]):
        host, chain = "pci0000:%02x" % (bus - 2), ["0000:%02x:01.0" % (bus - 2),
                                                   "0000:%02x:00.0" % (bus - 1)]
        for slot in [0x1C, 0x1D]:
            t.pci(host, chain + ["0000:%02x:%02x.0" % (bus, slot)], NVIDIA, 0x2237, 0x030200,
                  numa, "nvidia")
    aws_group(t, 0x30, 0, [], 0, 0xEFA1, True)
    t.virtual_ifaces()


MACHINES = {"p5": p5, "p4de": p4de, "dgx-h100": dgx_h100, "roce": roce,
            "roce-nogid": lambda t: roce(t, v2_ipv4=False), "cloud-vm": cloud_vm,
            "cloud-vm-virtio": lambda t: cloud_vm(t, virtio=True), "eth-bond": eth_bond,
            "cpu-only": cpu_only, "broken": broken, "hgx-h100-ib": hgx_h100_ib,
            "h100-roce": h100_roce, "gcp-a3": gcp_a3, "l40s-eth": l40s_eth, "p4d": p4d,
            "g5-efa": g5_efa}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MACHINES:
        sys.exit("usage: mkfixture.py {%s} DIR" % ",".join(MACHINES))
    MACHINES[sys.argv[1]](Tree(sys.argv[2]))
