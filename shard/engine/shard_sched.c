/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_sched.c: the group's schedule calls: setting, reading and printing the order, and
 * the engine's side of the schedule's decisions, which shard_plan.c takes, pure, so that
 * `sharc-perf predict` replays the same ones with a virtual clock. The schedule is the order
 * of units in the forward and then the backward of one pass, recorded from the begin calls
 * of the first step's first pass (or set by the caller).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "shard/engine/shard_engine.h"

static const char *const sharc_shard_phase_names[] = {"forward", "backward"};

sharc_status_t sharc_shard_sched_init(sharc_shard_group_t *g)
{
    sharc_shard_plan_t *p = &g->plan;
    int prefetch = p->prefetch, max_unsharded = p->max_unsharded, raf = p->reshard_after_forward;

    if (sharc_shard_plan_init(p, g->nunits) != 0) {
        return SHARC_ERR_NOMEM;
    }
    p->prefetch = prefetch;
    p->max_unsharded = max_unsharded;
    p->reshard_after_forward = raf;
    return SHARC_OK;
}

void sharc_shard_sched_free(sharc_shard_group_t *g)
{
    sharc_shard_plan_free(&g->plan);
}

void sharc_shard_sched_begin(sharc_shard_group_t *g, int phase, int unit)
{
    if (sharc_shard_plan_begin(&g->plan, phase, unit)) {
        sharc_debug("%s of unit %d is not next in the schedule; no prefetch this step",
                    sharc_shard_phase_names[phase], unit);
    }
}

int sharc_shard_sched_step(sharc_shard_group_t *g)
{
    int changed = sharc_shard_plan_step(&g->plan);

    for (int ph = 0; ph < SHARC_SHARD_PHASE_LAST; ph++) {
        if (changed & (1 << ph)) {
            sharc_info("the %s order changed; the schedule follows the last step",
                       sharc_shard_phase_names[ph]);
        }
    }
    return changed != 0;
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
    sharc_shard_plan_set_order(&g->plan, phase, units, n);
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
        memcpy(units, g->plan.order[phase],
               sizeof(int) * (size_t)SHARC_MIN(max, g->plan.norder[phase]));
    }
    if (n_p != NULL) {
        *n_p = g->plan.norder[phase];
    }
    return SHARC_OK;
}

void sharc_shard_schedule_print(sharc_shard_group_h g, FILE *stream)
{
    if (g == NULL || stream == NULL) {
        return;
    }
    fprintf(stream, "shard schedule: %d units, prefetch %d%s, at most %d unsharded, %s\n",
            g->nunits, g->plan.prefetch, g->prefetch_auto ? " (auto)" : "", g->plan.max_unsharded,
            g->plan.reshard_after_forward ? "resharded after forward" : "kept after forward");
    for (int ph = 0; ph < SHARC_SHARD_PHASE_LAST; ph++) {
        fprintf(stream, "  %-8s (%s):", sharc_shard_phase_names[ph],
                g->plan.order_set[ph]    ? "set"
                : g->plan.norder[ph] > 0 ? "recorded"
                                         : "not yet recorded");
        for (int i = 0; i < g->plan.norder[ph]; i++) {
            fprintf(stream, " %d", g->plan.order[ph][i]);
        }
        fputc('\n', stream);
    }
}
