/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_net.c: network interfaces from class/net of a sysfs-shaped tree: the physical ports
 * (with a device behind them), the bonds and bridges over them, which port belongs to which
 * (its master), state and speed, and on the live machine which have an IPv4 address. The RDMA
 * device on the same PCI function is paired with its interface; one on an InfiniBand port is
 * IPoIB, not Ethernet. Virtual interfaces that are no way off the node (loopback, containers,
 * tunnels) are left out.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo.h"
#include "topo_fs.h"

/* Interfaces that are not a way off the node. */
static int sharc_topo_netdev_skipped(const char *name)
{
    static const char *const prefixes[] = {"lo",      "veth", "docker", "br-", "virbr", "cni",
                                           "flannel", "cali", "vxlan",  "tun", "tap"};

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(prefixes); i++) {
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
            return 1;
        }
    }
    return 0;
}

static int sharc_topo_is_dir(const char *dir, const char *name)
{
    char path[PATH_MAX];
    struct stat st;

    return sharc_snprintf(path, sizeof(path), "%s/%s", dir, name) == 0 && stat(path, &st) == 0 &&
           S_ISDIR(st.st_mode);
}

/* Every interface goes into topo->ifaces (the doctor checks names against them). */
static void sharc_topo_add_iface(sharc_topo_sysfs_t *s, const char *name)
{
    sharc_topo_t *topo = s->topo;
    char dir[PATH_MAX], state[32];

    if (topo->nifaces == (int)SHARC_ARRAY_SIZE(topo->ifaces) ||
        strlen(name) >= sizeof(topo->ifaces[0].name)) {
        return;
    }
    sharc_snprintf(dir, sizeof(dir), "%s/class/net/%s", s->root, name);
    sharc_snprintf(topo->ifaces[topo->nifaces].name, sizeof(topo->ifaces[0].name), "%s", name);
    topo->ifaces[topo->nifaces].up =
        (sharc_topo_attr(dir, "operstate", state, sizeof(state)) == 0 &&
         (strcmp(state, "up") == 0 || strcmp(state, "unknown") == 0));
    /* the interface it is a port of (a bond or a bridge), or "" */
    sharc_topo_readlink_base(dir, "master", topo->ifaces[topo->nifaces].master,
                             sizeof(topo->ifaces[0].master));
    topo->nifaces++;
}

static sharc_topo_netdev_t *sharc_topo_new_netdev(sharc_topo_sysfs_t *s, const char *name,
                                                  const char *real)
{
    sharc_topo_t *topo = s->topo;
    sharc_topo_netdev_t *nd;
    char state[32];
    long speed;

    if (topo->nnetdevs == SHARC_TOPO_MAX_NETDEVS) {
        sharc_topo_warn(topo, "class/net/%s: more than %d interfaces; ignored", name,
                        SHARC_TOPO_MAX_NETDEVS);
        return NULL;
    }
    nd = &topo->netdevs[topo->nnetdevs++];
    memset(nd, 0, sizeof(*nd));
    sharc_snprintf(nd->name, sizeof(nd->name), "%s", name);
    nd->pci.numa = -1;
    nd->ipv4 = -1;
    /* Reading speed fails (EINVAL) on a link that is down; -1 means unknown. */
    nd->speed_mbps = -1;
    if (sharc_topo_attr_int(real, "speed", &speed) == 0 && speed > 0 && speed < 10000000) {
        nd->speed_mbps = (int)speed;
    }
    nd->up =
        (sharc_topo_attr(real, "operstate", state, sizeof(state)) == 0 && strcmp(state, "up") == 0);
    return nd;
}

/* A physical port: an interface with a device behind it. */
static void sharc_topo_add_port(sharc_topo_sysfs_t *s, const char *name)
{
    char rel[PATH_MAX], real[PATH_MAX], dev[PATH_MAX];
    sharc_topo_netdev_t *nd;
    struct stat st;
    long type;

    if (strlen(name) >= sizeof(nd->name) || sharc_topo_netdev_skipped(name)) {
        return;
    }
    sharc_snprintf(rel, sizeof(rel), "class/net/%s", name);
    if (sharc_topo_resolve(s, rel, real) != 0) {
        return;
    }
    sharc_snprintf(dev, sizeof(dev), "%s/device", real);
    if (sharc_topo_is_dir(real, "bridge") || sharc_topo_is_dir(real, "bonding") ||
        lstat(dev, &st) != 0) {
        return; /* virtual: bonds and bridges come after their ports */
    }
    nd = sharc_topo_new_netdev(s, name, real);
    if (nd == NULL) {
        return;
    }
    nd->kind = SHARC_TOPO_NETDEV_PORT;
    if (sharc_topo_pci_from_path(s, real, &nd->pci) != 0) {
        sharc_topo_warn(s->topo, "%s: not on PCI; position unknown", name);
    }
    sharc_topo_readlink_base(dev, "driver", nd->driver, sizeof(nd->driver));
    sharc_topo_readlink_base(real, "master", nd->master, sizeof(nd->master));
    /* NCCL reads the same file to pick its socket threads (AWS and Google NICs) */
    if (sharc_topo_attr_hex(dev, "vendor", &nd->vendor) != 0) {
        nd->vendor = 0;
    }
    /* IP over InfiniBand: ARPHRD_INFINIBAND (32) in "type"; Ethernet is 1 */
    nd->ipoib = (sharc_topo_attr_int(real, "type", &type) == 0 && type == 32);
}

