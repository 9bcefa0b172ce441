/*
 * ib_ep.c: point-to-point messages over the verbs transport: chunks written with immediate
 * into the peer's ring under credits, matched by tag on arrival; large registered messages
 * read by the receiver (zero-copy); completions from the completion queue in progress (ib.h
 * has the protocol).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/base/log.h"
#include "ib.h"

/* wr_id: what completed (kind), for which peer, which slot (zero-copy: which message) */
enum {
    SHARC_IB_WR_PROBE = 0,
    SHARC_IB_WR_DATA = 1,
    SHARC_IB_WR_CREDIT = 2,
    SHARC_IB_WR_RECV = 3,
    SHARC_IB_WR_READ = 4,
    SHARC_IB_WR_FIN = 5,
};

/* a peer waited for and silent this long gets a probe */
#define SHARC_IB_PROBE_AFTER 1.0
#define SHARC_IB_WR(_kind, _peer, _slot)                                                           \
    (((uint64_t)(_kind) << 61) | (((uint64_t)(uint32_t)(_peer)&0x1fffffff) << 32) |                \
     (uint32_t)(_slot))
#define SHARC_IB_WR_KIND(_id) ((int)((_id) >> 61))
#define SHARC_IB_WR_PEER(_id) ((int)(((_id) >> 32) & 0x1fffffff))
#define SHARC_IB_WR_SLOT(_id) ((uint32_t)(_id))

/* request fields while in flight (sharc_tp_req_t.tp_priv) */
#define SHARC_IB_TAG(_r) ((_r)->tp_priv[0].u64)
#define SHARC_IB_BUF(_r) ((_r)->tp_priv[1].ptr)
#define SHARC_IB_OFF(_r) ((_r)->tp_priv[2].u64) /* send: bytes posted; recv: capacity */
#define SHARC_IB_MEM(_r) ((sharc_tp_mem_t *)(_r)->tp_priv[4].ptr) /* its registration */

/* credit writes in flight per peer, at most (they share the send queue with data) */
#define SHARC_IB_MAX_CREDIT_WRITES SHARC_IB_SLOTS

static void sharc_ib_complete(sharc_tp_req_t *req, sharc_status_t status)
{
    if (sharc_tp_req_status(req) == SHARC_INPROGRESS) {
        sharc_tp_req_complete(req, status);
    }
}

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
    for (req = p->sendq_head; req != NULL; req = next) {
        next = req->next;
        sharc_ib_doom(&doomed, req);
    }
    for (req = p->posted_head; req != NULL; req = next) {
        next = req->next;
        sharc_ib_doom(&doomed, req);
    }
    p->sendq_head = p->sendq_tail = NULL;
    p->posted_head = p->posted_tail = NULL;
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
        sharc_ib_complete(req, SHARC_ERR_REMOTE);
    }
}

static void sharc_ib_verbs_error(sharc_tp_comm_t *tp, int peer, const char *what, int err)
{
    if (!tp->peers[peer].failed) {
        sharc_error("ib: rank %d: %s rank %d failed: %s", tp->rank, what, peer, strerror(err));
        sharc_tp_ib_fail_peer(tp, peer);
    }
}

int sharc_tp_ib_post_recvs(sharc_tp_comm_t *tp, int peer, int n)
{
    for (int i = 0; i < n; i++) {
        struct ibv_recv_wr wr = {.wr_id = SHARC_IB_WR(SHARC_IB_WR_RECV, peer, 0)}, *bad;
        int err = ibv_post_recv(tp->peers[peer].qp, &wr, &bad);

        if (err != 0) {
            return err;
        }
    }
    return 0;
}

/* ---- receiving ---------------------------------------------------------------------------- */

/* The receive's buffer is too short for the message: it fails, and says so. */
static void sharc_ib_truncated(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req, size_t total)
{
    sharc_error("ib: rank %d: a %zu-byte message from rank %d (tag %#llx) does not fit the "
                "%llu-byte receive buffer",
                tp->rank, total, peer, (unsigned long long)SHARC_IB_TAG(req),
                (unsigned long long)SHARC_IB_OFF(req));
    req->bytes = 0;
    sharc_ib_complete(req, SHARC_ERR_INVALID);
}

