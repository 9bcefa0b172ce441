/*
 * ib_recv.c: receives of the verbs transport: posting them, matching each arriving message by
 * tag with the oldest receive posted for it (or keeping it unexpected until one is), and
 * copying its chunks out of the ring. Reading a zero-copy message is ib_zcopy.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../../src/base/log.h"
#include "ib.h"

void sharc_tp_ib_truncated(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req, size_t total)
{
    sharc_error("ib: rank %d: a %zu-byte message from rank %d (tag %#llx) does not fit the "
                "%llu-byte receive buffer",
                tp->base.rank, total, peer, (unsigned long long)sharc_tp_ib_req(req)->tag,
                (unsigned long long)sharc_tp_ib_req(req)->capacity);
    req->bytes = 0;
    sharc_tp_ib_complete(req, SHARC_ERR_INVALID);
}

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
    m->req = sharc_tp_queue_take(&p->posted, sharc_tp_ib_has_tag, h->tag);
    if (m->req != NULL) {
        sharc_tp_ib_zc_start(tp, peer, m);
    } else {
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
        m->req = sharc_tp_queue_take(&p->posted, sharc_tp_ib_has_tag, h->tag);
        if (m->req == NULL) { /* unexpected: kept, in arrival order */
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
    m = sharc_ib_take_unexpected(p, tag);
    sharc_trace("ib: rank %d: receive from rank %d, tag %#llx, %zu bytes: %s", tp->base.rank, peer,
                (unsigned long long)tag, bytes, m != NULL ? "an unexpected message" : "posted");
    if (m != NULL) { /* the oldest unexpected message with this tag */
        m->req = req;
        if (m->zc) {
            sharc_tp_ib_zc_start(tp, peer, m);
            status = sharc_tp_req_status(req) != SHARC_INPROGRESS ? SHARC_OK : status;
        } else if (m->got == m->total && p->cur != m) {
            sharc_ib_msg_done(tp, peer, m);
            status = SHARC_OK;
        }
        /* else its chunks are arriving: it completes with the last one */
    } else {
        sharc_tp_queue_push(&p->posted, req);
    }
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}
