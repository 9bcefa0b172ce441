/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * thread.c: who drives a communicator's progress. By default its callers do (test, wait,
 * post); with SHARC_PROGRESS_THREAD a thread of its own runs the passes while tasks are
 * queued, so that collectives complete while the caller computes. Also the lock callers
 * take ahead of that thread. How a poller waits when a pass moved nothing is wait.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <sched.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "engine.h"

/* Whether a collective of @p cc's queue runs on the GPU (lock held). */
static int sharc_coll_gpu_queued(const sharc_coll_comm_t *cc)
{
    for (const sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
        if (sharc_coll_on_gpu(t)) {
            return 1;
        }
    }
    return 0;
}

/* What the thread's block waits for besides the transport: a post since its pass (@p arg),
 * or the end. */
typedef struct {
    sharc_coll_comm_t *cc;
    unsigned kicks; /* cc->kicks when the pass began */
} sharc_coll_thread_wait_t;

static int sharc_coll_thread_ready(void *arg)
{
    const sharc_coll_thread_wait_t *w = arg;

    return __atomic_load_n(&w->cc->kicks, __ATOMIC_ACQUIRE) != w->kicks ||
           __atomic_load_n(&w->cc->stop, __ATOMIC_ACQUIRE);
}

/*
 * SHARC_PROGRESS_THREAD: progress the queue while it holds tasks, so that collectives
 * complete while the caller computes; sleep on the condition variable while it is empty.
 */
static void *sharc_coll_thread(void *arg)
{
    sharc_coll_comm_t *cc = arg;
    struct sched_param batch = {0};
    sharc_coll_idle_t idle = {0};
    sharc_coll_thread_wait_t wait = {.cc = cc};
    int moved, gpu;

    /* SCHED_BATCH: the same share of the cores, but waking up (a post signals it) does not
     * preempt the thread that is running. The caller that posts goes on at once instead of
     * losing its core to the copies it asked for; the thread runs on a free core, or when
     * the caller sleeps or blocks. (Unprivileged; where refused, the default policy.) */
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);

    pthread_mutex_lock(&cc->lock);
    while (!cc->stop) {
        if (cc->head == NULL) {
            pthread_cond_wait(&cc->cond, &cc->lock);
            idle = (sharc_coll_idle_t){0};
            continue;
        }
        wait.kicks = __atomic_load_n(&cc->kicks, __ATOMIC_ACQUIRE); /* (posts kick locked) */
        moved = sharc_coll_progress(cc);
        gpu = !moved && sharc_coll_gpu_queued(cc); /* (only an idle pass pauses) */
        pthread_mutex_unlock(&cc->lock);
        sharc_coll_idle(cc, &idle, moved, gpu, sharc_coll_thread_ready, &wait);
        /* A mutex is not fair: relocking at once would starve a caller that waits to post
         * or test, for as long as there is work. Callers first. */
        while (__atomic_load_n(&cc->waiters, __ATOMIC_ACQUIRE) > 0 &&
               !__atomic_load_n(&cc->stop, __ATOMIC_ACQUIRE)) {
            sched_yield();
        }
        pthread_mutex_lock(&cc->lock);
    }
    pthread_mutex_unlock(&cc->lock);
    return NULL;
}

sharc_status_t sharc_coll_driver_start(sharc_coll_comm_t *cc)
{
    int ret;

    cc->driver = SHARC_COLL_DRIVER_CALLER;
    if (!cc->cfg->progress_thread) {
        return SHARC_OK;
    }
    ret = pthread_create(&cc->thread, NULL, sharc_coll_thread, cc);
    if (ret != 0) {
        errno = ret;
        sharc_error("cannot start the progress thread (SHARC_PROGRESS_THREAD): %m");
        return SHARC_ERR_NOMEM;
    }
    cc->driver = SHARC_COLL_DRIVER_THREAD;
    return SHARC_OK;
}

void sharc_coll_driver_stop(sharc_coll_comm_t *cc)
{
    if (cc->driver != SHARC_COLL_DRIVER_THREAD) {
        return;
    }
    sharc_coll_lock(cc);
    __atomic_store_n(&cc->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&cc->cond);
    sharc_coll_unlock(cc);
    sharc_coll_wake(cc); /* (it may block on the transport) */
    pthread_join(cc->thread, NULL);
    cc->driver = SHARC_COLL_DRIVER_CALLER;
}

void sharc_coll_driver_kick(sharc_coll_comm_t *cc)
{
    if (cc->driver == SHARC_COLL_DRIVER_THREAD) {
        __atomic_add_fetch(&cc->kicks, 1, __ATOMIC_RELEASE);
        pthread_cond_signal(&cc->cond); /* the queue was empty */
        sharc_coll_wake(cc);            /* it blocks on the transport */
    }
}

void sharc_coll_lock(sharc_coll_comm_t *cc)
{
    __atomic_add_fetch(&cc->waiters, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&cc->lock);
    __atomic_sub_fetch(&cc->waiters, 1, __ATOMIC_ACQ_REL);
}

void sharc_coll_unlock(sharc_coll_comm_t *cc)
{
    pthread_mutex_unlock(&cc->lock);
}
