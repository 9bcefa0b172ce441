/*
 * coll.c: the collective engine: tasks queued per communicator, the progress that drives
 * them and completes them in posting order within each completion lane (from test and wait,
 * or a progress thread), posts handed to a running pass instead of waiting for it, the
 * scratch kept between collectives, and the send and receive helpers of the algorithms.
 * Posting (checks, routing) is in post.c, algorithm selection in select.c.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/base/gpu.h"
#include "../src/base/log.h"
#include "../src/base/util.h"
#include "coll.h"

static void *sharc_coll_thread(void *arg);
static int sharc_coll_progress_pass(sharc_coll_comm_t *cc);

sharc_status_t sharc_coll_comm_create(const sharc_coll_comm_params_t *params,
                                      sharc_coll_comm_t **cc_p)
{
    sharc_coll_comm_t *cc = calloc(1, sizeof(*cc));
    int ret;

    if (cc == NULL) {
        return SHARC_ERR_NOMEM;
    }
    cc->rank = params->rank;
    cc->size = params->size;
    cc->cfg = params->cfg;
    cc->tune = params->tune;
    cc->boot = params->boot;
    cc->tp_ops = params->tp_ops;
    cc->tp = params->tp;
    cc->gpu_ops = params->gpu_ops;
    cc->gpu_tp = params->gpu_tp;
    cc->gpu_failed = params->gpu_failed;
    cc->hosts = params->hosts;
    /* recursive: transport callbacks inside progress may reach the engine again */
    sharc_mutex_init_recursive(&cc->lock);
    pthread_cond_init(&cc->cond, NULL);
    if (cc->cfg->progress_thread) {
        ret = pthread_create(&cc->thread, NULL, sharc_coll_thread, cc);
        if (ret != 0) {
            errno = ret;
            sharc_error("cannot start the progress thread (SHARC_PROGRESS_THREAD): %m");
            pthread_cond_destroy(&cc->cond);
            pthread_mutex_destroy(&cc->lock);
            free(cc);
            return SHARC_ERR_NOMEM;
        }
        cc->thread_running = 1;
    }
    *cc_p = cc;
    return SHARC_OK;
}

/* ---- progress ---------------------------------------------------------------------- */

char *sharc_coll_scratch(sharc_coll_task_t *task, size_t bytes)
{
    sharc_coll_comm_t *cc = task->cc;

    if (!cc->scratch_busy) {
        if (cc->scratch_bytes < bytes) {
            free(cc->scratch);
            cc->scratch = malloc(bytes);
            cc->scratch_bytes = (cc->scratch != NULL) ? bytes : 0;
        }
        if (cc->scratch != NULL) {
            cc->scratch_busy = 1;
            task->scratch_cached = 1;
            task->scratch = cc->scratch;
            return task->scratch;
        }
    }
    task->scratch = malloc(bytes);
    return task->scratch;
}

/* The task no longer needs its scratch (lock held). */
void sharc_coll_scratch_put(sharc_coll_task_t *task)
{
    if (task->scratch_cached) {
        task->cc->scratch_busy = 0;
        task->scratch_cached = 0;
    } else {
        free(task->scratch);
    }
    task->scratch = NULL;
}

/* Free what a task holds; a task that ended in an error waits in the graveyard for the
 * communicator's destroy, after its transports (which may still hold its requests). */
static void sharc_coll_release_now(sharc_coll_task_t *task)
{
    if (task->algo != NULL && task->algo->finalize != NULL) {
        task->algo->finalize(task); /* the algorithm's own state (task->u) */
    }
    free(task->reqs);
    sharc_coll_scratch_put(task); /* a failed task's, or one whose init failed */
    free(task);
}

void sharc_coll_release(sharc_coll_task_t *task)
{
    if (task->done && task->status != SHARC_OK) {
        task->next = task->cc->graveyard;
        task->cc->graveyard = task;
        return;
    }
    sharc_coll_release_now(task);
}

/* How often progress asks the bootstrap whether a rank is gone (the fast failure of a job
 * whose rank died: well within its 2 s). */
#define SHARC_COLL_CHECK_S 0.1
/* How long a collective that failed on a peer's error waits for the store to name the peer. */
#define SHARC_COLL_EXPLAIN_S 0.3

