/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_classify.c: what follows from a topology read by transport/topo/: PCI distances filled from
 * device paths (unless a capture gave them), the intra-node GPU path, the inter-node fabric,
 * the interfaces for TCP, each GPU's rails (RDMA NICs, or interfaces on a multi-NIC Ethernet
 * node) and expected network bandwidth; the names of links, fabrics and paths; and whole-file
 * reading for the offline inputs.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_tool.h"

/* NVLinks per GPU on the largest parts (Hopper, Blackwell). A GPU that reaches every peer
 * with more links than this in total must go through NVSwitches. */
#define SHARC_TOPO_NVLINKS_PER_GPU 18

static const char *const sharc_topo_link_names[SHARC_TOPO_LINK_LAST] = {
    [SHARC_TOPO_LINK_X] = "X",     [SHARC_TOPO_LINK_NV] = "NV",     [SHARC_TOPO_LINK_PIX] = "PIX",
    [SHARC_TOPO_LINK_PXB] = "PXB", [SHARC_TOPO_LINK_PHB] = "PHB",   [SHARC_TOPO_LINK_NODE] = "NODE",
    [SHARC_TOPO_LINK_SYS] = "SYS", [SHARC_TOPO_LINK_UNKNOWN] = "?",
};

static const char *const sharc_topo_fabric_names[SHARC_TOPO_FABRIC_LAST] = {
    [SHARC_TOPO_FABRIC_NONE] = "none",    [SHARC_TOPO_FABRIC_IB] = "InfiniBand",
    [SHARC_TOPO_FABRIC_ROCE] = "RoCE",    [SHARC_TOPO_FABRIC_EFA] = "EFA",
    [SHARC_TOPO_FABRIC_ETH] = "Ethernet", [SHARC_TOPO_FABRIC_UNKNOWN] = "unknown",
};

static const char *const sharc_topo_intra_names[SHARC_TOPO_INTRA_LAST] = {
    [SHARC_TOPO_INTRA_NONE] = "none",         [SHARC_TOPO_INTRA_SINGLE] = "single GPU",
    [SHARC_TOPO_INTRA_NVSWITCH] = "NVSwitch", [SHARC_TOPO_INTRA_NVLINK] = "NVLink",
    [SHARC_TOPO_INTRA_PCIE] = "PCIe P2P",     [SHARC_TOPO_INTRA_HOST] = "host memory",
};

const char *sharc_topo_link_name(sharc_topo_link_t link)
{
    return (link >= 0 && link < SHARC_TOPO_LINK_LAST) ? sharc_topo_link_names[link] : "?";
}

const char *sharc_topo_cell(sharc_topo_link_t link, int nvlinks, char *buf, size_t size)
{
    if (link == SHARC_TOPO_LINK_NV && nvlinks > 0) {
        snprintf(buf, size, "NV%d", nvlinks);
    } else {
        snprintf(buf, size, "%s", sharc_topo_link_name(link));
    }
    return buf;
}

const char *sharc_topo_fabric_name(sharc_topo_fabric_t fabric)
{
    return (fabric >= 0 && fabric < SHARC_TOPO_FABRIC_LAST) ? sharc_topo_fabric_names[fabric]
                                                            : "unknown";
}

const char *sharc_topo_intra_name(sharc_topo_intra_t intra)
{
    return (intra >= 0 && intra < SHARC_TOPO_INTRA_LAST) ? sharc_topo_intra_names[intra] : "?";
}

sharc_status_t sharc_topo_read_file(const char *path, size_t max, char **text_p, size_t *len_p)
{
    FILE *f = fopen(path, "r");
    char *text;
    size_t len;

    if (f == NULL) {
        sharc_error("cannot open %s: %m", path);
        return SHARC_ERR_IO;
    }
    text = malloc(max + 1);
    if (text == NULL) {
        sharc_error("cannot allocate %zu bytes to read %s", max + 1, path);
        fclose(f);
        return SHARC_ERR_NOMEM;
    }
    len = fread(text, 1, max, f);
    if (ferror(f)) {
        sharc_error("cannot read %s: %m", path);
        free(text);
        fclose(f);
        return SHARC_ERR_IO;
    }
    if (len == max && fgetc(f) != EOF) {
        sharc_warn("%s is longer than %zu bytes; the rest is ignored", path, max);
    }
    fclose(f);
    text[len] = '\0';
    *text_p = text;
    *len_p = len;
    return SHARC_OK;
}