/* A request on CUDA memory (a handle from mem_reg): only zero-copy reaches it. */
static int sharc_ib_on_device(const sharc_tp_req_t *req)
{
    return SHARC_IB_MEM(req) != NULL && SHARC_IB_MEM(req)->memtype != SHARC_MEMTYPE_HOST;
}

/* A message fully here: its receive completes (from the message's own copy if unexpected). */
static void sharc_ib_msg_done(sharc_tp_comm_t *tp, int peer, sharc_ib_msg_t *m)
{
    sharc_tp_req_t *req = m->req;

    if (m->total > SHARC_IB_OFF(req)) {
        sharc_ib_truncated(tp, peer, req, m->total);
    } else if (sharc_ib_on_device(req)) {
        sharc_error("ib: rank %d: a %zu-byte message from rank %d came copied, into a receive "
                    "on device memory, which only zero-copy reaches (its send buffer was not "
                    "registered)",
                    tp->rank, m->total, peer);
        req->bytes = 0;
        sharc_ib_complete(req, SHARC_ERR_UNSUPPORTED);
    } else {
        if (m->data != NULL && m->total > 0) {
            memcpy(SHARC_IB_BUF(req), m->data, m->total);
        }
        req->bytes = m->total;
        sharc_ib_complete(req, SHARC_OK);
    }
    free(m->data);
    free(m);
}

/* The first posted receive for @p tag, taken off the list; NULL if none. */
static sharc_tp_req_t *sharc_ib_take_posted(sharc_ib_peer_t *p, uint64_t tag)
{
    sharc_tp_req_t *prev = NULL;

    for (sharc_tp_req_t *req = p->posted_head; req != NULL; prev = req, req = req->next) {
        if (SHARC_IB_TAG(req) == tag) {
            if (prev == NULL) {
                p->posted_head = req->next;
            } else {
                prev->next = req->next;
            }
            if (p->posted_tail == req) {
                p->posted_tail = prev;
            }
            return req;
        }
    }
    return NULL;
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

/* ---- zero-copy receiving ------------------------------------------------------------------ */

/* Tell @p peer its zero-copy send @p seq is done with (read, or @p failed to be). */
static void sharc_ib_fin(sharc_tp_comm_t *tp, int peer, uint32_t seq, int failed)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    uint32_t i = seq % SHARC_IB_ZC;
    uint64_t *src = &tp->fin_src[(size_t)peer * SHARC_IB_ZC + i];
    struct ibv_sge sge = {.addr = (uintptr_t)src, .length = 8, .lkey = tp->fin_src_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = SHARC_IB_WR(SHARC_IB_WR_FIN, peer, i),
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    int err;

    if (p->failed) {
        return;
    }
    *src = ((uint64_t)seq + 1) | (failed ? SHARC_IB_FIN_ERR : 0);
    wr.wr.rdma.remote_addr = p->remote_fin + 8ull * i;
    wr.wr.rdma.rkey = p->remote_fin_rkey;
    err = ibv_post_send(p->qp, &wr, &bad);
    if (err != 0) {
        sharc_ib_verbs_error(tp, peer, "posting a finish write to", err);
        return;
    }
    p->fin_writes++;
}

/* Post RDMA reads of the zero-copy messages being read from @p peer, as many as it answers. */
static void sharc_ib_reads(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];

    for (int i = 0; i < SHARC_IB_ZC && p->reads < p->max_reads && !p->failed; i++) {
        sharc_ib_msg_t *m = p->zc_recv[i];

        while (m != NULL && m->posted < m->total && p->reads < p->max_reads) {
            size_t len = m->total - m->posted < SHARC_IB_READ_CHUNK ? m->total - m->posted
                                                                    : SHARC_IB_READ_CHUNK;
            struct ibv_sge sge = {.addr = (uintptr_t)SHARC_IB_BUF(m->req) + m->posted,
                                  .length = (uint32_t)len,
                                  .lkey = m->reg->mr->lkey};
            struct ibv_send_wr wr = {.wr_id = SHARC_IB_WR(SHARC_IB_WR_READ, peer, i),
                                     .sg_list = &sge,
                                     .num_sge = 1,
                                     .opcode = IBV_WR_RDMA_READ,
                                     .send_flags = IBV_SEND_SIGNALED},
                               *bad;
            int err;

            wr.wr.rdma.remote_addr = m->rts.addr + m->posted;
            wr.wr.rdma.rkey = m->rts.rkey;
            err = ibv_post_send(p->qp, &wr, &bad);
            if (err != 0) {
                sharc_ib_verbs_error(tp, peer, "posting a read from", err);
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
 * that cannot be registered, fails the receive; the sender hears of it either way.
 */
static void sharc_ib_zc_start(sharc_tp_comm_t *tp, int peer, sharc_ib_msg_t *m)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_tp_req_t *req = m->req;

    sharc_trace("ib: rank %d: reading %zu bytes of tag %#llx from rank %d (zero-copy %u)", tp->rank,
                m->total, (unsigned long long)m->tag, peer, m->rts.seq);
    if (m->total > SHARC_IB_OFF(req)) {
        sharc_ib_truncated(tp, peer, req, m->total);
    } else if ((m->reg = sharc_ib_reg_for(tp, SHARC_IB_MEM(req), SHARC_IB_BUF(req), m->total, 1)) ==
               NULL) {
        req->bytes = 0;
        sharc_ib_complete(req, SHARC_ERR_IO);
    } else {
        p->zc_recv[m->rts.seq % SHARC_IB_ZC] = m;
        sharc_ib_reads(tp, peer);
        return;
    }
    sharc_ib_fin(tp, peer, m->rts.seq, 1);
    free(m);
}

/* A read of a zero-copy message from @p peer completed: the message, once all read, too. */
static void sharc_ib_read_done(sharc_tp_comm_t *tp, int peer, uint32_t i)
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
        sharc_ib_complete(req, SHARC_OK);
    }
}

/* A request to send from @p peer: read now if a receive is posted, else kept unexpected. */
static int sharc_ib_rts(sharc_tp_comm_t *tp, int peer, const sharc_ib_hdr_t *h, const void *data)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_ib_msg_t *m;

    if (p->cur != NULL || h->offset != 0 || h->len != sizeof(sharc_ib_rts_t) || h->total == 0) {
        sharc_error("ib: rank %d: a malformed request to send from rank %d (%u bytes, total %llu)",
                    tp->rank, peer, h->len, (unsigned long long)h->total);
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
                    tp->rank, peer, m->rts.seq, p->zc_recv[m->rts.seq % SHARC_IB_ZC]->rts.seq);
        free(m);
        return -1;
    }
    m->req = sharc_ib_take_posted(p, h->tag);
    if (m->req != NULL) {
        sharc_ib_zc_start(tp, peer, m);
    } else {
        sharc_ib_keep_unexpected(p, m);
    }
    return 0;
}

