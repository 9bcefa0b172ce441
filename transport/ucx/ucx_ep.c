/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx_ep.c: point-to-point messages over UCP tag matching. The UCP tag carries the sender's
 * rank above the sharc tag, and receives match it exactly, so a receive names its peer and
 * equal tags from one peer match in order; a receive from any peer masks the rank out, and
 * UCP matches every message with the oldest receive that accepts it (MPI's order). Completion
 * comes from UCP's callback (inside progress) or at once when UCP completes the operation
 * inside the post.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include "../../base/log.h"
#include "ucx.h"

/* The in-flight list (tp->base.lock held: posts and callbacks take it). */
static void sharc_tp_ucx_link(sharc_tp_comm_t *tp, sharc_tp_req_t *req)
{
    sharc_tp_ucx_req_t *u = sharc_tp_ucx_req(req);

    u->ureq = NULL;
    u->tp = tp;
    u->prev = NULL;
    req->next = tp->inflight;
    if (tp->inflight != NULL) {
        sharc_tp_ucx_req(tp->inflight)->prev = req;
    }
    tp->inflight = req;
}

static void sharc_tp_ucx_unlink(sharc_tp_req_t *req)
{
    sharc_tp_ucx_req_t *u = sharc_tp_ucx_req(req);

    if (u->tp == NULL) {
        return; /* completed inside its post: never linked */
    }
    if (u->prev != NULL) {
        u->prev->next = req->next;
    } else {
        u->tp->inflight = req->next;
    }
    if (req->next != NULL) {
        sharc_tp_ucx_req(req->next)->prev = u->prev;
    }
    req->next = NULL;
    u->tp = NULL;
}

static uint64_t sharc_tp_ucx_tag(int src, uint64_t tag)
{
    return ((uint64_t)src << SHARC_UCX_TAG_BITS) | tag;
}

/* The rank a UCP tag carries. */
static int sharc_tp_ucx_sender(ucp_tag_t tag)
{
    return (int)(tag >> SHARC_UCX_TAG_BITS);
}

static sharc_status_t sharc_tp_ucx_check(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                         const char *what)
{
    if ((peer < 0 && peer != SHARC_UCX_ANY) || peer >= tp->base.size || tag > SHARC_TP_TAG_MAX) {
        sharc_error("ucx: %s with peer %d and tag %#llx: the peer must be in [0, %d) and the "
                    "tag below 2^%d",
                    what, peer, (unsigned long long)tag, tp->base.size, SHARC_UCX_TAG_BITS);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

/*
 * A peer whose connection has ended (tp->base.lock held): 1 if the operation cannot go on, which is
 * then the peer's failure, reported to every rank. A receive can still take what the peer sent
 * before it closed: UCX keeps unexpected messages on the worker, and data arrives before the
 * end of its connection. (A peer that finished and left is no failure until someone needs
 * it: see sharc_tp_ucx_ep_error.)
 */
static int sharc_tp_ucx_gone_one(sharc_tp_comm_t *tp, int peer, uint64_t tag, int recv,
                                 const char *what)
{
    ucp_tag_recv_info_t info;

    if (!__atomic_load_n(&tp->peer_failed[peer], __ATOMIC_ACQUIRE)) {
        return 0;
    }
    if (recv &&
        ucp_tag_probe_nb(tp->worker, sharc_tp_ucx_tag(peer, tag), UINT64_MAX, 0, &info) != NULL) {
        return 0;
    }
    sharc_error("ucx: rank %d cannot %s rank %d: its connection failed earlier", tp->base.rank,
                what, peer);
    sharc_boot_report(tp->base.boot, peer); /* every rank of the communicator hears of it */
    return 1;
}

/*
 * As sharc_tp_ucx_gone_one. A receive from any peer is posted whatever connections ended: a
 * peer that finished and left ends its connections too, and the message may come from
 * another; a peer that died is the store's news, which fails the communicator.
 */
static int sharc_tp_ucx_gone(sharc_tp_comm_t *tp, int peer, uint64_t tag, int recv,
                             const char *what)
{
    return peer != SHARC_UCX_ANY && sharc_tp_ucx_gone_one(tp, peer, tag, recv, what);
}

static void sharc_tp_ucx_finish(sharc_tp_req_t *req, ucs_status_t ustatus, const char *what)
{
    sharc_status_t status = sharc_tp_ucx_status(ustatus);
    const sharc_tp_ucx_req_t *u = sharc_tp_ucx_req(req);
    sharc_tp_comm_t *tp = u->tp;

    /* whatever UCX calls it (an I/O error, a reset), an operation with a peer it has lost is
     * that peer's failure */
    if (ustatus != UCS_OK && tp != NULL && u->peer != SHARC_UCX_ANY &&
        __atomic_load_n(&tp->peer_failed[u->peer], __ATOMIC_ACQUIRE)) {
        status = SHARC_ERR_REMOTE;
    }

    if (ustatus != UCS_OK && (tp == NULL || !tp->aborted)) { /* (an abort cancels: not news) */
        sharc_error("ucx: %s rank %d failed: %s", what, u->peer, ucs_status_string(ustatus));
    }
    sharc_tp_ucx_unlink(req);
    sharc_tp_req_complete(req, status);
}

static void sharc_tp_ucx_send_cb(void *request, ucs_status_t ustatus, void *user_data)
{
    ucp_request_free(request);
    sharc_tp_ucx_finish(user_data, ustatus, "a send to");
}

static void sharc_tp_ucx_recv_cb(void *request, ucs_status_t ustatus,
                                 const ucp_tag_recv_info_t *info, void *user_data)
{
    sharc_tp_req_t *req = user_data;

    /* (too long for the receive: UCP reports the message's size) */
    req->bytes = (ustatus == UCS_OK || ustatus == UCS_ERR_MESSAGE_TRUNCATED) ? info->length : 0;
    if (ustatus == UCS_OK) {
        req->peer = sharc_tp_ucx_sender(info->sender_tag);
    }
    ucp_request_free(request);
    sharc_tp_ucx_finish(req, ustatus, "a receive from");
}

/*
 * What a post returned: completed at once, pending (callback later), or failed. The request
 * was put on the in-flight list before the post, because UCP may run the callback (which takes
 * it off again, and frees UCP's request) inside the post itself.
 */
static sharc_status_t sharc_tp_ucx_posted(sharc_tp_comm_t *tp, ucs_status_ptr_t sp,
                                          sharc_tp_req_t *req, const char *what)
{
    if (sp == NULL || UCS_PTR_IS_ERR(sp)) {
        sharc_tp_ucx_unlink(req);
    }
    if (sp == NULL) {
        sharc_tp_req_complete(req, SHARC_OK);
        return SHARC_OK;
    }
    if (UCS_PTR_IS_ERR(sp)) {
        sharc_error("ucx: posting %s rank %d failed: %s", what, sharc_tp_ucx_req(req)->peer,
                    ucs_status_string(UCS_PTR_STATUS(sp)));
        return sharc_tp_ucx_status(UCS_PTR_STATUS(sp));
    }
    if (sharc_tp_ucx_req(req)->tp != NULL) { /* in flight: its callback runs in a later progress */
        sharc_tp_ucx_req(req)->ureq = sp;
    }
    return SHARC_INPROGRESS;
}

/* What a send and a receive share before the post: checks, the memory handle, the request. */
static sharc_status_t sharc_tp_ucx_prepare(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                           sharc_tp_mem_t *mem, sharc_tp_req_t *req,
                                           ucp_request_param_t *param, const char *what)
{
    sharc_status_t status = sharc_tp_ucx_check(tp, peer, tag, what);

    if (status != SHARC_OK) {
        return status;
    }
    if (mem != NULL) {
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param->memh = mem->memh;
    }
    if (tp->aborted) {
        sharc_error("ucx: rank %d cannot %s rank %d: the communicator failed", tp->base.rank, what,
                    peer);
        return SHARC_ERR_REMOTE;
    }
    req->status = SHARC_INPROGRESS;
    req->bytes = 0;
    sharc_tp_ucx_req(req)->peer = peer;
    sharc_tp_ucx_req(req)->tp = NULL;
    return SHARC_OK;
}

/*
 * A send or (@p is_recv) a receive: checked, put on the in-flight list, and posted to UCP. A
 * receive asks for no immediate completion: UCX 1.13 does not report the received length
 * then.
 */
static sharc_status_t sharc_tp_ucx_post(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                        size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req,
                                        int is_recv)
{
    const char *what = is_recv ? "receive from" : "send to";
    ucp_request_param_t param = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE,
        .user_data = req,
        .datatype = ucp_dt_make_contig(1),
    };
    sharc_status_t status = sharc_tp_ucx_prepare(tp, peer, tag, mem, req, &param, what);
    ucs_status_ptr_t sp;

    if (status != SHARC_OK) {
        return status;
    }
    if (is_recv) {
        param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        param.cb.recv = sharc_tp_ucx_recv_cb;
    } else {
        param.cb.send = sharc_tp_ucx_send_cb;
        req->bytes = bytes;
    }
    pthread_mutex_lock(&tp->base.lock);
    if (sharc_tp_ucx_gone(tp, peer, tag, is_recv, what)) {
        pthread_mutex_unlock(&tp->base.lock);
        return SHARC_ERR_REMOTE;
    }
    sharc_tp_ucx_req(req)->is_recv = is_recv;
    sharc_tp_ucx_link(tp, req);
    if (is_recv && peer == SHARC_UCX_ANY) { /* the sender's rank masked out */
        sp = ucp_tag_recv_nbx(tp->worker, buf, bytes, tag, SHARC_TP_TAG_MAX, &param);
    } else if (is_recv) {
        sp = ucp_tag_recv_nbx(tp->worker, buf, bytes, sharc_tp_ucx_tag(peer, tag), UINT64_MAX,
                              &param);
    } else {
        sp = ucp_tag_send_nbx(tp->eps[peer], buf, bytes, sharc_tp_ucx_tag(tp->base.rank, tag),
                              &param);
    }
    status = sharc_tp_ucx_posted(tp, sp, req, is_recv ? "a receive from" : "a send to");
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}

sharc_status_t sharc_tp_ucx_send(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                 size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    return sharc_tp_ucx_post(tp, peer, tag, (void *)buf, bytes, mem, req, 0);
}

sharc_status_t sharc_tp_ucx_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                 size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    return sharc_tp_ucx_post(tp, peer, tag, buf, bytes, mem, req, 1);
}

sharc_status_t sharc_tp_ucx_recv_any(sharc_tp_comm_t *tp, uint64_t tag, void *buf, size_t bytes,
                                     sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    return sharc_tp_ucx_post(tp, SHARC_UCX_ANY, tag, buf, bytes, mem, req, 1);
}

int sharc_tp_ucx_probe(sharc_tp_comm_t *tp, uint64_t tag, int *peer_p)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg;

    if (tag > SHARC_TP_TAG_MAX) {
        return 0;
    }
    pthread_mutex_lock(&tp->base.lock);
    msg = ucp_tag_probe_nb(tp->worker, tag, SHARC_TP_TAG_MAX, 0, &info);
    if (msg != NULL) {
        *peer_p = sharc_tp_ucx_sender(info.sender_tag);
    }
    pthread_mutex_unlock(&tp->base.lock);
    return msg != NULL;
}
