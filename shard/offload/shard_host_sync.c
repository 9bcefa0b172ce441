/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_host_sync.c: the caller's side of the host worker (shard_host.c): starting and
 * stopping it with its pool and page-locked slots, queueing tasks, waiting for a unit's
 * tasks, for every landing, or for a download slot (bounded by the collective timeout, the
 * time counted as exposed), and cancelling everything when the group fails. While the worker
 * runs, the group's host_abort and host_quiesce hooks point here: failing and quiescing the
 * group are the engine's, below offload, and reach the worker only through them.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/offload/shard_host.h"
#include "shard/trace/shard_record.h"

/* Slots for the downloads (and, for 16-bit parameters, the uploads), page-locked. */
static sharc_status_t sharc_shard_host_slots(sharc_shard_group_t *g, sharc_shard_host_t *h)
{
    size_t max = g->off->max_shard, esize = SHARC_MAX(g->resize, g->pesize);
    int pinned = 0;
    sharc_status_t status = SHARC_OK;

    for (int i = 0; i < g->nunits; i++) {
        pinned |= sharc_shard_pinned_unit(g, &g->units[i]);
    }
    for (int i = 0; pinned && status == SHARC_OK && i < SHARC_SHARD_DOWN_SLOTS; i++) {
        status = sharc_gpu_host_alloc(max * esize, &h->down[i]);
    }
    for (int i = 0;
         pinned && g->pdtype != SHARC_DTYPE_F32 && status == SHARC_OK && i < SHARC_SHARD_UP_SLOTS;
         i++) {
        status = sharc_gpu_host_alloc(max * g->pesize, &h->up[i]);
        if (status == SHARC_OK) {
            status = sharc_gpu_event_create(0, &h->up_ev[i]);
        }
    }
    return status;
}

/* Drop what is queued and wait for what runs (the group failed): nothing is left in flight.
 * The group's host_abort hook while the worker runs. */
static void sharc_shard_host_abort(sharc_shard_group_t *g)
{
    sharc_shard_host_t *h = (g->off != NULL) ? g->off->host : NULL;
    sharc_shard_task_t t;

    if (h == NULL) {
        return;
    }
    pthread_mutex_lock(&h->lock);
    atomic_store(&h->cancel, 1);
    while (sharc_shard_fifo_pop(&h->land, &t) || sharc_shard_fifo_pop(&h->rest, &t)) {
        g->off->units[t.unit].pending--;
        if (t.slot >= 0 && (t.what & SHARC_SHARD_TASK_LAND)) {
            h->down_busy[t.slot] = 0;
        }
    }
    while (h->running > 0) { /* a task's loops end soon: they look at cancel between slices */
        pthread_cond_wait(&h->done, &h->lock);
    }
    pthread_mutex_unlock(&h->lock);
}

/* The group's host_quiesce hook while the worker runs: its work done (it writes masters,
 * states and gradient shards), then offload's copy streams (uploads read masters, downloads
 * read gradient buffers). */
static sharc_status_t sharc_shard_host_quiesce(sharc_shard_group_t *g)
{
    sharc_status_t status = sharc_shard_host_wait(g, NULL, SHARC_COLL_REDUCE_SCATTER);

    if (status == SHARC_OK && g->off->up != NULL) {
        status = sharc_gpu_stream_sync(g->off->up);
    }
    if (status == SHARC_OK && g->off->down != NULL) {
        status = sharc_gpu_stream_sync(g->off->down);
    }
    return status;
}

