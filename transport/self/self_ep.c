/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * self_ep.c: matching and copying for the self transport. A post first looks for the oldest
 * unmatched operation of the other kind with the same tag; if there is one, the data is
 * copied and both complete, otherwise the post is queued.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <string.h>

#include "../../base/log.h"
#include "self.h"

static int sharc_self_has_tag(sharc_tp_req_t *req, uint64_t tag)
{
    return sharc_tp_self_req(req)->tag == tag;
}

/* Copy a matched pair and complete both requests. */
static void sharc_self_deliver(sharc_tp_req_t *send, sharc_tp_req_t *recv, uint64_t tag)
{
    const sharc_tp_self_req_t *s = sharc_tp_self_req(send), *r = sharc_tp_self_req(recv);
    sharc_status_t rstatus = SHARC_OK;

    if (s->bytes > r->bytes) {
        sharc_debug("self transport: a %zu-byte message with tag %#llx does not fit the "
                    "%zu-byte receive buffer",
                    s->bytes, (unsigned long long)tag, r->bytes);
        rstatus = SHARC_ERR_INVALID;
    } else if (s->bytes > 0) {
        memcpy(r->buf, s->buf, s->bytes);
    }
    recv->bytes = s->bytes; /* (too long for the receive: the message's size, as said) */
    recv->peer = 0;
    sharc_tp_req_complete(send, SHARC_OK);
    sharc_tp_req_complete(recv, rstatus);
}

/*
 * A send (@p is_send) or a receive: matched with the oldest unmatched operation of the other
 * kind with its tag and delivered at once, or queued for it.
 */
static sharc_status_t sharc_self_post(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                      size_t bytes, sharc_tp_req_t *req, int is_send)
{
    sharc_tp_req_t *other;

    if (peer != 0) {
        sharc_error("self transport: peer %d does not exist in a communicator of one", peer);
        return SHARC_ERR_INVALID;
    }
    req->status = SHARC_INPROGRESS;
    *sharc_tp_self_req(req) = (sharc_tp_self_req_t){.buf = buf, .bytes = bytes, .tag = tag};
    pthread_mutex_lock(&tp->lock);
    other = sharc_tp_queue_take(is_send ? &tp->recvs : &tp->sends, sharc_self_has_tag, tag);
    if (other == NULL) {
        sharc_tp_queue_push(is_send ? &tp->sends : &tp->recvs, req);
        pthread_mutex_unlock(&tp->lock);
        return SHARC_INPROGRESS;
    }
    pthread_mutex_unlock(&tp->lock);
    sharc_self_deliver(is_send ? req : other, is_send ? other : req, tag);
    return SHARC_OK;
}

sharc_status_t sharc_tp_self_send(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                  size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    return sharc_self_post(tp, peer, tag, (void *)buf, bytes, req, 1);
}

sharc_status_t sharc_tp_self_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                  size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    return sharc_self_post(tp, peer, tag, buf, bytes, req, 0);
}

/* Every message comes from rank 0, the only one. */
sharc_status_t sharc_tp_self_recv_any(sharc_tp_comm_t *tp, uint64_t tag, void *buf, size_t bytes,
                                      sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    (void)mem;
    return sharc_self_post(tp, 0, tag, buf, bytes, req, 0);
}

int sharc_tp_self_probe(sharc_tp_comm_t *tp, uint64_t tag, int *peer_p)
{
    int found;

    pthread_mutex_lock(&tp->lock);
    found = sharc_tp_queue_find(&tp->sends, sharc_self_has_tag, tag) != NULL;
    pthread_mutex_unlock(&tp->lock);
    if (found) {
        *peer_p = 0;
    }
    return found;
}
