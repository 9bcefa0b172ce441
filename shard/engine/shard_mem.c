/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_mem.c: where a group's memory lives and how it is ordered. On the host: shareable
 * memory (sharc_mem_alloc) for what peers copy from, the heap for the rest. On CUDA: device
 * memory, unsharded buffers from the CUDA backend (ncclMemAlloc) and registered with
 * it where it can, and streams: the caller's (compute), the engine's (casts, zeroing,
 * accumulation). Unsharded buffers return to a small pool. On CUDA each remembers, by an
 * event, where its last users end (the caller's stream for parameters used in compute, the
 * engine's for gradients it reduced and gathers it gave up): the engine's stream takes any
 * (it follows the caller's when it takes one), the caller's stream one that needs no wait,
 * so compute never queues behind a reduction only because of memory reuse. A unit's gradient
 * buffer goes back here once its reduced part is taken (the engine's accumulation, or
 * offload's download). Quiescing waits for offload's host work through the group's
 * host_quiesce hook (offload sits above this file).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include <sharc/mem.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/engine/shard_engine.h"
#include "shard/trace/shard_record.h"

/* ---- shards ---------------------------------------------------------------------------- */

sharc_status_t sharc_shard_alloc_shard(sharc_shard_group_t *g, size_t count, int shareable,
                                       float **ptr_p)
{
    size_t bytes = count * sizeof(float);
    void *p = NULL;
    sharc_status_t status;

    if (g->cuda) {
        /* zeroed on the engine's stream, done before anything else can touch it */
        status = sharc_gpu_alloc(bytes, &p);
        if (status == SHARC_OK &&
            ((status = sharc_gpu_memset(p, 0, bytes, g->estream)) != SHARC_OK ||
             (status = sharc_gpu_stream_sync(g->estream)) != SHARC_OK)) {
            sharc_gpu_free(p);
        }
    } else if (shareable) {
        status = sharc_mem_alloc(g->ctx, bytes, &p); /* zero-filled */
    } else {
        p = calloc(count, sizeof(float));
        status = (p == NULL) ? SHARC_ERR_NOMEM : SHARC_OK;
    }
    if (status == SHARC_OK) {
        *ptr_p = p;
    }
    return status;
}

void sharc_shard_free_shard(sharc_shard_group_t *g, float *ptr, int shareable)
{
    if (ptr == NULL) {
        return;
    }
    if (g->cuda) {
        sharc_gpu_free(ptr);
    } else if (shareable) {
        sharc_mem_free(g->ctx, ptr);
    } else {
        free(ptr);
    }
}

sharc_status_t sharc_shard_zero(sharc_shard_group_t *g, void *ptr, size_t bytes, void *stream)
{
    if (g->cuda) {
        return sharc_gpu_memset(ptr, 0, bytes, stream);
    }
    memset(ptr, 0, bytes);
    return SHARC_OK;
}

sharc_status_t sharc_shard_copy(sharc_shard_group_t *g, void *dst, const void *src, size_t bytes)
{
    sharc_status_t status;

    if (!g->cuda) {
        memmove(dst, src, bytes);
        return SHARC_OK;
    }
    /* after everything queued on the engine's stream, and done before returning */
    status = sharc_gpu_copy(dst, src, bytes, g->estream);
    return (status == SHARC_OK) ? sharc_gpu_stream_sync(g->estream) : status;
}

sharc_status_t sharc_shard_after(sharc_shard_group_t *g, void *waiting, void *after)
{
    sharc_status_t status = sharc_gpu_event_record(g->order_ev, after);

    return (status == SHARC_OK) ? sharc_gpu_stream_wait(waiting, g->order_ev) : status;
}

sharc_status_t sharc_shard_quiesce(sharc_shard_group_t *g)
{
    sharc_status_t status = SHARC_OK;

    /* the host's work on offloaded units (it writes masters, states and gradient shards) and
     * offload's copies: through the hook of its worker, which sits above this file */
    if (g->host_quiesce != NULL) {
        status = g->host_quiesce(g);
    }
    if (status == SHARC_OK && g->cuda) {
        status = sharc_gpu_stream_sync(g->estream);
        if (status == SHARC_OK) {
            status = sharc_gpu_stream_sync(g->stream);
        }
    }
    return status;
}

/* ---- unsharded buffers ------------------------------------------------------------------- */

/* A buffer's memory: shareable host memory, or device memory the CUDA backend is
 * fastest on (coll/: registered with it where it can; all or nothing across ranks). */
static sharc_status_t sharc_shard_buf_alloc(sharc_shard_group_t *g, sharc_shard_buf_t *b)
{
    b->mem = (sharc_coll_devmem_t){0};
    if (!g->cuda) {
        return sharc_mem_alloc(g->ctx, b->bytes, &b->mem.ptr);
    }
    return sharc_coll_devmem_alloc(g->shard_comm->coll, b->bytes, &b->mem);
}

static void sharc_shard_buf_release(sharc_shard_group_t *g, sharc_shard_buf_t *b)
{
    if (!g->cuda) {
        sharc_mem_free(g->ctx, b->mem.ptr);
        return;
    }
    sharc_coll_devmem_free(g->shard_comm->coll, &b->mem);
    sharc_gpu_event_destroy(b->free_ev);
}

/* CUDA: @p stream may write the pooled buffer without waiting for anything: its last users
 * ended on that stream, or they are done. */
static int sharc_shard_buf_ready(const sharc_shard_buf_t *b, void *stream)
{
    return b->free_ev == NULL || b->free_stream == stream ||
           sharc_gpu_event_query(b->free_ev) == SHARC_OK;
}

/*
 * The pooled buffer for @p bytes written first by @p stream, or NULL for a new one. A
 * buffer fits at up to twice the size (units of one model mostly share a size). The
 * engine's stream (which follows the caller's by then) may take any, and takes those it
 * gave back itself first, leaving the caller's stream the ones it gave back; the caller's
 * stream takes one that needs no wait, or, when pool_max fitting ones are pooled already,
 * the one given back longest ago, after waiting for it (counted as exposed). Smallest first.
 */
static sharc_shard_buf_t *sharc_shard_buf_pick(sharc_shard_group_t *g, size_t bytes, void *stream,
                                               sharc_status_t *status_p)
{
    sharc_shard_buf_t *best = NULL, *oldest = NULL;
    int best_rank = 0, nfit = 0;
    void *e0;

    for (int i = 0; i < g->nbufs; i++) {
        sharc_shard_buf_t *c = &g->bufs[i];
        int rank; /* lower is better; 0: not to be taken without a wait */

        if (!c->pooled || c->bytes < bytes || c->bytes > 2 * bytes) {
            continue;
        }
        nfit++;
        if (oldest == NULL || c->seq < oldest->seq) {
            oldest = c;
        }
        if (!g->cuda) {
            rank = 1;
        } else if (stream == g->estream) { /* it follows the caller's stream by then */
            rank = c->free_stream == g->estream                                        ? 1
                   : (c->free_stream == g->stream || sharc_shard_buf_ready(c, stream)) ? 2
                                                                                       : 0;
        } else {
            rank = sharc_shard_buf_ready(c, stream) ? 1 : 0;
        }
        if (rank > 0 &&
            (best == NULL || rank < best_rank || (rank == best_rank && c->bytes < best->bytes))) {
            best = c;
            best_rank = rank;
        }
    }
    if (best != NULL || oldest == NULL || nfit < g->pool_max) {
        return best;
    }
    e0 = sharc_shard_stats_mark(g, stream);
    *status_p = sharc_gpu_stream_wait(stream, oldest->free_ev);
    sharc_shard_stats_evspan(g, NULL, e0, sharc_shard_stats_mark(g, stream), 0);
    return oldest;
}

sharc_status_t sharc_shard_buf_get(sharc_shard_group_t *g, size_t bytes, void *stream, void **ptr_p)
{
    sharc_status_t status = SHARC_OK;
    sharc_shard_buf_t *b = sharc_shard_buf_pick(g, bytes, stream, &status), *bufs;

    if (status != SHARC_OK) {
        return status;
    }
    if (b == NULL) {
        bufs = realloc(g->bufs, sizeof(*bufs) * (size_t)(g->nbufs + 1));
        if (bufs == NULL) {
            return SHARC_ERR_NOMEM;
        }
        g->bufs = bufs;
        double t0 = sharc_time_now();

        b = &g->bufs[g->nbufs];
        memset(b, 0, sizeof(*b));
        b->bytes = bytes;
        status = sharc_shard_buf_alloc(g, b);
        if (status != SHARC_OK) {
            return status;
        }
        if (g->trace != NULL) {
            sharc_shard_trace_alloc(g, bytes, t0, sharc_time_now());
        }
        g->nbufs++;
    } else {
        b->pooled = 0;
        g->npooled--;
    }
    g->buf_peak = SHARC_MAX(g->buf_peak, g->nbufs - g->npooled);
    b->seq = ++g->buf_clock;
    *ptr_p = b->mem.ptr;
    return SHARC_OK;
}

/*
 * Host: free the pooled buffers beyond pool_max, those given back longest ago first, while
 * more buffers exist than the group ever had in use at once: buffers a later step needs
 * again stay (a new one costs an mmap and page faults on the caller's time, milliseconds
 * for a unit of 16 MiB; steps differ: one without compute between its calls keeps more
 * reductions in flight), and the pool never holds more than a step needed. (CUDA keeps its
 * buffers until the group goes: freeing device memory waits for the whole device, and the
 * pool is bounded by what a step holds at once plus pool_max per size.)
 */
static void sharc_shard_buf_trim(sharc_shard_group_t *g)
{
    while (g->npooled > g->pool_max && g->nbufs > g->buf_peak) {
        int oldest = -1;

        for (int i = 0; i < g->nbufs; i++) {
            if (g->bufs[i].pooled && (oldest < 0 || g->bufs[i].seq < g->bufs[oldest].seq)) {
                oldest = i;
            }
        }
        sharc_shard_buf_release(g, &g->bufs[oldest]);
        g->bufs[oldest] = g->bufs[--g->nbufs];
        g->npooled--;
    }
}

/* CUDA: the buffer's users end at this point of @p stream; b->free_ev marks it. */
static sharc_status_t sharc_shard_buf_mark_free(sharc_shard_buf_t *b, void *stream)
{
    sharc_status_t status = SHARC_OK;

    if (b->free_ev == NULL) {
        status = sharc_gpu_event_create(0, &b->free_ev);
    }
    b->free_stream = stream;
    return (status == SHARC_OK) ? sharc_gpu_event_record(b->free_ev, stream) : status;
}

void sharc_shard_buf_put(sharc_shard_group_t *g, void *ptr, void *stream)
{
    for (int i = 0; ptr != NULL && i < g->nbufs; i++) {
        sharc_shard_buf_t *b = &g->bufs[i];

        if (b->mem.ptr != ptr) {
            continue;
        }
        b->pooled = 1;
        b->seq = ++g->buf_clock;
        g->npooled++;
        if (g->cuda && sharc_shard_buf_mark_free(b, stream) != SHARC_OK) {
            sharc_shard_quiesce(g); /* cannot order it: everything is done instead */
            sharc_gpu_event_destroy(b->free_ev);
            b->free_ev = NULL;
        } else if (!g->cuda) {
            sharc_shard_buf_trim(g);
        }
        return;
    }
}

void sharc_shard_buf_free_all(sharc_shard_group_t *g)
{
    for (int i = 0; i < g->nbufs; i++) {
        sharc_shard_buf_release(g, &g->bufs[i]);
    }
    free(g->bufs);
    g->bufs = NULL;
    g->nbufs = g->npooled = 0;
}

void sharc_shard_grads_release(sharc_shard_group_t *g, sharc_shard_unit_t *u, void *stream)
{
    sharc_shard_buf_put(g, u->gbuf, stream);
    sharc_shard_stats_mem(g, u, -(long long)(u->padded * g->resize));
    u->gbuf = NULL;
    u->gstate = SHARC_SHARD_GRAD_NONE;
}