static double sharc_topo_nic_gbps(const sharc_topo_nic_t *nic)
{
    double gbps = 0;

    for (int p = 0; p < nic->nports; p++) {
        if (nic->ports[p].active) {
            gbps += nic->ports[p].rate_gbps;
        }
    }
    return gbps;
}

/* Whether every active port's rate is known (captures and unreadable rates leave 0). */
static int sharc_topo_nic_rate_known(const sharc_topo_nic_t *nic)
{
    for (int p = 0; p < nic->nports; p++) {
        if (nic->ports[p].active && !(nic->ports[p].rate_gbps > 0)) {
            return 0;
        }
    }
    return nic->nports > 0;
}

static int sharc_topo_nic_active(const sharc_topo_nic_t *nic)
{
    for (int p = 0; p < nic->nports; p++) {
        if (nic->ports[p].active) {
            return 1;
        }
    }
    return 0;
}

/* Whether NIC k carries the node's fabric: an active port of that fabric, or, for NICs
 * known only by name from a capture, any NIC when the fabric is unknown. */
static int sharc_topo_nic_in_fabric(const sharc_topo_t *topo, int k)
{
    const sharc_topo_nic_t *nic = &topo->nics[k];

    if (topo->fabric == SHARC_TOPO_FABRIC_UNKNOWN) {
        return nic->fabric == SHARC_TOPO_FABRIC_UNKNOWN && nic->captured;
    }
    return nic->fabric == topo->fabric && sharc_topo_nic_active(nic);
}

static void sharc_topo_fill_distances(sharc_topo_t *topo)
{
    /* NVSwitches on the PCI bus but no NVML to count links: every GPU of a model made for
     * NVSwitch baseboards (SXM) is taken to use all its links, as on every HGX board. */
    if (topo->nvswitches > 0 && !topo->nvml) {
        for (int i = 0; i < topo->ngpus; i++) {
            if (topo->gpus[i].nvlinks_switch == 0 && topo->gpus[i].nvlinks_max > 0) {
                topo->gpus[i].nvlinks_switch = topo->gpus[i].nvlinks_max;
            }
        }
    }
    for (int i = 0; i < topo->ngpus; i++) {
        for (int j = 0; j < topo->ngpus; j++) {
            if (i == j || topo->gpu_gpu[i][j] != SHARC_TOPO_LINK_UNKNOWN) {
                continue;
            }
            if (topo->nvlinks[i][j] > 0) {
                topo->gpu_gpu[i][j] = SHARC_TOPO_LINK_NV;
            } else if (topo->gpus[i].nvlinks_switch > 0 && topo->gpus[j].nvlinks_switch > 0) {
                topo->gpu_gpu[i][j] = SHARC_TOPO_LINK_NV;
                topo->nvlinks[i][j] =
                    SHARC_MIN(topo->gpus[i].nvlinks_switch, topo->gpus[j].nvlinks_switch);
            } else {
                topo->gpu_gpu[i][j] =
                    sharc_topo_pci_distance(&topo->gpus[i].pci, &topo->gpus[j].pci);
            }
        }
        for (int k = 0; k < topo->nnics; k++) {
            if (topo->gpu_nic[i][k] == SHARC_TOPO_LINK_UNKNOWN) {
                topo->gpu_nic[i][k] =
                    sharc_topo_pci_distance(&topo->gpus[i].pci, &topo->nics[k].pci);
            }
        }
    }
}

