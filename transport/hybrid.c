/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hybrid.c: one point-to-point transport made of two: a node-local one (shm) for the ranks
 * of this node and a remote one (ucx) for the others, chosen per peer by node. Both were set
 * up over the whole communicator and take its ranks as they are, so no rank is translated.
 * It knows the two only through their ops tables; sharc_tp_open builds it.
 *
 * A receive from any peer cannot be posted to both parts (both might match a message, and a
 * receive matched by one cannot be taken back from the other). It waits here instead, and
 * each progress asks the parts (probe) whether a message with its tag has arrived; the first
 * one found is received from its sender through its part. Meanwhile a receive naming a peer
 * with that tag, posted after it, is held here too (posted to its part, it would take a
 * message the older receive from any peer should have), until no older receive from any peer
 * with its tag waits: MPI's matching order, across two transports.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
#include "backend.h"
#include "hybrid.h"

typedef struct {
    const sharc_tp_ops_t *ops;
    sharc_tp_comm_t *tp;
} sharc_tp_part_t;

struct sharc_tp_comm {
    sharc_tp_part_t local, remote;
    int *local_peer; /* [size]: 1 for ranks on this node */
    int size;
    /* receives waiting here (see above), under lock (posts come from callers and a progress
     * thread; recursive: a part may complete a request inside a post) */
    pthread_mutex_t lock;
    sharc_tp_queue_t any;  /* receives from any peer, in posting order */
    sharc_tp_queue_t held; /* receives naming a peer (req->peer), in posting order */
    uint64_t next_stamp;   /* orders the two queues' receives */
    int flip;              /* which part a probe asks first (neither starves) */
    int aborted;           /* the communicator failed: what waits here failed */
};

/* What a receive waiting here remembers (its backend space; the peer is req->peer). */
typedef struct {
    void *buf;
    size_t bytes;
    uint64_t tag;
    sharc_tp_mem_t *mem;
    uint64_t stamp; /* when it was posted */
} sharc_tp_hybrid_req_t;

SHARC_TP_REQ_PRIV_FITS(sharc_tp_hybrid_req_t);

static inline sharc_tp_hybrid_req_t *sharc_tp_hybrid_req(sharc_tp_req_t *req)
{
    return sharc_tp_req_priv(req);
}

/* A registration with each part that registers memory. */
struct sharc_tp_mem {
    sharc_tp_mem_t *local, *remote;
};

static const sharc_tp_part_t *sharc_tp_hybrid_route(const sharc_tp_comm_t *tp, int peer,
                                                    sharc_tp_mem_t *mem, sharc_tp_mem_t **part_mem)
{
    int local = peer >= 0 && peer < tp->size && tp->local_peer[peer];

    *part_mem = (mem == NULL) ? NULL : local ? mem->local : mem->remote;
    return local ? &tp->local : &tp->remote; /* the remote part reports a bad peer */
}

static void sharc_tp_hybrid_destroy(sharc_tp_comm_t *tp)
{
    tp->local.ops->comm_destroy(tp->local.tp);
    tp->remote.ops->comm_destroy(tp->remote.tp);
    pthread_mutex_destroy(&tp->lock);
    free(tp->local_peer);
    free(tp);
}

static void sharc_tp_hybrid_mem_dereg(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem)
{
    if (mem->local != NULL) {
        tp->local.ops->mem_dereg(tp->local.tp, mem->local);
    }
    if (mem->remote != NULL) {
        tp->remote.ops->mem_dereg(tp->remote.tp, mem->remote);
    }
    free(mem);
}

