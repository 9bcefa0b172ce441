/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_ep.c: the sending side of the shm transport (the protocols are described in shm.h): the
 * peer a post names, writing slots into its FIFO (messages, and control messages queued while
 * it is full), and sends: eager, RTS, and the FRAGs of a streamed rendezvous. Receives are
 * shm_recv.c's, draining the inbound FIFOs shm_progress.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "shm.h"

/* ---- the FIFO ------------------------------------------------------------------------ */

/* The next free slot of @p f, or NULL when the reader has not caught up. Writer only. */
static unsigned char *shm_fifo_slot(sharc_shm_fifo_t *f)
{
    uint64_t head = __atomic_load_n(&f->head, __ATOMIC_RELAXED);

    if (head - __atomic_load_n(&f->tail, __ATOMIC_ACQUIRE) >= SHARC_SHM_SLOTS) {
        /* Full: ask the reader to ring this rank when it frees a slot (this rank may block
         * waiting for room), then look again. The reader stores tail, then reads want_room:
         * one of the two sees the other's store. */
        __atomic_store_n(&f->want_room, 1, __ATOMIC_SEQ_CST);
        if (head - __atomic_load_n(&f->tail, __ATOMIC_SEQ_CST) >= SHARC_SHM_SLOTS) {
            return NULL;
        }
    }
    return f->slot[head % SHARC_SHM_SLOTS];
}

