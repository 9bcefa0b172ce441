/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * request.c: a collective, send or receive as its caller holds it, a request
 * (sharc_request_h): the public test, wait and free, what a receive received, the stream wait
 * of sharc_cuda.h, and what the sharding engine asks of a request (on the device? when did it
 * run?). A request is a task of the engine (coll.h); these calls only read its state, or
 * progress the queue for it.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdio.h>

#include <sharc/p2p.h>

#include "../base/gpu.h"
#include "../base/log.h"
#include "../base/util.h"
#include "coll.h"

static int sharc_coll_task_complete(const sharc_coll_task_t *task)
{
    /* acquire: pairs with the pass's release store, so the status is seen with it */
    return __atomic_load_n(&task->state, __ATOMIC_ACQUIRE) == SHARC_COLL_TASK_COMPLETE;
}

/* A request that cannot complete yet because its group has not ended: said, SHARC_ERR_INVALID. */
static sharc_status_t sharc_coll_unissued(sharc_request_h req, const char *call)
{
    sharc_error("%s: this %s was posted inside sharc_p2p_group_start, and is issued only when "
                "the group ends",
                call, sharc_coll_task_name(req));
    return SHARC_ERR_INVALID;
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
    if (sharc_coll_p2p_unissued(req)) {
        return sharc_coll_unissued(req, "sharc_request_test");
    }
    /* With a progress thread, a test only looks: progressing here would move message data
     * (copies, reductions) on the caller's time, which the thread exists to take off it. It
     * looks without the lock, which the thread holds for a whole pass (a pass may copy or
     * reduce megabytes): a caller that only asks must not wait for that. */
    if (sharc_coll_task_complete(req)) {
        return req->status;
    }
    if (cc->driver == SHARC_COLL_DRIVER_THREAD) {
        return SHARC_INPROGRESS;
    }
    sharc_coll_lock(cc);
    if (!sharc_coll_task_complete(req)) {
        sharc_coll_progress(cc);
    }
    status = sharc_coll_task_complete(req) ? req->status : SHARC_INPROGRESS;
    sharc_coll_unlock(cc);
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

    if (sharc_coll_task_complete(req)) {
        *moved_p = 1;
        return req->status;
    }
    if (cc->driver == SHARC_COLL_DRIVER_THREAD &&
        __atomic_load_n(&cc->pass, __ATOMIC_ACQUIRE) == SHARC_COLL_PASS_RUNNING) {
        *moved_p = 0; /* (the caller pauses: spins, then blocks until the pass wakes it) */
        return SHARC_INPROGRESS;
    }
    sharc_coll_lock(cc);
    *moved_p = !sharc_coll_task_complete(req) ? sharc_coll_progress(cc) : 1;
    status = sharc_coll_task_complete(req) ? req->status : SHARC_INPROGRESS;
    sharc_coll_unlock(cc);
    return status;
}

/* @p req ran past SHARC_TIMEOUT: the communicator fails, carrying the ranks' verdict, or
 * without one naming the peer it waited for. With a verdict the peer is left out: this
 * rank's own wait is often on a neighbour that itself waits, and naming it beside the
 * verdict would blame a healthy rank (the verdict, from every rank's view, names the cause). */
static sharc_status_t sharc_coll_wait_timed_out(sharc_request_h req, double timeout)
{
    sharc_coll_comm_t *cc = req->cc;
    char peer[48 + SHARC_HOST_MAX] = "", what[160];
    const char *verdict;

    sharc_coll_lock(cc);
    verdict = sharc_coll_verdict_on(cc, req->ordinal);
    if (req->await_peer >= 0 && verdict == NULL) {
        snprintf(peer, sizeof(peer), ": waiting for rank %d (%s)", req->await_peer,
                 sharc_coll_host(cc, req->await_peer));
    }
    sharc_coll_task_describe(req, what, sizeof(what));
    sharc_error("rank %d: %s did not complete within %.0f s (SHARC_TIMEOUT)%s; the "
                "communicator is failed%s%s",
                cc->rank, what, timeout, peer, verdict ? ". The ranks' verdict: " : "",
                verdict ? verdict : "");
    sharc_coll_fail(cc, SHARC_ERR_TIMEOUT,
                    req->kind == SHARC_COLL_KIND_COLL
                        ? "a collective timed out (SHARC_TIMEOUT)"
                        : "a send or receive timed out (SHARC_TIMEOUT)");
    sharc_coll_unlock(cc);
    sharc_coll_stall_linger(cc, req->ordinal);
    return SHARC_ERR_TIMEOUT;
}