sharc_status_t sharc_shard_host_start(sharc_shard_group_t *g)
{
    sharc_shard_host_t *h;
    sharc_status_t status;
    int ret;

    if (g->off->host != NULL) {
        return SHARC_OK;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return SHARC_ERR_NOMEM;
    }
    g->off->host = h;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->work, NULL);
    pthread_cond_init(&h->done, NULL);
    status = sharc_shard_pool_create(g->off->threads, &h->pool);
    if (status == SHARC_OK) {
        status = sharc_shard_host_slots(g, h);
    }
    if (status == SHARC_OK && (ret = pthread_create(&h->thread, NULL, sharc_shard_host_main, g))) {
        sharc_error("cannot start the sharding engine's host worker: %s", strerror(ret));
        status = SHARC_ERR_NOMEM;
    }
    h->started = status == SHARC_OK;
    if (status == SHARC_OK) { /* failing or quiescing the group reaches the worker now */
        g->host_abort = sharc_shard_host_abort;
        g->host_quiesce = sharc_shard_host_quiesce;
    } else {
        sharc_error("the host side of offload could not be set up (%s)",
                    sharc_status_string(status));
        sharc_shard_host_stop(g);
    }
    return status;
}

void sharc_shard_host_stop(sharc_shard_group_t *g)
{
    sharc_shard_host_t *h = (g->off != NULL) ? g->off->host : NULL;

    if (h == NULL) {
        return;
    }
    g->host_abort = NULL;
    g->host_quiesce = NULL;
    if (h->started) {
        sharc_shard_host_abort(g);
        pthread_mutex_lock(&h->lock);
        h->stop = 1;
        pthread_cond_broadcast(&h->work);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->thread, NULL);
    }
    sharc_shard_pool_destroy(h->pool);
    for (int i = 0; i < SHARC_SHARD_DOWN_SLOTS; i++) {
        sharc_gpu_host_free(h->down[i]);
    }
    for (int i = 0; i < SHARC_SHARD_UP_SLOTS; i++) {
        if (h->up_ev[i] != NULL) {
            sharc_gpu_event_query(h->up_ev[i]); /* (the streams were synchronized: done) */
            sharc_gpu_event_destroy(h->up_ev[i]);
        }
        sharc_gpu_host_free(h->up[i]);
    }
    free(h->land.t);
    free(h->rest.t);
    pthread_cond_destroy(&h->done);
    pthread_cond_destroy(&h->work);
    pthread_mutex_destroy(&h->lock);
    free(h);
    g->off->host = NULL;
}

sharc_status_t sharc_shard_host_queue(sharc_shard_group_t *g, const sharc_shard_task_t *t)
{
    sharc_shard_host_t *h = g->off->host;
    sharc_shard_fifo_t *q;
    int ret;

    pthread_mutex_lock(&h->lock);
    if (atomic_load(&h->cancel)) {
        pthread_mutex_unlock(&h->lock);
        return g->failed != SHARC_OK ? g->failed : SHARC_ERR_REMOTE;
    }
    q = (t->what & (SHARC_SHARD_TASK_LAND | SHARC_SHARD_TASK_SUMSQ)) ? &h->land : &h->rest;
    ret = sharc_shard_fifo_push(q, t);
    if (ret == 0) {
        g->off->units[t->unit].pending++;
        pthread_cond_signal(&h->work);
    }
    pthread_mutex_unlock(&h->lock);
    return ret == 0 ? SHARC_OK : SHARC_ERR_NOMEM;
}

/* Wait on the done condition until @p ready, bounded by the collective timeout (the lock is
 * held). */
