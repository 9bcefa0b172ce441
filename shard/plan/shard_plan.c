/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_plan.c: the schedule's decisions (shard_plan.h), pure. The schedule is the order of
 * units in the forward and then the backward of one pass, recorded from the begins of the
 * first step's first pass (or set by the caller); every pass of a step follows it from its
 * start. Along it the next `prefetch` entries are gathered ahead of use while fewer than
 * max_unsharded units are unsharded, and again whenever a reshard frees a slot. Every
 * decision depends only on the calls and the schedule, never on timing, so all ranks post
 * the same collectives in the same order, and a simulation with a virtual clock posts them
 * as the engine does.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "shard/plan/shard_plan.h"

int sharc_shard_plan_init(sharc_shard_plan_t *p, int nunits)
{
    int ph;

    memset(p, 0, sizeof(*p));
    p->nunits = nunits;
    p->units = calloc((size_t)(nunits > 0 ? nunits : 1), sizeof(*p->units));
    for (ph = 0; ph < SHARC_SHARD_PLAN_PHASES; ph++) {
        p->order[ph] = calloc((size_t)SHARC_SHARD_PLAN_SEEN_MAX(p) + 1, sizeof(int));
        p->seen[ph] = calloc((size_t)SHARC_SHARD_PLAN_SEEN_MAX(p) + 1, sizeof(int));
    }
    if (p->units == NULL || p->order[0] == NULL || p->order[1] == NULL || p->seen[0] == NULL ||
        p->seen[1] == NULL) {
        sharc_shard_plan_free(p);
        return -1;
    }
    p->sched_ok = 1;
    return 0;
}

void sharc_shard_plan_free(sharc_shard_plan_t *p)
{
    for (int ph = 0; ph < SHARC_SHARD_PLAN_PHASES; ph++) {
        free(p->order[ph]);
        free(p->seen[ph]);
        p->order[ph] = p->seen[ph] = NULL;
    }
    free(p->units);
    p->units = NULL;
}

int sharc_shard_plan_entries(const sharc_shard_plan_t *p)
{
    return p->norder[SHARC_SHARD_PLAN_FORWARD] + p->norder[SHARC_SHARD_PLAN_BACKWARD];
}

void sharc_shard_plan_entry(const sharc_shard_plan_t *p, int e, int *phase_p, int *unit_p)
{
    int nf = p->norder[SHARC_SHARD_PLAN_FORWARD];

    *phase_p = (e < nf) ? SHARC_SHARD_PLAN_FORWARD : SHARC_SHARD_PLAN_BACKWARD;
    *unit_p = (e < nf) ? p->order[SHARC_SHARD_PLAN_FORWARD][e]
                       : p->order[SHARC_SHARD_PLAN_BACKWARD][e - nf];
}

void sharc_shard_plan_set_order(sharc_shard_plan_t *p, int phase, const int *units, int n)
{
    memcpy(p->order[phase], units, sizeof(int) * (size_t)n);
    p->norder[phase] = n;
    p->order_set[phase] = 1;
}

/* Record the begin of (phase, unit), and move the cursor past its entry. */
static int sharc_shard_plan_seen(sharc_shard_plan_t *p, int phase, int unit)
{
    int total = sharc_shard_plan_entries(p), e;

    if (p->pass == 0 && p->nseen[phase] < SHARC_SHARD_PLAN_SEEN_MAX(p)) {
        p->seen[phase][p->nseen[phase]++] = unit;
    }
    if (!p->sched_ok || total == 0) {
        return 0;
    }
    for (e = p->cursor; e < total; e++) {
        int ph, un;

        sharc_shard_plan_entry(p, e, &ph, &un);
        if (ph == phase && un == unit) {
            break;
        }
    }
    if (e == total || e != p->cursor) {
        p->sched_ok = 0; /* off the schedule: no prefetch for the rest of the step */
        return 1;
    }
    p->cursor = e + 1;
    return 0;
}

int sharc_shard_plan_begin(sharc_shard_plan_t *p, int phase, int unit)
{
    if (phase == SHARC_SHARD_PLAN_FORWARD && p->pass_backward) { /* the next micro-batch */
        p->pass++;
        p->pass_backward = 0;
        p->cursor = 0;
        p->sched_ok = 1;
    }
    p->pass_backward |= phase == SHARC_SHARD_PLAN_BACKWARD;
    return sharc_shard_plan_seen(p, phase, unit);
}

