/*
 * ib_init.c: the verbs transport's setup: the device and port (SHARC_IB_HCA, else an active
 * port nearest the rank's GPU, or on its NUMA node, spread over the node's ranks), the GID for RoCE
 * v2 (SHARC_IB_GID_INDEX, else the port's RoCE v2 entry with an IPv4 address; InfiniBand routes by
 * LID), a ring, bounce slots and an RC QP per peer, addresses exchanged through the bootstrap, each
 * QP taken INIT -> RTR -> RTS; the finish words of zero-copy sends and the registration cache.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../src/base/gpu.h"
#include "../../src/base/log.h"
#include "../../src/base/util.h"
#include "../../topo/topo.h"
#include "ib.h"

/* RC: 7 retries of SHARC_IB_TIMEOUT each (4.096 us * 2^timeout) */
#define SHARC_IB_RETRY     7
#define SHARC_IB_RNR_RETRY 7

/* work requests on a send queue at most: data and credit writes, finish writes, reads, a probe */
#define SHARC_IB_SEND_WR        (2 * SHARC_IB_SLOTS + 2 * SHARC_IB_ZC + SHARC_IB_READS + 8)
#define SHARC_IB_RECV_WR        (SHARC_IB_SLOTS + 4)
#define SHARC_IB_MAX_CANDIDATES 64

/* RDMA reads a QP answers at once, at most (what it asks of the device) */
#define SHARC_IB_RD_ATOM 16

static sharc_status_t sharc_tp_ib_query(const sharc_cfg_t *cfg)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);

    if (list == NULL || n == 0) {
        sharc_info("ib: no RDMA device (%s)", list == NULL ? strerror(errno) : "none listed");
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return SHARC_ERR_UNSUPPORTED;
    }
    ibv_free_device_list(list);
    (void)cfg;
    return SHARC_OK;
}

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

