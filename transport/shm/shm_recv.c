/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_recv.c: receives of the shm transport (the protocols are described in shm.h): posting
 * them (plain, or recv_reduce), matching them with the messages that arrive, landing the data
 * (stored, or combined with the local operand where it lies), answering a rendezvous with FIN
 * or CTS, and taking the FRAGs of a streamed message. Reading the peer's memory is shm_mem.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../../kernels/kernels.h"
#include "../../base/log.h"
#include "../../base/util.h"
#include "shm.h"

/* recv_reduce over CMA reads the sender's data into a bounce buffer of this size at a time,
 * and combines it while it is still in the core's cache (a 1 MiB bounce was evicted by its
 * own read before the reduction came back to it: allreduce of 4 MiB and more took twice as
 * long) */
#define SHARC_SHM_BOUNCE (128u << 10)

/*
 * Message data lands in a receive at byte @p off: stored, or for recv_reduce combined with
 * the local operand straight from where the data is (a FIFO slot, the sender's mapping).
 */
static void shm_land(sharc_tp_req_t *req, size_t off, const void *data, size_t bytes)
{
    char *dst = (char *)sharc_tp_shm_req(req)->buf + off;

    if (req->red_src == NULL) {
        sharc_kern_copy(dst, data, bytes);
    } else {
        sharc_kern_cpu_ops.reduce(dst, data, (const char *)req->red_src + off,
                                  bytes / sharc_dtype_size(req->red_dtype), req->red_dtype,
                                  req->red_op, NULL);
    }
}

/*
 * The sender's data at @p addr into the receive with process_vm_readv: straight into the
 * buffer, or for recv_reduce through a bounce buffer a chunk at a time.
 */
static sharc_status_t shm_cma_land(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                                   uint64_t addr, size_t bytes)
{
    sharc_status_t status = SHARC_OK;

    if (req->red_src == NULL) {
        return sharc_tp_shm_cma_read(tp, p, sharc_tp_shm_req(req)->buf, addr, bytes);
    }
    if (tp->bounce == NULL && (tp->bounce = malloc(SHARC_SHM_BOUNCE)) == NULL) {
        return SHARC_ERR_UNSUPPORTED; /* streamed through the FIFO instead */
    }
    for (size_t off = 0; status == SHARC_OK && off < bytes; off += SHARC_SHM_BOUNCE) {
        size_t n = SHARC_MIN((size_t)SHARC_SHM_BOUNCE, bytes - off);

        status = sharc_tp_shm_cma_read(tp, p, tp->bounce, addr + off, n);
        if (status == SHARC_OK) {
            shm_land(req, off, tp->bounce, n);
        } else if (status == SHARC_ERR_UNSUPPORTED && off > 0) {
            status = SHARC_ERR_BACKEND; /* part of it is combined already: no way back */
        }
    }
    return status;
}

/* Does a message of @p bytes fit the receive (a reduction takes exactly its size)? */
static int shm_fits(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                    const sharc_shm_hdr_t *hdr)
{
    uint64_t capacity = sharc_tp_shm_req(req)->bytes;

    if (hdr->bytes > capacity || (req->red_src != NULL && hdr->bytes != capacity)) {
        sharc_debug("shm: rank %d: a %llu-byte message from rank %d with tag %#llx does not fit "
                    "the %llu-byte %s",
                    tp->base.rank, (unsigned long long)hdr->bytes, p->rank,
                    (unsigned long long)hdr->tag, (unsigned long long)capacity,
                    req->red_src != NULL ? "reduction" : "receive buffer");
        return 0;
    }
    return 1;
}

static void shm_recv_eager(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                           const sharc_shm_hdr_t *hdr, const void *payload)
{
    if (!shm_fits(tp, p, req, hdr)) {
        req->bytes = hdr->bytes;
        sharc_tp_req_complete(req, SHARC_ERR_INVALID);
        return;
    }
    if (hdr->bytes > 0) {
        shm_land(req, 0, payload, hdr->bytes);
    }
    req->bytes = hdr->bytes;
    sharc_tp_req_complete(req, SHARC_OK);
}

