/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_trace.h: the timeline trace's events and per-rank record, shared by its recording
 * and gathering (shard_trace.c) and its Chrome trace JSON writer (shard_trace_json.c).
 */
#ifndef SHARC_SHARD_TRACE_H
#define SHARC_SHARD_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "shard/trace/shard_record.h"

typedef enum {
    SHARC_SHARD_TEV_COLL,     /* a collective: t0 post, t1 seen by the engine; x: start, done,
                               * complete (0: unknown, as on CUDA, where t1 is when a stream
                               * was made to wait for it), bytes; arg: its type; queue */
    SHARC_SHARD_TEV_WAIT,     /* the caller blocked on a collective (arg: its type) */
    SHARC_SHARD_TEV_CALL,     /* a step call (arg: sharc_shard_call_t) */
    SHARC_SHARD_TEV_COMPUTE,  /* the caller between a begin and its next call (arg: the begin) */
    SHARC_SHARD_TEV_PREFETCH, /* instant: a gather issued ahead (arg: entries ahead) */
    SHARC_SHARD_TEV_DEFER,    /* instant: a prefetch the bound held back */
    SHARC_SHARD_TEV_EVICT,    /* instant: a prefetched unit released unused (arg: for which) */
    SHARC_SHARD_TEV_DEPTH,    /* instant: the depth from now on (arg: depth, queue: old, x[0]:
                               * why) */
    SHARC_SHARD_TEV_STEP,     /* a step, t0 .. t1; x: exposed, comm, gather wait, engine time;
                               * arg: the depth it ran with */
    SHARC_SHARD_TEV_ALLOC,    /* a new unsharded buffer (x[0]: bytes), on the caller's time */
} sharc_shard_tev_kind_t;

/* One event; plain data, the same layout on every rank (sent to rank 0 as bytes). */
typedef struct {
    double t0, t1; /* sharc_time_now's clock; t1 < 0: an instant */
    double x[4];
    int32_t kind, unit, arg, step, queue, pad;
} sharc_shard_tev_t;

struct sharc_shard_trace {
    char *path;
    FILE *file;    /* rank 0: created with the group */
    double origin; /* this rank's time zero (the ranks left an exchange together) */
    size_t keep;   /* steps to write */
    sharc_shard_tev_t *ev;
    size_t nev, cap;
    /* where each step still held begins in ev[], the running one last: steps are dropped in
     * batches of `keep` once 2 * keep are held, so a finish rarely moves memory */
    size_t *starts;
    size_t nstarts;
    int dropped; /* steps dropped (the oldest ones) */
    /* the caller's last step call: a begin's compute runs until the next call */
    int last_call, last_unit;
    double last_t1;
};

typedef struct sharc_shard_trace sharc_shard_trace_t;

/* One rank's events as the writer sees them. */
typedef struct {
    const sharc_shard_tev_t *ev;
    size_t n;
    double origin; /* seconds subtracted from its times */
} sharc_shard_trace_rank_t;

/* The events to write: those of the last `keep` finished steps and of the step running. */
SHARC_HIDDEN size_t sharc_shard_trace_first(const sharc_shard_trace_t *tr);

/* Rank 0: the file, from every rank's events. 0, or -1 when writing failed (logged). */
SHARC_HIDDEN int sharc_shard_trace_json(sharc_shard_group_t *g,
                                        const sharc_shard_trace_rank_t *ranks, int nranks);

#endif