/* What a waiter's block waits for besides the transport: its request's completion (a pass of
 * another thread completes it, and wakes the pollers). */
static int sharc_coll_wait_ready(void *arg)
{
    return sharc_coll_task_complete(arg);
}

sharc_status_t sharc_request_wait(sharc_request_h req)
{
    double timeout, deadline;
    sharc_status_t status;
    sharc_coll_idle_t idle = {0};
    int moved;

    if (req == NULL) {
        sharc_error("sharc_request_wait: request is NULL");
        return SHARC_ERR_INVALID;
    }
    if (sharc_coll_task_complete(req)) {
        return req->status; /* done already: no lock (as in sharc_request_test) */
    }
    if (sharc_coll_p2p_unissued(req)) {
        return sharc_coll_unissued(req, "sharc_request_wait");
    }
    timeout = req->cc->cfg->timeout;
    deadline = sharc_time_now() + timeout;
    while ((status = sharc_coll_wait_step(req, &moved)) == SHARC_INPROGRESS) {
        if (sharc_time_now() > deadline) {
            return sharc_coll_wait_timed_out(req, timeout);
        }
        /* (on the GPU: a read without the lock, a hint) */
        sharc_coll_idle(req->cc, &idle, moved, sharc_coll_on_gpu(req), sharc_coll_wait_ready, req);
    }
    return status;
}

/* ---- waiting for any of several ------------------------------------------------------- */

typedef struct {
    const sharc_request_h *reqs;
    size_t n;
} sharc_coll_any_t;

/* The first complete request of @p any (its index), or -1. */
static long sharc_coll_any_done(const sharc_coll_any_t *any)
{
    for (size_t i = 0; i < any->n; i++) {
        if (any->reqs[i] != NULL && sharc_coll_task_complete(any->reqs[i])) {
            return (long)i;
        }
    }
    return -1;
}

static int sharc_coll_any_ready(void *arg)
{
    return sharc_coll_any_done(arg) >= 0;
}

/* The requests' one communicator, or NULL with the reason logged. */
static sharc_coll_comm_t *sharc_coll_any_comm(const sharc_request_h *reqs, size_t n)
{
    sharc_coll_comm_t *cc = NULL;

    for (size_t i = 0; reqs != NULL && i < n; i++) {
        if (reqs[i] == NULL) {
            continue;
        }
        if (cc != NULL && reqs[i]->cc != cc) {
            sharc_error("sharc_request_wait_any: requests %zu and earlier ones belong to "
                        "different communicators",
                        i);
            return NULL;
        }
        if (sharc_coll_p2p_unissued(reqs[i])) {
            sharc_coll_unissued(reqs[i], "sharc_request_wait_any");
            return NULL;
        }
        cc = reqs[i]->cc;
    }
    if (cc == NULL) {
        sharc_error("sharc_request_wait_any: no request (%zu, all NULL)", n);
    }
    return cc;
}

/* The incomplete request of @p any posted first (the first to reach SHARC_TIMEOUT). */
static long sharc_coll_any_oldest(const sharc_coll_any_t *any)
{
    long oldest = -1;

    for (size_t i = 0; i < any->n; i++) {
        if (any->reqs[i] != NULL && !sharc_coll_task_complete(any->reqs[i]) &&
            (oldest < 0 || any->reqs[i]->t_post < any->reqs[oldest]->t_post)) {
            oldest = (long)i;
        }
    }
    return oldest;
}

