/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * diagnostics.h: what the collective layer knows of a hang and of a lost rank, above the
 * engine: a rank's head and the recorder's dumps (flight_dump.c), the watchdog (watchdog.c),
 * the live stall verdict (stall.c), the verdict from heads (verdict.c), a dump directory's
 * verdict (why.c), and which rank is gone (liveness.c, whose table sharc_coll_diag_ops is the
 * engine's only way here).
 */
#ifndef SHARC_COLL_DIAGNOSTICS_H
#define SHARC_COLL_DIAGNOSTICS_H

#include "../engine/flight.h"

/*
 * What one rank's flight recorder says of one communicator on a hang (flight_dump.c): the
 * ranks exchange it for the stall verdict, so it is plain data, alike on every rank.
 * Ordinals count the collectives a rank started on the communicator: the n-th of every
 * rank is the same call of the program, when the ranks agree.
 */
#define SHARC_COLL_HEAD_PEERS 8
typedef struct {
    int32_t rank;
    int32_t answered; /* 0: the rank did not answer (in a verdict) */
    uint64_t posted;  /* collectives it started */
    /* the last one it started (when posted > 0) */
    int32_t last_type, last_dtype, last_op, last_state, last_status;
    uint64_t last_count;
    double last_age, last_done_age; /* seconds since it started, finished (-1: not yet) */
    /* the oldest one it has not completed: its ordinal, or posted when there is none */
    uint64_t stalled;
    int32_t st_type, st_dtype, st_op, st_lane, st_state;
    uint64_t st_count;
    double st_age;                                    /* seconds since it started */
    int32_t npending, pending[SHARC_COLL_HEAD_PEERS]; /* whose data it still waits for */
    char host[64];
} sharc_coll_head_t;

/* What the engine tells the diagnostics (engine.h), for every communicator. */
extern SHARC_HIDDEN const sharc_coll_diag_ops_t sharc_coll_diag_ops;

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
 * @p buf, the same from the same heads on every rank. Returns the rank it blames first (one
 * that did not answer, else one that has not posted the stalled collective, else one that
 * posted another, else one whose data does not arrive), or -1: none is stalled, or no one
 * rank is the cause (a ring of waits).
 */
SHARC_HIDDEN int sharc_coll_verdict(const sharc_coll_head_t *heads, int n,
                                    const char (*hosts)[SHARC_HOST_MAX], const char *comm, int live,
                                    char *buf, size_t size);

#endif
