/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_progress.c: progress of the verbs transport: the completion queue polled (a ring slot
 * arrived, a write or read done, or a peer failed), then per peer the credits reported, the
 * finished zero-copy sends completed, queued chunks and reads posted, and a silent peer that
 * this rank waits for probed.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <endian.h>
#include <string.h>
#include <time.h>

#include "../../base/log.h"
#include "ib.h"

/* a peer waited for and silent this long gets a probe */
#define SHARC_IB_PROBE_AFTER 1.0

/* credit writes in flight per peer, at most (they share the send queue with data) */
#define SHARC_IB_MAX_CREDIT_WRITES SHARC_IB_SLOTS

/*
 * An RDMA write of tp->credit_src[peer] (the slots of @p peer's consumed, as last reported)
 * into its credit word for this rank: a credit report, or a probe (the same value again: it
 * only tests the connection). 0, or -1 with the peer failed.
 */
static int sharc_ib_write_credit_word(sharc_tp_comm_t *tp, int peer, int kind, const char *what)
{
    const sharc_ib_peer_t *p = &tp->peers[peer];
    sharc_ib_rdma_t op = {.wr_id = SHARC_IB_WR(kind, peer, 0),
                          .opcode = IBV_WR_RDMA_WRITE,
                          .local = &tp->credit_src[peer],
                          .bytes = sizeof(uint64_t),
                          .lkey = tp->credit_src_mr->lkey,
                          .remote = p->remote_credit,
                          .rkey = p->remote_credit_rkey};

    return sharc_tp_ib_post_rdma(tp, peer, &op, what);
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

    sharc_trace("ib: rank %d: completion kind %d peer %d slot %u status %d opcode %d",
                tp->base.rank, kind, peer, SHARC_IB_WR_SLOT(wc->wr_id), (int)wc->status,
                (int)wc->opcode);
    if (peer < 0 || peer >= tp->base.size) {
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
                        tp->base.rank,
                        kind == SHARC_IB_WR_RECV    ? "a receive from"
                        : kind == SHARC_IB_WR_PROBE ? "a probe of"
                        : kind == SHARC_IB_WR_READ  ? "a read from"
                                                    : "a write to",
                        peer, ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err,
                        wc->status == IBV_WC_RETRY_EXC_ERR
                            ? ": the peer does not answer (it died, or the network is cut)"
                            : "");
            sharc_tp_ib_fail_peer(tp, peer);
            sharc_boot_report(tp->base.boot, peer); /* every rank of the communicator hears of it */
        }
        return;
    }
    p->last_heard = tp->now;
    if (kind == SHARC_IB_WR_READ && !p->failed) {
        sharc_tp_ib_read_done(tp, peer, SHARC_IB_WR_SLOT(wc->wr_id));
    } else if (kind == SHARC_IB_WR_RECV && !p->failed) {
        uint32_t slot = be32toh(wc->imm_data);
        const sharc_ib_hdr_t *h;

        if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || slot >= SHARC_IB_SLOTS) {
            sharc_error("ib: rank %d: unexpected completion from rank %d (opcode %d, slot %u)",
                        tp->base.rank, peer, (int)wc->opcode, slot);
            sharc_tp_ib_fail_peer(tp, peer);
            return;
        }
        h = (const sharc_ib_hdr_t *)(p->ring + (size_t)slot * SHARC_IB_SLOT_BYTES);
        if (h->len > SHARC_IB_CHUNK || sharc_tp_ib_deliver(tp, peer, h, h + 1) != 0) {
            sharc_tp_ib_fail_peer(tp, peer);
            return;
        }
        p->consumed++;
        int err = sharc_tp_ib_post_recvs(tp, peer, 1);
        if (err != 0) {
            sharc_tp_ib_verbs_error(tp, peer, "reposting a receive for", err);
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
    int waiting = p->posted.head != NULL || p->cur != NULL || p->sendq.head != NULL ||
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

    pthread_mutex_lock(&tp->base.lock);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    tp->now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    while ((n = ibv_poll_cq(tp->cq, 32, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            sharc_ib_completion(tp, &wc[i]);
        }
        total += n;
    }
    for (int peer = 0; peer < tp->base.size; peer++) {
        if (peer != tp->base.rank) {
            sharc_ib_report(tp, peer);
            sharc_tp_ib_fins(tp, peer);
            sharc_tp_ib_push(tp, peer);
            sharc_tp_ib_reads(tp, peer);
            sharc_ib_probe(tp, peer);
        }
    }
    pthread_mutex_unlock(&tp->base.lock);
    if (n < 0) {
        sharc_error("ib: rank %d: polling the completion queue failed", tp->base.rank);
        return SHARC_ERR_IO;
    }
    return total > 0;
}