/* Write one slot into the peer's FIFO and ring its doorbell; 0 if the FIFO is full. */
static int shm_emit(sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr, const void *payload,
                    size_t bytes)
{
    sharc_shm_fifo_t *f = p->out;
    unsigned char *slot = shm_fifo_slot(f);

    if (slot == NULL) {
        return 0;
    }
    memcpy(slot, hdr, sizeof(*hdr));
    if (bytes > 0) {
        memcpy(slot + SHARC_SHM_HDR_BYTES, payload, bytes);
    }
    __atomic_store_n(&f->head, __atomic_load_n(&f->head, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    sharc_tp_shm_ring(p->out_seg);
    return 1;
}

/* CTS and FIN: into the FIFO now if nothing waits before them, else queued. */
void sharc_tp_shm_ctrl(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr)
{
    sharc_shm_ctrl_t *c;

    if (p->ctrl_head == NULL && shm_emit(p, hdr, NULL, 0)) {
        return;
    }
    c = malloc(sizeof(*c));
    if (c == NULL) {
        /* the peer's request then waits until SHARC_TIMEOUT fails it */
        sharc_error("shm: rank %d: no memory to queue a message for rank %d", tp->base.rank,
                    p->rank);
        return;
    }
    c->hdr = *hdr;
    c->next = NULL;
    if (p->ctrl_tail != NULL) {
        p->ctrl_tail->next = c;
    } else {
        p->ctrl_head = c;
    }
    p->ctrl_tail = c;
}

/* ---- sends --------------------------------------------------------------------------- */

/* Put a send's first slot (EAGER_MSG or RTS) into the FIFO; 0 if the FIFO is full. */
static int shm_send_start(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req)
{
    sharc_tp_shm_req_t *s = sharc_tp_shm_req(req);
    size_t bytes = s->bytes;
    sharc_shm_hdr_t hdr = {.tag = s->tag, .bytes = bytes};
    sharc_mem_region_t region;

    if (bytes <= SHARC_SHM_EAGER) {
        hdr.type = SHARC_SHM_EAGER_MSG;
        if (!shm_emit(p, &hdr, s->buf, bytes)) {
            return 0;
        }
        sharc_tp_req_complete(req, SHARC_OK);
        return 1;
    }
    hdr.type = SHARC_SHM_RTS;
    hdr.addr = (uint64_t)(uintptr_t)s->buf;
    hdr.scookie = tp->next_cookie;
    if (sharc_mem_table_find(tp->mem, s->buf, bytes, &region)) {
        hdr.region = region.id;
        hdr.region_bytes = region.bytes;
        hdr.region_ino = region.ino;
        hdr.region_fd = region.fd;
        hdr.offset = (uint64_t)((const char *)s->buf - (const char *)region.base);
    }
    if (!shm_emit(p, &hdr, NULL, 0)) {
        return 0;
    }
    s->cookie = tp->next_cookie++;
    sharc_tp_queue_push(&p->wait_fin, req);
    return 1;
}

/* Write FRAGs of the oldest streaming sends while the FIFO has room. */
static int shm_stream(sharc_shm_peer_t *p)
{
    int n = 0;

    while (p->streaming.head != NULL) {
        sharc_tp_req_t *req = p->streaming.head;
        sharc_tp_shm_req_t *s = sharc_tp_shm_req(req);
        sharc_shm_hdr_t hdr = {.type = SHARC_SHM_FRAG, .rcookie = s->cookie};

        while (s->sent < s->bytes) {
            hdr.offset = s->sent;
            hdr.bytes = SHARC_MIN(s->bytes - hdr.offset, SHARC_SHM_EAGER);
            if (!shm_emit(p, &hdr, (const char *)s->buf + hdr.offset, hdr.bytes)) {
                return n;
            }
            s->sent += hdr.bytes;
            n++;
        }
        sharc_tp_queue_pop(&p->streaming);
        sharc_tp_req_complete(req, SHARC_OK); /* the rest of the data is in the FIFO */
    }
    return n;
}

/* Move what waits for FIFO space into it, oldest first. */
int sharc_tp_shm_flush(sharc_tp_comm_t *tp, sharc_shm_peer_t *p)
{
    int n = 0;

    while (p->ctrl_head != NULL && shm_emit(p, &p->ctrl_head->hdr, NULL, 0)) {
        sharc_shm_ctrl_t *c = p->ctrl_head;

        p->ctrl_head = c->next;
        if (p->ctrl_head == NULL) {
            p->ctrl_tail = NULL;
        }
        free(c);
        n++;
    }
    while (p->sendq.head != NULL && shm_fifo_slot(p->out) != NULL) {
        shm_send_start(tp, p, sharc_tp_queue_pop(&p->sendq)); /* cannot fail: a slot is free */
        n++;
    }
    return n + shm_stream(p);
}

/* The peer's state, or NULL with *status_p set: a bad rank or tag, or a peer that exited. */
static sharc_shm_peer_t *shm_peer(sharc_tp_comm_t *tp, int peer, uint64_t tag, const char *what,
                                  sharc_status_t *status_p)
{
    sharc_shm_peer_t *p;

    *status_p = SHARC_ERR_INVALID;
    if (peer < 0 || peer >= tp->base.size || tp->local_of[peer] < 0 || tag > SHARC_TP_TAG_MAX) {
        sharc_error("shm: rank %d cannot %s rank %d with tag %#llx: %s", tp->base.rank, what, peer,
                    (unsigned long long)tag,
                    (peer < 0 || peer >= tp->base.size) ? "no such rank"
                    : tag > SHARC_TP_TAG_MAX            ? "tags are below 2^40"
                                                        : "it is on another node");
        return NULL;
    }
    p = &tp->peers[tp->local_of[peer]];
    if (tp->aborted) {
        sharc_error("shm: rank %d cannot %s rank %d: the communicator failed", tp->base.rank, what,
                    peer);
        *status_p = SHARC_ERR_REMOTE;
        return NULL;
    }
    if (p->failed) {
        sharc_error("shm: rank %d cannot %s rank %d: it exited earlier", tp->base.rank, what, peer);
        *status_p = SHARC_ERR_REMOTE;
        return NULL;
    }
    return p;
}

/* What a send and a receive share: the peer, and the request's state before the post. */
sharc_shm_peer_t *sharc_tp_shm_prepare(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                       size_t bytes, sharc_tp_req_t *req, const char *what,
                                       sharc_status_t *status_p)
{
    sharc_shm_peer_t *p = shm_peer(tp, peer, tag, what, status_p);

    if (p != NULL) {
        req->status = SHARC_INPROGRESS;
        req->bytes = 0;
        req->next = NULL;
        *sharc_tp_shm_req(req) =
            (sharc_tp_shm_req_t){.buf = (void *)buf, .bytes = bytes, .tag = tag};
    }
    return p;
}

sharc_status_t sharc_tp_shm_send(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                 size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_shm_peer_t *p;
    sharc_status_t status;

    (void)mem;
    pthread_mutex_lock(&tp->base.lock);
    p = sharc_tp_shm_prepare(tp, peer, tag, buf, bytes, req, "send to", &status);
    if (p != NULL) {
        if (p->sendq.head != NULL || !shm_send_start(tp, p, req)) {
            sharc_tp_queue_push(&p->sendq, req); /* after the sends before it */
        }
        status = sharc_tp_shm_posted(req);
    }
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}