/* A receive matched an RTS: read the data, or ask the sender to stream it. */
static void shm_recv_rndv(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                          const sharc_shm_hdr_t *rts)
{
    sharc_tp_shm_req_t *s = sharc_tp_shm_req(req);
    sharc_shm_hdr_t ans = {.type = SHARC_SHM_FIN, .scookie = rts->scookie};
    sharc_status_t status = SHARC_ERR_UNSUPPORTED;
    const unsigned char *src;

    if (!shm_fits(tp, p, req, rts)) {
        status = SHARC_ERR_INVALID;
    } else if ((src = sharc_tp_shm_region(tp, p, rts)) != NULL) {
        shm_land(req, 0, src + rts->offset, rts->bytes);
        status = SHARC_OK;
    } else if (p->cma && (req->red_src == NULL || rts->bytes >= tp->cma_reduce_min)) {
        status = shm_cma_land(tp, p, req, rts->addr, rts->bytes);
        p->cma = status != SHARC_ERR_UNSUPPORTED;
    }
    if (status == SHARC_ERR_UNSUPPORTED) {
        s->bytes = rts->bytes;
        s->cookie = tp->next_cookie++;
        req->bytes = 0;
        sharc_tp_queue_push(&p->frag_recv, req);
        ans.type = SHARC_SHM_CTS;
        ans.rcookie = s->cookie;
        sharc_tp_shm_ctrl(tp, p, &ans);
        return;
    }
    ans.status = status;
    sharc_tp_shm_ctrl(tp, p, &ans);
    req->bytes = (status == SHARC_OK || status == SHARC_ERR_INVALID) ? rts->bytes : 0;
    sharc_tp_req_complete(req, status);
}

/* A matched receive takes an EAGER_MSG or an RTS. */
static void shm_recv_match(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                           const sharc_shm_hdr_t *hdr, const void *payload)
{
    req->peer = p->rank;
    if (hdr->type == SHARC_SHM_EAGER_MSG) {
        shm_recv_eager(tp, p, req, hdr, payload);
    } else {
        shm_recv_rndv(tp, p, req, hdr);
    }
}

void sharc_tp_shm_frag(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr,
                       const void *payload)
{
    sharc_tp_req_t *req = p->frag_recv.head;

    while (req != NULL && sharc_tp_shm_req(req)->cookie != hdr->rcookie) {
        req = req->next;
    }
    if (req == NULL || hdr->offset + hdr->bytes > sharc_tp_shm_req(req)->bytes) {
        sharc_error("shm: rank %d: a fragment from rank %d fits no receive (protocol error)",
                    tp->base.rank, p->rank);
        return;
    }
    shm_land(req, hdr->offset, payload, hdr->bytes);
    req->bytes += hdr->bytes;
    if (req->bytes == sharc_tp_shm_req(req)->bytes) {
        sharc_tp_queue_take(&p->frag_recv, sharc_tp_shm_has_cookie, hdr->rcookie);
        sharc_tp_req_complete(req, SHARC_OK);
    }
}

/* Keep a message no receive waits for yet (the payload of an RTS stays with the sender). */
static void shm_unexpected(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr,
                           const void *payload)
{
    size_t bytes = (hdr->type == SHARC_SHM_EAGER_MSG) ? hdr->bytes : 0;
    sharc_shm_unexp_t *u = malloc(sizeof(*u) + bytes);

    if (u == NULL) {
        sharc_error("shm: rank %d: no memory to keep a message from rank %d (tag %#llx)",
                    tp->base.rank, p->rank, (unsigned long long)hdr->tag);
        return;
    }
    u->hdr = *hdr;
    u->stamp = tp->next_stamp++;
    u->next = NULL;
    if (bytes > 0) {
        memcpy(u->payload, payload, bytes);
    }
    if (p->unexp_tail != NULL) {
        p->unexp_tail->next = u;
    } else {
        p->unexp_head = u;
    }
    p->unexp_tail = u;
}

void sharc_tp_shm_arrived(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr,
                          const void *payload)
{
    sharc_tp_req_t *mine = sharc_tp_queue_find(&p->posted, sharc_tp_shm_has_tag, hdr->tag);
    sharc_tp_req_t *any = sharc_tp_queue_find(&tp->any_posted, sharc_tp_shm_has_tag, hdr->tag);
    sharc_tp_queue_t *q = &p->posted;

    if (any != NULL &&
        (mine == NULL || sharc_tp_shm_req(any)->stamp < sharc_tp_shm_req(mine)->stamp)) {
        q = &tp->any_posted; /* posted before any receive naming this peer */
    } else if (mine == NULL) {
        shm_unexpected(tp, p, hdr, payload);
        return;
    }
    shm_recv_match(tp, p, sharc_tp_queue_take(q, sharc_tp_shm_has_tag, hdr->tag), hdr, payload);
}

/* The oldest message from @p p kept for @p tag, left in its place; NULL if none. */
static sharc_shm_unexp_t *shm_peek_unexpected(const sharc_shm_peer_t *p, uint64_t tag)
{
    sharc_shm_unexp_t *u = p->unexp_head;

    while (u != NULL && u->hdr.tag != tag) {
        u = u->next;
    }
    return u;
}

/* The peer whose kept message for @p tag arrived first, of all peers; NULL if none has one. */
static sharc_shm_peer_t *shm_first_unexpected(sharc_tp_comm_t *tp, uint64_t tag)
{
    sharc_shm_peer_t *first = NULL;
    uint64_t stamp = UINT64_MAX;

    for (int i = 0; i < tp->nlocal; i++) {
        const sharc_shm_unexp_t *u = shm_peek_unexpected(&tp->peers[i], tag);

        if (u != NULL && u->stamp < stamp) {
            first = &tp->peers[i];
            stamp = u->stamp;
        }
    }
    return first;
}