/*
 * A bond or bridge over ports already listed: the interface that holds the address, so the
 * one to use (its ports have none of their own). One without such a port (docker0 over veths,
 * an empty bridge) is no way off the node. Its speed is its own where the driver reports one
 * (bonding does), else its fastest port's that is up.
 */
static void sharc_topo_add_master(sharc_topo_sysfs_t *s, const char *name)
{
    sharc_topo_t *topo = s->topo;
    char rel[PATH_MAX], real[PATH_MAX];
    sharc_topo_netdev_kind_t kind;
    sharc_topo_netdev_t *nd;
    int first = -1, nports = topo->nnetdevs, fastest = -1;

    for (int d = 0; d < nports && first < 0; d++) {
        if (strcmp(topo->netdevs[d].master, name) == 0) {
            first = d;
        }
    }
    if (first < 0 || sharc_topo_netdev_skipped(name)) {
        return;
    }
    sharc_snprintf(rel, sizeof(rel), "class/net/%s", name);
    if (sharc_topo_resolve(s, rel, real) != 0) {
        return;
    }
    if (sharc_topo_is_dir(real, "bonding")) {
        kind = SHARC_TOPO_NETDEV_BOND;
    } else if (sharc_topo_is_dir(real, "bridge")) {
        kind = SHARC_TOPO_NETDEV_BRIDGE;
    } else {
        return; /* a master of another kind (a team, an OVS port): not ours to judge */
    }
    for (int d = 0; d < nports; d++) {
        if (strcmp(topo->netdevs[d].master, name) == 0 && topo->netdevs[d].up) {
            fastest = SHARC_MAX(fastest, topo->netdevs[d].speed_mbps);
        }
    }
    nd = sharc_topo_new_netdev(s, name, real);
    if (nd == NULL) {
        return;
    }
    nd->kind = kind;
    snprintf(nd->driver, sizeof(nd->driver), "%s",
             kind == SHARC_TOPO_NETDEV_BOND ? "bonding" : "bridge");
    nd->pci.numa = topo->netdevs[first].pci.numa;
    if (nd->speed_mbps < 0) {
        nd->speed_mbps = fastest;
    }
}

/* Which interfaces have an IPv4 address: only known on the live machine. */
static void sharc_topo_read_addresses(sharc_topo_t *topo)
{
    struct ifaddrs *addrs;

    if (getifaddrs(&addrs) != 0) {
        sharc_topo_warn(topo, "getifaddrs: %s; addresses unknown", strerror(errno));
        return;
    }
    for (int d = 0; d < topo->nnetdevs; d++) {
        size_t len = strlen(topo->netdevs[d].name);

        topo->netdevs[d].ipv4 = 0;
        for (struct ifaddrs *a = addrs; a != NULL; a = a->ifa_next) {
            /* an alias address is labelled "eth0:1" */
            if (a->ifa_addr != NULL && a->ifa_addr->sa_family == AF_INET &&
                strncmp(a->ifa_name, topo->netdevs[d].name, len) == 0 &&
                (a->ifa_name[len] == '\0' || a->ifa_name[len] == ':')) {
                topo->netdevs[d].ipv4 = 1;
            }
        }
    }
    freeifaddrs(addrs);
}

void sharc_topo_read_net(sharc_topo_sysfs_t *s)
{
    sharc_topo_t *topo = s->topo;
    struct dirent **list;
    char dir[PATH_MAX];
    int n;

    sharc_snprintf(dir, sizeof(dir), "%s/class/net", s->root);
    n = sharc_topo_list(dir, &list);
    if (n < 0) {
        sharc_topo_warn(topo, "class/net: %s; no Ethernet interfaces found", strerror(errno));
        return;
    }
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            sharc_topo_add_iface(s, list[i]->d_name);
            sharc_topo_add_port(s, list[i]->d_name);
        }
    }
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            sharc_topo_add_master(s, list[i]->d_name);
        }
    }
    sharc_topo_free_list(list, n);
    if (s->live) {
        sharc_topo_read_addresses(topo); /* a fixture's addresses are not this machine's */
    }
    /* An RDMA device and an interface on one PCI function are one port (RoCE, IPoIB). */
    for (int d = 0; d < topo->nnetdevs; d++) {
        for (int k = 0; k < topo->nnics; k++) {
            if (topo->netdevs[d].pci.busid[0] != '\0' &&
                strcmp(topo->netdevs[d].pci.busid, topo->nics[k].pci.busid) == 0) {
                sharc_snprintf(topo->netdevs[d].rdma, sizeof(topo->netdevs[d].rdma), "%s",
                               topo->nics[k].name);
                if (topo->nics[k].netdev[0] == '\0') {
                    sharc_snprintf(topo->nics[k].netdev, sizeof(topo->nics[k].netdev), "%s",
                                   topo->netdevs[d].name);
                }
                /* an interface on an InfiniBand port is IPoIB, whatever "type" said */
                topo->netdevs[d].ipoib |= (topo->nics[k].fabric == SHARC_TOPO_FABRIC_IB);
            }
        }
    }
}
