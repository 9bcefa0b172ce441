/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_dev.c: the verbs transport's device: which RDMA device and port a rank opens
 * (SHARC_IB_HCA, else an active port nearest the rank's GPU, or on its NUMA node, spread over
 * the node's ranks), the GID for RoCE v2 (SHARC_IB_GID_INDEX, else the port's RoCE v2 entry
 * with an IPv4 address; InfiniBand routes by LID), and what the transport sets up on it. Not
 * the connections (ib_conn.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../base/gpu.h"
#include "../../base/log.h"
#include "../topo/topo.h"
#include "ib.h"

#define SHARC_IB_MAX_CANDIDATES 64

/* RDMA reads a QP answers at once, at most (what it asks of the device) */
#define SHARC_IB_RD_ATOM 16

/* The RoCE v2 entry with an IPv4-mapped address (::ffff:a.b.c.d), else any RoCE v2; -1. */
static int sharc_ib_roce_gid(struct ibv_context *ctx, uint8_t port, int len)
{
    int any = -1;

    for (int i = 0; i < len; i++) {
        struct ibv_gid_entry e;

        if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0) != 0 ||
            e.gid_type != IBV_GID_TYPE_ROCE_V2) {
            continue;
        }
        if (e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff) {
            return i;
        }
        any = any < 0 ? i : any;
    }
    return any;
}

int sharc_tp_ib_choose_nearest(const int *key, int n, int local_rank)
{
    int best = -1, count = 0, k;

    for (int i = 0; i < n; i++) {
        if (best < 0 || key[i] < best) {
            best = key[i];
            count = 0;
        }
        count += key[i] == best;
    }
    k = count > 0 ? local_rank % count : 0;
    for (int i = 0; i < n; i++) {
        if (key[i] == best && k-- == 0) {
            return i;
        }
    }
    return 0;
}

/* Nearness of a NIC on NUMA node @p nic_numa to a rank on @p my_numa (-1: unknown): 0 on the
 * same node, 1 elsewhere or unknown. */
static int sharc_ib_numa_key(int nic_numa, int my_numa)
{
    return my_numa >= 0 && nic_numa == my_numa ? 0 : 1;
}

/* The NUMA node of the CPU this thread runs on, -1 if unknown. */
static int sharc_ib_my_numa(void)
{
    int cpu = sched_getcpu();
    char path[96];

    for (int node = 0; cpu >= 0 && node < 64; node++) {
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/node%d", cpu, node);
        if (access(path, F_OK) == 0) {
            return node;
        }
    }
    return -1;
}

/*
 * How near each named RDMA device is to this rank, from the topology of /sys (smaller is
 * nearer): the PCI distance to the rank's current CUDA device if it has one (as nvidia-smi
 * topo counts it: the NIC under the GPU's PCIe switch first), else 0 on the rank's NUMA node
 * and 1 elsewhere. Says which in @p how.
 */
static void sharc_ib_nearness(char (*names)[64], int n, int *key, const char **how)
{
    sharc_topo_t *topo = NULL;
    const sharc_topo_gpu_t *gpu = NULL;
    char busid[32];
    int my_numa = sharc_ib_my_numa();

    *how = "this NUMA node's first, by local rank";
    for (int i = 0; i < n; i++) {
        key[i] = 1;
    }
    if (sharc_topo_create(&topo) != SHARC_OK || sharc_topo_read_sysfs(topo, "/sys") != SHARC_OK) {
        sharc_topo_destroy(topo);
        return;
    }
    if (sharc_gpu_current_busid(busid, sizeof(busid)) == SHARC_OK) {
        for (int g = 0; g < topo->ngpus && gpu == NULL; g++) {
            gpu = strcmp(topo->gpus[g].pci.busid, busid) == 0 ? &topo->gpus[g] : NULL;
        }
    }
    for (int i = 0; i < n; i++) {
        key[i] = gpu != NULL ? SHARC_TOPO_LINK_UNKNOWN : 1; /* not in the topology: last */
        for (int k = 0; k < topo->nnics; k++) {
            if (strcmp(topo->nics[k].name, names[i]) != 0) {
                continue;
            }
            if (gpu != NULL) {
                key[i] = (int)sharc_topo_pci_distance(&gpu->pci, &topo->nics[k].pci);
            } else {
                key[i] = sharc_ib_numa_key(topo->nics[k].pci.numa, my_numa);
            }
        }
    }
    if (gpu != NULL) {
        *how = "the nearest to the rank's GPU, by local rank";
    }
    sharc_topo_destroy(topo);
}

