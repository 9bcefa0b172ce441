/*
 * shard_mem.c: where a group's memory lives and how it is ordered. On the host: shareable
 * memory (sharc_mem_alloc) for what peers copy from, the heap for the rest. On CUDA: device
 * memory, unsharded buffers from the collective backend (ncclMemAlloc) and registered with
 * it where it can, and streams: the caller's (compute), the engine's (casts, zeroing,
 * accumulation, and the order in which buffers are reused). Unsharded buffers return to a
 * small pool; on CUDA a buffer is taken again only by work on the engine's stream, which by
 * then waits for everything that used it.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include <sharc/mem.h>

#include "../src/gpu.h"
#include "../src/log.h"
#include "shard.h"

/* ---- shards ---------------------------------------------------------------------------- */

sharc_status_t sharc_shard_alloc_shard(sharc_shard_group_t *g, size_t count, int shareable,
                                       float **ptr_p)
{
    size_t bytes = count * sizeof(float);
    void *p = NULL;
    sharc_status_t status;

    if (g->cuda) {
        status = sharc_gpu_alloc(bytes, &p);
        if (status == SHARC_OK && (status = sharc_gpu_memset(p, 0, bytes, NULL)) != SHARC_OK) {
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

    if (g->cuda) {
        status = sharc_gpu_stream_sync(g->estream);
        if (status == SHARC_OK) {
            status = sharc_gpu_stream_sync(g->stream);
        }
    }
    return status;
}

/* ---- unsharded buffers ------------------------------------------------------------------- */

/* Backend registration of a CUDA buffer, for zero-copy collectives; none where unsupported. */
static void sharc_shard_buf_register(sharc_shard_group_t *g, sharc_shard_buf_t *b)
{
    sharc_comm_h c = g->shard_comm;

    if (c->gpu_tp != NULL && c->gpu_ops->mem_reg != NULL &&
        c->gpu_ops->mem_reg(c->gpu_tp, b->ptr, b->bytes, SHARC_MEMTYPE_CUDA, &b->reg) != SHARC_OK) {
        b->reg = NULL;
    }
}

static sharc_status_t sharc_shard_buf_alloc(sharc_shard_group_t *g, sharc_shard_buf_t *b)
{
    sharc_comm_h c = g->shard_comm;

    if (!g->cuda) {
        return sharc_mem_alloc(g->ctx, b->bytes, &b->ptr);
    }
    if (c->gpu_tp != NULL && c->gpu_ops->mem_alloc != NULL &&
        c->gpu_ops->mem_alloc(c->gpu_tp, b->bytes, SHARC_MEMTYPE_CUDA, &b->ptr) == SHARC_OK) {
        b->backend = 1;
    } else if (sharc_gpu_alloc(b->bytes, &b->ptr) != SHARC_OK) {
        return SHARC_ERR_NOMEM;
    }
    sharc_shard_buf_register(g, b);
    return SHARC_OK;
}

static void sharc_shard_buf_release(sharc_shard_group_t *g, sharc_shard_buf_t *b)
{
    sharc_comm_h c = g->shard_comm;

    if (!g->cuda) {
        sharc_mem_free(g->ctx, b->ptr);
        return;
    }
    if (b->reg != NULL) {
        c->gpu_ops->mem_dereg(c->gpu_tp, b->reg);
    }
    if (b->backend) {
        c->gpu_ops->mem_free(c->gpu_tp, b->ptr);
    } else {
        sharc_gpu_free(b->ptr);
    }
}

sharc_status_t sharc_shard_buf_get(sharc_shard_group_t *g, size_t bytes, void **ptr_p)
{
    sharc_shard_buf_t *bufs, *b;
    sharc_status_t status;
    int best = -1;

    /* CUDA: whatever takes a buffer works on the engine's stream, which from here follows
     * the caller's: the buffer's last users there are done first */
    if (g->cuda && (status = sharc_shard_after(g, g->estream, g->stream)) != SHARC_OK) {
        return status;
    }
    /* a pooled buffer at most twice the size: units of one model mostly share a size */
    for (int i = 0; i < g->nbufs; i++) {
        b = &g->bufs[i];
        if (b->pooled && b->bytes >= bytes && b->bytes <= 2 * bytes &&
            (best < 0 || b->bytes < g->bufs[best].bytes)) {
            best = i;
        }
    }
    if (best >= 0) {
        g->bufs[best].pooled = 0;
        g->npooled--;
        *ptr_p = g->bufs[best].ptr;
        return SHARC_OK;
    }
    bufs = realloc(g->bufs, sizeof(*bufs) * (size_t)(g->nbufs + 1));
    if (bufs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    g->bufs = bufs;
    b = &g->bufs[g->nbufs];
    memset(b, 0, sizeof(*b));
    b->bytes = bytes;
    status = sharc_shard_buf_alloc(g, b);
    if (status != SHARC_OK) {
        return status;
    }
    b->seq = ++g->buf_clock;
    g->nbufs++;
    *ptr_p = b->ptr;
    return SHARC_OK;
}

/* Free the pooled buffer used longest ago. */
static void sharc_shard_buf_trim(sharc_shard_group_t *g)
{
    int oldest = -1;

    for (int i = 0; i < g->nbufs; i++) {
        if (g->bufs[i].pooled && (oldest < 0 || g->bufs[i].seq < g->bufs[oldest].seq)) {
            oldest = i;
        }
    }
    if (oldest < 0) {
        return;
    }
    sharc_shard_quiesce(g); /* CUDA: its last users may still be queued */
    sharc_shard_buf_release(g, &g->bufs[oldest]);
    g->bufs[oldest] = g->bufs[--g->nbufs];
    g->npooled--;
}

void sharc_shard_buf_put(sharc_shard_group_t *g, void *ptr)
{
    for (int i = 0; ptr != NULL && i < g->nbufs; i++) {
        if (g->bufs[i].ptr == ptr) {
            g->bufs[i].pooled = 1;
            g->bufs[i].seq = ++g->buf_clock;
            if (++g->npooled > g->pool_max) {
                sharc_shard_buf_trim(g);
            }
            return;
        }
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
