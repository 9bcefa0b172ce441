/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * queue.c: a communicator's queue of tasks and the progress pass that drives it: the pass
 * starts the tasks handed to it while it ran, drives the transports and every task, and
 * completes collectives in posting order within their completion lanes, sends and receives as
 * soon as they are done. How a post enters the queue is post.c's; who calls the pass
 * (callers or a thread), thread.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "engine.h"
#include "flight.h"
#include "metrics.h"

/*
 * Lock held: start the tasks handed over during a pass, oldest first (the order they were
 * posted in, so every rank gives them the same sequence numbers). One that cannot start
 * (the communicator failed, its init failed) is queued DONE with the error, and completes
 * with it in its turn: its caller holds its request already.
 */
void sharc_coll_take_over(sharc_coll_comm_t *cc)
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
        sharc_status_t status;

        rev = t->next;
        t->next = NULL;
        status = sharc_coll_task_start(t);
        if (status == SHARC_OK) {
            continue;
        }
        t->status = status;
        t->state = SHARC_COLL_TASK_DONE;
        t->t_done = sharc_time_now();
        sharc_coll_task_record(t);
        sharc_coll_task_queue(t);
    }
}

/* Drive task @p t once (lock held); it may finish (DONE), or fail the communicator. */
static void sharc_coll_step(sharc_coll_comm_t *cc, sharc_coll_task_t *t)
{
    if (t->state == SHARC_COLL_TASK_QUEUED) {
        t->state = SHARC_COLL_TASK_RUNNING;
        t->t_start = sharc_time_now();
        sharc_coll_fr_note(t);
    }
    t->status = (cc->failed != SHARC_OK) ? cc->failed : t->algo->progress(t);
    if (t->status == SHARC_INPROGRESS) {
        return;
    }
    t->state = SHARC_COLL_TASK_DONE;
    t->t_done = sharc_time_now();
    sharc_coll_fr_note(t);
    if (cc->metrics != NULL) {
        sharc_coll_metrics_done(t);
    }
    if (t->status == SHARC_OK) {
        /* (a failed task keeps it: a transport may still write into it) */
        sharc_coll_scratch_put(t);
    } else if (cc->failed == SHARC_OK && sharc_coll_fails_comm(t)) {
        sharc_coll_fail_task(t);
    }
}

/* Drive the transports (lock held): 1 if they moved anything; a failed one fails the
 * communicator. */
static int sharc_coll_progress_transports(sharc_coll_comm_t *cc)
{
    int moved = 0;

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
    if (cc->cuda_tp != NULL && cc->cuda_ops->progress != NULL) {
        int ret = cc->cuda_ops->progress(cc->cuda_tp);
        if (ret < 0 && cc->failed == SHARC_OK) {
            sharc_error("rank %d: the CUDA backend failed (%s): this "
                        "communicator's collectives fail",
                        cc->rank, sharc_status_string((sharc_status_t)ret));
            sharc_coll_fail(cc, (sharc_status_t)ret, "its CUDA backend failed");
        }
        moved |= ret > 0;
    }
    return moved;
}

/* Drive each task in posting order, and complete it as soon as it and the earlier tasks of
 * its lane are done (blocked: lanes with one not done yet): at once, not at the end of the
 * pass, which a later task may spend milliseconds reducing. Sends and receives are in no
 * lane: each completes when it is done. */
static int sharc_coll_progress_tasks(sharc_coll_comm_t *cc)
{
    unsigned blocked = 0;
    int moved = 0;

    for (sharc_coll_task_t **p = &cc->head, *prev = NULL; *p != NULL;) {
        sharc_coll_task_t *t = *p;
        unsigned lane = (t->kind == SHARC_COLL_KIND_COLL) ? 1u << t->lane : 0;

        if (t->state < SHARC_COLL_TASK_DONE) {
            sharc_coll_step(cc, t);
            moved |= t->state == SHARC_COLL_TASK_DONE;
        }
        if (t->state < SHARC_COLL_TASK_DONE || (blocked & lane)) {
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
        __atomic_store_n(&t->state, SHARC_COLL_TASK_COMPLETE, __ATOMIC_RELEASE);
        sharc_coll_wake(cc); /* its waiter may be blocked, in another thread */
        sharc_coll_fr_note(t);
        if (t->freed) {
            sharc_coll_task_release(t);
        }
    }
    return moved;
}

int sharc_coll_progress(sharc_coll_comm_t *cc)
{
    int moved;

    if (cc->pass != SHARC_COLL_PASS_NONE) { /* reached again from inside a pass (recursive) */
        return 0;
    }
    __atomic_store_n(&cc->pass, SHARC_COLL_PASS_RUNNING, __ATOMIC_SEQ_CST);
    sharc_coll_take_over(cc);
    moved = sharc_coll_progress_transports(cc);
    if (cc->diag->watch != NULL) {
        cc->diag->watch(cc); /* (is a rank gone?) */
    }
    moved |= sharc_coll_progress_tasks(cc);
    /* the pass is over: posts from now on wait for the lock; those handed over during it
     * are started now, while it is still held */
    __atomic_store_n(&cc->pass, SHARC_COLL_PASS_ENDING, __ATOMIC_SEQ_CST);
    sharc_coll_take_over(cc);
    __atomic_store_n(&cc->pass, SHARC_COLL_PASS_NONE, __ATOMIC_SEQ_CST);
    return moved;
}