/* ---- receiving, copied ---------------------------------------------------------------------- */

/* One chunk of a message from @p peer (from its ring slot, or a whole message to self). */
static int sharc_ib_deliver(sharc_tp_comm_t *tp, int peer, const sharc_ib_hdr_t *h,
                            const void *data)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_ib_msg_t *m = p->cur;

    sharc_trace("ib: rank %d: chunk from rank %d: tag %#llx offset %llu len %u total %llu%s",
                tp->rank, peer, (unsigned long long)h->tag, (unsigned long long)h->offset, h->len,
                (unsigned long long)h->total, m != NULL ? " (continues)" : "");
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
        m->req = sharc_ib_take_posted(p, h->tag);
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
                    tp->rank, peer, (unsigned long long)h->offset, (unsigned long long)h->total,
                    h->len, m != NULL ? m->got : 0, m != NULL ? m->total : 0);
        return -1;
    }
    if (m->data != NULL) {
        memcpy(m->data + h->offset, data, h->len);
    } else if (m->total <= SHARC_IB_OFF(m->req) && !sharc_ib_on_device(m->req)) {
        memcpy((char *)SHARC_IB_BUF(m->req) + h->offset, data, h->len);
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

/*
 * What a send and a receive check first: the peer and tag, then (with tp->lock taken, and
 * kept on success) that the connection to the peer has not failed.
 */
static sharc_status_t sharc_ib_begin(sharc_tp_comm_t *tp, int peer, uint64_t tag, const char *what)
{
    if (peer < 0 || peer >= tp->size || tag > SHARC_TP_TAG_MAX) {
        sharc_error("ib: %s peer %d, tag %#llx: the peer must be in [0, %d) and the tag below "
                    "2^%d",
                    what, peer, (unsigned long long)tag, tp->size, SHARC_TP_TAG_BITS);
        return SHARC_ERR_INVALID;
    }
    pthread_mutex_lock(&tp->lock);
    if (tp->peers[peer].failed) {
        pthread_mutex_unlock(&tp->lock);
        sharc_error("ib: rank %d cannot %s rank %d: its connection failed earlier", tp->rank, what,
                    peer);
        return SHARC_ERR_REMOTE;
    }
    return SHARC_OK;
}

sharc_status_t sharc_tp_ib_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_ib_peer_t *p;
    sharc_ib_msg_t *m, *prev = NULL;
    sharc_status_t status = SHARC_INPROGRESS;

    status = sharc_ib_begin(tp, peer, tag, "receive from");
    if (status != SHARC_OK) {
        return status;
    }
    status = SHARC_INPROGRESS;
    p = &tp->peers[peer];
    req->status = SHARC_INPROGRESS;
    req->bytes = 0;
    req->next = NULL;
    SHARC_IB_BUF(req) = buf;
    SHARC_IB_OFF(req) = bytes;
    SHARC_IB_TAG(req) = tag;
    req->tp_priv[4].ptr = mem;
    for (m = p->unexp_head; m != NULL && m->tag != tag; prev = m, m = m->next) {
    }
    sharc_trace("ib: rank %d: receive from rank %d, tag %#llx, %zu bytes: %s", tp->rank, peer,
                (unsigned long long)tag, bytes, m != NULL ? "an unexpected message" : "posted");
    if (m != NULL) { /* the oldest unexpected message with this tag */
        if (prev == NULL) {
            p->unexp_head = m->next;
        } else {
            prev->next = m->next;
        }
        if (p->unexp_tail == m) {
            p->unexp_tail = prev;
        }
        m->req = req;
        if (m->zc) {
            sharc_ib_zc_start(tp, peer, m);
            status = sharc_tp_req_status(req) != SHARC_INPROGRESS ? SHARC_OK : status;
        } else if (m->got == m->total && p->cur != m) {
            sharc_ib_msg_done(tp, peer, m);
            status = SHARC_OK;
        }
        /* else its chunks are arriving: it completes with the last one */
    } else if (p->posted_tail != NULL) {
        p->posted_tail->next = req;
        p->posted_tail = req;
    } else {
        p->posted_head = p->posted_tail = req;
    }
    pthread_mutex_unlock(&tp->lock);
    return status;
}

