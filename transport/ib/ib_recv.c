/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_recv.c: receives of the verbs transport: posting them, matching each arriving message by
 * tag with the oldest receive posted for it (or keeping it unexpected until one is), and
 * copying its chunks out of the ring. Reading a zero-copy message is ib_zcopy.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "ib.h"

/* A message fully here: its receive completes (from the message's own copy if unexpected). */
static void sharc_ib_msg_done(sharc_tp_comm_t *tp, int peer, sharc_ib_msg_t *m)
{
    sharc_tp_req_t *req = m->req;

    if (m->total > sharc_tp_ib_req(req)->capacity) {
        sharc_tp_ib_truncated(tp, peer, req, m->total);
    } else if (sharc_tp_ib_on_device(req)) {
        sharc_error("ib: rank %d: a %zu-byte message from rank %d came copied, into a receive "
                    "on device memory, which only zero-copy reaches (its send buffer was not "
                    "registered)",
                    tp->base.rank, m->total, peer);
        req->bytes = 0;
        sharc_tp_ib_complete(req, SHARC_ERR_UNSUPPORTED);
    } else {
        if (m->data != NULL && m->total > 0) {
            memcpy(sharc_tp_ib_req(req)->buf, m->data, m->total);
        }
        req->bytes = m->total;
        sharc_tp_ib_complete(req, SHARC_OK);
    }
    free(m->data);
    free(m);
}

/* A message with no receive posted yet: kept, in arrival order, for the receive to come. */
static void sharc_ib_keep_unexpected(sharc_ib_peer_t *p, sharc_ib_msg_t *m)
{
    if (p->unexp_tail != NULL) {
        p->unexp_tail->next = m;
    } else {
        p->unexp_head = m;
    }
    p->unexp_tail = m;
}

/* The oldest receive that takes a message with @p tag from @p peer (posted for it, or for
 * any peer), unlinked, with its peer set; NULL if none. */
static sharc_tp_req_t *sharc_ib_match(sharc_tp_comm_t *tp, int peer, uint64_t tag)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_tp_req_t *mine = sharc_tp_queue_find(&p->posted, sharc_tp_ib_has_tag, tag);
    sharc_tp_req_t *any = sharc_tp_queue_find(&tp->any_posted, sharc_tp_ib_has_tag, tag);
    sharc_tp_queue_t *q = &p->posted;
    sharc_tp_req_t *req;

    if (any != NULL &&
        (mine == NULL || sharc_tp_ib_req(any)->stamp < sharc_tp_ib_req(mine)->stamp)) {
        q = &tp->any_posted;
    } else if (mine == NULL) {
        return NULL;
    }
    req = sharc_tp_queue_take(q, sharc_tp_ib_has_tag, tag);
    req->peer = peer;
    return req;
}

/* A request to send from @p peer: read now if a receive is posted, else kept unexpected. */
static int sharc_ib_rts(sharc_tp_comm_t *tp, int peer, const sharc_ib_hdr_t *h, const void *data)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_ib_msg_t *m;

    if (p->cur != NULL || h->offset != 0 || h->len != sizeof(sharc_ib_rts_t) || h->total == 0) {
        sharc_error("ib: rank %d: a malformed request to send from rank %d (%u bytes, total %llu)",
                    tp->base.rank, peer, h->len, (unsigned long long)h->total);
        return -1;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return -1;
    }
    m->tag = h->tag;
    m->total = h->total;
    m->zc = 1;
    memcpy(&m->rts, data, sizeof(m->rts));
    if (p->zc_recv[m->rts.seq % SHARC_IB_ZC] != NULL) {
        sharc_error("ib: rank %d: rank %d sent zero-copy message %u while %u is being read",
                    tp->base.rank, peer, m->rts.seq, p->zc_recv[m->rts.seq % SHARC_IB_ZC]->rts.seq);
        free(m);
        return -1;
    }
    m->req = sharc_ib_match(tp, peer, h->tag);
    if (m->req != NULL) {
        sharc_tp_ib_zc_start(tp, peer, m);
    } else {
        m->stamp = tp->next_stamp++;
        sharc_ib_keep_unexpected(p, m);
    }
    return 0;
}

int sharc_tp_ib_deliver(sharc_tp_comm_t *tp, int peer, const sharc_ib_hdr_t *h, const void *data)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_ib_msg_t *m = p->cur;

    sharc_trace("ib: rank %d: chunk from rank %d: tag %#llx offset %llu len %u total %llu%s",
                tp->base.rank, peer, (unsigned long long)h->tag, (unsigned long long)h->offset,
                h->len, (unsigned long long)h->total, m != NULL ? " (continues)" : "");
    if (h->flags & SHARC_IB_F_RTS) {
        return sharc_ib_rts(tp, peer, h, data);
    }
    if (h->offset == 0 && m == NULL) {
        m = calloc(1, sizeof(*m));
        if (m == NULL) {
            return -1;
        }
        m->tag = h->tag;
        m->total = h->total;
        m->req = sharc_ib_match(tp, peer, h->tag);
        if (m->req == NULL) { /* unexpected: kept, in arrival order */
            m->stamp = tp->next_stamp++;
            m->data = malloc(h->total > 0 ? h->total : 1);
            if (m->data == NULL) {
                free(m);
                return -1;
            }
            sharc_ib_keep_unexpected(p, m);
        }
        p->cur = m;
    }
    if (m == NULL || h->offset != m->got || h->total != m->total || h->len > m->total - m->got) {
        sharc_error("ib: rank %d: a chunk from rank %d does not follow its message (offset %llu "
                    "of %llu, %u bytes; expected offset %zu of %zu)",
                    tp->base.rank, peer, (unsigned long long)h->offset,
                    (unsigned long long)h->total, h->len, m != NULL ? m->got : 0,
                    m != NULL ? m->total : 0);
        return -1;
    }
    if (m->data != NULL) {
        memcpy(m->data + h->offset, data, h->len);
    } else if (m->total <= sharc_tp_ib_req(m->req)->capacity && !sharc_tp_ib_on_device(m->req)) {
        memcpy((char *)sharc_tp_ib_req(m->req)->buf + h->offset, data, h->len);
    }
    m->got += h->len;
    if (m->got == m->total) {
        p->cur = NULL;
        if (m->req != NULL) {
            sharc_ib_msg_done(tp, peer, m);
        }
        /* else: complete on the unexpected list, for a receive to come */
    }
    return 0;
}