void sharc_shard_plan_use(sharc_shard_plan_t *p, int unit)
{
    p->units[unit].prefetched = 0;
    p->units[unit].in_use = 1;
}

void sharc_shard_plan_unuse(sharc_shard_plan_t *p, int unit)
{
    p->units[unit].in_use = 0;
}

void sharc_shard_plan_gathered(sharc_shard_plan_t *p, int unit, int prefetched)
{
    p->units[unit].unsharded = 1;
    p->units[unit].prefetched = prefetched != 0;
    p->units[unit].posted = ++p->clock;
    p->alive++;
}

void sharc_shard_plan_released(sharc_shard_plan_t *p, int unit)
{
    p->units[unit].unsharded = 0;
    p->units[unit].prefetched = 0;
    p->alive--;
}

int sharc_shard_plan_prefetch_next(const sharc_shard_plan_t *p, int *ahead_p, int *deferred_p)
{
    int total = sharc_shard_plan_entries(p);
    int end = (p->cursor + p->prefetch < total) ? p->cursor + p->prefetch : total;

    for (int e = p->cursor; p->sched_ok && e < end; e++) {
        int phase, unit;

        sharc_shard_plan_entry(p, e, &phase, &unit);
        if (p->units[unit].unsharded) {
            continue;
        }
        if (p->alive >= p->max_unsharded) {
            *deferred_p = unit;
            return SHARC_SHARD_PLAN_DEFER;
        }
        *ahead_p = e - p->cursor + 1;
        return unit;
    }
    return SHARC_SHARD_PLAN_NONE;
}

int sharc_shard_plan_victim(const sharc_shard_plan_t *p, int *full_p)
{
    int victim = SHARC_SHARD_PLAN_NONE;

    *full_p = p->alive >= p->max_unsharded;
    if (!*full_p) {
        return SHARC_SHARD_PLAN_NONE;
    }
    for (int i = 0; i < p->nunits; i++) {
        const sharc_shard_plan_unit_t *u = &p->units[i];

        if (u->unsharded && u->prefetched && !u->in_use &&
            (victim == SHARC_SHARD_PLAN_NONE || u->posted > p->units[victim].posted)) {
            victim = i;
        }
    }
    return victim;
}

int sharc_shard_plan_keep(const sharc_shard_plan_t *p, int unit)
{
    int nf = p->norder[SHARC_SHARD_PLAN_FORWARD];

    /* the forward's last unit is the backward's first: keep it rather than gather it again
     * at once (as FSDP2 does for its root) */
    return !p->reshard_after_forward ||
           (p->sched_ok && nf > 0 && p->cursor == nf && p->norder[SHARC_SHARD_PLAN_BACKWARD] > 0 &&
            p->order[SHARC_SHARD_PLAN_FORWARD][nf - 1] == unit &&
            p->order[SHARC_SHARD_PLAN_BACKWARD][0] == unit);
}

int sharc_shard_plan_followed(const sharc_shard_plan_t *p)
{
    return p->sched_ok && sharc_shard_plan_entries(p) > 0;
}

int sharc_shard_plan_step(sharc_shard_plan_t *p)
{
    int changed = 0;

    for (int ph = 0; ph < SHARC_SHARD_PLAN_PHASES; ph++) {
        int n = p->nseen[ph];

        if (p->order_set[ph] || n == 0 ||
            (n == p->norder[ph] && memcmp(p->seen[ph], p->order[ph], sizeof(int) * n) == 0)) {
            p->nseen[ph] = 0;
            continue;
        }
        if (p->norder[ph] > 0) {
            changed |= 1 << ph;
        }
        /* swap: the seen order becomes the schedule, the old array records the next step */
        int *tmp = p->order[ph];
        p->order[ph] = p->seen[ph];
        p->seen[ph] = tmp;
        p->norder[ph] = n;
        p->nseen[ph] = 0;
    }
    p->cursor = 0;
    p->sched_ok = 1;
    p->pass = p->pass_backward = 0;
    return changed;
}
