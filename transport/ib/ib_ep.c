/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_ep.c: the verbs transport's sends: their chunks written with immediate into the peer's
 * ring under credits, or an RTS for zero-copy. What every post does of its peer is
 * ib_peer.c's, receives ib_recv.c's, zero-copy ib_zcopy.c's, the completion queue
 * ib_progress.c's (ib.h has the protocol).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "ib.h"

/*
 * Post the chunks of queued sends to @p peer while slots and credits last. A send copied
 * through the slots completes once its last chunk is copied and posted (its buffer is free
 * then; the slot stays taken until the write completes), as an eager send does: its
 * completion never waits on the peer's acknowledgement, which a peer that received the
 * data and then destroyed its side of the connection at once may never send. A zero-copy
 * send completes when the receiver's finish word arrives.
 */
void sharc_tp_ib_push(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];

    while (p->sendq.head != NULL && !p->failed) {
        sharc_tp_req_t *req = p->sendq.head;
        uint64_t credit = __atomic_load_n(&tp->credits[peer], __ATOMIC_ACQUIRE);
        uint32_t slot = (uint32_t)(p->sent % SHARC_IB_SLOTS);
        size_t off = sharc_tp_ib_req(req)->posted, len, wire;
        char *b = p->bounce + (size_t)slot * SHARC_IB_SLOT_BYTES;
        sharc_ib_hdr_t *h = (sharc_ib_hdr_t *)b;
        sharc_ib_rts_t rts;
        int zc = 0;

        if (p->sent - credit >= SHARC_IB_SLOTS || p->slot_busy[slot]) {
            return; /* no credit, or the bounce slot's last write has not completed */
        }
        h->tag = sharc_tp_ib_req(req)->tag;
        h->total = req->bytes;
        h->offset = off;
        zc = off == 0 ? sharc_tp_ib_zc_claim(tp, peer, req, &rts) : 0;
        if (zc < 0) {
            return;
        }
        if (zc) { /* the peer reads it */
            h->flags = SHARC_IB_F_RTS;
            h->len = sizeof(rts);
            memcpy(b + sizeof(*h), &rts, sizeof(rts));
            wire = sizeof(rts);
            len = req->bytes;
        } else {
            len = req->bytes - off < SHARC_IB_CHUNK ? req->bytes - off : SHARC_IB_CHUNK;
            h->flags = 0;
            h->len = (uint32_t)len;
            memcpy(b + sizeof(*h), (const char *)sharc_tp_ib_req(req)->buf + off, len);
            wire = len;
        }
        sharc_ib_rdma_t op = {
            .wr_id = SHARC_IB_WR(SHARC_IB_WR_DATA, peer, slot),
            .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
            .local = b,
            .bytes = (uint32_t)(sizeof(*h) + wire),
            .lkey = p->bounce_mr->lkey,
            .remote = p->remote_ring + (uint64_t)slot * SHARC_IB_SLOT_BYTES,
            .rkey = p->remote_ring_rkey,
            .imm = htobe32(slot),
        };
        if (sharc_tp_ib_post_rdma(tp, peer, &op, "posting a write to") != 0) {
            return;
        }
        sharc_trace("ib: rank %d: chunk %llu of tag %#llx (%zu of %zu bytes%s) to rank %d, slot %u",
                    tp->base.rank, (unsigned long long)p->sent, (unsigned long long)h->tag,
                    off + len, (size_t)req->bytes, h->flags ? ", zero-copy" : "", peer, slot);
        p->slot_busy[slot] = 1;
        p->busy++;
        p->sent++;
        sharc_tp_ib_req(req)->posted = off + len;
        if (off + len == req->bytes) { /* every chunk posted: off the queue */
            sharc_tp_queue_pop(&p->sendq);
            if (!zc) {
                sharc_tp_ib_complete(req, SHARC_OK);
            }
        }
    }
}

sharc_status_t sharc_tp_ib_send(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_tp_ib_req_t state = {.buf = (void *)buf, .mem = mem, .tag = tag};
    sharc_ib_peer_t *p;
    sharc_status_t status;

    if (peer == tp->base.rank && bytes > UINT32_MAX) {
        sharc_error("ib: a send of %zu bytes to self: at most 4 GiB", bytes);
        return SHARC_ERR_INVALID;
    }
    if (mem != NULL && mem->memtype != SHARC_MEMTYPE_HOST &&
        (peer == tp->base.rank || bytes == 0 || !sharc_ib_reg_covers(mem->reg, buf, bytes))) {
        sharc_error("ib: a send of %zu bytes of device memory at %p to rank %d: it goes "
                    "zero-copy only, to another rank, from inside its registration (%zu bytes "
                    "at %p)",
                    bytes, buf, peer, mem->reg->bytes, (void *)mem->reg->base);
        return SHARC_ERR_UNSUPPORTED;
    }
    status = sharc_tp_ib_begin(tp, peer, "send to", req, &state);
    if (status != SHARC_OK) {
        return status;
    }
    p = &tp->peers[peer];
    req->bytes = bytes;
    if (peer == tp->base.rank) { /* to self: delivered at once, whole */
        sharc_ib_hdr_t h = {.tag = tag, .total = bytes, .offset = 0, .len = (uint32_t)bytes};
        int ok = sharc_tp_ib_deliver(tp, peer, &h, buf) == 0;
        pthread_mutex_unlock(&tp->base.lock);
        if (!ok) {
            return SHARC_ERR_NOMEM;
        }
        sharc_tp_req_complete(req, SHARC_OK);
        return SHARC_OK;
    }
    sharc_tp_queue_push(&p->sendq, req);
    sharc_tp_ib_push(tp, peer);
    /* done inside the call (copied), or failed with the peer by fail_peer */
    status = sharc_tp_req_status(req) != SHARC_INPROGRESS ? SHARC_OK : SHARC_INPROGRESS;
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}
