/*
 * shard_sched.c: the schedule and the step. The schedule is the order of units in the
 * forward and then the backward of one pass, recorded from the begin calls of the first
 * step's first pass (or set by the caller); every pass (micro-batch) of a step follows it
 * from its start. Along it the engine gathers the next `prefetch` entries ahead of use while
 * fewer than max_unsharded units are unsharded, and again whenever a reshard frees a slot.
 * Every decision depends only on the calls and the schedule, never on timing, so all ranks
 * post the same collectives in the same order.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include "../src/base/log.h"
#include "../src/base/util.h"
#include "shard.h"

static const char *const sharc_shard_phase_names[] = {"forward", "backward"};

/* Begins recorded per phase and step, at most: a unit may run more than once (tied weights). */
#define SHARC_SHARD_SEEN_MAX(_g) (4 * (_g)->nunits)

sharc_status_t sharc_shard_sched_init(sharc_shard_group_t *g)
{
    for (int ph = 0; ph < SHARC_SHARD_PHASE_LAST; ph++) {
        g->order[ph] = calloc((size_t)SHARC_SHARD_SEEN_MAX(g), sizeof(int));
        g->seen[ph] = calloc((size_t)SHARC_SHARD_SEEN_MAX(g), sizeof(int));
        if (g->order[ph] == NULL || g->seen[ph] == NULL) {
            return SHARC_ERR_NOMEM;
        }
    }
    g->sched_ok = 1;
    return SHARC_OK;
}

void sharc_shard_sched_free(sharc_shard_group_t *g)
{
    for (int ph = 0; ph < SHARC_SHARD_PHASE_LAST; ph++) {
        free(g->order[ph]);
        free(g->seen[ph]);
    }
}

/* Entries of the schedule: the forward order, then the backward order. */
static int sharc_shard_entries(const sharc_shard_group_t *g)
{
    return g->norder[SHARC_SHARD_FORWARD] + g->norder[SHARC_SHARD_BACKWARD];
}

static void sharc_shard_entry(const sharc_shard_group_t *g, int e, int *phase_p, int *unit_p)
{
    int nf = g->norder[SHARC_SHARD_FORWARD];

    *phase_p = (e < nf) ? SHARC_SHARD_FORWARD : SHARC_SHARD_BACKWARD;
    *unit_p = (e < nf) ? g->order[SHARC_SHARD_FORWARD][e] : g->order[SHARC_SHARD_BACKWARD][e - nf];
}

sharc_status_t sharc_shard_sched_prefetch(sharc_shard_group_t *g)
{
    int end = SHARC_MIN(sharc_shard_entries(g), g->cursor + g->prefetch);

    for (int e = g->cursor; g->sched_ok && e < end; e++) {
        int phase, unit;
        sharc_shard_unit_t *u;
        sharc_status_t status;

        sharc_shard_entry(g, e, &phase, &unit);
        u = &g->units[unit];
        if (u->pstate != SHARC_SHARD_SHARDED) {
            continue;
        }
        if (g->alive >= g->max_unsharded) {
            break; /* deferred: the next reshard frees a slot and comes back here */
        }
        status = sharc_shard_gather(g, u);
        if (status != SHARC_OK) {
            return status;
        }
        u->prefetched = 1;
        g->stats.prefetches++;
        u->stats.prefetches++;
    }
    return SHARC_OK;
}

/* Note the begin of (phase, unit): record it, and move the cursor past its entry. */
static void sharc_shard_sched_seen(sharc_shard_group_t *g, int phase, int unit)
{
    int total = sharc_shard_entries(g), e;

    if (g->pass == 0 && g->nseen[phase] < SHARC_SHARD_SEEN_MAX(g)) {
        g->seen[phase][g->nseen[phase]++] = unit;
    }
    if (!g->sched_ok || total == 0) {
        return;
    }
    for (e = g->cursor; e < total; e++) {
        int ph, un;

        sharc_shard_entry(g, e, &ph, &un);
        if (ph == phase && un == unit) {
            break;
        }
    }
    if (e == total || e != g->cursor) {
        /* off the schedule: stop prefetching for the rest of the step, re-record it */
        sharc_debug("%s of unit %d is not next in the schedule; no prefetch this step",
                    sharc_shard_phase_names[phase], unit);
        g->sched_ok = 0;
        return;
    }
    g->cursor = e + 1;
}