void sharc_coll_fail(sharc_coll_comm_t *cc, sharc_status_t status, const char *why)
{
    if (cc->failed != SHARC_OK) {
        return;
    }
    cc->failed = status;
    snprintf(cc->why, sizeof(cc->why), "%s", why);
    /* the ranks no longer agree on what is in flight: what the transports still hold for
     * this communicator ends now (with an error), rather than at their destroy */
    if (cc->tp_ops != NULL && cc->tp_ops->abort != NULL) {
        cc->tp_ops->abort(cc->tp);
    }
    if (cc->gpu_tp != NULL && cc->gpu_ops->abort != NULL) {
        cc->gpu_ops->abort(cc->gpu_tp); /* the device would go on waiting for the peer */
    }
}

static const char *sharc_coll_host(const sharc_coll_comm_t *cc, int rank)
{
    return (cc->hosts != NULL && rank >= 0 && rank < cc->size) ? cc->hosts[rank] : "?";
}

/*
 * Has anyone said that a rank of this communicator is gone (its process died, or a peer's
 * transport lost it)? Then the communicator fails now, naming the rank and its host, rather
 * than at SHARC_TIMEOUT; a communicator that failed already on a transport's error learns
 * which rank it was. A slow rank is never declared gone: only a closed connection or a
 * transport's error says so. Every SHARC_COLL_CHECK_S, or at once with @p now_too.
 */
static void sharc_coll_watch(sharc_coll_comm_t *cc, int now_too)
{
    double now = sharc_time_now();
    char why[192];
    int lost, by;

    if (cc->explained || cc->boot == NULL || (!now_too && now < cc->next_check) ||
        (cc->failed != SHARC_OK && cc->failed != SHARC_ERR_REMOTE &&
         cc->failed != SHARC_ERR_BACKEND)) {
        return;
    }
    cc->next_check = now + SHARC_COLL_CHECK_S;
    if (sharc_boot_check(cc->boot, &lost, &by) == SHARC_OK) {
        return;
    }
    if (lost == by) {
        snprintf(why, sizeof(why), "rank %d (%s) of this %d-rank communicator is gone", lost,
                 sharc_coll_host(cc, lost), cc->size);
    } else {
        snprintf(why, sizeof(why), "rank %d (%s) of this %d-rank communicator lost rank %d (%s)",
                 by, sharc_coll_host(cc, by), cc->size, lost, sharc_coll_host(cc, lost));
    }
    sharc_error("rank %d: %s: its collectives fail", cc->rank, why);
    cc->explained = 1;
    if (cc->failed != SHARC_OK) { /* a transport's error, now explained: a peer's failure */
        snprintf(cc->why, sizeof(cc->why), "%s", why);
        cc->failed = SHARC_ERR_REMOTE;
    }
    sharc_coll_fail(cc, SHARC_ERR_REMOTE, why);
}

/*
 * Lock held: queue the tasks handed over during a pass, oldest first (the order they were
 * posted in, so every rank gives them the same sequence numbers). A task that cannot be
 * queued (the communicator failed, its init failed) completes with the error in its turn.
 */
static void sharc_coll_take_over(sharc_coll_comm_t *cc)
{
    sharc_coll_task_t *list = __atomic_exchange_n(&cc->incoming, NULL, __ATOMIC_SEQ_CST),
                      *rev = NULL;

    while (list != NULL) { /* newest first: reverse */
        sharc_coll_task_t *t = list;

        list = t->next;
        t->next = rev;
        rev = t;
    }
    while (rev != NULL) {
        sharc_coll_task_t *t = rev;
        sharc_status_t status = SHARC_OK;

        rev = t->next;
        t->next = NULL;
        if (cc->failed != SHARC_OK) {
            status = cc->failed;
            t->algo = NULL; /* never initialized: nothing to finalize */
        } else {
            t->seq = cc->seq & SHARC_TP_TAG_MAX; /* as sharc_coll_queue */
            cc->seq += 1 + (t->algo->tags != NULL ? t->algo->tags(t) : 0);
            status = t->algo->init(t);
            if (status != SHARC_OK) {
                sharc_coll_scratch_put(t);
            }
        }
        if (status != SHARC_OK) {
            sharc_error("%s: %s", sharc_coll_name(t->args.type),
                        cc->failed != SHARC_OK ? cc->why : "its algorithm could not start");
            t->done = 1;
            t->status = status;
            t->t_done = sharc_time_now();
        }
        if (cc->tail != NULL) {
            cc->tail->next = t;
        } else {
            cc->head = t;
        }
        cc->tail = t;
    }
}

