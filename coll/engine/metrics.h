/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h: what the engine counts of a communicator's collectives, sends and receives when
 * metrics are on (metrics.c counts each task as it ends); the exposition reads it
 * (diagnostics/metrics.h). Internal to coll/.
 */
#ifndef SHARC_COLL_ENGINE_METRICS_H
#define SHARC_COLL_ENGINE_METRICS_H

#include "engine.h"

/*
 * A communicator's metrics (metrics.c), when SHARC_METRICS_PORT or SHARC_METRICS_FILE asks for
 * them: for each kind (the collectives by sharc_coll_type_t, then send and receive) and size
 * class, how many finished, how many failed, their bytes (nccl-tests' size: what busbw is
 * derived from) and the time from post to done, as a histogram. This rank's time inside its
 * collectives is the straggler signal: every rank leaves a collective at about the same
 * moment, so the rank that came last waited least. Written under the communicator's lock by
 * one writer at a time, read without it by the exposition (relaxed atomics: each value is
 * whole, a scrape may see one task's count before its sum).
 */
#define SHARC_COLL_METRIC_KINDS (SHARC_COLL_LAST + 2) /* + send, recv */
#define SHARC_COLL_METRIC_SEND  SHARC_COLL_LAST
#define SHARC_COLL_METRIC_RECV  (SHARC_COLL_LAST + 1)
#define SHARC_COLL_SIZE_CLASSES 6  /* up to 4 KiB, 64 KiB, 1 MiB, 16 MiB, 256 MiB; larger */
#define SHARC_COLL_TIME_BUCKETS 13 /* 8 us .. 32 s by fours, then +Inf */

typedef struct {
    uint64_t count;                           /* finished: done, fine or not */
    uint64_t failed;                          /* of them, ended in an error */
    uint64_t bytes;                           /* of the fine ones */
    uint64_t ns;                              /* of the fine ones: post to done, nanoseconds */
    uint64_t bucket[SHARC_COLL_TIME_BUCKETS]; /* the fine ones by time (not cumulative) */
} sharc_coll_metric_t;

struct sharc_coll_metrics {
    sharc_coll_metric_t m[SHARC_COLL_METRIC_KINDS][SHARC_COLL_SIZE_CLASSES];
    sharc_coll_step_metrics_t steps; /* a sharding group's, over this communicator (api.h) */
};

/* Count a task that is now DONE into cc->metrics (lock held; cc->metrics set). */
SHARC_HIDDEN void sharc_coll_metrics_done(const sharc_coll_task_t *task);

/* The upper bounds of the time buckets in seconds, [SHARC_COLL_TIME_BUCKETS - 1] (the last
 * bucket is +Inf), and the size classes' names ("4KiB" .. "256MiB", "inf": their bounds). */
extern SHARC_HIDDEN const double sharc_coll_time_bounds[SHARC_COLL_TIME_BUCKETS - 1];
extern SHARC_HIDDEN const char *const sharc_coll_size_names[SHARC_COLL_SIZE_CLASSES];

/* What a metrics kind is called ("allgather", ..., "send", "recv"). */
SHARC_HIDDEN const char *sharc_coll_metric_name(int kind);

/* A task's bytes as nccl-tests counts a collective's size (all-gather: the whole output,
 * all-reduce: the vector, ...); a send's or receive's: its message. */
SHARC_HIDDEN size_t sharc_coll_task_bytes(const sharc_coll_task_t *task);

#endif