/* More links per GPU than one GPU has, to every peer: only NVSwitches do that. */
static int sharc_topo_nvswitch_inferred(const sharc_topo_t *topo)
{
    if (topo->ngpus < 3) {
        return 0;
    }
    for (int i = 0; i < topo->ngpus; i++) {
        int total = 0;

        for (int j = 0; j < topo->ngpus; j++) {
            if (i != j) {
                if (topo->gpu_gpu[i][j] != SHARC_TOPO_LINK_NV) {
                    return 0;
                }
                total += topo->nvlinks[i][j];
            }
        }
        if (total <= SHARC_TOPO_NVLINKS_PER_GPU) {
            return 0;
        }
    }
    return 1;
}

static sharc_topo_intra_t sharc_topo_classify_intra(const sharc_topo_t *topo)
{
    int all_nv = 1;
    sharc_topo_link_t worst_pci = SHARC_TOPO_LINK_X;

    if (topo->ngpus == 0) {
        return SHARC_TOPO_INTRA_NONE;
    }
    if (topo->ngpus == 1) {
        return SHARC_TOPO_INTRA_SINGLE;
    }
    for (int i = 0; i < topo->ngpus; i++) {
        for (int j = 0; j < topo->ngpus; j++) {
            if (i == j) {
                continue;
            }
            if (topo->gpu_gpu[i][j] != SHARC_TOPO_LINK_NV) {
                all_nv = 0;
                worst_pci = SHARC_MAX(worst_pci, topo->gpu_gpu[i][j]);
            }
        }
    }
    if (all_nv) {
        if (topo->nvswitches > 0 || sharc_topo_nvswitch_inferred(topo)) {
            return SHARC_TOPO_INTRA_NVSWITCH;
        }
        return SHARC_TOPO_INTRA_NVLINK;
    }
    /* Peer-to-peer across the host bridge is off by default in NCCL (NCCL_P2P_LEVEL). */
    return (worst_pci <= SHARC_TOPO_LINK_PXB) ? SHARC_TOPO_INTRA_PCIE : SHARC_TOPO_INTRA_HOST;
}

/*
 * The fabric with the most active bandwidth among RDMA NICs (EFA, InfiniBand, RoCE; a
 * DGX's RoCE storage ports lose to its InfiniBand compute ports), else TCP on the fastest
 * Ethernet interface. NICs known only by name leave the fabric unknown.
 */
static sharc_topo_fabric_t sharc_topo_classify_fabric(const sharc_topo_t *topo)
{
    static const sharc_topo_fabric_t order[] = {SHARC_TOPO_FABRIC_EFA, SHARC_TOPO_FABRIC_IB,
                                                SHARC_TOPO_FABRIC_ROCE};
    double gbps[SHARC_TOPO_FABRIC_LAST] = {0};
    int active[SHARC_TOPO_FABRIC_LAST] = {0}, unknown = 0;
    sharc_topo_fabric_t best = SHARC_TOPO_FABRIC_NONE;

    for (int k = 0; k < topo->nnics; k++) {
        const sharc_topo_nic_t *nic = &topo->nics[k];

        if (nic->fabric == SHARC_TOPO_FABRIC_UNKNOWN) {
            unknown += nic->captured; /* a sysfs device of no known kind is no fabric */
        } else if (sharc_topo_nic_active(nic)) {
            active[nic->fabric]++;
            gbps[nic->fabric] += sharc_topo_nic_gbps(nic);
        }
    }
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(order); i++) {
        if (active[order[i]] > 0 &&
            (best == SHARC_TOPO_FABRIC_NONE || gbps[order[i]] > gbps[best])) {
            best = order[i];
        }
    }
    if (best != SHARC_TOPO_FABRIC_NONE) {
        return best;
    }
    if (unknown > 0) {
        return SHARC_TOPO_FABRIC_UNKNOWN;
    }
    return (topo->eth_best >= 0) ? SHARC_TOPO_FABRIC_ETH : SHARC_TOPO_FABRIC_NONE;
}

/* Whether interface a serves TCP better than b: one with an IPv4 address first (NCCL and
 * UCX bind to an address; known only on the live machine), then the faster one. */
