/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring.c: the ring engine under the ring algorithms. Rank r sends to r+1 and receives from
 * r-1. Each block is cut into chunks; units of work go chunk by chunk, and within a chunk
 * step by step (unit u = chunk u / (n-1), step u % (n-1)), so a chunk travels on around the
 * ring as soon as it arrives while later chunks follow it: pipelining across steps and
 * chunks, as in NCCL's rings.
 *
 * allgather: step s sends block (r - s) and receives block (r - s - 1), straight into the
 *   vector; no scratch. Bytes per rank: (n-1)/n of the vector sent and received.
 * reduce-scatter: step s sends the partial sum of block (r - s - 1) and receives that of
 *   block (r - s - 2) into a scratch slot, where this rank's contribution is added before
 *   it moves on; at step n-2 the block is r's own and the result goes to out. A transport
 *   with recv_reduce adds the contribution as the data arrives, reading it where it lies
 *   (one pass instead of a copy and a pass), the last step straight into out. Scratch:
 *   SHARC_COLL_RS_SLOTS chunks. Bytes per rank as allgather, plus one reduction pass.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdlib.h>
#include <string.h>

#include "algorithms.h"

/* Scratch slots of the reduce-scatter ring: enough for receives to run ahead of sends. */
#define SHARC_COLL_RS_SLOTS 4

static int sharc_ring_mod(int x, int n)
{
    return ((x % n) + n) % n;
}

/* Byte offset (in vec) and length of chunk c of block b. */
static void sharc_ring_span(const sharc_coll_ring_t *ring, int b, size_t c, size_t *off_p,
                            size_t *len_p)
{
    size_t blen = sharc_coll_block_len(&ring->blocks, b), start = c * ring->chunk;
    size_t len = (start >= blen) ? 0 : SHARC_MIN(ring->chunk, blen - start);

    *off_p = (sharc_coll_block_off(&ring->blocks, b) + SHARC_MIN(start, blen)) * ring->esize;
    *len_p = len * ring->esize;
}

static int sharc_ring_step(const sharc_coll_ring_t *ring, size_t u)
{
    return (int)(u % (size_t)(ring->n - 1));
}

static size_t sharc_ring_chunk(const sharc_coll_ring_t *ring, size_t u)
{
    return u / (size_t)(ring->n - 1);
}

sharc_status_t sharc_coll_ring_init(sharc_coll_task_t *task, sharc_coll_ring_t *ring)
{
    const sharc_coll_comm_t *cc = task->cc;
    size_t maxlen = ring->blocks.base + (ring->blocks.extra > 0);

    ring->esize = sharc_dtype_size(task->args.dtype);
    ring->n = cc->size;
    ring->rank = cc->rank;
    ring->left = sharc_ring_mod(cc->rank - 1, cc->size);
    ring->right = sharc_ring_mod(cc->rank + 1, cc->size);
    /* SHARC_COLL_CHUNK bytes, in whole elements (at least one) */
    ring->chunk = SHARC_MAX(cc->cfg->chunk / ring->esize, (size_t)1);
    ring->nchunks = SHARC_MAX((maxlen + ring->chunk - 1) / ring->chunk, (size_t)1);
    ring->units = (ring->n > 1 && maxlen > 0) ? ring->nchunks * (size_t)(ring->n - 1) : 0;
    ring->next_send = ring->next_recv = ring->next_reduce = ring->freed = 0;
    ring->started = 0;
    if (ring->units == 0) {
        return SHARC_OK;
    }
    ring->sreq = calloc(ring->units, sizeof(*ring->sreq));
    ring->rreq = calloc(ring->units, sizeof(*ring->rreq));
    task->watch[0].reqs = ring->sreq;
    task->watch[0].n = (ring->sreq != NULL) ? ring->units : 0;
    task->watch[1].reqs = ring->rreq;
    task->watch[1].n = (ring->rreq != NULL) ? ring->units : 0;
    if (ring->reducing) {
        ring->scratch = malloc(SHARC_COLL_RS_SLOTS * ring->chunk * ring->esize);
        ring->fused = calloc(ring->units, 1);
    }
    if (ring->sreq == NULL || ring->rreq == NULL ||
        (ring->reducing && (ring->scratch == NULL || ring->fused == NULL))) {
        sharc_coll_ring_cleanup(task, ring);
        return SHARC_ERR_NOMEM;
    }
    task->await_peer = ring->left;
    return SHARC_OK;
}

