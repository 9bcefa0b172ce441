/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_conn.c: the verbs transport's connections: per peer a ring, bounce slots and an RC QP
 * with the receives its writes consume, addresses exchanged through the bootstrap, each QP
 * taken INIT -> RTR -> RTS, and every rank agreeing that all came up. Not the device
 * (ib_dev.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "ib.h"

int sharc_tp_ib_post_recvs(sharc_tp_comm_t *tp, int peer, int n)
{
    for (int i = 0; i < n; i++) {
        struct ibv_recv_wr wr = {.wr_id = SHARC_IB_WR(SHARC_IB_WR_RECV, peer, 0)}, *bad;
        int err = ibv_post_recv(tp->peers[peer].qp, &wr, &bad);

        if (err != 0) {
            return err;
        }
    }
    return 0;
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

    p->ring = sharc_tp_ib_alloc(bytes);
    p->bounce = sharc_tp_ib_alloc(bytes);
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
static sharc_status_t sharc_ib_qp_up(sharc_tp_comm_t *tp, int peer, const sharc_ib_addr_t *mine,
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

/* A QP, ring and slots per peer, and what each peer needs to reach them (@p mine[peer]). */
static sharc_status_t sharc_ib_addresses(sharc_tp_comm_t *tp, const struct ibv_port_attr *pa,
                                         const union ibv_gid *gid, sharc_ib_addr_t *mine)
{
    sharc_status_t status = SHARC_OK;

    for (int r = 0; status == SHARC_OK && r < tp->base.size; r++) {
        if (r == tp->base.rank) {
            continue;
        }
        status = sharc_ib_peer_setup(tp, r);
        if (status == SHARC_OK) {
            sharc_ib_peer_t *p = &tp->peers[r];

            mine[r].qpn = p->qp->qp_num;
            mine[r].psn = (uint32_t)((tp->base.rank * 7919u + (unsigned)r * 104729u) & 0xffffff);
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
    int n = tp->base.size, ok;
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
        if (r != tp->base.rank && theirs[r].qpn == 0) {
            sharc_error("ib: rank %d could not set up its side of the connection to rank %d", r,
                        tp->base.rank);
            status = SHARC_ERR_REMOTE;
        }
    }
    for (int r = 0; status == SHARC_OK && r < n; r++) {
        if (r != tp->base.rank) {
            status = sharc_ib_qp_up(tp, r, &mine[r], &theirs[r]);
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

sharc_status_t sharc_tp_ib_connect(sharc_tp_comm_t *tp, const sharc_tp_comm_params_t *params,
                                   sharc_status_t status, const struct ibv_port_attr *pa,
                                   const union ibv_gid *gid)
{
    sharc_ib_addr_t *mine = calloc((size_t)params->size, sizeof(*mine));

    if (mine == NULL) {
        return SHARC_ERR_NOMEM; /* (the peers' exchange then times out: nothing to tell them with)
                                 */
    }
    if (status == SHARC_OK) {
        status = sharc_ib_addresses(tp, pa, gid, mine);
    }
    status = sharc_ib_exchange(tp, params, status, mine);
    free(mine);
    return status;
}