static int sharc_topo_eth_better(const sharc_topo_netdev_t *a, const sharc_topo_netdev_t *b)
{
    if ((a->ipv4 == 1) != (b->ipv4 == 1)) {
        return a->ipv4 == 1;
    }
    return a->speed_mbps > b->speed_mbps;
}

/* Whether an interface can carry TCP between nodes: up, not a port of a bond or bridge (a
 * port has no address of its own; its bond or bridge, listed too, is the one to name), and
 * Ethernet (IPoIB rides the InfiniBand fabric, which NCCL and UCX reach through verbs). */
static int sharc_topo_eth_usable(const sharc_topo_netdev_t *dev)
{
    return dev->up && dev->master[0] == '\0' && !dev->ipoib;
}

/* The interface for TCP between nodes: the best usable one. */
static int sharc_topo_find_eth_best(const sharc_topo_t *topo)
{
    int best = -1;

    for (int n = 0; n < topo->nnetdevs; n++) {
        const sharc_topo_netdev_t *dev = &topo->netdevs[n];

        if (!sharc_topo_eth_usable(dev)) {
            continue;
        }
        if (best < 0 || sharc_topo_eth_better(dev, &topo->netdevs[best])) {
            best = n; /* ports are in name order, then bonds and bridges; ties keep the first */
        }
    }
    return best;
}

/*
 * The interfaces of eth_best's class: usable, as good as it by sharc_topo_eth_better's rule
 * (the same address state and speed), and where the speed is unknown (ENA, virtio) of the
 * same driver, which is all that says they are alike. A node with five 200 Gb/s NICs has
 * five; a node with a 100 Gb/s port and a 1 Gb/s management port has one. In PCI order, the
 * order NCCL would find them in sysfs does not matter: NCCL names them in the list given.
 */
static void sharc_topo_find_socket_ifs(sharc_topo_t *topo)
{
    const sharc_topo_netdev_t *best;

    topo->nsocket_ifs = 0;
    if (topo->eth_best < 0) {
        return;
    }
    best = &topo->netdevs[topo->eth_best];
    for (int n = 0; n < topo->nnetdevs; n++) {
        const sharc_topo_netdev_t *dev = &topo->netdevs[n];
        int pos = topo->nsocket_ifs;

        if (!sharc_topo_eth_usable(dev) || (dev->ipv4 == 1) != (best->ipv4 == 1) ||
            dev->speed_mbps != best->speed_mbps ||
            (dev->speed_mbps < 0 && strcmp(dev->driver, best->driver) != 0)) {
            continue;
        }
        while (pos > 0 && sharc_topo_busid_cmp(topo->netdevs[topo->socket_ifs[pos - 1]].pci.busid,
                                               dev->pci.busid) > 0) {
            topo->socket_ifs[pos] = topo->socket_ifs[pos - 1];
            pos--;
        }
        topo->socket_ifs[pos] = n;
        topo->nsocket_ifs++;
    }
}

/*
 * Rails on Ethernet with several interfaces of the fastest class: for each GPU those
 * interfaces nearest first (PCI distance, then PCI order). NCCL's socket transport takes
 * every interface NCCL_SOCKET_IFNAME names as a NET device and gives each GPU the nearest,
 * as it does with RDMA NICs. With one interface there is nothing to choose: no rails.
 */
