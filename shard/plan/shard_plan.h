/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_plan.h: the sharding engine's schedule decisions, pure: which units to gather ahead
 * along the recorded schedule (prefetch), when the bound on unsharded units holds one back,
 * which prefetched unit to evict for a unit wanted now, whether the forward's last unit is
 * kept for the backward, and how each step's begins become the next step's schedule. No
 * memory but its own, no communication, no clock: the engine (shard_step.c, shard_unit.c)
 * calls it with the real collectives, and `sharc-perf predict` with a virtual clock, so a
 * prediction replays the same decisions. Includes libc headers only.
 */
#ifndef SHARC_SHARD_PLAN_H
#define SHARC_SHARD_PLAN_H

#include <stdint.h>

/* Phases, as sharc_shard_phase_t numbers them (forward 0, backward 1). */
#define SHARC_SHARD_PLAN_FORWARD  0
#define SHARC_SHARD_PLAN_BACKWARD 1
#define SHARC_SHARD_PLAN_PHASES   2

/* sharc_shard_plan_prefetch_next's answers besides a unit. */
#define SHARC_SHARD_PLAN_NONE  (-1) /* nothing to gather ahead now */
#define SHARC_SHARD_PLAN_DEFER (-2) /* the next one waits: the bound is reached */

/* What the planner knows of one unit. */
typedef struct {
    unsigned char unsharded;  /* gathering or gathered (not SHARDED) */
    unsigned char prefetched; /* gathered ahead of its begin, and not used yet */
    unsigned char in_use;     /* between a begin and its end */
    uint64_t posted;          /* when its gather was posted, in gathers of the group */
} sharc_shard_plan_unit_t;

typedef struct {
    int nunits;
    int prefetch;              /* units gathered ahead of use (the depth in use) */
    int max_unsharded;         /* the bound on unsharded units (resolved, > 0) */
    int reshard_after_forward; /* 0: every unit stays gathered from forward to backward */
    /* per phase: the order in use and the one being seen; order set by the caller is kept */
    int *order[SHARC_SHARD_PLAN_PHASES], norder[SHARC_SHARD_PLAN_PHASES];
    int order_set[SHARC_SHARD_PLAN_PHASES];
    int *seen[SHARC_SHARD_PLAN_PHASES], nseen[SHARC_SHARD_PLAN_PHASES];
    int cursor; /* entries of forward-then-backward begun this pass */
    /* passes (micro-batches) of this step: a forward begun after a backward starts the next
     * one, which follows the schedule from its start; the first pass is the one recorded */
    int pass, pass_backward;
    int sched_ok; /* this step has followed the schedule so far: prefetch along it */
    int alive;    /* units unsharded */
    uint64_t clock;
    sharc_shard_plan_unit_t *units; /* [nunits] */
} sharc_shard_plan_t;

/* Begins recorded per phase and step, at most: a unit may run more than once (tied weights). */
#define SHARC_SHARD_PLAN_SEEN_MAX(_p) (4 * (_p)->nunits)

/* Arrays for @p nunits units (the caller sets prefetch, max_unsharded and
 * reshard_after_forward). Returns 0, or -1 when out of memory (nothing held then). */
int sharc_shard_plan_init(sharc_shard_plan_t *p, int nunits);
void sharc_shard_plan_free(sharc_shard_plan_t *p);

/* Entries of the schedule: the forward order, then the backward order; entry @p e. */
int sharc_shard_plan_entries(const sharc_shard_plan_t *p);
void sharc_shard_plan_entry(const sharc_shard_plan_t *p, int e, int *phase_p, int *unit_p);

/* Set a phase's order (checked by the caller); it is never re-recorded. */
void sharc_shard_plan_set_order(sharc_shard_plan_t *p, int phase, const int *units, int n);

/*
 * A begin of (phase, unit): a forward after a backward starts the next pass; the begin is
 * recorded and the cursor moves past its entry. Returns 1 when the begin left the schedule
 * (no prefetch for the rest of the step), else 0.
 */
int sharc_shard_plan_begin(sharc_shard_plan_t *p, int phase, int unit);

/* The unit is used now (after its begin found it gathered), and no longer (its end). */
void sharc_shard_plan_use(sharc_shard_plan_t *p, int unit);
void sharc_shard_plan_unuse(sharc_shard_plan_t *p, int unit);