void sharc_coll_ring_cleanup(sharc_coll_task_t *task, sharc_coll_ring_t *ring)
{
    task->watch[0].n = task->watch[1].n = 0; /* (the recorder reads them under the lock) */
    free(ring->sreq);
    free(ring->rreq);
    free(ring->scratch);
    free(ring->fused);
    ring->sreq = ring->rreq = NULL;
    ring->scratch = NULL;
    ring->fused = NULL;
}

/* Done when every send has been posted and has completed (receives are checked by callers). */
static sharc_status_t sharc_ring_sends_done(sharc_coll_ring_t *ring)
{
    if (ring->next_send < ring->units) {
        return SHARC_INPROGRESS;
    }
    return sharc_coll_reqs_status(ring->sreq, ring->units);
}

sharc_status_t sharc_coll_ring_allgather(sharc_coll_task_t *task, sharc_coll_ring_t *ring)
{
    sharc_status_t status;
    size_t off, len;

    if (!ring->started) {
        ring->started = 1;
        /* every receive lands in its own place in the vector: post them all now */
        for (size_t u = 0; u < ring->units; u++) {
            int b = sharc_ring_mod(ring->rank - sharc_ring_step(ring, u) - 1, ring->n);

            sharc_ring_span(ring, b, sharc_ring_chunk(ring, u), &off, &len);
            status = sharc_coll_recv(task, ring->left, ring->vec + off, len, &ring->rreq[u]);
            if (status != SHARC_OK) {
                return status;
            }
            ring->next_recv++;
        }
    }
    while (ring->next_send < ring->units) {
        size_t u = ring->next_send;
        int s = sharc_ring_step(ring, u);

        /* step s > 0 forwards what step s-1 of the same chunk received */
        if (s > 0 && (status = sharc_tp_req_status(&ring->rreq[u - 1])) != SHARC_OK) {
            if (status != SHARC_INPROGRESS) {
                return status;
            }
            break;
        }
        sharc_ring_span(ring, sharc_ring_mod(ring->rank - s, ring->n), sharc_ring_chunk(ring, u),
                        &off, &len);
        /* step 0 sends this rank's own block: from the caller's buffer when it has one, so
         * the copy into the vector (below) overlaps the transfer instead of preceding it */
        status = sharc_coll_send(
            task, ring->right,
            (s == 0 && ring->own != NULL)
                ? ring->own + (off - sharc_coll_block_off(&ring->blocks, ring->rank) * ring->esize)
                : ring->vec + off,
            len, &ring->sreq[u]);
        if (status != SHARC_OK) {
            return status;
        }
        ring->next_send++;
    }
    if (ring->own != NULL && !ring->own_copied) {
        size_t off0 = sharc_coll_block_off(&ring->blocks, ring->rank) * ring->esize;

        sharc_kern_copy(ring->vec + off0, ring->own,
                        sharc_coll_block_len(&ring->blocks, ring->rank) * ring->esize);
        ring->own_copied = 1;
    }
    for (; ring->next_reduce < ring->units; ring->next_reduce++) { /* receives done, in order */
        status = sharc_tp_req_status(&ring->rreq[ring->next_reduce]);
        if (status != SHARC_OK) {
            return status;
        }
    }
    return sharc_ring_sends_done(ring);
}

void sharc_coll_ring_arrived(const sharc_coll_ring_t *ring, size_t *from_p,
                             sharc_coll_ring_span_fn_t fn, void *arg)
{
    size_t off, len;

    for (; *from_p < ring->units && sharc_tp_req_status(&ring->rreq[*from_p]) == SHARC_OK;
         (*from_p)++) {
        int b = sharc_ring_mod(ring->rank - sharc_ring_step(ring, *from_p) - 1, ring->n);

        sharc_ring_span(ring, b, sharc_ring_chunk(ring, *from_p), &off, &len);
        fn(arg, b, off, len);
    }
}

static char *sharc_ring_slot(const sharc_coll_ring_t *ring, size_t u)
{
    return ring->scratch + (u % SHARC_COLL_RS_SLOTS) * ring->chunk * ring->esize;
}

/* Where unit u's result goes when it is this rank's own block (the last step). */
static char *sharc_ring_out(const sharc_coll_ring_t *ring, size_t u)
{
    return ring->out + sharc_ring_chunk(ring, u) * ring->chunk * ring->esize;
}

