/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_plan_auto.c: adaptive prefetch's decision (SHARC_SHARD_PREFETCH=auto), pure: the
 * depth starts at 1 and goes up by one while the caller waits for all-gathers and the bound
 * on unsharded units admits one more ahead; a raise that does not cut the waits is taken
 * back, and memory pressure takes one back; then it stays until the schedule is recorded
 * anew. Its inputs are the same on every rank (shard_auto.c agrees on them); sharc-perf
 * predict feeds it a simulated step's. Includes libc headers only.
 */
#include "config.h"

#include "shard/plan/shard_plan.h"

#define PLAN_MIN(_a, _b) ((_a) < (_b) ? (_a) : (_b))
#define PLAN_MAX(_a, _b) ((_a) > (_b) ? (_a) : (_b))

/* Gather waits are exposed when they pass this share of the step, and this many seconds. */
#define SHARC_SHARD_AUTO_EXPOSED   0.01
#define SHARC_SHARD_AUTO_EXPOSED_S 50e-6
/* A raise must cut the waits by this share to stay (small: a trial is two steps, and on a
 * noisy machine a stricter test takes back raises that help, measured: depth 2 gave 87%
 * against 78% at depth 1 on 2 ranks, where a fifth as the test kept depth 1 in half the
 * runs). */
#define SHARC_SHARD_AUTO_GAIN 0.05
/* Steps looked at per depth: their smallest wait counts, so that one step slowed by
 * something else (a noisy machine, a step that differs) does not decide alone. */
#define SHARC_SHARD_AUTO_WINDOW 2

static const char *const sharc_shard_auto_whys[] = {
    [SHARC_SHARD_AUTO_START] = "start",
    [SHARC_SHARD_AUTO_RAISE] = "gathers waited for, the bound admits one more",
    [SHARC_SHARD_AUTO_REVERT] = "the last raise did not cut the waits",
    [SHARC_SHARD_AUTO_MEMORY] = "the bound on unsharded units evicted or held back prefetches",
    [SHARC_SHARD_AUTO_RESET] = "the schedule was recorded anew",
};

const char *sharc_shard_auto_why(int why)
{
    return (why >= 0 && why < SHARC_SHARD_AUTO_WHY_LAST) ? sharc_shard_auto_whys[why] : "?";
}

/* ---- the decision ---------------------------------------------------------------------- */

void sharc_shard_auto_init(sharc_shard_auto_state_t *s, int cap)
{
    *s = (sharc_shard_auto_state_t){.cap = PLAN_MAX(cap, 0), .why = SHARC_SHARD_AUTO_START};
    s->depth = PLAN_MIN(1, s->cap);
}

/* The smallest wait of the window, and whether it is exposed in its step. */
static double sharc_shard_auto_least(const sharc_shard_auto_state_t *s, int *exposed_p)
{
    int best = 0;

    for (int i = 1; i < s->nhist; i++) {
        best = (s->hist_wait[i] < s->hist_wait[best]) ? i : best;
    }
    *exposed_p = s->hist_wait[best] > SHARC_SHARD_AUTO_EXPOSED * s->hist_step[best] &&
                 s->hist_wait[best] > SHARC_SHARD_AUTO_EXPOSED_S;
    return s->hist_wait[best];
}

int sharc_shard_auto_decide(sharc_shard_auto_state_t *s, const sharc_shard_auto_input_t *in)
{
    int old = s->depth, exposed;
    double least;

    if (in->reset) { /* another schedule: what was learnt is about the old one */
        s->settled = s->trial = s->nhist = 0;
        s->why = SHARC_SHARD_AUTO_RESET;
    }
    if (!in->followed) {
        return 0; /* off the schedule, prefetch stopped: the step says nothing of the depth */
    }
    if (in->evictions > 0 || in->deferred > 0) {
        s->depth = PLAN_MAX(PLAN_MIN(1, s->cap), s->depth - 1);
        s->settled = 1;
        s->trial = s->nhist = 0;
        s->why = SHARC_SHARD_AUTO_MEMORY;
        return s->depth != old;
    }
    if (s->nhist == SHARC_SHARD_AUTO_WINDOW) {
        for (int i = 1; i < s->nhist; i++) {
            s->hist_wait[i - 1] = s->hist_wait[i];
            s->hist_step[i - 1] = s->hist_step[i];
        }
        s->nhist--;
    }
    s->hist_wait[s->nhist] = in->gather_wait_s;
    s->hist_step[s->nhist] = in->step_s;
    s->nhist++;
    if (s->nhist < SHARC_SHARD_AUTO_WINDOW) {
        return 0;
    }
    least = sharc_shard_auto_least(s, &exposed);
    if (s->trial) {
        s->trial = 0;
        if (least > (1.0 - SHARC_SHARD_AUTO_GAIN) * s->wait_before) {
            s->depth--;
            s->settled = 1;
            s->nhist = 0;
            s->why = SHARC_SHARD_AUTO_REVERT;
            return 1;
        }
        /* it helped: the window is the new depth's; one more if still exposed */
    }
    if (!s->settled && exposed && s->depth < s->cap) {
        s->wait_before = least;
        s->depth++;
        s->trial = 1;
        s->nhist = 0;
        s->why = SHARC_SHARD_AUTO_RAISE;
    }
    return s->depth != old;
}
