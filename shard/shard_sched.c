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
int sharc_shard_sched_entries(const sharc_shard_group_t *g)
{
    return g->norder[SHARC_SHARD_FORWARD] + g->norder[SHARC_SHARD_BACKWARD];
}

void sharc_shard_sched_entry(const sharc_shard_group_t *g, int e, int *phase_p, int *unit_p)
{
    int nf = g->norder[SHARC_SHARD_FORWARD];

    *phase_p = (e < nf) ? SHARC_SHARD_FORWARD : SHARC_SHARD_BACKWARD;
    *unit_p = (e < nf) ? g->order[SHARC_SHARD_FORWARD][e] : g->order[SHARC_SHARD_BACKWARD][e - nf];
}

/* Note the begin of (phase, unit): record it, and move the cursor past its entry. */
void sharc_shard_sched_seen(sharc_shard_group_t *g, int phase, int unit)
{
    int total = sharc_shard_sched_entries(g), e;

    if (g->pass == 0 && g->nseen[phase] < SHARC_SHARD_SEEN_MAX(g)) {
        g->seen[phase][g->nseen[phase]++] = unit;
    }
    if (!g->sched_ok || total == 0) {
        return;
    }
    for (e = g->cursor; e < total; e++) {
        int ph, un;

        sharc_shard_sched_entry(g, e, &ph, &un);
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

int sharc_shard_sched_step(sharc_shard_group_t *g)
{
    int changed = 0;

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
            changed = 1;
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
    return changed;
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
    fprintf(stream, "shard schedule: %d units, prefetch %d%s, at most %d unsharded, %s\n",
            g->nunits, g->prefetch, g->prefetch_auto ? " (auto)" : "", g->max_unsharded,
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