/* ---- sending ------------------------------------------------------------------------------ */

/*
 * Should @p req go zero-copy? Large enough, its buffer registered (a handle, or sharc_mem
 * memory through the cache) and a zero-copy slot free: then it takes the slot (and the
 * registration) and *rts is filled. Never waits for a slot: a send waiting on a receive the
 * peer posts after a later message would deadlock; it goes by copy instead.
 */
static int sharc_ib_zc_claim(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req,
                             sharc_ib_rts_t *rts)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    uint32_t seq = p->zc_next, i = seq % SHARC_IB_ZC;
    sharc_ib_reg_t *reg;
    int device = SHARC_IB_MEM(req) != NULL && SHARC_IB_MEM(req)->memtype != SHARC_MEMTYPE_HOST;

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
    reg = sharc_ib_reg_for(tp, SHARC_IB_MEM(req), SHARC_IB_BUF(req), req->bytes, 0);
    if (reg == NULL) {
        return 0; /* (device memory: its handle covers it, checked at the send) */
    }
    p->zc_send[i] = req;
    p->zc_reg[i] = reg;
    p->zc_seq[i] = seq;
    p->zc_next = seq + 1;
    p->zc_out++;
    rts->addr = (uintptr_t)SHARC_IB_BUF(req);
    rts->rkey = reg->mr->rkey;
    rts->seq = seq;
    return 1;
}

/*
 * Post the chunks of queued sends to @p peer while slots and credits last. A send copied
 * through the slots completes once its last chunk is copied and posted (its buffer is free
 * then; the slot stays taken until the write completes), as an eager send does: its
 * completion never waits on the peer's acknowledgement, which a peer that received the
 * data and then destroyed its side of the connection at once may never send. A zero-copy
 * send completes when the receiver's finish word arrives.
 */
