/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_init.c: the verbs transport's ops table and per-communicator setup: its state, the
 * device (ib_dev.c) and the connections (ib_conn.c) brought up in turn, and their teardown,
 * which first lets the peers' last writes be acknowledged.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "ib.h"

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

        pthread_mutex_lock(&tp->base.lock);
        for (int r = 0; r < tp->base.size; r++) {
            if (r != tp->base.rank && !tp->peers[r].failed) {
                left += tp->peers[r].busy + tp->peers[r].fin_writes;
            }
        }
        pthread_mutex_unlock(&tp->base.lock);
        if (left == 0) {
            return;
        }
        if (sharc_time_now() > deadline) {
            sharc_warn("ib: rank %d: %d writes to peers still unacknowledged after %.1f s; the "
                       "connections go anyway",
                       tp->base.rank, left, tp->drain_s);
            return;
        }
        if (sharc_tp_ib_progress(tp) <= 0) {
            nanosleep(&ts, NULL);
        }
    }
}

/* A registration that may not have been made (a failed setup) goes. */
static void sharc_ib_dereg(struct ibv_mr *mr)
{
    if (mr != NULL) {
        ibv_dereg_mr(mr);
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
    for (int r = 0; tp->peers != NULL && r < tp->base.size; r++) {
        sharc_ib_peer_t *p = &tp->peers[r];

        if (r != tp->base.rank) {
            sharc_tp_ib_fail_peer(tp, r); /* frees what is queued; nothing should be */
        }
        if (p->qp != NULL) {
            ibv_destroy_qp(p->qp);
        }
        sharc_ib_dereg(p->ring_mr);
        sharc_ib_dereg(p->bounce_mr);
        free(p->ring);
        free(p->bounce);
    }
    if (tp->peers != NULL && tp->base.rank < tp->base.size) {
        sharc_tp_ib_fail_peer(tp, tp->base.rank); /* unexpected messages to self */
    }
    sharc_ib_dereg(tp->credits_mr);
    sharc_ib_dereg(tp->credit_src_mr);
    sharc_ib_dereg(tp->fin_mr);
    sharc_ib_dereg(tp->fin_src_mr);
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
    sharc_tp_base_fini(&tp->base);
    free(tp);
}

/* The transport's state for @p params's ranks: settings and per-peer arrays. */
static sharc_status_t sharc_ib_state_alloc(sharc_tp_comm_t *tp,
                                           const sharc_tp_comm_params_t *params)
{
    int n = params->size;
    size_t cbytes = (size_t)n * sizeof(uint64_t), fbytes = cbytes * SHARC_IB_ZC;

    sharc_tp_base_init(&tp->base, params);
    tp->zcopy_min = sharc_tp_ib_cfg(params->cfg)->zcopy_min;
    tp->timeout = sharc_tp_ib_cfg(params->cfg)->timeout;
    /* the QP's own give-up time for a silent peer, bounded by the collective timeout */
    tp->drain_s = 4.096e-6 * (double)(1ull << tp->timeout) * (SHARC_IB_RETRY + 1);
    tp->drain_s = tp->drain_s < params->timeout ? tp->drain_s : params->timeout;
    tp->peers = calloc((size_t)n, sizeof(*tp->peers));
    tp->credits = sharc_tp_ib_alloc(cbytes);
    tp->credit_src = sharc_tp_ib_alloc(cbytes);
    tp->fin = sharc_tp_ib_alloc(fbytes);
    tp->fin_src = sharc_tp_ib_alloc(fbytes);
    if (tp->peers == NULL || tp->credits == NULL || tp->credit_src == NULL || tp->fin == NULL ||
        tp->fin_src == NULL) {
        sharc_error("ib: rank %d: no memory for the state of %d peers", tp->base.rank, n);
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

static sharc_status_t sharc_tp_ib_comm_create(const sharc_tp_comm_params_t *params,
                                              sharc_tp_comm_t **tp_p)
{
    sharc_tp_comm_t *tp = calloc(1, sizeof(*tp));
    struct ibv_port_attr pa;
    union ibv_gid gid = {0};
    sharc_status_t status;

    if (tp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_ib_state_alloc(tp, params);
    if (status == SHARC_OK) {
        status = sharc_tp_ib_device_setup(tp, params, &pa, &gid);
    }
    /* every rank goes on to the connections (a collective), even after a failed step */
    status = sharc_tp_ib_connect(tp, params, status, &pa, &gid);
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
    sharc_tp_req_t *req;

    pthread_mutex_lock(&tp->base.lock);
    tp->aborted = 1;
    for (int r = 0; r < tp->base.size; r++) {
        sharc_tp_ib_fail_peer(tp, r); /* self too: its receives complete */
    }
    while ((req = sharc_tp_queue_pop(&tp->any_posted)) != NULL) {
        sharc_tp_ib_complete(req, SHARC_ERR_REMOTE);
    }
    pthread_mutex_unlock(&tp->base.lock);
}

static const sharc_tp_p2p_ops_t sharc_tp_ib_p2p_ops = {
    .send = sharc_tp_ib_send,
    .recv = sharc_tp_ib_recv,
    .recv_any = sharc_tp_ib_recv_any,
    .probe = sharc_tp_ib_probe,
};

const sharc_tp_ops_t sharc_tp_ib_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "ib",
    .caps = SHARC_TP_CAP_HOST_MEM | SHARC_TP_CAP_REMOTE,
    .query = sharc_tp_ib_query,
    .comm_create = sharc_tp_ib_comm_create,
    .comm_destroy = sharc_tp_ib_comm_destroy,
    .abort = sharc_tp_ib_abort,
    .mem_reg = sharc_tp_ib_mem_reg,
    .mem_dereg = sharc_tp_ib_mem_dereg,
    .progress = sharc_tp_ib_progress,
    .p2p = &sharc_tp_ib_p2p_ops,
};
