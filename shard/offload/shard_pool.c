/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_pool.c: the threads the host's work on offloaded shards runs on: a parallel loop over
 * chunks of a range, run by its caller (the host worker's thread) and the pool's helpers,
 * which sleep between loops. Chunks are handed out in order from a shared counter; a loop
 * returns once every chunk is done. What a chunk computes never depends on which thread runs
 * it, so results do not depend on the thread count.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "shard/offload/offload.h"

struct sharc_shard_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake, idle; /* helpers: a loop began or the pool stops; caller: all done */
    pthread_t *helpers;
    int nhelpers, stop;
    uint64_t loop; /* the loop number helpers last saw */
    /* the loop in progress */
    sharc_shard_chunk_fn_t fn;
    void *arg;
    size_t n, grain, nchunks;
    atomic_size_t next; /* the next chunk to take */
    int busy;           /* helpers inside the loop */
};

/* Take chunks of the current loop until none is left. */
static void sharc_shard_pool_work(sharc_shard_pool_t *p)
{
    for (;;) {
        size_t c = atomic_fetch_add(&p->next, 1);
        size_t lo, hi;

        if (c >= p->nchunks) {
            return;
        }
        lo = c * p->grain;
        hi = (lo + p->grain < p->n) ? lo + p->grain : p->n;
        p->fn(p->arg, c, lo, hi);
    }
}

static void *sharc_shard_pool_main(void *arg)
{
    sharc_shard_pool_t *p = arg;
    uint64_t seen = 0;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->loop == seen) {
            pthread_cond_wait(&p->wake, &p->lock);
        }
        if (p->stop) {
            break;
        }
        seen = p->loop;
        /* a loop whose chunks are all taken is over for the helpers: joining it late would
         * race its caller, who may be starting the next one */
        if (atomic_load(&p->next) >= p->nchunks) {
            continue;
        }
        p->busy++;
        pthread_mutex_unlock(&p->lock);
        sharc_shard_pool_work(p);
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0) {
            pthread_cond_broadcast(&p->idle);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

sharc_status_t sharc_shard_pool_create(int nthreads, sharc_shard_pool_t **pool_p)
{
    sharc_shard_pool_t *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return SHARC_ERR_NOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    p->helpers = calloc((size_t)(nthreads > 1 ? nthreads - 1 : 1), sizeof(*p->helpers));
    if (p->helpers == NULL) {
        sharc_shard_pool_destroy(p);
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < nthreads - 1; i++) {
        int ret = pthread_create(&p->helpers[i], NULL, sharc_shard_pool_main, p);

        if (ret != 0) {
            sharc_error("cannot start the offload's thread %d of %d: %s", i + 2, nthreads,
                        strerror(ret));
            sharc_shard_pool_destroy(p);
            return SHARC_ERR_NOMEM;
        }
        p->nhelpers++;
    }
    *pool_p = p;
    return SHARC_OK;
}

void sharc_shard_pool_destroy(sharc_shard_pool_t *p)
{
    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nhelpers; i++) {
        pthread_join(p->helpers[i], NULL);
    }
    free(p->helpers);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void sharc_shard_pool_for(sharc_shard_pool_t *p, size_t n, size_t grain, sharc_shard_chunk_fn_t fn,
                          void *arg)
{
    size_t nchunks = (n + grain - 1) / grain;

    if (nchunks == 0) {
        return;
    }
    if (nchunks == 1 || p->nhelpers == 0) { /* nothing to share */
        for (size_t c = 0; c < nchunks; c++) {
            fn(arg, c, c * grain, (c + 1) * grain < n ? (c + 1) * grain : n);
        }
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->grain = grain;
    p->nchunks = nchunks;
    atomic_store(&p->next, 0);
    p->loop++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    sharc_shard_pool_work(p);
    /* every chunk is taken; wait for the helpers still inside this loop (a helper that wakes
     * late finds no chunk and leaves at once) */
    pthread_mutex_lock(&p->lock);
    while (p->busy > 0) {
        pthread_cond_wait(&p->idle, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
}
