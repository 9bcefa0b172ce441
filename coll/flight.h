/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flight.h: the flight recorder (flight.c, its dumps and a rank's head flight_dump.c), the
 * watchdog (watchdog.c), the live stall verdict (stall.c) and the verdict from heads
 * (verdict.c): what the collective layer knows of a hang. Its types are in coll.h (the
 * communicator holds its recorder).
 */
#ifndef SHARC_COLL_FLIGHT_H
#define SHARC_COLL_FLIGHT_H

#include "coll.h"

/* ---- the flight recorder (flight.c) */

/* A ring of @p cap entries (0: the recorder is off). */
SHARC_HIDDEN sharc_status_t sharc_coll_fr_init(sharc_coll_fr_t *fr, size_t cap);
SHARC_HIDDEN void sharc_coll_fr_fini(sharc_coll_fr_t *fr);

/* Record a task that was started, or failed to start (lock held; its ordinal is set). */
SHARC_HIDDEN void sharc_coll_fr_post(sharc_coll_task_t *task);

/* Record a task's new state (lock held). */
static inline void sharc_coll_fr_note(const sharc_coll_task_t *task)
{
    const sharc_coll_fr_t *fr = &task->cc->fr;
    sharc_coll_fr_entry_t *e;

    if (fr->cap == 0 || task->ordinal == UINT64_MAX) {
        return; /* (off, or a send or receive: not recorded) */
    }
    e = &fr->ring[task->ordinal % fr->cap];
    if (e->ordinal == task->ordinal) {
        e->state = (int8_t)task->state;
        e->status = task->status;
        e->t_start = task->t_start;
        e->t_done = task->t_done;
    }
}

/* The peers whose data @p task still waits for (its receives in flight), at most @p max
 * into @p peers; how many (lock held). */
SHARC_HIDDEN int sharc_coll_fr_pending(const sharc_coll_task_t *task, int *peers, int max);

/* This rank's head of @p cc at @p now (lock held). */
SHARC_HIDDEN void sharc_coll_head(sharc_coll_comm_t *cc, double now, sharc_coll_head_t *head);

/* "posted", "running", "done", "failed", ... for a task state and status. */
SHARC_HIDDEN const char *sharc_coll_state_name(int state, sharc_status_t status);

/*
 * Write @p cc's recorder as JSON to @p dir/sharc-flight.<comm>.r<rank>.json (lock held),
 * saying @p reason (failure, timeout, signal, request, stall); nothing without a @p dir.
 * Errors are logged.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_fr_dump(sharc_coll_comm_t *cc, const char *dir,
                                               const char *reason);

/* ---- the watchdog (watchdog.c) and the live verdict (stall.c) */

/* Join / leave the watchdog (at creation; before the transports go). */
SHARC_HIDDEN sharc_status_t sharc_coll_watchdog_add(sharc_coll_watchdog_t *wd,
                                                    sharc_coll_comm_t *cc);
SHARC_HIDDEN void sharc_coll_watchdog_remove(sharc_coll_watchdog_t *wd, sharc_coll_comm_t *cc);

/* The watchdog's turn for @p cc: answer a verdict round the store announced, and ask for
 * one when a collective has waited past SHARC_STALL_WARN. */
SHARC_HIDDEN void sharc_coll_stall_check(sharc_coll_comm_t *cc);


/*
 * This rank gave up on collective @p ordinal at its SHARC_TIMEOUT (lock not held): when the
 * ranks agreed a verdict on it, wait until the other ranks waiting in it have reached their
 * own timeouts (a little past the latest, as the verdict's heads tell; at most 5 s), so that
 * each of them fails on its timeout with the verdict rather than on this rank's connections
 * closing as its caller goes on (a lost peer, blaming a healthy rank).
 */
SHARC_HIDDEN void sharc_coll_stall_linger(const sharc_coll_comm_t *cc, uint64_t ordinal);

/* ---- the stall verdict (verdict.c) */

/*
 * Why collective work of communicator @p comm is stalled, from the heads of its @p n ranks
 * (heads[r] is rank r's; answered 0: it did not answer, or, not @p live, left no dump) and,
 * for ranks that did not answer,
 * their hosts as the communicator recorded them (@p hosts may be NULL): one paragraph into
 * @p buf, the same from the same heads on every rank. Returns the rank whose head set the
 * stalled collective, or -1 when none is stalled.
 */
SHARC_HIDDEN int sharc_coll_verdict(const sharc_coll_head_t *heads, int n,
                                    const char (*hosts)[SHARC_HOST_MAX], const char *comm,
                                    int live, char *buf, size_t size);

#endif