static sharc_status_t sharc_shard_begin_(sharc_shard_group_t *g, int phase, int unit,
                                         const char *what)
{
    sharc_status_t status = sharc_shard_enter(g, unit, what);
    sharc_shard_unit_t *u;

    if (status != SHARC_OK) {
        return status;
    }
    u = &g->units[unit];
    if (u->in_use) {
        sharc_error("%s: unit %d has begun already and not ended", what, unit);
        return SHARC_ERR_INVALID;
    }
    if (phase == SHARC_SHARD_FORWARD && g->pass_backward) { /* the next micro-batch */
        g->pass++;
        g->pass_backward = 0;
        g->cursor = 0;
        g->sched_ok = 1;
    }
    g->pass_backward |= phase == SHARC_SHARD_BACKWARD;
    sharc_shard_sched_seen(g, phase, unit);
    if (u->pstate == SHARC_SHARD_SHARDED) {
        status = sharc_shard_unshard(g, unit);
        if (status != SHARC_OK) {
            return status;
        }
    }
    u->prefetched = 0;
    u->in_use = 1;
    /* the next units' gathers queue behind this one's, and run while it is computed */
    status = sharc_shard_sched_prefetch(g);
    if (status == SHARC_OK) {
        status = sharc_shard_wait(g, unit);
    }
    if (status == SHARC_OK && phase == SHARC_SHARD_BACKWARD) {
        status = sharc_shard_settle_grads(g, u); /* the last micro-batch's reduction */
        if (status == SHARC_OK && u->gstate == SHARC_SHARD_GRAD_NONE) {
            status = sharc_shard_open_grads(g, u);
        }
    }
    return status;
}

static sharc_status_t sharc_shard_end_(sharc_shard_group_t *g, int phase, int unit,
                                       const char *what)
{
    sharc_status_t status = sharc_shard_enter(g, unit, what);
    sharc_shard_unit_t *u;
    int nf = g->norder[SHARC_SHARD_FORWARD], keep;

    if (status != SHARC_OK) {
        return status;
    }
    u = &g->units[unit];
    if (!u->in_use) {
        sharc_error("%s: unit %d has not begun", what, unit);
        return SHARC_ERR_INVALID;
    }
    u->in_use = 0;
    if (phase == SHARC_SHARD_FORWARD) {
        /* the forward's last unit is the backward's first: keep it rather than gather it
         * again at once (as FSDP2 does for its root) */
        keep = !g->reshard_after_forward ||
               (g->sched_ok && nf > 0 && g->cursor == nf && g->norder[SHARC_SHARD_BACKWARD] > 0 &&
                g->order[SHARC_SHARD_FORWARD][nf - 1] == unit &&
                g->order[SHARC_SHARD_BACKWARD][0] == unit);
    } else {
        keep = 0;
        if (g->sync) {
            if (u->gstate == SHARC_SHARD_GRAD_NONE) {
                status = sharc_shard_open_grads(g, u); /* every rank reduces, zeros or not */
            }
            if (status == SHARC_OK) {
                status = sharc_shard_reduce_grads(g, unit);
            }
        }
    }
    if (status == SHARC_OK && !keep) {
        status = sharc_shard_release(g, u);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_sched_prefetch(g);
    }
    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

/* begin and end, timed: the engine's cost on the caller's thread (engine_s) */
/* A step call, timed: the engine's cost on the caller's thread (engine_s; per call at debug). */
static sharc_status_t sharc_shard_timed(sharc_shard_group_t *g, int phase, int unit, int begin,
                                        const char *what)
{
    double t0 = sharc_time_now(), waited = (g != NULL) ? g->stats.exposed_s : 0;
    sharc_status_t status =
        begin ? sharc_shard_begin_(g, phase, unit, what) : sharc_shard_end_(g, phase, unit, what);

    if (g != NULL) {
        sharc_shard_stats_engine(g, t0);
        sharc_debug("%s(%d): %.3f ms, %.3f ms of it waiting", what, unit,
                    (sharc_time_now() - t0) * 1e3, (g->stats.exposed_s - waited) * 1e3);
    }
    return status;
}

static sharc_status_t sharc_shard_begin(sharc_shard_group_t *g, int phase, int unit,
                                        const char *what)
{
    return sharc_shard_timed(g, phase, unit, 1, what);
}

static sharc_status_t sharc_shard_end(sharc_shard_group_t *g, int phase, int unit, const char *what)
{
    return sharc_shard_timed(g, phase, unit, 0, what);
}

sharc_status_t sharc_shard_forward_begin(sharc_shard_group_h g, int unit)
{
    return sharc_shard_begin(g, SHARC_SHARD_FORWARD, unit, "sharc_shard_forward_begin");
}

sharc_status_t sharc_shard_forward_end(sharc_shard_group_h g, int unit)
{
    return sharc_shard_end(g, SHARC_SHARD_FORWARD, unit, "sharc_shard_forward_end");
}

sharc_status_t sharc_shard_backward_begin(sharc_shard_group_h g, int unit)
{
    return sharc_shard_begin(g, SHARC_SHARD_BACKWARD, unit, "sharc_shard_backward_begin");
}

sharc_status_t sharc_shard_backward_end(sharc_shard_group_h g, int unit)
{
    return sharc_shard_end(g, SHARC_SHARD_BACKWARD, unit, "sharc_shard_backward_end");
}

sharc_status_t sharc_shard_set_sync(sharc_shard_group_h g, int sync)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_set_sync");

    if (status == SHARC_OK) {
        g->sync = sync != 0;
    }
    return status;
}

