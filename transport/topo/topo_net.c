/*
 * topo_net.c: network interfaces from class/net of a sysfs-shaped tree: the physical ports
 * (with a device behind them), the bonds and bridges over them, which port belongs to which
 * (its master), state and speed, and on the live machine which have an IPv4 address. The RDMA
 * device on the same PCI function is paired with its interface. Virtual interfaces that are
 * no way off the node (loopback, containers, tunnels) are left out.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../src/log.h"
#include "../../src/util.h"
#include "topo.h"
#include "topo_sysfs.h"

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

static void sharc_topo_add_netdev(sharc_topo_sysfs_t *s, const char *name)
{
    sharc_topo_t *topo = s->topo;
    char rel[PATH_MAX], real[PATH_MAX], dev[PATH_MAX], state[32];
    sharc_topo_netdev_t *nd;
    struct stat st;
    long speed;

    if (strlen(name) >= sizeof(nd->name)) {
        return;
    }
    sharc_snprintf(rel, sizeof(rel), "class/net/%s", name);
    if (topo->nifaces < (int)SHARC_ARRAY_SIZE(topo->ifaces)) {
        sharc_snprintf(dev, sizeof(dev), "%s/%s", s->root, rel);
        sharc_snprintf(topo->ifaces[topo->nifaces].name, sizeof(topo->ifaces[0].name), "%s", name);
        topo->ifaces[topo->nifaces].up =
            (sharc_topo_attr(dev, "operstate", state, sizeof(state)) == 0 &&
             (strcmp(state, "up") == 0 || strcmp(state, "unknown") == 0));
        topo->nifaces++;
    }
    if (sharc_topo_netdev_skipped(name)) {
        return;
    }
    if (sharc_topo_resolve(s, rel, real) != 0) {
        return;
    }
    sharc_snprintf(dev, sizeof(dev), "%s/bridge", real);
    if (stat(dev, &st) == 0) {
        return; /* a bridge: its ports are listed themselves */
    }
    sharc_snprintf(dev, sizeof(dev), "%s/device", real);
    if (lstat(dev, &st) != 0) {
        return; /* virtual: no device behind it */
    }
    if (topo->nnetdevs == SHARC_TOPO_MAX_NETDEVS) {
        sharc_topo_warn(topo, "%s: more than %d interfaces; ignored", rel, SHARC_TOPO_MAX_NETDEVS);
        return;
    }
    nd = &topo->netdevs[topo->nnetdevs];
    memset(nd, 0, sizeof(*nd));
    sharc_snprintf(nd->name, sizeof(nd->name), "%s", name);
    nd->pci.numa = -1;
    if (sharc_topo_pci_from_path(s, real, &nd->pci) != 0) {
        sharc_topo_warn(topo, "%s: not on PCI; position unknown", name);
    }
    sharc_topo_driver(dev, nd->driver, sizeof(nd->driver));
    /* Reading speed fails (EINVAL) on a link that is down; -1 means unknown. */
    nd->speed_mbps = -1;
    if (sharc_topo_attr_int(real, "speed", &speed) == 0 && speed > 0 && speed < 10000000) {
        nd->speed_mbps = (int)speed;
    }
    nd->up =
        (sharc_topo_attr(real, "operstate", state, sizeof(state)) == 0 && strcmp(state, "up") == 0);
    topo->nnetdevs++;
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
            sharc_topo_add_netdev(s, list[i]->d_name);
        }
    }
    sharc_topo_free_list(list, n);
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
            }
        }
    }
}
