/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * queue.c: a communicator's queue of tasks and the progress pass that drives it: a post
 * starts its task under the lock, or hands it to a pass that is running (the lock-free
 * hand-over); the pass drives the transports and every task, and completes collectives in
 * posting order within their completion lanes, sends and receives as soon as they are done.
 * Who calls the pass (callers or a thread) is thread.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/base/log.h"
#include "../src/base/util.h"
#include "coll.h"
#include "flight.h"

/* How a post enters the queue (sharc_coll_enter). */
typedef enum {
    SHARC_COLL_ENTER_LOCKED, /* the caller holds the lock now, and starts the task itself */
    SHARC_COLL_ENTER_HANDED, /* a running pass starts it; the lock is not held */
} sharc_coll_enter_t;

/*
 * Lock held: start the tasks handed over during a pass, oldest first (the order they were
 * posted in, so every rank gives them the same sequence numbers). One that cannot start
 * (the communicator failed, its init failed) is queued DONE with the error, and completes
 * with it in its turn: its caller holds its request already.
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

/*
 * How a post enters: with a progress thread whose pass holds the lock now, the task is
 * handed over (pushed for the pass to start as it ends) instead of waiting for the lock,
 * which a pass may hold for milliseconds of copies. Otherwise the caller takes the lock.
 * SHARC_CHECK's exchange must run in the posting caller: no hand-over then.
 */
static sharc_coll_enter_t sharc_coll_enter(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_coll_task_t *head;

    if (cc->driver != SHARC_COLL_DRIVER_THREAD || cc->cfg->check) {
        sharc_coll_lock(cc);
        return SHARC_COLL_ENTER_LOCKED;
    }
    if (pthread_mutex_trylock(&cc->lock) == 0) {
        return SHARC_COLL_ENTER_LOCKED;
    }
    /* Busy: push first, then look (both sequentially consistent, as the pass's end: leave
     * RUNNING, then take the list). Seen in a running pass: that pass, or a later one, takes
     * it when it ends. Not in one: the holder is brief (the thread between passes, a caller
     * freeing): wait for the lock and start it here. */
    task->state = SHARC_COLL_TASK_HANDED;
    head = __atomic_load_n(&cc->incoming, __ATOMIC_SEQ_CST);
    do {
        task->next = head;
    } while (!__atomic_compare_exchange_n(&cc->incoming, &head, task, 0, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST));
    if (__atomic_load_n(&cc->pass, __ATOMIC_SEQ_CST) == SHARC_COLL_PASS_RUNNING) {
        return SHARC_COLL_ENTER_HANDED;
    }
    sharc_coll_lock(cc);
    sharc_coll_take_over(cc);
    sharc_coll_driver_kick(cc);
    sharc_coll_unlock(cc);
    return SHARC_COLL_ENTER_HANDED;
}

/* What SHARC_CHECK compares across ranks. */
typedef struct {
    uint64_t seq, count;
    int32_t type, dtype, op, root;
} sharc_coll_sig_t;

static void sharc_coll_describe(const sharc_coll_sig_t *s, char *buf, size_t size)
{
    const char *dt = sharc_dtype_name((sharc_dtype_t)s->dtype);

    snprintf(buf, size, "%s(%llu %s", sharc_coll_name((sharc_coll_type_t)s->type),
             (unsigned long long)s->count, dt ? dt : "?");
    if (s->type == SHARC_COLL_REDUCE_SCATTER || s->type == SHARC_COLL_ALLREDUCE) {
        snprintf(buf + strlen(buf), size - strlen(buf), ", %s",
                 sharc_op_name((sharc_op_t)s->op) ? sharc_op_name((sharc_op_t)s->op) : "?");
    } else if (s->type == SHARC_COLL_BROADCAST) {
        snprintf(buf + strlen(buf), size - strlen(buf), ", root %d", s->root);
    }
    snprintf(buf + strlen(buf), size - strlen(buf), ")");
}

/*
 * SHARC_CHECK: every rank shows the others the collective it is about to post, through the
 * bootstrap. Called with the lock held, before the sequence number is taken. A mismatch
 * fails the communicator on every rank, and every rank names the same two ranks.
 */
static sharc_status_t sharc_coll_check_peers(sharc_coll_comm_t *cc, const sharc_coll_args_t *a)
{
    sharc_coll_sig_t mine = {cc->seq, a->count, a->type, a->dtype, a->op, a->root}, *all;
    sharc_status_t status;
    char d0[96], d1[96];

    if (a->type != SHARC_COLL_BROADCAST) {
        mine.root = 0;
    }
    if (a->type != SHARC_COLL_REDUCE_SCATTER && a->type != SHARC_COLL_ALLREDUCE) {
        mine.op = 0;
    }
    all = calloc((size_t)cc->size, sizeof(*all));
    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_boot_allgather(cc->boot, &mine, all, sizeof(mine));
    for (int r = 1; status == SHARC_OK && r < cc->size; r++) {
        if (memcmp(&all[r], &all[0], sizeof(mine)) != 0) {
            sharc_coll_describe(&all[r], d1, sizeof(d1));
            sharc_coll_describe(&all[0], d0, sizeof(d0));
            sharc_error("SHARC_CHECK: rank %d called %s, rank 0 called %s, seq %llu", r, d1, d0,
                        (unsigned long long)all[0].seq);
            status = SHARC_ERR_REMOTE;
            sharc_coll_fail(cc, status, "SHARC_CHECK found ranks calling different collectives");
        }
    }
    free(all);
    return status;
}

sharc_status_t sharc_coll_post(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status = SHARC_OK;

    if (sharc_coll_enter(task) == SHARC_COLL_ENTER_HANDED) {
        return SHARC_OK;
    }
    if (cc->failed == SHARC_OK && cc->head == NULL) {
        sharc_coll_progress(cc); /* an idle communicator still hears of a rank that is gone */
    }
    if (cc->cfg->check && cc->failed == SHARC_OK && task->kind == SHARC_COLL_KIND_COLL) {
        status = sharc_coll_check_peers(cc, &task->args); /* (a send is one rank's) */
    }
    if (status == SHARC_OK) {
        status = sharc_coll_task_start(task);
    }
    if (status != SHARC_OK) {
        sharc_coll_task_free(task);
    } else if (cc->driver == SHARC_COLL_DRIVER_THREAD) {
        sharc_coll_driver_kick(cc); /* the thread moves it, off the caller's time */
    } else {
        sharc_coll_progress(cc); /* small collectives often finish here */
    }
    sharc_coll_unlock(cc);
    return status;
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
    sharc_coll_watch(cc);
    moved |= sharc_coll_progress_tasks(cc);
    /* the pass is over: posts from now on wait for the lock; those handed over during it
     * are started now, while it is still held */
    __atomic_store_n(&cc->pass, SHARC_COLL_PASS_ENDING, __ATOMIC_SEQ_CST);
    sharc_coll_take_over(cc);
    __atomic_store_n(&cc->pass, SHARC_COLL_PASS_NONE, __ATOMIC_SEQ_CST);
    return moved;
}