static sharc_status_t sharc_tp_hybrid_mem_reg(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                              sharc_memtype_t memtype, sharc_tp_mem_t **mem_p)
{
    sharc_tp_mem_t *mem = calloc(1, sizeof(*mem));
    sharc_status_t status = SHARC_OK;

    if (mem == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (tp->local.ops->mem_reg != NULL) {
        status = tp->local.ops->mem_reg(tp->local.tp, addr, bytes, memtype, &mem->local);
    }
    if (status == SHARC_OK && tp->remote.ops->mem_reg != NULL) {
        status = tp->remote.ops->mem_reg(tp->remote.tp, addr, bytes, memtype, &mem->remote);
    }
    if (status != SHARC_OK) {
        sharc_tp_hybrid_mem_dereg(tp, mem);
        return status;
    }
    *mem_p = mem;
    return SHARC_OK;
}

static sharc_status_t sharc_tp_hybrid_send(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                           const void *buf, size_t bytes, sharc_tp_mem_t *mem,
                                           sharc_tp_req_t *req)
{
    sharc_tp_mem_t *pm;
    const sharc_tp_part_t *part = sharc_tp_hybrid_route(tp, peer, mem, &pm);

    return part->ops->p2p->send(part->tp, peer, tag, buf, bytes, pm, req);
}

/* Is a receive from any peer with @p tag waiting here, posted before @p stamp? (lock held) */
static int sharc_tp_hybrid_any_before(const sharc_tp_comm_t *tp, uint64_t tag, uint64_t stamp)
{
    for (sharc_tp_req_t *r = tp->any.head; r != NULL; r = r->next) {
        if (sharc_tp_hybrid_req(r)->tag == tag && sharc_tp_hybrid_req(r)->stamp < stamp) {
            return 1;
        }
    }
    return 0;
}

/* A receive waits here, in @p q. */
static void sharc_tp_hybrid_wait(sharc_tp_comm_t *tp, sharc_tp_queue_t *q, int peer, uint64_t tag,
                                 void *buf, size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    req->status = SHARC_INPROGRESS;
    req->bytes = 0;
    req->peer = peer;
    *sharc_tp_hybrid_req(req) = (sharc_tp_hybrid_req_t){
        .buf = buf, .bytes = bytes, .tag = tag, .mem = mem, .stamp = tp->next_stamp++};
    sharc_tp_queue_push(q, req);
}

/* A receive that waited here, posted to the part of @p peer now; an error completes it. */
static void sharc_tp_hybrid_release(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req)
{
    sharc_tp_hybrid_req_t h = *sharc_tp_hybrid_req(req);
    sharc_tp_mem_t *pm;
    const sharc_tp_part_t *part = sharc_tp_hybrid_route(tp, peer, h.mem, &pm);
    sharc_status_t status = part->ops->p2p->recv(part->tp, peer, h.tag, h.buf, h.bytes, pm, req);

    if (status != SHARC_OK && status != SHARC_INPROGRESS) {
        sharc_tp_req_complete(req, status); /* (the part logged why) */
    }
}

/* Receives held behind receives from any peer that have been matched since: posted now. */
static void sharc_tp_hybrid_unhold(sharc_tp_comm_t *tp)
{
    sharc_tp_queue_t still = {NULL, NULL};
    sharc_tp_req_t *r;

    while ((r = sharc_tp_queue_pop(&tp->held)) != NULL) {
        const sharc_tp_hybrid_req_t *h = sharc_tp_hybrid_req(r);

        if (sharc_tp_hybrid_any_before(tp, h->tag, h->stamp)) {
            sharc_tp_queue_push(&still, r);
        } else {
            sharc_tp_hybrid_release(tp, r->peer, r);
        }
    }
    tp->held = still;
}

/* The sender of a message with @p tag waiting in either part, or -1. */
static int sharc_tp_hybrid_arrived(sharc_tp_comm_t *tp, uint64_t tag)
{
    const sharc_tp_part_t *parts[2] = {&tp->local, &tp->remote};
    int peer;

    tp->flip ^= 1;
    for (int i = 0; i < 2; i++) {
        const sharc_tp_part_t *part = parts[(i + tp->flip) % 2];

        if (part->ops->p2p->probe(part->tp, tag, &peer) == 1) {
            return peer;
        }
    }
    return -1;
}

/* Receives from any peer whose message has arrived: each received from its sender. Only the
 * oldest of those with one tag can match (they all accept the same messages). Lock held. */
static int sharc_tp_hybrid_match_any(sharc_tp_comm_t *tp)
{
    int matched = 0;

    for (sharc_tp_req_t *r = tp->any.head, *next; r != NULL; r = next) {
        const sharc_tp_hybrid_req_t *h = sharc_tp_hybrid_req(r);
        int peer;

        next = r->next;
        if (sharc_tp_hybrid_any_before(tp, h->tag, h->stamp) ||
            (peer = sharc_tp_hybrid_arrived(tp, h->tag)) < 0) {
            continue;
        }
        sharc_tp_queue_take(&tp->any, sharc_tp_queue_is, (uint64_t)(uintptr_t)r);
        sharc_tp_hybrid_release(tp, peer, r);
        matched = 1;
    }
    if (matched) {
        sharc_tp_hybrid_unhold(tp);
    }
    return matched;
}

static sharc_status_t sharc_tp_hybrid_recv_any(sharc_tp_comm_t *tp, uint64_t tag, void *buf,
                                               size_t bytes, sharc_tp_mem_t *mem,
                                               sharc_tp_req_t *req)
{
    sharc_status_t status;

    if (tag > SHARC_TP_TAG_MAX) {
        sharc_error("hybrid: a receive with tag %#llx: tags are below 2^%d",
                    (unsigned long long)tag, SHARC_TP_TAG_BITS);
        return SHARC_ERR_INVALID;
    }
    pthread_mutex_lock(&tp->lock);
    status = SHARC_ERR_REMOTE;
    if (tp->aborted) {
        sharc_error("hybrid: cannot receive from any peer: the communicator failed");
    } else {
        sharc_tp_hybrid_wait(tp, &tp->any, -1, tag, buf, bytes, mem, req);
        sharc_tp_hybrid_match_any(tp);
        status = sharc_tp_req_status(req) == SHARC_INPROGRESS ? SHARC_INPROGRESS : SHARC_OK;
    }
    pthread_mutex_unlock(&tp->lock);
    return status;
}

static sharc_status_t sharc_tp_hybrid_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                           size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_tp_mem_t *pm;
    const sharc_tp_part_t *part = sharc_tp_hybrid_route(tp, peer, mem, &pm);
    sharc_status_t status;

    pthread_mutex_lock(&tp->lock);
    if (peer >= 0 && peer < tp->size && sharc_tp_hybrid_any_before(tp, tag, UINT64_MAX)) {
        /* behind a receive from any peer with its tag: held */
        sharc_tp_hybrid_wait(tp, &tp->held, peer, tag, buf, bytes, mem, req);
        status = SHARC_INPROGRESS;
    } else {
        status = part->ops->p2p->recv(part->tp, peer, tag, buf, bytes, pm, req);
    }
    pthread_mutex_unlock(&tp->lock);
    return status;
}

