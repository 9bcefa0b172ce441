/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_peer.c: what every send and receive of the verbs transport does of its peer: the checks
 * a post makes (the peer, the tag, a connection that has not failed), posting an RDMA
 * operation on the peer's QP, a verbs error that fails the peer, failing every request on a
 * peer, and a receive too short for its message. The sends are ib_ep.c's, the receives
 * ib_recv.c's, zero-copy ib_zcopy.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "ib.h"

/* Put @p req on @p *doomed unless it is there already (a send may hold several slots). */
static void sharc_ib_doom(sharc_tp_req_t **doomed, sharc_tp_req_t *req)
{
    for (sharc_tp_req_t *q = *doomed; req != NULL && q != NULL; q = q->next) {
        if (q == req) {
            return;
        }
    }
    if (req != NULL) {
        req->next = *doomed;
        *doomed = req;
    }
}

void sharc_tp_ib_fail_peer(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_tp_req_t *doomed = NULL, *req, *next;
    sharc_ib_msg_t *m, *mnext, *cur = p->cur;
    struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};

    if (p->failed) {
        return;
    }
    p->failed = 1;
    /* the peer learns it too: its writes and probes to this QP fail from now on */
    if (p->qp != NULL) {
        ibv_modify_qp(p->qp, &err, IBV_QP_STATE);
    }
    /* Detach every request first and complete each once afterwards: a completion callback
     * may post again (on this peer it fails at once), and must not find its request still
     * in these lists. The queues first (their links are followed), then what holds slots. */
    while ((req = sharc_tp_queue_pop(&p->sendq)) != NULL) {
        sharc_ib_doom(&doomed, req);
    }
    while ((req = sharc_tp_queue_pop(&p->posted)) != NULL) {
        sharc_ib_doom(&doomed, req);
    }
    for (int i = 0; i < SHARC_IB_ZC; i++) {
        sharc_ib_doom(&doomed, p->zc_send[i]);
        sharc_ib_reg_put(&tp->rcache, p->zc_reg[i]);
        p->zc_send[i] = NULL;
        p->zc_reg[i] = NULL;
        if ((m = p->zc_recv[i]) != NULL) {
            sharc_ib_doom(&doomed, m->req);
            sharc_ib_reg_put(&tp->rcache, m->reg);
            free(m);
            p->zc_recv[i] = NULL;
        }
    }
    p->zc_out = p->reads = 0;
    p->cur = NULL;
    if (cur != NULL && cur->req != NULL) { /* matched: not on the unexpected list */
        sharc_ib_doom(&doomed, cur->req);
        free(cur->data);
        free(cur);
    }
    for (m = p->unexp_head; m != NULL; m = mnext) { /* attached receives left the list */
        mnext = m->next;
        free(m->data);
        free(m);
    }
    p->unexp_head = p->unexp_tail = NULL;
    for (req = doomed; req != NULL; req = next) {
        next = req->next;
        req->next = NULL;
        sharc_tp_ib_complete(req, SHARC_ERR_REMOTE);
    }
}

void sharc_tp_ib_verbs_error(sharc_tp_comm_t *tp, int peer, const char *what, int err)
{
    if (!tp->peers[peer].failed) {
        sharc_error("ib: rank %d: %s rank %d failed: %s", tp->base.rank, what, peer, strerror(err));
        sharc_tp_ib_fail_peer(tp, peer);
    }
}

int sharc_tp_ib_post_rdma(sharc_tp_comm_t *tp, int peer, const sharc_ib_rdma_t *op,
                          const char *what)
{
    struct ibv_sge sge = {.addr = (uintptr_t)op->local, .length = op->bytes, .lkey = op->lkey};
    struct ibv_send_wr wr = {.wr_id = op->wr_id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op->opcode,
                             .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = op->imm},
                       *bad;
    int err;

    wr.wr.rdma.remote_addr = op->remote;
    wr.wr.rdma.rkey = op->rkey;
    err = ibv_post_send(tp->peers[peer].qp, &wr, &bad);
    if (err != 0) {
        sharc_tp_ib_verbs_error(tp, peer, what, err);
        return -1;
    }
    return 0;
}

sharc_status_t sharc_tp_ib_begin(sharc_tp_comm_t *tp, int peer, const char *what,
                                 sharc_tp_req_t *req, const sharc_tp_ib_req_t *state)
{
    uint64_t tag = state->tag;

    if (peer < 0 || peer >= tp->base.size || tag > SHARC_TP_TAG_MAX) {
        sharc_error("ib: %s peer %d, tag %#llx: the peer must be in [0, %d) and the tag below "
                    "2^%d",
                    what, peer, (unsigned long long)tag, tp->base.size, SHARC_TP_TAG_BITS);
        return SHARC_ERR_INVALID;
    }
    pthread_mutex_lock(&tp->base.lock);
    if (tp->peers[peer].failed) {
        pthread_mutex_unlock(&tp->base.lock);
        sharc_error("ib: rank %d cannot %s rank %d: its connection failed earlier", tp->base.rank,
                    what, peer);
        return SHARC_ERR_REMOTE;
    }
    req->status = SHARC_INPROGRESS;
    req->bytes = 0;
    req->next = NULL;
    *sharc_tp_ib_req(req) = *state;
    return SHARC_OK;
}

void sharc_tp_ib_truncated(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req, size_t total)
{
    sharc_debug("ib: rank %d: a %zu-byte message from rank %d (tag %#llx) does not fit the "
                "%llu-byte receive buffer",
                tp->base.rank, total, peer, (unsigned long long)sharc_tp_ib_req(req)->tag,
                (unsigned long long)sharc_tp_ib_req(req)->capacity);
    req->bytes = total;
    sharc_tp_ib_complete(req, SHARC_ERR_INVALID);
}
