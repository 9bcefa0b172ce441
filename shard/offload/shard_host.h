/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_host.h: the host worker's state, shared by its two halves: the worker's thread and its
 * tasks (shard_host.c) and the caller's side of it (shard_host_sync.c: start and stop,
 * queueing, waits, slots, abort). Internal to shard/.
 */
#ifndef SHARC_SHARD_HOST_H
#define SHARC_SHARD_HOST_H

#include <pthread.h>
#include <stdatomic.h>

#include "shard/offload/offload.h"

/* Download slots: gradients of this many units may be on their way to the host at once. */
#define SHARC_SHARD_DOWN_SLOTS 3
/* Upload slots (parameters cast to a 16-bit dtype on the host, then copied up). */
#define SHARC_SHARD_UP_SLOTS 2
/* Elements per chunk of a parallel loop: 256 KiB of f32, a few per thread and unit. */
#define SHARC_SHARD_GRAIN (64u << 10)

/* A queue of tasks, in order. */
typedef struct {
    sharc_shard_task_t *t;
    size_t head, n, cap;
} sharc_shard_fifo_t;

struct sharc_shard_host {
    pthread_mutex_t lock;
    pthread_cond_t work; /* the worker: a task was queued, or stop */
    pthread_cond_t done; /* the caller: a task ended, a slot came back */
    pthread_t thread;
    int started, stop;
    atomic_int cancel;     /* drop the rest: the group failed */
    sharc_status_t failed; /* a task's first error */
    sharc_shard_fifo_t land, rest;
    int running;  /* tasks taken off a queue, not yet ended or queued again */
    int in_lands; /* the worker runs landings (no landings inside them) */
    sharc_shard_pool_t *pool;
    void *down[SHARC_SHARD_DOWN_SLOTS];
    int down_busy[SHARC_SHARD_DOWN_SLOTS];
    void *up[SHARC_SHARD_UP_SLOTS], *up_ev[SHARC_SHARD_UP_SLOTS];
    int up_next;
};

/* Queue @p t at the back of @p q (0, or -1 without memory); take the front one (0 if empty). */
SHARC_HIDDEN int sharc_shard_fifo_push(sharc_shard_fifo_t *q, const sharc_shard_task_t *t);
SHARC_HIDDEN int sharc_shard_fifo_pop(sharc_shard_fifo_t *q, sharc_shard_task_t *t);

/* Wait for a copy's event, polling, so that the worker stays cancellable. */
SHARC_HIDDEN sharc_status_t sharc_shard_host_event(sharc_shard_host_t *h, void *ev);

/* Tests only (NULL otherwise): called by the worker right after it ended a task, its lock not
 * held. A test sets it to widen the moment between a task's end and the worker's next step, in
 * which a caller woken by that end looks at the worker's counts. */
SHARC_HIDDEN extern void (*sharc_shard_host_ended_hook)(void);

/* The worker thread's body (its argument: the group). */
SHARC_HIDDEN void *sharc_shard_host_main(void *arg);

#endif