int sharc_coll_hand_over(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_coll_task_t *head;

    if (!cc->thread_running || cc->cfg->check) {
        sharc_coll_lock(cc);
        return 0;
    }
    if (pthread_mutex_trylock(&cc->lock) == 0) {
        return 0;
    }
    /* Busy: push first, then look (both sequentially consistent, as the pass's end: clear
     * in_pass, then take the list). Seen in a pass: that pass, or a later one, takes it
     * when it ends. Not in a pass: the holder is brief (the thread between passes, a caller
     * freeing): wait for the lock and queue it here. */
    head = __atomic_load_n(&cc->incoming, __ATOMIC_SEQ_CST);
    do {
        task->next = head;
    } while (!__atomic_compare_exchange_n(&cc->incoming, &head, task, 0, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST));
    if (__atomic_load_n(&cc->in_pass, __ATOMIC_SEQ_CST)) {
        return 1;
    }
    sharc_coll_lock(cc);
    sharc_coll_take_over(cc);
    pthread_cond_signal(&cc->cond);
    pthread_mutex_unlock(&cc->lock);
    return 1;
}

/*
 * A collective failed with a peer's error: the transport that saw it has reported the peer to
 * the store, or the store saw its process end, so the notice naming the rank and its host is
 * on its way. Wait for it a moment (once per communicator), so that the error that reaches
 * the caller comes with its cause.
 */
static void sharc_coll_explain(sharc_coll_comm_t *cc)
{
    double until = sharc_time_now() + SHARC_COLL_EXPLAIN_S;
    struct timespec ts = {0, 10 * 1000 * 1000};

    if ((cc->failed != SHARC_ERR_REMOTE && cc->failed != SHARC_ERR_BACKEND) || cc->boot == NULL ||
        cc->boot->ops->check == NULL) {
        return; /* (a bootstrap without a store cannot tell) */
    }
    for (;;) {
        sharc_coll_watch(cc, 1);
        if (cc->explained || sharc_time_now() >= until) {
            return;
        }
        nanosleep(&ts, NULL);
    }
}

/*
 * Called with the lock held. Drives every task, then completes those at the head in order.
 * Returns whether anything moved (messages in the transport, a task finishing): pollers
 * back off when nothing does.
 */
int sharc_coll_progress(sharc_coll_comm_t *cc)
{
    int moved;

    if (cc->progressing) { /* reached again from inside a pass (the lock is recursive) */
        return 0;
    }
    cc->progressing = 1;
    moved = sharc_coll_progress_pass(cc);
    /* the pass is over: posts from now on wait for the lock; those handed over during it
     * are queued now, while it is still held */
    __atomic_store_n(&cc->in_pass, 0, __ATOMIC_SEQ_CST);
    sharc_coll_take_over(cc);
    cc->progressing = 0;
    return moved;
}

/* Drive task @p t once (lock held); it may finish (done), or fail the communicator. */
static void sharc_coll_step(sharc_coll_comm_t *cc, sharc_coll_task_t *t)
{
    if (t->t_start == 0) {
        t->t_start = sharc_time_now();
    }
    t->status = (cc->failed != SHARC_OK) ? cc->failed : t->algo->progress(t);
    if (t->status == SHARC_INPROGRESS) {
        return;
    }
    t->done = 1;
    t->t_done = sharc_time_now();
    if (t->status == SHARC_OK) {
        /* (a failed task keeps it: a transport may still write into it) */
        sharc_coll_scratch_put(t);
    } else if (cc->failed == SHARC_OK) {
        /* the ranks no longer agree on what is in flight: stop the rest */
        char why[96];

        snprintf(why, sizeof(why), "%s #%llu failed (%s)", sharc_coll_name(t->args.type),
                 (unsigned long long)t->seq, sharc_status_string(t->status));
        sharc_error("rank %d: %s: this communicator's collectives fail", cc->rank, why);
        sharc_coll_fail(cc, t->status, why);
        sharc_coll_explain(cc);
    }
}