static void sharc_ib_push(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];

    while (p->sendq_head != NULL && !p->failed) {
        sharc_tp_req_t *req = p->sendq_head;
        uint64_t credit = __atomic_load_n(&tp->credits[peer], __ATOMIC_ACQUIRE);
        uint32_t slot = (uint32_t)(p->sent % SHARC_IB_SLOTS);
        size_t off = SHARC_IB_OFF(req), len, wire;
        char *b = p->bounce + (size_t)slot * SHARC_IB_SLOT_BYTES;
        sharc_ib_hdr_t *h = (sharc_ib_hdr_t *)b;
        sharc_ib_rts_t rts;
        int zc = 0;

        if (p->sent - credit >= SHARC_IB_SLOTS || p->slot_busy[slot]) {
            return; /* no credit, or the bounce slot's last write has not completed */
        }
        h->tag = SHARC_IB_TAG(req);
        h->total = req->bytes;
        h->offset = off;
        zc = off == 0 ? sharc_ib_zc_claim(tp, peer, req, &rts) : 0;
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
            memcpy(b + sizeof(*h), (const char *)SHARC_IB_BUF(req) + off, len);
            wire = len;
        }

        struct ibv_sge sge = {.addr = (uintptr_t)b,
                              .length = (uint32_t)(sizeof(*h) + wire),
                              .lkey = p->bounce_mr->lkey};
        struct ibv_send_wr wr = {.wr_id = SHARC_IB_WR(SHARC_IB_WR_DATA, peer, slot),
                                 .sg_list = &sge,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                                 .send_flags = IBV_SEND_SIGNALED,
                                 .imm_data = htobe32(slot)},
                           *bad;
        wr.wr.rdma.remote_addr = p->remote_ring + (uint64_t)slot * SHARC_IB_SLOT_BYTES;
        wr.wr.rdma.rkey = p->remote_ring_rkey;
        int err = ibv_post_send(p->qp, &wr, &bad);
        if (err != 0) {
            sharc_ib_verbs_error(tp, peer, "posting a write to", err);
            return;
        }
        sharc_trace("ib: rank %d: chunk %llu of tag %#llx (%zu of %zu bytes%s) to rank %d, slot %u",
                    tp->rank, (unsigned long long)p->sent, (unsigned long long)h->tag, off + len,
                    (size_t)req->bytes, h->flags ? ", zero-copy" : "", peer, slot);
        p->slot_busy[slot] = 1;
        p->busy++;
        p->sent++;
        SHARC_IB_OFF(req) = off + len;
        if (off + len == req->bytes) { /* every chunk posted: off the queue */
            p->sendq_head = req->next;
            if (p->sendq_head == NULL) {
                p->sendq_tail = NULL;
            }
            req->next = NULL;
            if (!zc) {
                sharc_ib_complete(req, SHARC_OK);
            }
        }
    }
}

/* Zero-copy sends to @p peer whose finish word the peer wrote: done. */
static void sharc_ib_fins(sharc_tp_comm_t *tp, int peer)
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
                        tp->rank, peer, (size_t)req->bytes, (unsigned long long)SHARC_IB_TAG(req));
        }
        sharc_ib_complete(req, (v & SHARC_IB_FIN_ERR) ? SHARC_ERR_REMOTE : SHARC_OK);
    }
}