int sharc_tp_ib_choose(const int *numa, int n, int my_numa, int local_rank)
{
    int key[SHARC_IB_MAX_CANDIDATES];

    for (int i = 0; i < n && i < SHARC_IB_MAX_CANDIDATES; i++) {
        key[i] = sharc_ib_numa_key(numa[i], my_numa);
    }
    return sharc_tp_ib_choose_nearest(
        key, n < SHARC_IB_MAX_CANDIDATES ? n : SHARC_IB_MAX_CANDIDATES, local_rank);
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
 * (sharc_tp_ib_choose). Fills tp->ctx, port, gid_index, dev_name and the port's attributes.
 */
static sharc_status_t sharc_ib_open(sharc_tp_comm_t *tp, const sharc_cfg_t *cfg, int local_rank,
                                    struct ibv_port_attr *pa)
{
    char want[64] = "", names[SHARC_IB_MAX_CANDIDATES][64];
    int want_port = 0, n = 0, nc = 0, ports[SHARC_IB_MAX_CANDIDATES], key[SHARC_IB_MAX_CANDIDATES];
    const char *how = "";
    struct ibv_device **list = ibv_get_device_list(&n);

    if (cfg->ib_hca[0] != '\0') {
        char *colon;
        snprintf(want, sizeof(want), "%s", cfg->ib_hca);
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
                sharc_info("ib: rank %d (local %d): %s port %d of %d active ports (%s)", tp->rank,
                           local_rank, names[pick], ports[pick], nc, how);
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
        tp->gid_index = cfg->ib_gid_index >= 0
                            ? cfg->ib_gid_index
                            : sharc_ib_roce_gid(tp->ctx, tp->port, pa->gid_tbl_len);
        if (tp->gid_index < 0) {
            sharc_error("ib: %s port %u is RoCE but has no RoCE v2 GID (an IP address on its "
                        "netdev?); SHARC_IB_GID_INDEX picks one",
                        tp->dev_name, tp->port);
            return SHARC_ERR_UNSUPPORTED;
        }
    }
    sharc_info("ib: rank %d: %s port %u, %s, mtu %d%s", tp->rank, tp->dev_name, tp->port,
               pa->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
               128 << pa->active_mtu, tp->gid_index >= 0 ? ", RoCE v2 GID" : "");
    return SHARC_OK;
}

static void *sharc_ib_alloc(size_t bytes)
{
    void *p = NULL;

    return posix_memalign(&p, 4096, bytes) == 0 ? memset(p, 0, bytes) : NULL;
}

/* A peer's QP (to INIT), ring and bounce slots; the receives its writes consume. */
static sharc_status_t sharc_ib_peer_setup(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    size_t bytes = (size_t)SHARC_IB_SLOTS * SHARC_IB_SLOT_BYTES;
    struct ibv_qp_init_attr qa = {
        .send_cq = tp->cq,
        .recv_cq = tp->cq,
        .cap = {.max_send_wr = SHARC_IB_SEND_WR,
                .max_recv_wr = SHARC_IB_RECV_WR,
                .max_send_sge = 1,
                .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
    };
    struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT,
                               .port_num = tp->port,
                               .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                  IBV_ACCESS_REMOTE_READ};

    p->ring = sharc_ib_alloc(bytes);
    p->bounce = sharc_ib_alloc(bytes);
    if (p->ring == NULL || p->bounce == NULL) {
        return SHARC_ERR_NOMEM;
    }
    p->ring_mr =
        ibv_reg_mr(tp->pd, p->ring, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    p->bounce_mr = ibv_reg_mr(tp->pd, p->bounce, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (p->ring_mr == NULL || p->bounce_mr == NULL) {
        sharc_error("ib: registering %zu bytes of buffers for rank %d failed: %s", 2 * bytes, peer,
                    strerror(errno));
        return SHARC_ERR_NOMEM;
    }
    p->qp = ibv_create_qp(tp->pd, &qa);
    if (p->qp == NULL) {
        sharc_error("ib: creating a QP for rank %d failed: %s", peer, strerror(errno));
        return SHARC_ERR_IO;
    }
    if (ibv_modify_qp(p->qp, &init,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0 ||
        sharc_tp_ib_post_recvs(tp, peer, SHARC_IB_SLOTS) != 0) {
        sharc_error("ib: QP for rank %d: INIT or its receives failed: %s", peer, strerror(errno));
        return SHARC_ERR_IO;
    }
    return SHARC_OK;
}

/* INIT -> RTR -> RTS toward what the peer sent. */
static sharc_status_t sharc_ib_connect(sharc_tp_comm_t *tp, int peer, const sharc_ib_addr_t *mine,
                                       const sharc_ib_addr_t *theirs)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = (enum ibv_mtu)(mine->mtu < theirs->mtu ? mine->mtu : theirs->mtu),
        .dest_qp_num = theirs->qpn,
        .rq_psn = theirs->psn,
        .max_dest_rd_atomic = mine->rd_atom,
        .min_rnr_timer = 12,
        .ah_attr = {.dlid = theirs->lid, .port_num = tp->port},
    };

    if (tp->gid_index >= 0) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, theirs->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)tp->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    if (ibv_modify_qp(p->qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        sharc_error("ib: QP to rank %d: INIT -> RTR failed: %s", peer, strerror(errno));
        return SHARC_ERR_IO;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = (uint8_t)tp->timeout;
    a.retry_cnt = SHARC_IB_RETRY;
    a.rnr_retry = SHARC_IB_RNR_RETRY;
    a.sq_psn = mine->psn;
    a.max_rd_atomic =
        (uint8_t)(tp->init_rd_atom < theirs->rd_atom ? tp->init_rd_atom : theirs->rd_atom);
    a.max_rd_atomic = a.max_rd_atomic > 0 ? a.max_rd_atomic : 1;
    p->max_reads = a.max_rd_atomic < SHARC_IB_READS ? a.max_rd_atomic : SHARC_IB_READS;
    if (ibv_modify_qp(p->qp, &a,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        sharc_error("ib: QP to rank %d: RTR -> RTS failed: %s", peer, strerror(errno));
        return SHARC_ERR_IO;
    }
    p->remote_ring = theirs->ring_addr;
    p->remote_ring_rkey = theirs->ring_rkey;
    p->remote_credit = theirs->credit_addr;
    p->remote_credit_rkey = theirs->credit_rkey;
    p->remote_fin = theirs->fin_addr;
    p->remote_fin_rkey = theirs->fin_rkey;
    return SHARC_OK;
}

/*
 * Before the QPs go: the writes of this rank a peer may still wait for (message chunks, and
 * the finish words of zero-copy messages it read) are acknowledged, or the QP's own retries
 * run out (bounded by SHARC_TIMEOUT too). Destroying a QP flushes what it has not sent.
 */
static void sharc_ib_drain(sharc_tp_comm_t *tp)
{
    double deadline = sharc_time_now() + tp->drain_s;
    struct timespec ts = {0, 50000};

    for (;;) {
        int left = 0;

        pthread_mutex_lock(&tp->lock);
        for (int r = 0; r < tp->size; r++) {
            if (r != tp->rank && !tp->peers[r].failed) {
                left += tp->peers[r].busy + tp->peers[r].fin_writes;
            }
        }
        pthread_mutex_unlock(&tp->lock);
        if (left == 0) {
            return;
        }
        if (sharc_time_now() > deadline) {
            sharc_warn("ib: rank %d: %d writes to peers still unacknowledged after %.1f s; the "
                       "connections go anyway",
                       tp->rank, left, tp->drain_s);
            return;
        }
        if (sharc_tp_ib_progress(tp) <= 0) {
            nanosleep(&ts, NULL);
        }
    }
}

static void sharc_tp_ib_comm_destroy(sharc_tp_comm_t *tp)
{
    if (tp == NULL) {
        return;
    }
    if (tp->peers != NULL && tp->cq != NULL) {
        sharc_ib_drain(tp);
    }
    for (int r = 0; tp->peers != NULL && r < tp->size; r++) {
        sharc_ib_peer_t *p = &tp->peers[r];

        if (r != tp->rank) {
            sharc_tp_ib_fail_peer(tp, r); /* frees what is queued; nothing should be */
        }
        if (p->qp != NULL) {
            ibv_destroy_qp(p->qp);
        }
        if (p->ring_mr != NULL) {
            ibv_dereg_mr(p->ring_mr);
        }
        if (p->bounce_mr != NULL) {
            ibv_dereg_mr(p->bounce_mr);
        }
        free(p->ring);
        free(p->bounce);
    }
    if (tp->peers != NULL && tp->rank < tp->size) {
        sharc_tp_ib_fail_peer(tp, tp->rank); /* unexpected messages to self */
    }
    if (tp->credits_mr != NULL) {
        ibv_dereg_mr(tp->credits_mr);
    }
    if (tp->credit_src_mr != NULL) {
        ibv_dereg_mr(tp->credit_src_mr);
    }
    if (tp->fin_mr != NULL) {
        ibv_dereg_mr(tp->fin_mr);
    }
    if (tp->fin_src_mr != NULL) {
        ibv_dereg_mr(tp->fin_src_mr);
    }
    sharc_ib_rcache_fini(&tp->rcache);
    if (tp->cq != NULL) {
        ibv_destroy_cq(tp->cq);
    }
    if (tp->pd != NULL) {
        ibv_dealloc_pd(tp->pd);
    }
    if (tp->ctx != NULL) {
        ibv_close_device(tp->ctx);
    }
    free(tp->credits);
    free(tp->credit_src);
    free(tp->fin);
    free(tp->fin_src);
    free(tp->peers);
    pthread_mutex_destroy(&tp->lock);
    free(tp);
}

/* The transport's state for @p params's ranks: settings and per-peer arrays. */
static sharc_status_t sharc_ib_state_alloc(sharc_tp_comm_t *tp,
                                           const sharc_tp_comm_params_t *params)
{
    int n = params->size;
    size_t cbytes = (size_t)n * sizeof(uint64_t), fbytes = cbytes * SHARC_IB_ZC;

    sharc_mutex_init_recursive(&tp->lock);
    tp->rank = params->rank;
    tp->boot = params->boot;
    tp->size = n;
    tp->zcopy_min = params->cfg->ib_zcopy_min;
    tp->timeout = params->cfg->ib_timeout;
    /* the QP's own give-up time for a silent peer, bounded by the collective timeout */
    tp->drain_s = 4.096e-6 * (double)(1ull << tp->timeout) * (SHARC_IB_RETRY + 1);
    tp->drain_s = tp->drain_s < params->cfg->timeout ? tp->drain_s : params->cfg->timeout;
    tp->peers = calloc((size_t)n, sizeof(*tp->peers));
    tp->credits = sharc_ib_alloc(cbytes);
    tp->credit_src = sharc_ib_alloc(cbytes);
    tp->fin = sharc_ib_alloc(fbytes);
    tp->fin_src = sharc_ib_alloc(fbytes);
    if (tp->peers == NULL || tp->credits == NULL || tp->credit_src == NULL || tp->fin == NULL ||
        tp->fin_src == NULL) {
        sharc_error("ib: rank %d: no memory for the state of %d peers", tp->rank, n);
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

/* The device and port (sharc_ib_open), its protection domain, completion queue, the
 * registered credit and finish words, the registration cache and the port's GID. */
static sharc_status_t sharc_ib_device_setup(sharc_tp_comm_t *tp,
                                            const sharc_tp_comm_params_t *params,
                                            struct ibv_port_attr *pa, union ibv_gid *gid)
{
    int n = tp->size, local_rank = 0, rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
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
    status = sharc_ib_rcache_init(&tp->rcache, tp->pd, params->mem, params->cfg->ib_reg_cache);
    if (status == SHARC_OK && tp->gid_index >= 0 &&
        ibv_query_gid(tp->ctx, tp->port, tp->gid_index, gid) != 0) {
        sharc_error("ib: %s port %u: reading GID %d failed", tp->dev_name, tp->port, tp->gid_index);
        status = SHARC_ERR_IO;
    }
    return status;
}

/* A QP, ring and slots per peer, and what each peer needs to reach them (@p mine[peer]). */
static sharc_status_t sharc_ib_addresses(sharc_tp_comm_t *tp, const struct ibv_port_attr *pa,
                                         const union ibv_gid *gid, sharc_ib_addr_t *mine)
{
    sharc_status_t status = SHARC_OK;

    for (int r = 0; status == SHARC_OK && r < tp->size; r++) {
        if (r == tp->rank) {
            continue;
        }
        status = sharc_ib_peer_setup(tp, r);
        if (status == SHARC_OK) {
            sharc_ib_peer_t *p = &tp->peers[r];

            mine[r].qpn = p->qp->qp_num;
            mine[r].psn = (uint32_t)((tp->rank * 7919u + (unsigned)r * 104729u) & 0xffffff);
            mine[r].ring_addr = (uintptr_t)p->ring;
            mine[r].ring_rkey = p->ring_mr->rkey;
            mine[r].credit_addr = (uintptr_t)&tp->credits[r];
            mine[r].credit_rkey = tp->credits_mr->rkey;
            mine[r].fin_addr = (uintptr_t)&tp->fin[(size_t)r * SHARC_IB_ZC];
            mine[r].fin_rkey = tp->fin_mr->rkey;
            mine[r].rd_atom = (uint8_t)(tp->rd_atom > 0 ? tp->rd_atom : 1);
            mine[r].lid = pa->lid;
            mine[r].mtu = (uint8_t)pa->active_mtu;
            memcpy(mine[r].gid, gid->raw, 16);
        }
    }
    return status;
}

/*
 * Exchange the addresses (collective: a rank that failed sends all zeros, so that its peers
 * learn it), bring every QP up, and agree that all did before anyone sends.
 */
static sharc_status_t sharc_ib_exchange(sharc_tp_comm_t *tp, const sharc_tp_comm_params_t *params,
                                        sharc_status_t status, const sharc_ib_addr_t *mine)
{
    int n = tp->size, ok;
    sharc_ib_addr_t *theirs = calloc((size_t)n, sizeof(*theirs));
    int *oks = calloc((size_t)n, sizeof(*oks));
    sharc_status_t xs;

    if (theirs == NULL || oks == NULL) {
        free(theirs);
        free(oks);
        return SHARC_ERR_NOMEM; /* (the peers' exchange then times out: nothing to tell them with)
                                 */
    }
    xs = sharc_boot_alltoall(params->boot, mine, theirs, sizeof(*mine));
    if (xs != SHARC_OK) {
        status = xs;
        goto out;
    }
    for (int r = 0; status == SHARC_OK && r < n; r++) {
        if (r != tp->rank && theirs[r].qpn == 0) {
            sharc_error("ib: rank %d could not set up its side of the connection to rank %d", r,
                        tp->rank);
            status = SHARC_ERR_REMOTE;
        }
    }
    for (int r = 0; status == SHARC_OK && r < n; r++) {
        if (r != tp->rank) {
            status = sharc_ib_connect(tp, r, &mine[r], &theirs[r]);
        }
    }
    /* every QP ready to receive before anyone sends; a failure is every rank's */
    ok = status == SHARC_OK;
    xs = sharc_boot_allgather(params->boot, &ok, oks, sizeof(int));
    for (int r = 0; xs == SHARC_OK && status == SHARC_OK && r < n; r++) {
        if (!oks[r]) {
            sharc_error("ib: rank %d could not bring up its connections", r);
            status = SHARC_ERR_REMOTE;
        }
    }
    if (xs != SHARC_OK) {
        status = xs;
    }
out:
    free(theirs);
    free(oks);
    return status;
}

static sharc_status_t sharc_tp_ib_comm_create(const sharc_tp_comm_params_t *params,
                                              sharc_tp_comm_t **tp_p)
{
    sharc_tp_comm_t *tp = calloc(1, sizeof(*tp));
    sharc_ib_addr_t *mine = NULL;
    struct ibv_port_attr pa;
    union ibv_gid gid = {0};
    sharc_status_t status;

    if (tp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_ib_state_alloc(tp, params);
    mine = calloc((size_t)params->size, sizeof(*mine));
    if (mine == NULL) {
        sharc_tp_ib_comm_destroy(tp);
        return SHARC_ERR_NOMEM; /* (the peers' exchange then times out: nothing to tell them with)
                                 */
    }
    /* every rank goes on to the exchange (a collective), even after a failed step, with an
     * all-zero address then; a failure is agreed on there */
    if (status == SHARC_OK) {
        status = sharc_ib_device_setup(tp, params, &pa, &gid);
    }
    if (status == SHARC_OK) {
        status = sharc_ib_addresses(tp, &pa, &gid, mine);
    }
    status = sharc_ib_exchange(tp, params, status, mine);
    free(mine);
    if (status != SHARC_OK) {
        sharc_tp_ib_comm_destroy(tp);
        return status;
    }
    *tp_p = tp;
    return SHARC_OK;
}

/* Give up: every request on every peer fails now. */
static void sharc_tp_ib_abort(sharc_tp_comm_t *tp)
{
    pthread_mutex_lock(&tp->lock);
    for (int r = 0; r < tp->size; r++) {
        sharc_tp_ib_fail_peer(tp, r); /* self too: its receives complete */
    }
    pthread_mutex_unlock(&tp->lock);
}

const sharc_tp_ops_t sharc_tp_ib_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "ib",
    .caps = SHARC_TP_CAP_P2P | SHARC_TP_CAP_HOST_MEM | SHARC_TP_CAP_REMOTE,
    .query = sharc_tp_ib_query,
    .comm_create = sharc_tp_ib_comm_create,
    .comm_destroy = sharc_tp_ib_comm_destroy,
    .abort = sharc_tp_ib_abort,
    .mem_reg = sharc_tp_ib_mem_reg,
    .mem_dereg = sharc_tp_ib_mem_dereg,
    .send = sharc_tp_ib_send,
    .recv = sharc_tp_ib_recv,
    .progress = sharc_tp_ib_progress,
};