static sharc_status_t sharc_tp_hybrid_recv_reduce(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                                  void *dst, const void *src, size_t count,
                                                  sharc_dtype_t dtype, sharc_op_t op,
                                                  sharc_tp_req_t *req)
{
    sharc_tp_mem_t *pm;
    const sharc_tp_part_t *part = sharc_tp_hybrid_route(tp, peer, NULL, &pm);
    int held;

    pthread_mutex_lock(&tp->lock);
    held = sharc_tp_hybrid_any_before(tp, tag, UINT64_MAX);
    pthread_mutex_unlock(&tp->lock);
    if (part->ops->p2p->recv_reduce == NULL || held) {
        return SHARC_ERR_UNSUPPORTED; /* this peer's part cannot, or it must wait: recv */
    }
    return part->ops->p2p->recv_reduce(part->tp, peer, tag, dst, src, count, dtype, op, req);
}

static int sharc_tp_hybrid_probe(sharc_tp_comm_t *tp, uint64_t tag, int *peer_p)
{
    int peer = sharc_tp_hybrid_arrived(tp, tag);

    if (peer >= 0) {
        *peer_p = peer;
    }
    return peer >= 0;
}

static int sharc_tp_hybrid_progress_part(const sharc_tp_part_t *part)
{
    return part->ops->progress != NULL ? part->ops->progress(part->tp) : 0;
}