sharc_status_t sharc_tp_ib_send(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_ib_peer_t *p;
    sharc_status_t status = SHARC_INPROGRESS;

    if (peer == tp->rank && bytes > UINT32_MAX) {
        sharc_error("ib: a send of %zu bytes to self: at most 4 GiB", bytes);
        return SHARC_ERR_INVALID;
    }
    if (mem != NULL && mem->memtype != SHARC_MEMTYPE_HOST &&
        (peer == tp->rank || bytes == 0 || !sharc_ib_reg_covers(mem->reg, buf, bytes))) {
        sharc_error("ib: a send of %zu bytes of device memory at %p to rank %d: it goes "
                    "zero-copy only, to another rank, from inside its registration (%zu bytes "
                    "at %p)",
                    bytes, buf, peer, mem->reg->bytes, (void *)mem->reg->base);
        return SHARC_ERR_UNSUPPORTED;
    }
    status = sharc_ib_begin(tp, peer, tag, "send to");
    if (status != SHARC_OK) {
        return status;
    }
    status = SHARC_INPROGRESS;
    p = &tp->peers[peer];
    req->status = SHARC_INPROGRESS;
    req->bytes = bytes;
    req->next = NULL;
    SHARC_IB_BUF(req) = (void *)buf;
    SHARC_IB_OFF(req) = 0;
    SHARC_IB_TAG(req) = tag;
    req->tp_priv[4].ptr = mem;
    if (peer == tp->rank) { /* to self: delivered at once, whole */
        sharc_ib_hdr_t h = {.tag = tag, .total = bytes, .offset = 0, .len = (uint32_t)bytes};
        int ok = sharc_ib_deliver(tp, peer, &h, buf) == 0;
        pthread_mutex_unlock(&tp->lock);
        if (!ok) {
            return SHARC_ERR_NOMEM;
        }
        sharc_tp_req_complete(req, SHARC_OK);
        return SHARC_OK;
    }
    if (p->sendq_tail != NULL) {
        p->sendq_tail->next = req;
    } else {
        p->sendq_head = req;
    }
    p->sendq_tail = req;
    sharc_ib_push(tp, peer);
    /* done inside the call (copied), or failed with the peer by fail_peer */
    status = sharc_tp_req_status(req) != SHARC_INPROGRESS ? SHARC_OK : status;
    pthread_mutex_unlock(&tp->lock);
    return status;
}

/* ---- progress ----------------------------------------------------------------------------- */

/*
 * An RDMA write of tp->credit_src[peer] (the slots of @p peer's consumed, as last reported)
 * into its credit word for this rank: a credit report, or a probe (the same value again: it
 * only tests the connection). 0, or -1 with the peer failed.
 */
static int sharc_ib_write_credit_word(sharc_tp_comm_t *tp, int peer, int kind, const char *what)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    struct ibv_sge sge = {.addr = (uintptr_t)&tp->credit_src[peer],
                          .length = sizeof(uint64_t),
                          .lkey = tp->credit_src_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = SHARC_IB_WR(kind, peer, 0),
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    int err;

    wr.wr.rdma.remote_addr = p->remote_credit;
    wr.wr.rdma.rkey = p->remote_credit_rkey;
    err = ibv_post_send(p->qp, &wr, &bad);
    if (err != 0) {
        sharc_ib_verbs_error(tp, peer, what, err);
        return -1;
    }
    return 0;
}

/* Tell @p peer how many of its slots are consumed, if it has not heard it yet. */
static void sharc_ib_report(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];

    if (p->failed || p->consumed == p->reported || p->credit_writes >= SHARC_IB_MAX_CREDIT_WRITES) {
        return;
    }
    tp->credit_src[peer] = p->consumed;
    if (sharc_ib_write_credit_word(tp, peer, SHARC_IB_WR_CREDIT, "posting a credit write to") !=
        0) {
        return;
    }
    p->reported = p->consumed;
    p->credit_writes++;
}