/*
 * Open the device SHARC_IB_HCA names ("mlx5_0" or "mlx5_0:1"), or choose among the active
 * ports: the NICs on this rank's NUMA node first, spread over the node's ranks
 * (sharc_tp_ib_choose_nearest). Fills tp->ctx, port, gid_index, dev_name and the port's attributes.
 */
static sharc_status_t sharc_ib_open(sharc_tp_comm_t *tp, const sharc_cfg_t *cfg, int local_rank,
                                    struct ibv_port_attr *pa)
{
    char want[64] = "", names[SHARC_IB_MAX_CANDIDATES][64];
    int want_port = 0, n = 0, nc = 0, ports[SHARC_IB_MAX_CANDIDATES], key[SHARC_IB_MAX_CANDIDATES];
    const char *how = "";
    struct ibv_device **list = ibv_get_device_list(&n);

    if (sharc_tp_ib_cfg(cfg)->hca[0] != '\0') {
        char *colon;
        snprintf(want, sizeof(want), "%s", sharc_tp_ib_cfg(cfg)->hca);
        colon = strchr(want, ':');
        if (colon != NULL) {
            *colon = '\0';
            want_port = atoi(colon + 1);
        }
    }
    /* the candidates: every active port (of the named device) */
    for (int i = 0; list != NULL && i < n; i++) {
        const char *name = ibv_get_device_name(list[i]);
        struct ibv_context *ctx;
        struct ibv_device_attr da;

        if (want[0] != '\0' && strcmp(name, want) != 0) {
            continue;
        }
        ctx = ibv_open_device(list[i]);
        if (ctx == NULL || ibv_query_device(ctx, &da) != 0) {
            if (ctx != NULL) {
                ibv_close_device(ctx);
            }
            continue;
        }
        for (int port = 1; port <= da.phys_port_cnt && nc < SHARC_IB_MAX_CANDIDATES; port++) {
            if ((want_port == 0 || port == want_port) &&
                ibv_query_port(ctx, (uint8_t)port, pa) == 0 && pa->state == IBV_PORT_ACTIVE) {
                snprintf(names[nc], sizeof(names[nc]), "%s", name);
                ports[nc++] = port;
            }
        }
        ibv_close_device(ctx);
    }
    if (nc > 0) {
        int pick = 0;
        if (nc > 1) {
            sharc_ib_nearness(names, nc, key, &how);
            pick = sharc_tp_ib_choose_nearest(key, nc, local_rank);
            how = want[0] ? "the nearest port of SHARC_IB_HCA's device" : how;
        }
        for (int i = 0; list != NULL && i < n && tp->ctx == NULL; i++) {
            if (strcmp(ibv_get_device_name(list[i]), names[pick]) == 0) {
                tp->ctx = ibv_open_device(list[i]);
            }
        }
        if (tp->ctx != NULL && ibv_query_port(tp->ctx, (uint8_t)ports[pick], pa) == 0) {
            tp->port = (uint8_t)ports[pick];
            memcpy(tp->dev_name, names[pick], sizeof(tp->dev_name)); /* both 64, NUL-ended */
            if (nc > 1) {
                sharc_info("ib: rank %d (local %d): %s port %d of %d active ports (%s)",
                           tp->base.rank, local_rank, names[pick], ports[pick], nc, how);
            }
        } else if (tp->ctx != NULL) {
            ibv_close_device(tp->ctx);
            tp->ctx = NULL;
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    if (tp->ctx == NULL) {
        sharc_error("ib: %s%s%s has no active port%s", want[0] ? "device " : "no RDMA device", want,
                    want[0] ? "" : " here", want[0] ? " (SHARC_IB_HCA)" : "");
        return SHARC_ERR_UNSUPPORTED;
    }
    tp->gid_index = -1;
    if (pa->link_layer == IBV_LINK_LAYER_ETHERNET) {
        tp->gid_index = sharc_tp_ib_cfg(cfg)->gid_index >= 0
                            ? sharc_tp_ib_cfg(cfg)->gid_index
                            : sharc_ib_roce_gid(tp->ctx, tp->port, pa->gid_tbl_len);
        if (tp->gid_index < 0) {
            sharc_error("ib: %s port %u is RoCE but has no RoCE v2 GID (an IP address on its "
                        "netdev?); SHARC_IB_GID_INDEX picks one",
                        tp->dev_name, tp->port);
            return SHARC_ERR_UNSUPPORTED;
        }
    }
    sharc_info("ib: rank %d: %s port %u, %s, mtu %d%s", tp->base.rank, tp->dev_name, tp->port,
               pa->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
               128 << pa->active_mtu, tp->gid_index >= 0 ? ", RoCE v2 GID" : "");
    return SHARC_OK;
}

sharc_status_t sharc_tp_ib_device_setup(sharc_tp_comm_t *tp, const sharc_tp_comm_params_t *params,
                                        struct ibv_port_attr *pa, union ibv_gid *gid)
{
    int n = tp->base.size, local_rank = 0, rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    size_t cbytes = (size_t)n * sizeof(uint64_t), fbytes = cbytes * SHARC_IB_ZC;
    struct ibv_device_attr da;
    sharc_status_t status;

    for (int r = 0; r < params->rank; r++) {
        local_rank += params->node_of[r] == params->node_of[params->rank];
    }
    status = sharc_ib_open(tp, params->cfg, local_rank, pa);
    if (status != SHARC_OK) {
        return status;
    }
    tp->pd = ibv_alloc_pd(tp->ctx);
    tp->cq =
        ibv_create_cq(tp->ctx, (n - 1) * (SHARC_IB_SEND_WR + SHARC_IB_RECV_WR) + 16, NULL, NULL, 0);
    if (tp->pd != NULL) {
        tp->credits_mr = ibv_reg_mr(tp->pd, tp->credits, cbytes, rw);
        tp->credit_src_mr = ibv_reg_mr(tp->pd, tp->credit_src, cbytes, IBV_ACCESS_LOCAL_WRITE);
        tp->fin_mr = ibv_reg_mr(tp->pd, tp->fin, fbytes, rw);
        tp->fin_src_mr = ibv_reg_mr(tp->pd, tp->fin_src, fbytes, IBV_ACCESS_LOCAL_WRITE);
    }
    if (tp->pd == NULL || tp->cq == NULL || tp->credits_mr == NULL || tp->credit_src_mr == NULL ||
        tp->fin_mr == NULL || tp->fin_src_mr == NULL || ibv_query_device(tp->ctx, &da) != 0) {
        sharc_error("ib: %s: protection domain, completion queue or credit registration "
                    "failed: %s",
                    tp->dev_name, strerror(errno));
        return SHARC_ERR_IO;
    }
    tp->rd_atom = da.max_qp_rd_atom < SHARC_IB_RD_ATOM ? da.max_qp_rd_atom : SHARC_IB_RD_ATOM;
    tp->init_rd_atom =
        da.max_qp_init_rd_atom < SHARC_IB_RD_ATOM ? da.max_qp_init_rd_atom : SHARC_IB_RD_ATOM;
    status = sharc_ib_rcache_init(&tp->rcache, tp->pd, params->mem,
                                  sharc_tp_ib_cfg(params->cfg)->reg_cache);
    if (status == SHARC_OK && tp->gid_index >= 0 &&
        ibv_query_gid(tp->ctx, tp->port, tp->gid_index, gid) != 0) {
        sharc_error("ib: %s port %u: reading GID %d failed", tp->dev_name, tp->port, tp->gid_index);
        status = SHARC_ERR_IO;
    }
    return status;
}
