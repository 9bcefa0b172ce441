/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_record.h: what the engine records of itself (trace/): the statistics of its steps,
 * from their collectives, waits and memory (shard_stats.c), and the timeline trace
 * (shard_trace.c; its events and JSON writer share shard_trace.h), and the ranks' vote
 * (shard_exchange.c), which gathers the trace at destroy and which creation and checkpoints
 * take too. The bottom of the engine: every other part reports here.
 */
#ifndef SHARC_SHARD_RECORD_H
#define SHARC_SHARD_RECORD_H

#include "shard/shard.h"

/* ---- statistics (shard_stats.c) ---------------------------------------------------------- */

/* A collective of unit @p u ran from t0 to t1 (bytes: its unsharded buffer); t1 < 0: count
 * it only (CUDA: its interval comes from events). */
SHARC_HIDDEN void sharc_shard_stats_op(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                       sharc_coll_type_t type, double t0, double t1, size_t bytes);

/* An interval a collective of unit @p unit was in flight, for the union. */
SHARC_HIDDEN void sharc_shard_stats_span(sharc_shard_group_t *g, int unit, double t0, double t1);

/* The caller was blocked on a collective (@p type) of unit @p u (or NULL) from t0 to now:
 * exposed time (and, for a gather, the unit's gather wait, which adaptive prefetch reads). */
SHARC_HIDDEN void sharc_shard_stats_exposed(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                            sharc_coll_type_t type, double t0);

/* The caller spent from t0 to now in a step call of the engine. */
SHARC_HIDDEN void sharc_shard_stats_engine(sharc_shard_group_t *g, double t0);

/* Unit @p u's unsharded bytes went up or down by @p delta. */
SHARC_HIDDEN void sharc_shard_stats_mem(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                        long long delta);

/* The step ended: fold spans into comm/hidden time, keep it as the last step, reset. */
SHARC_HIDDEN void sharc_shard_stats_step(sharc_shard_group_t *g);

/*
 * CUDA: a timing event recorded on @p stream now, from the group's free list (NULL when
 * none can be made: the interval goes uncounted), and an interval of two of them.
 */
SHARC_HIDDEN void *sharc_shard_stats_mark(sharc_shard_group_t *g, void *stream);
SHARC_HIDDEN void sharc_shard_stats_evspan(sharc_shard_group_t *g, sharc_shard_unit_t *u, void *e0,
                                           void *e1, int comm);

/* CUDA: the group's events, at destroy. */
SHARC_HIDDEN void sharc_shard_stats_free(sharc_shard_group_t *g);

/* ---- the timeline trace (shard_trace.c) -------------------------------------------------- */

/* What the caller was doing, for the trace's caller track. */
typedef enum {
    SHARC_SHARD_CALL_FORWARD_BEGIN,
    SHARC_SHARD_CALL_FORWARD_END,
    SHARC_SHARD_CALL_BACKWARD_BEGIN,
    SHARC_SHARD_CALL_BACKWARD_END,
    SHARC_SHARD_CALL_FINISH,
    SHARC_SHARD_CALL_LAST
} sharc_shard_call_t;

/* Open the trace of SHARC_SHARD_TRACE (rank 0 creates the file now, so that a path it cannot
 * write fails the group's creation with a clear error). Nothing when the knob is empty. */
SHARC_HIDDEN sharc_status_t sharc_shard_trace_open(sharc_shard_group_t *g);

/* The ranks are in step (after an exchange): this rank's time origin. */
SHARC_HIDDEN void sharc_shard_trace_origin(sharc_shard_group_t *g);

/* Every rank's events to rank 0, which writes the file (destroy; collective over the group's
 * ranks through the bootstrap). */
SHARC_HIDDEN void sharc_shard_trace_write(sharc_shard_group_t *g);

/* Free the trace (a file created and never written, as when the creation failed, goes). */
SHARC_HIDDEN void sharc_shard_trace_close(sharc_shard_group_t *g);

/* A collective of @p u completed, seen by the engine now (host: its times from the request). */
SHARC_HIDDEN void sharc_shard_trace_op(sharc_shard_group_t *g, const sharc_shard_unit_t *u,
                                       const sharc_shard_coll_t *op, sharc_coll_type_t type,
                                       sharc_request_h req, size_t bytes);

/* A new unsharded buffer of @p bytes was made from @p t0 to @p t1 (the caller's time). */
SHARC_HIDDEN void sharc_shard_trace_alloc(sharc_shard_group_t *g, size_t bytes, double t0,
                                          double t1);

/* The caller waited for a collective (@p type) of unit @p unit from @p t0 to @p t1. */
SHARC_HIDDEN void sharc_shard_trace_wait(sharc_shard_group_t *g, int unit, sharc_coll_type_t type,
                                         double t0, double t1);

/* A step call from @p t0 to @p t1; for a begin, the caller's compute with the unit follows. */
SHARC_HIDDEN void sharc_shard_trace_call(sharc_shard_group_t *g, sharc_shard_call_t call, int unit,
                                         double t0, double t1);

/* Decisions of the schedule: a unit gathered @p ahead entries ahead, a prefetch held back by
 * the bound, a prefetched unit evicted. */
SHARC_HIDDEN void sharc_shard_trace_prefetch(sharc_shard_group_t *g, int unit, int ahead);
SHARC_HIDDEN void sharc_shard_trace_defer(sharc_shard_group_t *g, int unit);
SHARC_HIDDEN void sharc_shard_trace_evict(sharc_shard_group_t *g, int unit, int want);

/* The prefetch depth from now on (@p why: a sharc_shard_auto_why_t). */
SHARC_HIDDEN void sharc_shard_trace_depth(sharc_shard_group_t *g, int old_depth, int depth,
                                          int why);

/* A step ended (@p s: its statistics, exposed time final on the host). */
SHARC_HIDDEN void sharc_shard_trace_step(sharc_shard_group_t *g, const sharc_shard_stats_t *s,
                                         double t0, double t1);

/* ---- the ranks' vote (shard_exchange.c) -------------------------------------------------- */

/* What each rank tells the others when they must agree. */
typedef struct {
    int32_t status, pad;
    uint64_t a, b;
} sharc_shard_vote_t;

/*
 * Every rank's status and values (@p vote, into @p all[size]) through the bootstrap:
 * SHARC_OK when every rank is fine, else this rank's own error, or SHARC_ERR_REMOTE naming
 * the rank that failed at @p what. Collective over the group.
 */
SHARC_HIDDEN sharc_status_t sharc_shard_exchange(sharc_shard_group_t *g, sharc_status_t mine,
                                                 sharc_shard_vote_t *vote, sharc_shard_vote_t *all,
                                                 const char *what);

#endif