void sharc_shard_sched_step(sharc_shard_group_t *g)
{
    for (int ph = 0; ph < SHARC_SHARD_PHASE_LAST; ph++) {
        int n = g->nseen[ph];

        if (g->order_set[ph] || n == 0 ||
            (n == g->norder[ph] && memcmp(g->seen[ph], g->order[ph], sizeof(int) * n) == 0)) {
            g->nseen[ph] = 0;
            continue;
        }
        if (g->norder[ph] > 0) {
            sharc_info("the %s order changed; the schedule follows the last step",
                       sharc_shard_phase_names[ph]);
        }
        /* swap: the seen order becomes the schedule, the old array records the next step */
        int *tmp = g->order[ph];
        g->order[ph] = g->seen[ph];
        g->seen[ph] = tmp;
        g->norder[ph] = n;
        g->nseen[ph] = 0;
    }
    g->cursor = 0;
    g->sched_ok = 1;
    g->pass = g->pass_backward = 0;
}

static sharc_status_t sharc_shard_phase_check(sharc_shard_group_t *g, sharc_shard_phase_t phase,
                                              const char *what)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, what);

    if (status == SHARC_OK && (phase < 0 || phase >= SHARC_SHARD_PHASE_LAST)) {
        sharc_error("%s: phase %d is neither SHARC_SHARD_FORWARD nor SHARC_SHARD_BACKWARD", what,
                    (int)phase);
        status = SHARC_ERR_INVALID;
    }
    return status;
}

sharc_status_t sharc_shard_set_order(sharc_shard_group_h g, sharc_shard_phase_t phase,
                                     const int *units, int n)
{
    sharc_status_t status = sharc_shard_phase_check(g, phase, "sharc_shard_set_order");
    char *seen;

    if (status != SHARC_OK) {
        return status;
    }
    if (n < 0 || n > g->nunits || (n > 0 && units == NULL)) {
        sharc_error("sharc_shard_set_order: %d units (0 .. %d)", n, g->nunits);
        return SHARC_ERR_INVALID;
    }
    seen = calloc((size_t)g->nunits, 1);
    if (seen == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        if (units[i] < 0 || units[i] >= g->nunits || seen[units[i]]) {
            sharc_error("sharc_shard_set_order: unit %d is %s", units[i],
                        (units[i] < 0 || units[i] >= g->nunits) ? "out of range" : "repeated");
            free(seen);
            return SHARC_ERR_INVALID;
        }
        seen[units[i]] = 1;
    }
    free(seen);
    memcpy(g->order[phase], units, sizeof(int) * (size_t)n);
    g->norder[phase] = n;
    g->order_set[phase] = 1;
    return SHARC_OK;
}

sharc_status_t sharc_shard_get_order(sharc_shard_group_h g, sharc_shard_phase_t phase, int *units,
                                     int max, int *n_p)
{
    sharc_status_t status = sharc_shard_phase_check(g, phase, "sharc_shard_get_order");

    if (status != SHARC_OK) {
        return status;
    }
    if (units != NULL && max > 0) {
        memcpy(units, g->order[phase], sizeof(int) * (size_t)SHARC_MIN(max, g->norder[phase]));
    }
    if (n_p != NULL) {
        *n_p = g->norder[phase];
    }
    return SHARC_OK;
}

void sharc_shard_schedule_print(sharc_shard_group_h g, FILE *stream)
{
    if (g == NULL || stream == NULL) {
        return;
    }
    fprintf(stream, "shard schedule: %d units, prefetch %d, at most %d unsharded, %s\n", g->nunits,
            g->prefetch, g->max_unsharded,
            g->reshard_after_forward ? "resharded after forward" : "kept after forward");
    for (int ph = 0; ph < SHARC_SHARD_PHASE_LAST; ph++) {
        fprintf(stream, "  %-8s (%s):", sharc_shard_phase_names[ph],
                g->order_set[ph]    ? "set"
                : g->norder[ph] > 0 ? "recorded"
                                    : "not yet recorded");
        for (int i = 0; i < g->norder[ph]; i++) {
            fprintf(stream, " %d", g->order[ph][i]);
        }
        fputc('\n', stream);
    }
}
