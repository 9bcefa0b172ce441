/*
 * self_ep.c: matching and copying for the self transport. A post first looks for the oldest
 * unmatched operation of the other kind with the same tag; if there is one, the data is
 * copied and both complete, otherwise the post is queued.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <string.h>

#include "../../src/base/log.h"
#include "self.h"

/* What a queued request remembers (in its tp_priv slots). */
#define SHARC_SELF_BUF(_req)   ((_req)->tp_priv[0].ptr)
#define SHARC_SELF_BYTES(_req) ((_req)->tp_priv[1].u64)
#define SHARC_SELF_TAG(_req)   ((_req)->tp_priv[2].u64)

static sharc_tp_req_t *sharc_self_take(sharc_tp_self_queue_t *q, uint64_t tag)
{
    for (sharc_tp_req_t **p = &q->head, *prev = NULL; *p != NULL; prev = *p, p = &(*p)->next) {
        sharc_tp_req_t *req = *p;

        if (SHARC_SELF_TAG(req) == tag) {
            *p = req->next;
            if (q->tail == req) {
                q->tail = prev;
            }
            req->next = NULL;
            return req;
        }
    }
    return NULL;
}

static void sharc_self_push(sharc_tp_self_queue_t *q, sharc_tp_req_t *req)
{
    req->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = req;
    } else {
        q->head = req;
    }
    q->tail = req;
}

/* Copy a matched pair and complete both requests. */
static void sharc_self_deliver(sharc_tp_req_t *send, const void *sbuf, size_t sbytes,
                               sharc_tp_req_t *recv, void *rbuf, size_t rbytes, uint64_t tag)
{
    sharc_status_t rstatus = SHARC_OK;

    if (sbytes > rbytes) {
        sharc_error("self transport: a %zu-byte message with tag %#llx does not fit the "
                    "%zu-byte receive buffer",
                    sbytes, (unsigned long long)tag, rbytes);
        rstatus = SHARC_ERR_INVALID;
    } else if (sbytes > 0) {
        memcpy(rbuf, sbuf, sbytes);
    }
    recv->bytes = (rstatus == SHARC_OK) ? sbytes : 0;
    sharc_tp_req_complete(send, SHARC_OK);
    sharc_tp_req_complete(recv, rstatus);
}

static sharc_status_t sharc_self_check_peer(int peer)
{
    if (peer != 0) {
        sharc_error("self transport: peer %d does not exist in a communicator of one", peer);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

sharc_status_t sharc_tp_self_send(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                  size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_tp_req_t *recv;

    if (sharc_self_check_peer(peer) != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    req->status = SHARC_INPROGRESS;
    pthread_mutex_lock(&tp->lock);
    recv = sharc_self_take(&tp->recvs, tag);
    if (recv == NULL) {
        SHARC_SELF_BUF(req) = (void *)buf;
        SHARC_SELF_BYTES(req) = bytes;
        SHARC_SELF_TAG(req) = tag;
        sharc_self_push(&tp->sends, req);
        pthread_mutex_unlock(&tp->lock);
        return SHARC_INPROGRESS;
    }
    pthread_mutex_unlock(&tp->lock);
    sharc_self_deliver(req, buf, bytes, recv, SHARC_SELF_BUF(recv), SHARC_SELF_BYTES(recv), tag);
    return SHARC_OK;
}

sharc_status_t sharc_tp_self_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                  size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_tp_req_t *send;

    if (sharc_self_check_peer(peer) != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    req->status = SHARC_INPROGRESS;
    pthread_mutex_lock(&tp->lock);
    send = sharc_self_take(&tp->sends, tag);
    if (send == NULL) {
        SHARC_SELF_BUF(req) = buf;
        SHARC_SELF_BYTES(req) = bytes;
        SHARC_SELF_TAG(req) = tag;
        sharc_self_push(&tp->recvs, req);
        pthread_mutex_unlock(&tp->lock);
        return SHARC_INPROGRESS;
    }
    pthread_mutex_unlock(&tp->lock);
    sharc_self_deliver(send, SHARC_SELF_BUF(send), SHARC_SELF_BYTES(send), req, buf, bytes, tag);
    return SHARC_OK;
}