static void sharc_ib_completion(sharc_tp_comm_t *tp, const struct ibv_wc *wc)
{
    int kind = SHARC_IB_WR_KIND(wc->wr_id), peer = SHARC_IB_WR_PEER(wc->wr_id);
    sharc_ib_peer_t *p;

    sharc_trace("ib: rank %d: completion kind %d peer %d slot %u status %d opcode %d", tp->rank,
                kind, peer, SHARC_IB_WR_SLOT(wc->wr_id), (int)wc->status, (int)wc->opcode);
    if (peer < 0 || peer >= tp->size) {
        return;
    }
    p = &tp->peers[peer];
    if (kind == SHARC_IB_WR_CREDIT) {
        p->credit_writes--;
    } else if (kind == SHARC_IB_WR_PROBE) {
        p->probing = 0;
    } else if (kind == SHARC_IB_WR_FIN) {
        p->fin_writes--;
    } else if (kind == SHARC_IB_WR_DATA && SHARC_IB_WR_SLOT(wc->wr_id) < SHARC_IB_SLOTS) {
        p->slot_busy[SHARC_IB_WR_SLOT(wc->wr_id)] = 0; /* the bounce slot is free again */
        p->busy--;
    }
    if (wc->status != IBV_WC_SUCCESS) {
        if (!p->failed) {
            sharc_error("ib: rank %d: %s rank %d failed: %s (verbs status %d, vendor error "
                        "%#x)%s",
                        tp->rank,
                        kind == SHARC_IB_WR_RECV    ? "a receive from"
                        : kind == SHARC_IB_WR_PROBE ? "a probe of"
                        : kind == SHARC_IB_WR_READ  ? "a read from"
                                                    : "a write to",
                        peer, ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err,
                        wc->status == IBV_WC_RETRY_EXC_ERR
                            ? ": the peer does not answer (it died, or the network is cut)"
                            : "");
            sharc_tp_ib_fail_peer(tp, peer);
            sharc_boot_report(tp->boot, peer); /* every rank of the communicator hears of it */
        }
        return;
    }
    p->last_heard = tp->now;
    if (kind == SHARC_IB_WR_READ && !p->failed) {
        sharc_ib_read_done(tp, peer, SHARC_IB_WR_SLOT(wc->wr_id));
    } else if (kind == SHARC_IB_WR_RECV && !p->failed) {
        uint32_t slot = be32toh(wc->imm_data);
        const sharc_ib_hdr_t *h;

        if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || slot >= SHARC_IB_SLOTS) {
            sharc_error("ib: rank %d: unexpected completion from rank %d (opcode %d, slot %u)",
                        tp->rank, peer, (int)wc->opcode, slot);
            sharc_tp_ib_fail_peer(tp, peer);
            return;
        }
        h = (const sharc_ib_hdr_t *)(p->ring + (size_t)slot * SHARC_IB_SLOT_BYTES);
        if (h->len > SHARC_IB_CHUNK || sharc_ib_deliver(tp, peer, h, h + 1) != 0) {
            sharc_tp_ib_fail_peer(tp, peer);
            return;
        }
        p->consumed++;
        int err = sharc_tp_ib_post_recvs(tp, peer, 1);
        if (err != 0) {
            sharc_ib_verbs_error(tp, peer, "reposting a receive for", err);
        }
    }
}

/*
 * A peer this rank waits for (a receive posted or a message arriving, a send out of
 * credits, a zero-copy transfer) and that has been silent for a while: a write of the credit
 * word it already has shows whether its side of the connection still exists (the write then
 * completes) or not (retry exceeded). (Not a zero-length write: soft-RoCE of some kernels
 * mishandles those.)
 */
static void sharc_ib_probe(sharc_tp_comm_t *tp, int peer)
{
    sharc_ib_peer_t *p = &tp->peers[peer];
    int waiting = p->posted_head != NULL || p->cur != NULL || p->sendq_head != NULL ||
                  p->zc_out > 0 || p->reads > 0;

    if (p->failed || p->probing || !waiting || tp->now - p->last_heard < SHARC_IB_PROBE_AFTER) {
        return;
    }
    if (sharc_ib_write_credit_word(tp, peer, SHARC_IB_WR_PROBE, "probing") != 0) {
        return;
    }
    p->probing = 1;
    p->last_heard = tp->now; /* the next probe a second after this one's answer at the latest */
}

int sharc_tp_ib_progress(sharc_tp_comm_t *tp)
{
    struct ibv_wc wc[32];
    int n, total = 0;

    struct timespec ts;

    pthread_mutex_lock(&tp->lock);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    tp->now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    while ((n = ibv_poll_cq(tp->cq, 32, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            sharc_ib_completion(tp, &wc[i]);
        }
        total += n;
    }
    for (int peer = 0; peer < tp->size; peer++) {
        if (peer != tp->rank) {
            sharc_ib_report(tp, peer);
            sharc_ib_fins(tp, peer);
            sharc_ib_push(tp, peer);
            sharc_ib_reads(tp, peer);
            sharc_ib_probe(tp, peer);
        }
    }
    pthread_mutex_unlock(&tp->lock);
    if (n < 0) {
        sharc_error("ib: rank %d: polling the completion queue failed", tp->rank);
        return SHARC_ERR_IO;
    }
    return total > 0;
}