static int sharc_coll_progress_pass(sharc_coll_comm_t *cc)
{
    unsigned blocked = 0;
    int moved = 0;

    __atomic_store_n(&cc->in_pass, 1, __ATOMIC_SEQ_CST);
    sharc_coll_take_over(cc);

    if (cc->tp_ops != NULL && cc->tp_ops->progress != NULL) {
        int ret = cc->tp_ops->progress(cc->tp);
        if (ret < 0 && cc->failed == SHARC_OK) {
            sharc_error("rank %d: the transport failed (%s): this communicator's collectives "
                        "fail",
                        cc->rank, sharc_status_string((sharc_status_t)ret));
            sharc_coll_fail(cc, (sharc_status_t)ret, "its transport failed");
        }
        moved = ret > 0;
    }
    if (cc->gpu_tp != NULL && cc->gpu_ops->progress != NULL) {
        int ret = cc->gpu_ops->progress(cc->gpu_tp);
        if (ret < 0 && cc->failed == SHARC_OK) {
            sharc_error("rank %d: the collective backend for CUDA buffers failed (%s): this "
                        "communicator's collectives fail",
                        cc->rank, sharc_status_string((sharc_status_t)ret));
            sharc_coll_fail(cc, (sharc_status_t)ret, "its collective backend failed");
        }
        moved |= ret > 0;
    }
    sharc_coll_watch(cc, 0);
    /* Drive each task in posting order, and complete it as soon as it and the earlier tasks
     * of its lane are done (blocked: lanes with one not done yet): at once, not at the end
     * of the pass, which a later task may spend milliseconds reducing. */
    for (sharc_coll_task_t **p = &cc->head, *prev = NULL; *p != NULL;) {
        sharc_coll_task_t *t = *p;
        unsigned lane = 1u << t->lane;

        if (!t->done) {
            sharc_coll_step(cc, t);
            moved |= t->done;
        }
        if (!t->done || (blocked & lane)) {
            blocked |= lane;
            prev = t;
            p = &t->next;
            continue;
        }
        *p = t->next;
        if (cc->tail == t) {
            cc->tail = prev;
        }
        t->next = NULL;
        t->t_complete = sharc_time_now();
        /* release: a test or wait that sees it complete without the lock sees its status */
        __atomic_store_n(&t->complete, 1, __ATOMIC_RELEASE);
        if (t->freed) {
            sharc_coll_release(t);
        }
    }
    return moved;
}

void sharc_coll_enqueue(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;

    if (cc->tail != NULL) {
        cc->tail->next = task;
    } else {
        cc->head = task;
    }
    cc->tail = task;
    if (cc->thread_running) {
        pthread_cond_signal(&cc->cond); /* the thread moves it, off the caller's time */
    } else {
        sharc_coll_progress(cc); /* small collectives often finish here */
    }
}

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

static void sharc_coll_idle(int moved, int *idle, int gpu)
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