/* A gather of the unit was posted (@p prefetched: ahead of its begin); it was released. */
void sharc_shard_plan_gathered(sharc_shard_plan_t *p, int unit, int prefetched);
void sharc_shard_plan_released(sharc_shard_plan_t *p, int unit);

/*
 * The next unit to gather ahead of use along the schedule from the cursor, within the
 * prefetch depth (*ahead_p: entries ahead, 1 = the next one); SHARC_SHARD_PLAN_NONE when
 * there is none; SHARC_SHARD_PLAN_DEFER when the bound holds the next one back (*deferred_p:
 * that unit; the next reshard frees a slot and the caller asks again). The caller gathers
 * the unit returned (sharc_shard_plan_gathered) and asks again.
 */
int sharc_shard_plan_prefetch_next(const sharc_shard_plan_t *p, int *ahead_p, int *deferred_p);

/* A unit is wanted now and the bound is reached: the prefetched, unused unit to release
 * (the last one posted: it is needed last), or SHARC_SHARD_PLAN_NONE when there is none;
 * SHARC_SHARD_PLAN_NONE with *full_p 0 when there is room. */
int sharc_shard_plan_victim(const sharc_shard_plan_t *p, int *full_p);

/* At a forward end: whether the unit stays gathered (not resharded after forward, or the
 * forward's last unit, which is the backward's first). */
int sharc_shard_plan_keep(const sharc_shard_plan_t *p, int unit);

/* Whether the step so far followed a recorded schedule (prefetch ran along it). */
int sharc_shard_plan_followed(const sharc_shard_plan_t *p);

/*
 * A step ended: adopt each phase's order seen this step where it differs from the schedule
 * (unless set by the caller), and start the next step at the schedule's start. Returns a
 * mask of the phases whose recorded order changed (1 << phase; the first recording does not
 * count).
 */
int sharc_shard_plan_step(sharc_shard_plan_t *p);

/* ---- adaptive prefetch's decision (shard_plan_auto.c; the engine's agreement across ranks
 * that feeds it is shard_auto.c) ---------------------------------------------------------- */

/* The most units auto prefetch gathers ahead when max_unsharded is derived (0). */
#define SHARC_SHARD_AUTO_DEPTH_MAX 3

/*
 * What one step tells the depth decision, every value the same on every rank: the longest
 * any rank waited for all-gathers and the longest step (agreed by an all-reduce of the
 * maximum), and counts that follow from the calls and the schedule alone.
 */
typedef struct {
    double gather_wait_s, step_s;
    int evictions; /* prefetched units released unused at the bound */
    int deferred;  /* prefetches the bound held back */
    int followed;  /* the step followed a recorded schedule (prefetch ran along it) */
    int reset;     /* the schedule was recorded anew at the step's end */
} sharc_shard_auto_input_t;

/* Why the depth changed (sharc_shard_auto_why names them). */
typedef enum {
    SHARC_SHARD_AUTO_START,  /* the depth it starts from */
    SHARC_SHARD_AUTO_RAISE,  /* gathers were waited for, and the bound admits one more */
    SHARC_SHARD_AUTO_REVERT, /* the last raise did not cut the waits: back, and stay */
    SHARC_SHARD_AUTO_MEMORY, /* the bound evicted or held back prefetches: one less, and stay */
    SHARC_SHARD_AUTO_RESET,  /* the schedule was recorded anew: explore again from here */
    SHARC_SHARD_AUTO_WHY_LAST
} sharc_shard_auto_why_t;

const char *sharc_shard_auto_why(int why);

/* The decision's state: a pure function of the inputs so far, the same on every rank. */
typedef struct {
    int depth;          /* in use */
    int cap;            /* the most the memory bound admits: max_unsharded - 1 */
    int settled;        /* raising stopped: it no longer helped, or memory is the limit */
    int trial;          /* the depth was raised: the next window checks that it helped */
    double wait_before; /* the window's least gather wait before the raise under trial */
    int why;            /* sharc_shard_auto_why_t of the last change */
    /* the agreed gather waits and step times of the last steps at this depth */
    double hist_wait[2], hist_step[2];
    int nhist;
} sharc_shard_auto_state_t;

/* Start at depth 1 under a cap of @p cap (>= 1). */
void sharc_shard_auto_init(sharc_shard_auto_state_t *s, int cap);

/* One step's inputs: the depth for the next step (s->depth). Returns whether it changed. */
int sharc_shard_auto_decide(sharc_shard_auto_state_t *s, const sharc_shard_auto_input_t *in);

#endif