static void sharc_topo_assign_eth_rails(sharc_topo_t *topo)
{
    int share[SHARC_TOPO_MAX_NETDEVS] = {0};
    sharc_topo_link_t dist[SHARC_TOPO_MAX_NETDEVS];

    for (int i = 0; i < topo->ngpus; i++) {
        sharc_topo_gpu_t *gpu = &topo->gpus[i];

        gpu->eth_nrails = gpu->eth_nnearest = 0;
        if (topo->fabric != SHARC_TOPO_FABRIC_ETH || topo->nsocket_ifs < 2) {
            continue;
        }
        for (int s = 0; s < topo->nsocket_ifs; s++) {
            int d = topo->socket_ifs[s], pos = gpu->eth_nrails;

            dist[d] = sharc_topo_pci_distance(&gpu->pci, &topo->netdevs[d].pci);
            while (pos > 0 && dist[gpu->eth_rails[pos - 1]] > dist[d]) {
                gpu->eth_rails[pos] = gpu->eth_rails[pos - 1];
                pos--;
            }
            gpu->eth_rails[pos] = d;
            gpu->eth_nrails++;
        }
        while (gpu->eth_nnearest < gpu->eth_nrails &&
               dist[gpu->eth_rails[gpu->eth_nnearest]] == dist[gpu->eth_rails[0]]) {
            share[gpu->eth_rails[gpu->eth_nnearest]]++;
            gpu->eth_nnearest++;
        }
    }
    /* each GPU's share of its nearest interfaces, as for RDMA rails */
    for (int i = 0; i < topo->ngpus; i++) {
        sharc_topo_gpu_t *gpu = &topo->gpus[i];

        if (gpu->eth_nrails == 0) {
            continue;
        }
        gpu->net_gbps = 0;
        for (int r = 0; r < gpu->eth_nnearest; r++) {
            int d = gpu->eth_rails[r];

            if (topo->netdevs[d].speed_mbps < 0) {
                gpu->net_gbps = -1;
                break;
            }
            gpu->net_gbps += topo->netdevs[d].speed_mbps / 1000.0 / share[d];
        }
    }
}

static void sharc_topo_assign_rails(sharc_topo_t *topo)
{
    int share[SHARC_TOPO_MAX_NICS] = {0};

    for (int i = 0; i < topo->ngpus; i++) {
        sharc_topo_gpu_t *gpu = &topo->gpus[i];

        gpu->nrails = 0;
        for (int k = 0; k < topo->nnics; k++) {
            int pos = gpu->nrails;

            if (!sharc_topo_nic_in_fabric(topo, k)) {
                continue;
            }
            /* insertion sort by distance, then by name (nics[] is in name order) */
            while (pos > 0 && topo->gpu_nic[i][gpu->rails[pos - 1]] > topo->gpu_nic[i][k]) {
                gpu->rails[pos] = gpu->rails[pos - 1];
                pos--;
            }
            gpu->rails[pos] = k;
            gpu->nrails++;
        }
        gpu->nnearest = 0;
        while (gpu->nnearest < gpu->nrails &&
               topo->gpu_nic[i][gpu->rails[gpu->nnearest]] == topo->gpu_nic[i][gpu->rails[0]]) {
            share[gpu->rails[gpu->nnearest]]++;
            gpu->nnearest++;
        }
    }
    /* A NIC that is nearest to several GPUs is shared between them; on Ethernet the one
     * interface is shared by all. A speed the input does not give makes the sum unknown. */
    for (int i = 0; i < topo->ngpus; i++) {
        sharc_topo_gpu_t *gpu = &topo->gpus[i];

        gpu->net_gbps = 0;
        if (topo->fabric == SHARC_TOPO_FABRIC_ETH) {
            int mbps = topo->netdevs[topo->eth_best].speed_mbps;

            gpu->net_gbps = (mbps < 0) ? -1 : mbps / 1000.0 / topo->ngpus;
            continue;
        }
        for (int r = 0; r < gpu->nnearest; r++) {
            int k = gpu->rails[r];

            if (!sharc_topo_nic_rate_known(&topo->nics[k])) {
                gpu->net_gbps = -1;
                break;
            }
            gpu->net_gbps += sharc_topo_nic_gbps(&topo->nics[k]) / share[k];
        }
    }
}

void sharc_topo_classify(sharc_topo_t *topo)
{
    sharc_topo_fill_distances(topo);
    topo->intra = sharc_topo_classify_intra(topo);
    topo->eth_best = sharc_topo_find_eth_best(topo);
    sharc_topo_find_socket_ifs(topo);
    topo->fabric = sharc_topo_classify_fabric(topo);
    sharc_topo_assign_rails(topo);
    sharc_topo_assign_eth_rails(topo); /* after the shared-interface figure it may refine */
}
