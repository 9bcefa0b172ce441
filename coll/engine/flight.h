/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flight.h: the flight recorder (flight.c): a ring of the last collectives each communicator
 * started and how far each got, written by the engine as they move, read by the diagnostics
 * (diagnostics.h) when a hang is examined. Its types are in engine.h (the communicator holds
 * its recorder).
 */
#ifndef SHARC_COLL_FLIGHT_H
#define SHARC_COLL_FLIGHT_H

#include "engine.h"

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

#endif
