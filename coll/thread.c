/*
 * thread.c: who drives a communicator's progress. By default its callers do (test, wait,
 * post); with SHARC_PROGRESS_THREAD a thread of its own runs the passes while tasks are
 * queued, so that collectives complete while the caller computes. Also the lock callers
 * take ahead of that thread, and the pause of a poller whose pass moved nothing.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <sched.h>
#include <time.h>

#include "../src/base/log.h"
#include "../src/base/util.h"
#include "coll.h"

/*
 * A poller's pause when a pass moved nothing: a few yields, then sleeps that grow to
 * SHARC_COLL_IDLE_MAX_US. Ranks often outnumber cores (and the progress thread doubles the
 * pollers); a poller that spins on nothing takes the core from the thread that has work:
 * the caller computing, or the peer it waits for.
 */
#define SHARC_COLL_IDLE_SPINS  32
#define SHARC_COLL_IDLE_MAX_US 200
/* Work on the GPU (NCCL, staging copies) finishes on its own, without this process: polling
 * its events takes no peer's core, and a sleep only adds to its latency (a short nanosleep
 * lasts the timer slack, 50 us, more: seen as +35-50 us on 64 MiB NCCL all-gathers). So the
 * pollers of GPU work yield for longer (about a millisecond), then sleep briefly. */
#define SHARC_COLL_IDLE_GPU_US    10
#define SHARC_COLL_IDLE_GPU_SPINS 2048

void sharc_coll_idle(int moved, int *idle, int gpu)
{
    if (moved) {
        *idle = 0;
        return;
    }
    if (++*idle <= (gpu ? SHARC_COLL_IDLE_GPU_SPINS : SHARC_COLL_IDLE_SPINS)) {
        sched_yield();
    } else {
        int shift = SHARC_MIN(*idle - SHARC_COLL_IDLE_SPINS, 5);
        int max_us = gpu ? SHARC_COLL_IDLE_GPU_US : SHARC_COLL_IDLE_MAX_US;
        struct timespec ts = {0, 1000L * SHARC_MIN(max_us, 10 << shift)};

        nanosleep(&ts, NULL);
    }
}

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

/*
 * SHARC_PROGRESS_THREAD: progress the queue while it holds tasks, so that collectives
 * complete while the caller computes; sleep on the condition variable while it is empty.
 */
static void *sharc_coll_thread(void *arg)
{
    sharc_coll_comm_t *cc = arg;
    struct sched_param batch = {0};
    int idle = 0, moved, gpu;

    /* SCHED_BATCH: the same share of the cores, but waking up (a post signals it) does not
     * preempt the thread that is running. The caller that posts goes on at once instead of
     * losing its core to the copies it asked for; the thread runs on a free core, or when
     * the caller sleeps or blocks. (Unprivileged; where refused, the default policy.) */
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);

    pthread_mutex_lock(&cc->lock);
    while (!cc->stop) {
        if (cc->head == NULL) {
            pthread_cond_wait(&cc->cond, &cc->lock);
            idle = 0;
            continue;
        }
        moved = sharc_coll_progress(cc);
        gpu = !moved && sharc_coll_gpu_queued(cc); /* (only an idle pass pauses) */
        pthread_mutex_unlock(&cc->lock);
        sharc_coll_idle(moved, &idle, gpu);
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
    cc->stop = 1;
    pthread_cond_signal(&cc->cond);
    sharc_coll_unlock(cc);
    pthread_join(cc->thread, NULL);
    cc->driver = SHARC_COLL_DRIVER_CALLER;
}

void sharc_coll_driver_kick(sharc_coll_comm_t *cc)
{
    if (cc->driver == SHARC_COLL_DRIVER_THREAD) {
        pthread_cond_signal(&cc->cond);
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
