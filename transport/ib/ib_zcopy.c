/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_zcopy.c: zero-copy messages of the verbs transport (ib.h has the protocol): a send
 * claims a zero-copy slot and goes as an RTS; the receiver reads it with RDMA reads straight
 * into the receive's buffer and writes the sender's finish word, which completes the send.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "ib.h"

/* Tell @p peer its zero-copy send @p seq is done with (read, or @p failed to be). */
static void sharc_ib_fin(sharc_tp_comm_t *tp, int peer, uint32_t seq, int failed)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    uint32_t i = seq % SHARC_IB_ZC;
    uint64_t *src = &tp->fin_src[(size_t)peer * SHARC_IB_ZC + i];
    sharc_ib_rdma_t op = {.wr_id = SHARC_IB_WR(SHARC_IB_WR_FIN, peer, i),
                          .opcode = IBV_WR_RDMA_WRITE,
                          .local = src,
                          .bytes = 8,
                          .lkey = tp->fin_src_mr->lkey,
                          .remote = p->remote_fin + 8ull * i,
                          .rkey = p->remote_fin_rkey};

    if (p->failed) {
        return;
    }
    *src = ((uint64_t)seq + 1) | (failed ? SHARC_IB_FIN_ERR : 0);
    if (sharc_tp_ib_post_rdma(tp, peer, &op, "posting a finish write to") != 0) {
        return;
    }
    p->fin_writes++;
}

void sharc_tp_ib_reads(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];

    for (int i = 0; i < SHARC_IB_ZC && p->reads < p->max_reads && !p->failed; i++) {
        sharc_ib_msg_t *m = p->zc_recv[i];

        while (m != NULL && m->posted < m->total && p->reads < p->max_reads) {
            size_t len = m->total - m->posted < SHARC_IB_READ_CHUNK ? m->total - m->posted
                                                                    : SHARC_IB_READ_CHUNK;
            sharc_ib_rdma_t op = {.wr_id = SHARC_IB_WR(SHARC_IB_WR_READ, peer, i),
                                  .opcode = IBV_WR_RDMA_READ,
                                  .local = (char *)sharc_tp_ib_req(m->req)->buf + m->posted,
                                  .bytes = (uint32_t)len,
                                  .lkey = m->reg->mr->lkey,
                                  .remote = m->rts.addr + m->posted,
                                  .rkey = m->rts.rkey};

            if (sharc_tp_ib_post_rdma(tp, peer, &op, "posting a read from") != 0) {
                return;
            }
            m->posted += len;
            m->reads++;
            p->reads++;
        }
    }
}

/*
 * A zero-copy message matched its receive: read it into the receive's buffer (registered
 * from the cache, by the receive's handle, or for this transfer). A buffer too short, or one
 * that cannot be registered, fails the receive; the sender hears that it is done with its
 * buffer, and of a registration failure as its send's.
 */
void sharc_tp_ib_zc_start(sharc_tp_comm_t *tp, int peer, sharc_ib_msg_t *m)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_tp_req_t *req = m->req;
    const sharc_tp_ib_req_t *r = sharc_tp_ib_req(req);
    int failed = 1;

    sharc_trace("ib: rank %d: reading %zu bytes of tag %#llx from rank %d (zero-copy %u)",
                tp->base.rank, m->total, (unsigned long long)m->tag, peer, m->rts.seq);
    if (m->total > r->capacity) {
        /* the receive's error, not the send's: the sender is done with its buffer, as when
         * an eager message is dropped (MPI's truncation fails the receive alone) */
        sharc_tp_ib_truncated(tp, peer, req, m->total);
        failed = 0;
    } else if ((m->reg = sharc_ib_reg_for(tp, r->mem, r->buf, m->total, 1)) == NULL) {
        req->bytes = 0;
        sharc_tp_ib_complete(req, SHARC_ERR_IO);
    } else {
        p->zc_recv[m->rts.seq % SHARC_IB_ZC] = m;
        sharc_tp_ib_reads(tp, peer);
        return;
    }
    sharc_ib_fin(tp, peer, m->rts.seq, failed);
    free(m);
}

