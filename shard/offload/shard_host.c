/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_host.c: the host's worker, which does the CPU's part of a step for host units: a
 * thread of the group that takes tasks in order (a unit's reduced gradient landing in its
 * shard, its sum of squares, then what the task's run function does: AdamW's update,
 * shard_adamw.c, and the upload of its new parameters, here) and runs their loops on a pool
 * of threads (shard_pool.c). Landings go first: an update is run in slices, with the landings
 * queued meanwhile run between them, so that download slots come back soon and the caller's
 * thread, which posts the downloads, rarely waits for one. The group's own state stays its
 * caller's: the worker reads a unit's shards and writes only them, its offload state's
 * landed/sumsq and the events of its copies. Waits are bounded by the collective timeout; a
 * failure of the group cancels what is queued (the host_abort hook, shard_host_sync.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/offload/shard_host.h"

/* ---- queues -------------------------------------------------------------------------------- */

int sharc_shard_fifo_push(sharc_shard_fifo_t *q, const sharc_shard_task_t *t)
{
    if (q->head > 0 && q->head + q->n == q->cap) { /* reuse the front */
        memmove(q->t, q->t + q->head, q->n * sizeof(*q->t));
        q->head = 0;
    }
    if (sharc_array_grow(&q->t, &q->cap, q->head + q->n, sizeof(*q->t), 16) != 0) {
        return -1;
    }
    q->t[q->head + q->n++] = *t;
    return 0;
}

int sharc_shard_fifo_pop(sharc_shard_fifo_t *q, sharc_shard_task_t *t)
{
    if (q->n == 0) {
        return 0;
    }
    *t = q->t[q->head++];
    if (--q->n == 0) {
        q->head = 0;
    }
    return 1;
}

/* ---- the worker's pieces -------------------------------------------------------------------- */

sharc_status_t sharc_shard_host_event(sharc_shard_host_t *h, void *ev)
{
    for (unsigned spins = 0;; spins++) {
        sharc_status_t status = sharc_gpu_event_query(ev);

        if (status != SHARC_INPROGRESS) {
            return status;
        }
        if (atomic_load(&h->cancel)) {
            return SHARC_ERR_REMOTE;
        }
        if (spins < 64) {
            sched_yield();
        } else {
            nanosleep(&(struct timespec){.tv_nsec = 20000}, NULL);
        }
    }
}

typedef struct {
    sharc_shard_group_t *g;
    float *grad;
    const char *part; /* the slot: the reduced part in the reduce dtype */
    int overwrite;
    double scale;
    double *sums; /* SUMSQ: one per chunk */
} sharc_shard_land_arg_t;

/* grad = (overwrite ? 0 : grad) + f32(part) * scale, as the device's accumulation computes
 * it (cast, scale, add: each rounded once), a block at a time through a buffer on the stack */
static void sharc_shard_land_chunk(void *arg, size_t chunk, size_t lo, size_t hi)
{
    sharc_shard_land_arg_t *a = arg;
    const sharc_kern_ops_t *k = &sharc_kern_cpu_ops;
    float buf[4096];

    (void)chunk;
    for (size_t b = lo; b < hi; b += 4096) {
        size_t n = (hi - b < 4096) ? hi - b : 4096;
        float *f32 = a->overwrite ? a->grad + b : buf;

        k->cast(f32, SHARC_DTYPE_F32, a->part + b * a->g->resize, a->g->rdtype, n, NULL);
        if (a->scale != 1.0) {
            k->scale(f32, n, SHARC_DTYPE_F32, a->scale, NULL);
        }
        if (!a->overwrite) {
            k->reduce(a->grad + b, a->grad + b, buf, n, SHARC_DTYPE_F32, SHARC_OP_SUM, NULL);
        }
    }
}

static void sharc_shard_sumsq_chunk(void *arg, size_t chunk, size_t lo, size_t hi)
{
    sharc_shard_land_arg_t *a = arg;

    a->sums[chunk] = 0.0;
    sharc_kern_cpu_ops.sumsq(&a->sums[chunk], a->grad + lo, hi - lo, NULL);
}

/* The unit's gradient sum of squares, chunk by chunk and added in order (the same bits for
 * any thread count). */
static sharc_status_t sharc_shard_host_sumsq(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                             double *sum_p)
{
    size_t nchunks = (u->shard + SHARC_SHARD_GRAIN - 1) / SHARC_SHARD_GRAIN;
    sharc_shard_land_arg_t a = {.g = g, .grad = u->grad};
    double total = 0.0;

    a.sums = calloc(nchunks > 0 ? nchunks : 1, sizeof(*a.sums));
    if (a.sums == NULL) {
        return SHARC_ERR_NOMEM;
    }
    sharc_shard_host_for(g, u->shard, SHARC_SHARD_GRAIN, sharc_shard_sumsq_chunk, &a);
    for (size_t c = 0; c < nchunks; c++) {
        total += a.sums[c];
    }
    free(a.sums);
    *sum_p = total;
    return SHARC_OK;
}

/* A task's landing and sum of squares (the part landings run first). */
static sharc_status_t sharc_shard_host_land(sharc_shard_group_t *g, const sharc_shard_task_t *t)
{
    sharc_shard_host_t *h = g->off->host;
    sharc_shard_unit_t *u = &g->units[t->unit];
    sharc_shard_ounit_t *ou = &g->off->units[t->unit];
    sharc_status_t status = SHARC_OK;
    double sum = 0.0;

    if ((t->what & SHARC_SHARD_TASK_LAND) && ou->land_ev != NULL) {
        status = sharc_shard_host_event(h, ou->land_ev);
    }
    if (status == SHARC_OK && (t->what & SHARC_SHARD_TASK_LAND) && t->slot >= 0) {
        sharc_shard_land_arg_t a = {.g = g,
                                    .grad = u->grad,
                                    .part = h->down[t->slot],
                                    .overwrite = t->overwrite,
                                    .scale = t->scale};

        sharc_shard_host_for(g, u->shard, SHARC_SHARD_GRAIN, sharc_shard_land_chunk, &a);
    }
    if (t->slot >= 0) { /* the slot comes back whatever happened */
        pthread_mutex_lock(&h->lock);
        h->down_busy[t->slot] = 0;
        pthread_cond_broadcast(&h->done);
        pthread_mutex_unlock(&h->lock);
    }
    if (status == SHARC_OK && (t->what & SHARC_SHARD_TASK_SUMSQ)) {
        status = sharc_shard_host_sumsq(g, u, &sum);
        pthread_mutex_lock(&h->lock);
        ou->sumsq = sum;
        ou->landed = 1;
        pthread_mutex_unlock(&h->lock);
    }
    return status;
}

int sharc_shard_host_cancelled(sharc_shard_group_t *g)
{
    return atomic_load(&g->off->host->cancel);
}

void (*sharc_shard_host_ended_hook)(void);

/* A task is over: its unit's count goes down, the worker is no longer inside it, and the first
 * error stays, all in one critical section: a caller woken by the unit's count sees no task
 * running (leaving `running` in a later critical section let it see the task still there). */
static void sharc_shard_host_end(sharc_shard_group_t *g, const sharc_shard_task_t *t,
                                 sharc_status_t status)
{
    sharc_shard_host_t *h = g->off->host;

    pthread_mutex_lock(&h->lock);
    g->off->units[t->unit].pending--;
    h->running--;
    if (status != SHARC_OK && h->failed == SHARC_OK) {
        h->failed = status;
    }
    pthread_cond_broadcast(&h->done);
    pthread_mutex_unlock(&h->lock);
    if (sharc_shard_host_ended_hook != NULL) {
        sharc_shard_host_ended_hook();
    }
}

/* Run the landings queued now; what remains of each task (its update) goes to the rest. A task
 * counts as running from the critical section that takes it off a queue to the one that ends it
 * or puts it back, so that pending == queued + running for every unit at every unlock. */
static void sharc_shard_host_lands(sharc_shard_group_t *g)
{
    sharc_shard_host_t *h = g->off->host;
    sharc_shard_task_t t;

    if (h->in_lands) {
        return;
    }
    h->in_lands = 1;
    pthread_mutex_lock(&h->lock);
    while (!atomic_load(&h->cancel) && sharc_shard_fifo_pop(&h->land, &t)) {
        sharc_status_t status;

        h->running++;
        pthread_mutex_unlock(&h->lock);
        status = sharc_shard_host_land(g, &t);
        t.what &= ~(unsigned)(SHARC_SHARD_TASK_LAND | SHARC_SHARD_TASK_SUMSQ);
        pthread_mutex_lock(&h->lock);
        if (status == SHARC_OK && t.what != 0 && sharc_shard_fifo_push(&h->rest, &t) == 0) {
            h->running--; /* still pending, queued again: its update follows */
            continue;
        }
        pthread_mutex_unlock(&h->lock);
        sharc_shard_host_end(g, &t, (status == SHARC_OK && t.what != 0) ? SHARC_ERR_NOMEM : status);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    h->in_lands = 0;
}

void sharc_shard_host_for(sharc_shard_group_t *g, size_t n, size_t grain, sharc_shard_chunk_fn_t fn,
                          void *arg)
{
    sharc_shard_host_lands(g); /* landings first: their slots come back */
    sharc_shard_pool_for(g->off->host->pool, n, grain, fn, arg);
}

/* ---- the upload ---------------------------------------------------------------------------- */

/* The next upload slot, once its last copy is done, and its event. */
static sharc_status_t sharc_shard_host_up_slot(sharc_shard_host_t *h, void **ptr_p, void **ev_p)
{
    int i = h->up_next;
    sharc_status_t status = sharc_shard_host_event(h, h->up_ev[i]); /* its last copy is done */

    if (status == SHARC_OK) {
        h->up_next = (i + 1) % SHARC_SHARD_UP_SLOTS;
        *ptr_p = h->up[i];
        *ev_p = h->up_ev[i];
    }
    return status;
}

typedef struct {
    sharc_shard_group_t *g;
    char *dst;
    const float *src;
} sharc_shard_cast_arg_t;

static void sharc_shard_cast_chunk(void *arg, size_t chunk, size_t lo, size_t hi)
{
    sharc_shard_cast_arg_t *a = arg;

    (void)chunk;
    sharc_kern_cpu_ops.cast(a->dst + lo * a->g->pesize, a->g->pdtype, a->src + lo, SHARC_DTYPE_F32,
                            hi - lo, NULL);
}

sharc_status_t sharc_shard_task_upload(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                       const sharc_shard_task_t *t)
{
    sharc_shard_off_t *off = g->off;
    sharc_shard_ounit_t *ou = &off->units[u->id];
    const void *src = u->master; /* f32 parameters go up straight from the page-locked master */
    void *slot = NULL, *slot_ev = NULL;
    sharc_status_t status = SHARC_OK;

    (void)t;
    if (g->pdtype != SHARC_DTYPE_F32) { /* cast on the host: half the bytes cross the link */
        sharc_shard_cast_arg_t a = {.g = g, .src = u->master};

        status = sharc_shard_host_up_slot(g->off->host, &slot, &slot_ev);
        if (status != SHARC_OK) {
            return status;
        }
        a.dst = slot;
        sharc_shard_host_for(g, u->shard, 64u << 10, sharc_shard_cast_chunk, &a);
        src = slot;
    }
    status = sharc_gpu_copy(ou->dparam, src, u->shard * g->pesize, off->up);
    if (status == SHARC_OK) {
        status = sharc_gpu_event_record(ou->up_ev, off->up);
    }
    if (status == SHARC_OK && slot_ev != NULL) { /* the slot is free again after the copy */
        status = sharc_gpu_event_record(slot_ev, off->up);
    }
    return status;
}

/* ---- the loop ------------------------------------------------------------------------------ */

void *sharc_shard_host_main(void *arg)
{
    sharc_shard_group_t *g = arg;
    sharc_shard_host_t *h = g->off->host;
    sharc_shard_task_t t;

    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->stop && h->land.n == 0 && h->rest.n == 0) {
            pthread_cond_wait(&h->work, &h->lock);
        }
        if (h->stop) {
            break;
        }
        if (h->land.n > 0) {
            pthread_mutex_unlock(&h->lock);
            sharc_shard_host_lands(g);
        } else if (sharc_shard_fifo_pop(&h->rest, &t)) {
            sharc_status_t status = SHARC_OK;
            sharc_shard_unit_t *u = &g->units[t.unit];

            h->running++;
            pthread_mutex_unlock(&h->lock);
            if (!atomic_load(&h->cancel) && t.run != NULL) { /* its update, its upload */
                status = t.run(g, u, &t);
            }
            sharc_shard_host_end(g, &t, status);
        } else {
            pthread_mutex_unlock(&h->lock);
        }
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}