static sharc_status_t sharc_shard_host_until(sharc_shard_group_t *g, int (*ready)(void *),
                                             void *arg, const char *what)
{
    sharc_shard_host_t *h = g->off->host;
    double limit = sharc_coll_cfg(g->ctx->cfg)->timeout, t0 = sharc_time_now();
    struct timespec ts;

    while (!ready(arg) && h->failed == SHARC_OK && !atomic_load(&h->cancel)) {
        double left = t0 + limit - sharc_time_now();

        if (left <= 0) {
            sharc_error("%s: the host's work did not finish within SHARC_TIMEOUT (%.0f s)", what,
                        limit);
            return SHARC_ERR_TIMEOUT;
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1; /* re-check the time at least every second */
        pthread_cond_timedwait(&h->done, &h->lock, &ts);
    }
    if (h->failed != SHARC_OK) {
        return h->failed;
    }
    return atomic_load(&h->cancel) ? SHARC_ERR_REMOTE : SHARC_OK;
}

typedef struct {
    sharc_shard_group_t *g;
    const sharc_shard_unit_t *u;
} sharc_shard_host_q_t;

static int sharc_shard_host_idle(void *arg)
{
    sharc_shard_host_q_t *q = arg;

    if (q->u != NULL) {
        return q->g->off->units[q->u->id].pending == 0;
    }
    for (int i = 0; i < q->g->nunits; i++) {
        if (q->g->off->units[i].pending > 0) {
            return 0;
        }
    }
    return 1;
}

sharc_status_t sharc_shard_host_wait(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                     sharc_coll_type_t type)
{
    sharc_shard_host_t *h = (g->off != NULL) ? g->off->host : NULL;
    sharc_shard_host_q_t q = {g, u};
    double t0 = sharc_time_now();
    sharc_status_t status;
    int waited;

    if (h == NULL) {
        return SHARC_OK;
    }
    pthread_mutex_lock(&h->lock);
    waited = !sharc_shard_host_idle(&q);
    status = sharc_shard_host_until(g, sharc_shard_host_idle, &q, "waiting for a unit's update");
    pthread_mutex_unlock(&h->lock);
    if (waited) {
        sharc_shard_stats_exposed(g, u, type, t0);
    }
    return status;
}

static int sharc_shard_host_landed(void *arg)
{
    sharc_shard_group_t *g = arg;

    for (int i = 0; i < g->nunits; i++) {
        if (sharc_shard_host_unit(g, &g->units[i]) && !g->off->units[i].landed) {
            return 0;
        }
    }
    return 1;
}

sharc_status_t sharc_shard_host_wait_landed(sharc_shard_group_t *g)
{
    sharc_shard_host_t *h = g->off->host;
    double t0 = sharc_time_now();
    sharc_status_t status;

    pthread_mutex_lock(&h->lock);
    status = sharc_shard_host_until(g, sharc_shard_host_landed, g, "the gradients' norm");
    pthread_mutex_unlock(&h->lock);
    sharc_shard_stats_exposed(g, NULL, SHARC_COLL_REDUCE_SCATTER, t0);
    return status;
}

static int sharc_shard_host_slot_free(void *arg)
{
    sharc_shard_host_t *h = arg;

    for (int i = 0; i < SHARC_SHARD_DOWN_SLOTS; i++) {
        if (!h->down_busy[i]) {
            return 1;
        }
    }
    return 0;
}

sharc_status_t sharc_shard_host_slot(sharc_shard_group_t *g, int *slot_p, void **ptr_p)
{
    sharc_shard_host_t *h = g->off->host;
    double t0 = sharc_time_now();
    sharc_status_t status;

    pthread_mutex_lock(&h->lock);
    status = sharc_shard_host_until(g, sharc_shard_host_slot_free, h, "a download slot");
    for (int i = 0; status == SHARC_OK && i < SHARC_SHARD_DOWN_SLOTS; i++) {
        if (!h->down_busy[i]) {
            h->down_busy[i] = 1;
            *slot_p = i;
            *ptr_p = h->down[i];
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    sharc_shard_stats_exposed(g, NULL, SHARC_COLL_REDUCE_SCATTER, t0);
    return status;
}

void sharc_shard_host_slot_put(sharc_shard_group_t *g, int slot)
{
    sharc_shard_host_t *h = g->off->host;

    pthread_mutex_lock(&h->lock);
    h->down_busy[slot] = 0;
    pthread_cond_broadcast(&h->done);
    pthread_mutex_unlock(&h->lock);
}

size_t sharc_shard_host_slot_bytes(const sharc_shard_group_t *g)
{
    const sharc_shard_host_t *h = (g->off != NULL) ? g->off->host : NULL;
    size_t n = 0;

    for (int i = 0; h != NULL && i < SHARC_SHARD_DOWN_SLOTS; i++) {
        n += h->down[i] != NULL ? g->off->max_shard * SHARC_MAX(g->resize, g->pesize) : 0;
    }
    for (int i = 0; h != NULL && i < SHARC_SHARD_UP_SLOTS; i++) {
        n += h->up[i] != NULL ? g->off->max_shard * g->pesize : 0;
    }
    return n;
}