void sharc_tp_ib_read_done(sharc_tp_comm_t *tp, int peer, uint32_t i)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_ib_msg_t *m = i < SHARC_IB_ZC ? p->zc_recv[i] : NULL;

    if (m == NULL) {
        return;
    }
    p->reads--;
    m->reads--;
    if (m->reads == 0 && m->posted == m->total) {
        sharc_tp_req_t *req = m->req;

        p->zc_recv[i] = NULL;
        sharc_ib_reg_put(&tp->rcache, m->reg);
        sharc_ib_fin(tp, peer, m->rts.seq, 0);
        req->bytes = m->total;
        free(m);
        sharc_tp_ib_complete(req, SHARC_OK);
    }
}

/*
 * Should @p req go zero-copy? Large enough, its buffer registered (a handle, or sharc_mem
 * memory through the cache) and a zero-copy slot free: then it takes the slot (and the
 * registration) and *rts is filled. Never waits for a slot: a send waiting on a receive the
 * peer posts after a later message would deadlock; it goes by copy instead.
 */
int sharc_tp_ib_zc_claim(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req, sharc_ib_rts_t *rts)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    const sharc_tp_ib_req_t *r = sharc_tp_ib_req(req);
    uint32_t seq = p->zc_next, i = seq % SHARC_IB_ZC;
    sharc_ib_reg_t *reg;
    int device = sharc_tp_ib_on_device(req);

    /* the first free index from the next sequence number on (sequence numbers may skip) */
    for (int k = 0; k < SHARC_IB_ZC && p->zc_send[i] != NULL; k++) {
        seq++;
        i = seq % SHARC_IB_ZC;
    }
    if (!device && (tp->zcopy_min == 0 || req->bytes < tp->zcopy_min || p->zc_send[i] != NULL)) {
        return 0;
    }
    if (p->zc_send[i] != NULL) {
        return -1; /* device memory cannot be copied: it waits for a zero-copy index */
    }
    reg = sharc_ib_reg_for(tp, r->mem, r->buf, req->bytes, 0);
    if (reg == NULL) {
        return 0; /* (device memory: its handle covers it, checked at the send) */
    }
    p->zc_send[i] = req;
    p->zc_reg[i] = reg;
    p->zc_seq[i] = seq;
    p->zc_next = seq + 1;
    p->zc_out++;
    rts->addr = (uintptr_t)r->buf;
    rts->rkey = reg->mr->rkey;
    rts->seq = seq;
    return 1;
}

void sharc_tp_ib_fins(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];

    for (int i = 0; i < SHARC_IB_ZC && p->zc_out > 0; i++) {
        sharc_tp_req_t *req = p->zc_send[i];
        uint64_t v;

        if (req == NULL) {
            continue;
        }
        v = __atomic_load_n(&tp->fin[(size_t)peer * SHARC_IB_ZC + (size_t)i], __ATOMIC_ACQUIRE);
        if ((v & ~SHARC_IB_FIN_ERR) != (uint64_t)p->zc_seq[i] + 1) {
            continue;
        }
        p->zc_send[i] = NULL;
        p->zc_out--;
        sharc_ib_reg_put(&tp->rcache, p->zc_reg[i]);
        p->zc_reg[i] = NULL;
        if (v & SHARC_IB_FIN_ERR) {
            sharc_error("ib: rank %d: rank %d did not take the %zu-byte message (tag %#llx) it was "
                        "to read (its receive failed)",
                        tp->base.rank, peer, (size_t)req->bytes,
                        (unsigned long long)sharc_tp_ib_req(req)->tag);
        }
        sharc_tp_ib_complete(req, (v & SHARC_IB_FIN_ERR) ? SHARC_ERR_REMOTE : SHARC_OK);
    }
}