/* The oldest message from @p p kept for @p tag, unlinked; NULL if none. */
static sharc_shm_unexp_t *shm_take_unexpected(sharc_shm_peer_t *p, uint64_t tag)
{
    sharc_shm_unexp_t **u = &p->unexp_head, *prev = NULL, *m;

    while (*u != NULL && (*u)->hdr.tag != tag) {
        prev = *u;
        u = &(*u)->next;
    }
    m = *u;
    if (m != NULL) {
        *u = m->next;
        if (p->unexp_tail == m) {
            p->unexp_tail = prev;
        }
    }
    return m;
}

/* A receive (plain, or recv_reduce with req->red_* set) matched or queued. */
static sharc_status_t shm_recv_post(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                    size_t bytes, sharc_tp_req_t *req)
{
    sharc_shm_peer_t *p;
    sharc_status_t status;

    pthread_mutex_lock(&tp->base.lock);
    p = sharc_tp_shm_prepare(tp, peer, tag, buf, bytes, req, "receive from", &status);
    if (p != NULL) {
        sharc_shm_unexp_t *m = shm_take_unexpected(p, tag);

        if (m == NULL) {
            sharc_tp_shm_req(req)->stamp = tp->next_stamp++;
            sharc_tp_queue_push(&p->posted, req);
        } else {
            shm_recv_match(tp, p, req, &m->hdr, m->payload);
            free(m);
        }
        status = sharc_tp_shm_posted(req);
    }
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}

sharc_status_t sharc_tp_shm_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                 size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    (void)mem;
    req->red_src = NULL;
    return shm_recv_post(tp, peer, tag, buf, bytes, req);
}

/* Why a receive from any peer cannot be posted now (logged), or SHARC_OK. */
static sharc_status_t shm_any_refused(sharc_tp_comm_t *tp, uint64_t tag)
{
    if (tag > SHARC_TP_TAG_MAX) {
        sharc_error("shm: rank %d cannot receive with tag %#llx: tags are below 2^40",
                    tp->base.rank, (unsigned long long)tag);
        return SHARC_ERR_INVALID;
    }
    if (tp->aborted) {
        sharc_error("shm: rank %d cannot receive from any peer: the communicator failed",
                    tp->base.rank);
        return SHARC_ERR_REMOTE;
    }
    return SHARC_OK;
}

sharc_status_t sharc_tp_shm_recv_any(sharc_tp_comm_t *tp, uint64_t tag, void *buf, size_t bytes,
                                     sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_shm_peer_t *p;
    sharc_status_t status;

    (void)mem;
    pthread_mutex_lock(&tp->base.lock);
    status = shm_any_refused(tp, tag);
    if (status == SHARC_OK) {
        req->status = SHARC_INPROGRESS;
        req->bytes = 0;
        req->next = NULL;
        req->red_src = NULL;
        *sharc_tp_shm_req(req) = (sharc_tp_shm_req_t){.buf = buf, .bytes = bytes, .tag = tag};
        p = shm_first_unexpected(tp, tag);
        if (p != NULL) {
            sharc_shm_unexp_t *m = shm_take_unexpected(p, tag);

            shm_recv_match(tp, p, req, &m->hdr, m->payload);
            free(m);
        } else {
            sharc_tp_shm_req(req)->stamp = tp->next_stamp++;
            sharc_tp_queue_push(&tp->any_posted, req);
        }
        status = sharc_tp_shm_posted(req);
    }
    pthread_mutex_unlock(&tp->base.lock);
    return status;
}

int sharc_tp_shm_probe(sharc_tp_comm_t *tp, uint64_t tag, int *peer_p)
{
    sharc_shm_peer_t *p;

    pthread_mutex_lock(&tp->base.lock);
    p = shm_first_unexpected(tp, tag);
    if (p != NULL) {
        *peer_p = p->rank;
    }
    pthread_mutex_unlock(&tp->base.lock);
    return p != NULL;
}

sharc_status_t sharc_tp_shm_recv_reduce(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *dst,
                                        const void *src, size_t count, sharc_dtype_t dtype,
                                        sharc_op_t op, sharc_tp_req_t *req)
{
    if (src == NULL || sharc_dtype_size(dtype) == 0 || !sharc_kern_op_valid(dtype, op)) {
        sharc_error("shm: recv_reduce without an operand, or with an invalid dtype or op");
        return SHARC_ERR_INVALID;
    }
    req->red_src = src;
    req->red_dtype = dtype;
    req->red_op = op;
    return shm_recv_post(tp, peer, tag, dst, count * sharc_dtype_size(dtype), req);
}