sharc_status_t sharc_request_wait_any(const sharc_request_h *reqs, size_t n, double timeout,
                                      size_t *index_p)
{
    sharc_coll_any_t any = {reqs, n};
    sharc_coll_comm_t *cc = sharc_coll_any_comm(reqs, n);
    sharc_coll_idle_t idle = {0};
    double t0 = sharc_time_now();
    int moved;
    long i;

    if (cc == NULL || index_p == NULL) {
        if (cc != NULL) {
            sharc_error("sharc_request_wait_any: index_p is NULL");
        }
        return SHARC_ERR_INVALID;
    }
    while ((i = sharc_coll_any_done(&any)) < 0) {
        long oldest = sharc_coll_any_oldest(&any);
        double now;
        int gpu;

        /* one pass, as a blocked waiter helps (sharc_coll_wait_step) */
        sharc_coll_wait_step(reqs[oldest], &moved);
        if ((i = sharc_coll_any_done(&any)) >= 0) {
            break;
        }
        now = sharc_time_now();
        if (now - reqs[oldest]->t_post > cc->cfg->timeout) {
            *index_p = (size_t)oldest;
            return sharc_coll_wait_timed_out(reqs[oldest], cc->cfg->timeout);
        }
        if (timeout >= 0 && now - t0 >= timeout) {
            return SHARC_INPROGRESS;
        }
        gpu = 0;
        for (size_t k = 0; k < n; k++) {
            gpu |= reqs[k] != NULL && sharc_coll_on_gpu(reqs[k]);
        }
        sharc_coll_idle(cc, &idle, moved, gpu, sharc_coll_any_ready, &any);
    }
    *index_p = (size_t)i;
    return SHARC_OK;
}

void sharc_request_free(sharc_request_h req)
{
    sharc_coll_comm_t *cc;

    if (req == NULL) {
        return;
    }
    if (sharc_coll_p2p_unissued(req)) { /* never issued: it leaves its group */
        sharc_coll_lock(req->cc);
        sharc_coll_group_drop(req);
        sharc_coll_unlock(req->cc);
        return;
    }
    if (!sharc_coll_task_complete(req) && !req->stream_waited) {
        sharc_request_wait(req); /* its buffers must be left alone once it is freed */
    }
    cc = req->cc;
    sharc_coll_lock(cc);
    if (req->state == SHARC_COLL_TASK_COMPLETE) {
        sharc_coll_task_release(req);
    } else {
        /* timed out, or a stream waits for it: the engine releases it when it completes */
        req->freed = 1;
    }
    sharc_coll_unlock(cc);
}

sharc_status_t sharc_request_recv_info(sharc_request_h req, sharc_recv_info_t *info_p)
{
    size_t esize;

    if (req == NULL || req->kind != SHARC_COLL_KIND_RECV || info_p == NULL) {
        sharc_error("sharc_request_recv_info: %s", req == NULL      ? "request is NULL"
                                                   : info_p == NULL ? "info_p is NULL"
                                                                    : "not a receive's request");
        return SHARC_ERR_INVALID;
    }
    if (!sharc_coll_task_complete(req)) {
        return SHARC_INPROGRESS;
    }
    if (req->status != SHARC_OK) {
        return req->status;
    }
    esize = sharc_dtype_size(req->args.dtype);
    info_p->source = req->u.p2p.source;
    info_p->tag = req->u.p2p.tag;
    info_p->bytes = req->u.p2p.bytes;
    info_p->count = req->u.p2p.bytes / esize;
    return SHARC_OK;
}

sharc_status_t sharc_coll_request_wait_stream(sharc_request_h req, void *stream)
{
    sharc_coll_comm_t *cc;
    sharc_status_t status = SHARC_INPROGRESS;

    if (req == NULL) {
        sharc_error("sharc_request_wait_stream: request is NULL");
        return SHARC_ERR_INVALID;
    }
    cc = req->cc;
    sharc_coll_lock(cc);
    if (req->state == SHARC_COLL_TASK_COMPLETE) {
        status = req->status;
    } else if (req->event != NULL) {
        /* under the lock: the engine cannot hand the event back to its backend meanwhile */
        status = sharc_gpu_stream_wait(stream, req->event);
        req->stream_waited = status == SHARC_OK;
    }
    sharc_coll_unlock(cc);
    return (status == SHARC_INPROGRESS) ? sharc_request_wait(req) : status;
}

int sharc_coll_request_on_device(sharc_request_h req)
{
    return req->algo == &sharc_coll_cuda_backend || req->algo == &sharc_coll_quant_device;
}

double sharc_coll_request_done_time(sharc_request_h req)
{
    return req->state >= SHARC_COLL_TASK_DONE ? req->t_done : 0.0;
}

void sharc_coll_request_times(sharc_request_h req, sharc_coll_request_times_t *times_p)
{
    times_p->start = req->t_start;
    times_p->done = req->state >= SHARC_COLL_TASK_DONE ? req->t_done : 0.0;
    times_p->complete = req->state == SHARC_COLL_TASK_COMPLETE ? req->t_complete : 0.0;
}

int sharc_coll_request_stream_waited(sharc_request_h req)
{
    return req->stream_waited;
}