/* The oldest unexpected message from @p p with @p tag, unlinked; NULL if none. */
static sharc_ib_msg_t *sharc_ib_take_unexpected(sharc_ib_peer_t *p, uint64_t tag)
{
    sharc_ib_msg_t *m, *prev = NULL;

    for (m = p->unexp_head; m != NULL && m->tag != tag; prev = m, m = m->next) {
    }
    if (m != NULL) {
        if (prev == NULL) {
            p->unexp_head = m->next;
        } else {
            prev->next = m->next;
        }
        if (p->unexp_tail == m) {
            p->unexp_tail = prev;
        }
    }
    return m;
}

/* A receive takes kept message @p m from @p peer: SHARC_OK when it completed here, else
 * SHARC_INPROGRESS (read or arriving). */
static sharc_status_t sharc_ib_take(sharc_tp_comm_t *tp, int peer, sharc_ib_msg_t *m,
                                    sharc_tp_req_t *req)
{
    m->req = req;
    if (m->zc) {
        sharc_tp_ib_zc_start(tp, peer, m);
        return sharc_tp_req_status(req) != SHARC_INPROGRESS ? SHARC_OK : SHARC_INPROGRESS;
    }
    if (m->got == m->total && tp->peers[peer].cur != m) {
        sharc_ib_msg_done(tp, peer, m);
        return SHARC_OK;
    }
    return SHARC_INPROGRESS; /* its chunks are arriving: it completes with the last one */
}

sharc_status_t sharc_tp_ib_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_tp_ib_req_t state = {.buf = buf, .mem = mem, .tag = tag, .capacity = bytes};
    sharc_ib_peer_t *p;
    sharc_ib_msg_t *m;
    sharc_status_t status = sharc_tp_ib_begin(tp, peer, "receive from", req, &state);

    if (status != SHARC_OK) {
        return status;
    }
    status = SHARC_INPROGRESS;
    p = &tp->peers[peer];
    req->peer = peer;
    m = sharc_ib_take_unexpected(p, tag);
    sharc_trace("ib: rank %d: receive from rank %d, tag %#llx, %zu bytes: %s", tp->base.rank, peer,
                (unsigned long long)tag, bytes, m != NULL ? "an unexpected message" : "posted");
    if (m != NULL) {
        status = sharc_ib_take(tp, peer, m, req);
    } else {
        sharc_tp_ib_req(req)->stamp = tp->next_stamp++;
        sharc_tp_queue_push(&p->posted, req);
    }
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}

/* The peer whose kept message with @p tag arrived first, or -1. */
static int sharc_ib_first_unexpected(sharc_tp_comm_t *tp, uint64_t tag)
{
    uint64_t stamp = UINT64_MAX;
    int first = -1;

    for (int r = 0; r < tp->base.size; r++) {
        const sharc_ib_msg_t *m = tp->peers[r].unexp_head;

        while (m != NULL && m->tag != tag) {
            m = m->next;
        }
        if (m != NULL && m->stamp < stamp) {
            stamp = m->stamp;
            first = r;
        }
    }
    return first;
}

sharc_status_t sharc_tp_ib_recv_any(sharc_tp_comm_t *tp, uint64_t tag, void *buf, size_t bytes,
                                    sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_status_t status = SHARC_INPROGRESS;
    int peer;

    if (tag > SHARC_TP_TAG_MAX) {
        sharc_error("ib: a receive with tag %#llx: tags are below 2^%d", (unsigned long long)tag,
                    SHARC_TP_TAG_BITS);
        return SHARC_ERR_INVALID;
    }
    pthread_mutex_lock(&tp->base.lock);
    if (tp->aborted) {
        pthread_mutex_unlock(&tp->base.lock);
        sharc_error("ib: rank %d cannot receive from any peer: the communicator failed",
                    tp->base.rank);
        return SHARC_ERR_REMOTE;
    }
    req->status = SHARC_INPROGRESS;
    req->bytes = 0;
    req->next = NULL;
    *sharc_tp_ib_req(req) =
        (sharc_tp_ib_req_t){.buf = buf, .mem = mem, .tag = tag, .capacity = bytes};
    peer = sharc_ib_first_unexpected(tp, tag);
    if (peer >= 0) {
        req->peer = peer;
        status = sharc_ib_take(tp, peer, sharc_ib_take_unexpected(&tp->peers[peer], tag), req);
    } else {
        sharc_tp_ib_req(req)->stamp = tp->next_stamp++;
        sharc_tp_queue_push(&tp->any_posted, req);
    }
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}

int sharc_tp_ib_probe(sharc_tp_comm_t *tp, uint64_t tag, int *peer_p)
{
    int peer;

    pthread_mutex_lock(&tp->base.lock);
    peer = sharc_ib_first_unexpected(tp, tag);
    pthread_mutex_unlock(&tp->base.lock);
    if (peer >= 0) {
        *peer_p = peer;
    }
    return peer >= 0;
}