/* Whether @p t runs on the GPU (the collective backend, or staging copies). */
static int sharc_coll_on_gpu(const sharc_coll_task_t *t)
{
    return t->algo == &sharc_coll_backend || t->algo == &sharc_coll_staged;
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

/* The lock, for callers: the progress thread lets them in ahead of its next pass. */
void sharc_coll_lock(sharc_coll_comm_t *cc)
{
    __atomic_add_fetch(&cc->waiters, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&cc->lock);
    __atomic_sub_fetch(&cc->waiters, 1, __ATOMIC_ACQ_REL);
}

sharc_status_t sharc_request_test(sharc_request_h req)
{
    sharc_coll_comm_t *cc;
    sharc_status_t status;

    if (req == NULL) {
        sharc_error("sharc_request_test: request is NULL");
        return SHARC_ERR_INVALID;
    }
    cc = req->cc;
    /* With a progress thread, a test only looks: progressing here would move message data
     * (copies, reductions) on the caller's time, which the thread exists to take off it. It
     * looks without the lock, which the thread holds for a whole pass (a pass may copy or
     * reduce megabytes): a caller that only asks must not wait for that. */
    if (__atomic_load_n(&req->complete, __ATOMIC_ACQUIRE)) {
        return req->status;
    }
    if (cc->thread_running) {
        return SHARC_INPROGRESS;
    }
    sharc_coll_lock(cc);
    if (!req->complete) {
        sharc_coll_progress(cc);
    }
    status = req->complete ? req->status : SHARC_INPROGRESS;
    pthread_mutex_unlock(&cc->lock);
    return status;
}

/*
 * Progress from a caller that blocks anyway (sharc_request_wait): it may as well help. With
 * a progress thread whose pass holds the lock, it looks instead: a pass completes a task as
 * soon as it is done, and may go on for milliseconds with other tasks.
 */
static sharc_status_t sharc_coll_wait_step(sharc_request_h req, int *moved_p)
{
    sharc_coll_comm_t *cc = req->cc;
    sharc_status_t status;

    if (__atomic_load_n(&req->complete, __ATOMIC_ACQUIRE)) {
        *moved_p = 1;
        return req->status;
    }
    if (cc->thread_running && __atomic_load_n(&cc->in_pass, __ATOMIC_ACQUIRE)) {
        *moved_p = 0; /* (the caller's pause: a yield, then short sleeps) */
        return SHARC_INPROGRESS;
    }
    sharc_coll_lock(cc);
    *moved_p = !req->complete ? sharc_coll_progress(cc) : 1;
    status = req->complete ? req->status : SHARC_INPROGRESS;
    pthread_mutex_unlock(&cc->lock);
    return status;
}

sharc_status_t sharc_request_wait(sharc_request_h req)
{
    double timeout, deadline;
    sharc_status_t status;
    int moved, idle = 0;

    if (req == NULL) {
        sharc_error("sharc_request_wait: request is NULL");
        return SHARC_ERR_INVALID;
    }
    if (__atomic_load_n(&req->complete, __ATOMIC_ACQUIRE)) {
        return req->status; /* done already: no lock (as in sharc_request_test) */
    }
    timeout = req->cc->cfg->timeout;
    deadline = sharc_time_now() + timeout;
    while ((status = sharc_coll_wait_step(req, &moved)) == SHARC_INPROGRESS) {
        if (sharc_time_now() > deadline) {
            sharc_coll_comm_t *cc = req->cc;
            char peer[48 + SHARC_HOST_MAX] = "";

            sharc_coll_lock(cc);
            if (req->await_peer >= 0) {
                snprintf(peer, sizeof(peer), ": waiting for rank %d (%s)", req->await_peer,
                         sharc_coll_host(cc, req->await_peer));
            }
            sharc_error("rank %d: %s #%llu (%zu %s) did not complete within %.0f s "
                        "(SHARC_TIMEOUT)%s; the communicator is failed",
                        cc->rank, sharc_coll_name(req->args.type), (unsigned long long)req->seq,
                        req->args.count, sharc_dtype_name(req->args.dtype), timeout, peer);
            sharc_coll_fail(cc, SHARC_ERR_TIMEOUT, "a collective timed out (SHARC_TIMEOUT)");
            pthread_mutex_unlock(&cc->lock);
            return SHARC_ERR_TIMEOUT;
        }
        /* several ranks may share few cores (a read without the lock: a hint) */
        sharc_coll_idle(moved, &idle, sharc_coll_on_gpu(req));
    }
    return status;
}

void sharc_request_free(sharc_request_h req)
{
    sharc_coll_comm_t *cc;

    if (req == NULL) {
        return;
    }
    if (!req->complete && !req->stream_waited) {
        sharc_request_wait(req); /* its buffers must be left alone once it is freed */
    }
    cc = req->cc;
    sharc_coll_lock(cc);
    if (req->complete) {
        sharc_coll_release(req);
    } else {
        /* timed out, or a stream waits for it: the engine releases it when it completes */
        req->freed = 1;
    }
    pthread_mutex_unlock(&cc->lock);
}

sharc_status_t sharc_request_wait_stream(sharc_request_h req, void *stream)
{
    sharc_coll_comm_t *cc;
    sharc_status_t status = SHARC_INPROGRESS;

    if (req == NULL) {
        sharc_error("sharc_request_wait_stream: request is NULL");
        return SHARC_ERR_INVALID;
    }
    cc = req->cc;
    sharc_coll_lock(cc);
    if (req->complete) {
        status = req->status;
    } else if (req->event != NULL) {
        /* under the lock: the engine cannot hand the event back to its backend meanwhile */
        status = sharc_gpu_stream_wait(stream, req->event);
        req->stream_waited = status == SHARC_OK;
    }
    pthread_mutex_unlock(&cc->lock);
    return (status == SHARC_INPROGRESS) ? sharc_request_wait(req) : status;
}

int sharc_request_on_device(sharc_request_h req)
{
    return req->algo == &sharc_coll_backend;
}

double sharc_request_done_time(sharc_request_h req)
{
    return req->done ? req->t_done : 0.0;
}

void sharc_request_times(sharc_request_h req, sharc_request_times_t *times_p)
{
    times_p->start = req->t_start;
    times_p->done = req->done ? req->t_done : 0.0;
    times_p->complete = req->complete ? req->t_complete : 0.0;
}

int sharc_request_stream_waited(sharc_request_h req)
{
    return req->stream_waited;
}

void sharc_coll_comm_quiesce(sharc_coll_comm_t *cc)
{
    if (cc == NULL) {
        return;
    }
    if (cc->thread_running) {
        sharc_coll_lock(cc);
        cc->stop = 1;
        pthread_cond_signal(&cc->cond);
        pthread_mutex_unlock(&cc->lock);
        pthread_join(cc->thread, NULL);
        cc->thread_running = 0;
    }
    if (cc->head != NULL) {
        int unfreed = 0;

        for (sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
            unfreed += !t->freed; /* freed ones are only waiting to be seen done */
        }
        if (unfreed > 0) {
            sharc_warn("rank %d: communicator destroyed with %d collective(s) in flight; "
                       "completing them",
                       cc->rank, unfreed);
        }
        while (cc->head != NULL) {
            sharc_coll_task_t *t = cc->head;
            if (sharc_request_wait(t) != SHARC_OK) {
                break;
            }
        }
    }
    /* a failed communicator: one more pass ends every task in flight (they fail) */
    sharc_coll_lock(cc);
    if (cc->failed != SHARC_OK && cc->head != NULL) {
        sharc_coll_progress(cc);
    }
    pthread_mutex_unlock(&cc->lock);
    /* Tasks the caller has not freed are the caller's leak; those freed are released. */
    for (sharc_coll_task_t *t = cc->head, *next; t != NULL; t = next) {
        next = t->next;
        if (t->freed) {
            sharc_coll_release(t);
        }
    }
}

int sharc_coll_comm_failed(const sharc_coll_comm_t *cc)
{
    return cc != NULL && cc->failed != SHARC_OK;
}

void sharc_coll_comm_destroy(sharc_coll_comm_t *cc)
{
    if (cc == NULL) {
        return;
    }
    /* the transports are gone: nothing writes into the failed tasks' requests any more */
    while (cc->graveyard != NULL) {
        sharc_coll_task_t *t = cc->graveyard;

        cc->graveyard = t->next;
        sharc_coll_release_now(t);
    }
    /* the staging kept between collectives on CUDA buffers (staged.c) */
    sharc_gpu_host_free(cc->pinned);
    sharc_gpu_stream_destroy(cc->stage_stream);
    pthread_cond_destroy(&cc->cond);
    pthread_mutex_destroy(&cc->lock);
    if (!cc->scratch_busy) { /* else a task that never finished holds it: leaked with it */
        free(cc->scratch);
    }
    free(cc);
}

/* ---- transport helpers ------------------------------------------------------------- */

sharc_status_t sharc_coll_send(sharc_coll_task_t *task, int peer, const void *buf, size_t bytes,
                               sharc_tp_req_t *req)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    memset(req, 0, sizeof(*req));
    status = cc->tp_ops->send(cc->tp, peer, task->seq, buf, bytes, NULL, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_recv(sharc_coll_task_t *task, int peer, void *buf, size_t bytes,
                               sharc_tp_req_t *req)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    memset(req, 0, sizeof(*req));
    status = cc->tp_ops->recv(cc->tp, peer, task->seq, buf, bytes, NULL, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_recv_reduce(sharc_coll_task_t *task, int peer, void *dst, const void *src,
                                      size_t count, sharc_tp_req_t *req)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    if (cc->tp_ops->recv_reduce == NULL) {
        return SHARC_ERR_UNSUPPORTED;
    }
    memset(req, 0, sizeof(*req));
    status = cc->tp_ops->recv_reduce(cc->tp, peer, task->seq, dst, src, count, task->args.dtype,
                                     task->args.op, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_sendrecv(sharc_coll_task_t *task, int to, const void *sbuf, size_t sbytes,
                                   sharc_tp_req_t *sreq, int from, void *rbuf, size_t rbytes,
                                   sharc_tp_req_t *rreq)
{
    sharc_status_t status = sharc_coll_recv(task, from, rbuf, rbytes, rreq);

    return (status == SHARC_OK) ? sharc_coll_send(task, to, sbuf, sbytes, sreq) : status;
}

sharc_status_t sharc_coll_reqs_status(const sharc_tp_req_t *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sharc_status_t status = sharc_tp_req_status(&reqs[i]);
        if (status != SHARC_OK) {
            return status;
        }
    }
    return SHARC_OK;
}