static int sharc_tp_hybrid_progress(sharc_tp_comm_t *tp)
{
    int a = sharc_tp_hybrid_progress_part(&tp->local);
    int b = sharc_tp_hybrid_progress_part(&tp->remote);
    int c = 0;

    if (a < 0 || b < 0) {
        return a < 0 ? a : b;
    }
    if (tp->any.head != NULL) { /* (a read without the lock: a hint, checked under it) */
        pthread_mutex_lock(&tp->lock);
        c = sharc_tp_hybrid_match_any(tp);
        pthread_mutex_unlock(&tp->lock);
    }
    return a > 0 || b > 0 || c > 0;
}

/* Each part that can give up does (the other's requests wait for the communicator's end);
 * what waits here fails. */
static void sharc_tp_hybrid_abort(sharc_tp_comm_t *tp)
{
    const sharc_tp_part_t *parts[] = {&tp->local, &tp->remote};
    sharc_tp_req_t *r;

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(parts); i++) {
        if (parts[i]->ops->abort != NULL) {
            parts[i]->ops->abort(parts[i]->tp);
        }
    }
    pthread_mutex_lock(&tp->lock);
    tp->aborted = 1;
    while ((r = sharc_tp_queue_pop(&tp->any)) != NULL ||
           (r = sharc_tp_queue_pop(&tp->held)) != NULL) {
        sharc_tp_req_complete(r, SHARC_ERR_REMOTE);
    }
    pthread_mutex_unlock(&tp->lock);
}

static const sharc_tp_p2p_ops_t sharc_tp_hybrid_p2p_ops = {
    .send = sharc_tp_hybrid_send,
    .recv = sharc_tp_hybrid_recv,
    .recv_any = sharc_tp_hybrid_recv_any,
    .probe = sharc_tp_hybrid_probe,
    .recv_reduce = sharc_tp_hybrid_recv_reduce,
};

const sharc_tp_ops_t sharc_tp_hybrid_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "hybrid",
    .caps = SHARC_TP_CAP_HOST_MEM | SHARC_TP_CAP_REMOTE,
    .query = NULL,
    .comm_create = NULL, /* built from two parts by sharc_tp_hybrid_create */
    .comm_destroy = sharc_tp_hybrid_destroy,
    .mem_reg = sharc_tp_hybrid_mem_reg,
    .mem_dereg = sharc_tp_hybrid_mem_dereg,
    .progress = sharc_tp_hybrid_progress,
    .abort = sharc_tp_hybrid_abort,
    .p2p = &sharc_tp_hybrid_p2p_ops,
};

sharc_status_t sharc_tp_hybrid_create(const sharc_tp_comm_params_t *params,
                                      const sharc_tp_ops_t *local_ops, sharc_tp_comm_t *local_tp,
                                      const sharc_tp_ops_t *remote_ops, sharc_tp_comm_t *remote_tp,
                                      sharc_tp_comm_t **tp_p)
{
    sharc_tp_comm_t *tp = calloc(1, sizeof(*tp));

    if (tp == NULL || (tp->local_peer = calloc((size_t)params->size, sizeof(int))) == NULL) {
        free(tp);
        return SHARC_ERR_NOMEM;
    }
    for (int r = 0; r < params->size; r++) {
        tp->local_peer[r] = params->node_of[r] == params->node_of[params->rank];
    }
    tp->size = params->size;
    sharc_mutex_init_recursive(&tp->lock);
    tp->local = (sharc_tp_part_t){local_ops, local_tp};
    tp->remote = (sharc_tp_part_t){remote_ops, remote_tp};
    sharc_info("transport: %s within the node, %s between nodes", local_ops->name,
               remote_ops->name);
    *tp_p = tp;
    return SHARC_OK;
}