/* Is unit u's scratch slot free again: forwarded by unit u+1's send, or written out? */
static int sharc_ring_released(const sharc_coll_ring_t *ring, size_t u)
{
    if (sharc_ring_step(ring, u) == ring->n - 2) {
        return ring->next_reduce > u;
    }
    return ring->next_send > u + 1 && sharc_tp_req_status(&ring->sreq[u + 1]) != SHARC_INPROGRESS;
}

sharc_status_t sharc_coll_ring_reduce_scatter(sharc_coll_task_t *task, sharc_coll_ring_t *ring)
{
    const sharc_kern_ops_t *kern = &sharc_kern_cpu_ops;
    sharc_status_t status;
    size_t off, len;

    for (;;) {
        int progressed = 0;

        /* receives, as far as free slots allow; where the transport can, the partial sum is
         * combined with this rank's contribution as it arrives, into the slot it is
         * forwarded from, or (last step) straight into out */
        while (ring->next_recv < ring->units &&
               ring->next_recv < ring->freed + SHARC_COLL_RS_SLOTS) {
            size_t u = ring->next_recv;
            int s = sharc_ring_step(ring, u), b = sharc_ring_mod(ring->rank - s - 2, ring->n);
            char *dst = (s == ring->n - 2) ? sharc_ring_out(ring, u) : sharc_ring_slot(ring, u);

            sharc_ring_span(ring, b, sharc_ring_chunk(ring, u), &off, &len);
            status = sharc_coll_recv_reduce(task, ring->left, dst, ring->vec + off,
                                            len / ring->esize, &ring->rreq[u]);
            ring->fused[u] = status != SHARC_ERR_UNSUPPORTED;
            if (!ring->fused[u]) {
                status = sharc_coll_recv(task, ring->left, sharc_ring_slot(ring, u), len,
                                         &ring->rreq[u]);
            }
            if (status != SHARC_OK) {
                return status;
            }
            ring->next_recv++;
            progressed = 1;
        }
        /* otherwise add this rank's contribution to what arrived, in order */
        while (ring->next_reduce < ring->next_recv) {
            size_t u = ring->next_reduce;
            int s = sharc_ring_step(ring, u), b = sharc_ring_mod(ring->rank - s - 2, ring->n);
            char *slot = sharc_ring_slot(ring, u), *out = sharc_ring_out(ring, u);

            status = sharc_tp_req_status(&ring->rreq[u]);
            if (status == SHARC_INPROGRESS) {
                break;
            } else if (status != SHARC_OK) {
                return status;
            }
            sharc_ring_span(ring, b, sharc_ring_chunk(ring, u), &off, &len);
            if (!ring->fused[u]) {
                kern->reduce(slot, slot, ring->vec + off, len / ring->esize, task->args.dtype,
                             task->args.op, NULL);
                if (s == ring->n - 2) {
                    sharc_kern_copy(out, slot, len);
                }
            }
            if (s == ring->n - 2 && ring->scale != 0.0) { /* block r, complete: AVG */
                kern->scale(out, len / ring->esize, task->args.dtype, ring->scale, NULL);
            }
            ring->next_reduce++;
            progressed = 1;
        }
        /* sends, in order: step 0 from the vector, later steps from the reduced slot */
        while (ring->next_send < ring->units) {
            size_t u = ring->next_send;
            int s = sharc_ring_step(ring, u);
            const char *src;

            sharc_ring_span(ring, sharc_ring_mod(ring->rank - s - 1, ring->n),
                            sharc_ring_chunk(ring, u), &off, &len);
            if (s == 0) {
                src = ring->vec + off;
            } else if (ring->next_reduce > u - 1) {
                src = sharc_ring_slot(ring, u - 1);
            } else {
                break;
            }
            status = sharc_coll_send(task, ring->right, src, len, &ring->sreq[u]);
            if (status != SHARC_OK) {
                return status;
            }
            ring->next_send++;
            progressed = 1;
        }
        while (ring->freed < ring->units && sharc_ring_released(ring, ring->freed)) {
            ring->freed++;
            progressed = 1;
        }
        if (!progressed) {
            break;
        }
    }
    if (ring->next_reduce < ring->units) {
        return SHARC_INPROGRESS;
    }
    return sharc_ring_sends_done(ring);
}
