/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_search.c: the search and the decisions of `sharc-perf tune`, over a measuring
 * callback (a launcher in sharc-perf, a deterministic stand-in in the tests). Steps 1 to 3 are
 * here, the finals (4) are tune_finals.c's.
 *
 * 1. Defaults, twice per collective: the busbw to beat at each size, and the relative
 *    difference of the two runs as the noise the search must clear (at least noise_floor).
 * 2. Coordinate descent over the global knobs (one value for every size and collective):
 *    each value is launched for every collective it matters to; the score is the geometric
 *    mean of busbw over the current settings at every (collective, size); a value is taken
 *    when its score beats 1 + the median noise, the best one wins.
 * 3. The per-size knobs (algorithm tables) on top, per collective: at each size the value
 *    that beats the current busbw by more than that size's noise.
 * 4. Finals, `rounds` rounds interleaved: the defaults, the per-size table alone, and the
 *    table with the global settings. A per-size setting is kept where every round of the
 *    table beats every round of the defaults and the medians are apart by more than the
 *    spread (max - min over the rounds of either) plus the noise floor; the global settings
 *    are kept when their geometric-mean gain over the table exceeds the median relative
 *    spread plus the noise floor (and the sizes whose per-size setting was dropped then run
 *    again under the global settings alone, so the tuned figures are of what is written).
 *    A setting within noise is not kept.
 * Sizes whose per-size settings differ are measured in separate launches, one per group
 * (sharc-perf sweeps one range per job); the search stops starting launches once the budget
 * share is spent, and says which knobs it did not try.
 */
#include "../common/perf_util.h"
#include "tune.h"
#include "tune_search.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void ratio_acc(const double *a, const double *b, int n, double *logsum, int *count)
{
    for (int i = 0; i < n; i++) {
        if (a[i] > 0 && b[i] > 0) {
            *logsum += log(a[i] / b[i]);
            (*count)++;
        }
    }
}

/* ---- 1. the defaults ---------------------------------------------------------------------- */

static int defaults(perf_tune_search_t *s)
{
    const perf_tune_opts_t *o = s->o;
    perf_tune_env_t none = {0};
    int any = 0;

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        perf_tune_coll_plan_t *p = &s->plan->coll[c];
        perf_tune_result_t r1, r2;

        if (!(o->colls & (1u << c))) {
            continue;
        }
        p->coll = c;
        if (perf_tune_launch(s, c, o->minb, o->maxb, &none, "base.1", &r1) != 0 ||
            perf_tune_launch(s, c, o->minb, o->maxb, &none, "base.2", &r2) != 0) {
            return -1;
        }
        if (!r1.ok || !r2.ok || r1.n == 0 || r1.n != r2.n) {
            perf_tune_say(s, "tune: %s: the defaults could not be measured; not tuned\n",
                          sharc_coll_name((sharc_coll_type_t)(c)));
            p->failed = 1;
            continue;
        }
        p->n = r1.n < PERF_TUNE_MAX_SIZES ? r1.n : PERF_TUNE_MAX_SIZES;
        for (int i = 0; i < p->n; i++) {
            double mean = 0.5 * (r1.busbw[i] + r2.busbw[i]);
            double noise = mean > 0 ? fabs(r1.busbw[i] - r2.busbw[i]) / mean : 1;

            p->size[i] = r1.size[i];
            s->cur[c][i] = mean;
            s->noise[c][i] = noise > o->noise_floor ? noise : o->noise_floor;
        }
        any = 1;
        perf_tune_say(s, "tune: %s defaults measured at %d sizes\n",
                      sharc_coll_name((sharc_coll_type_t)(c)), p->n);
    }
    return any ? 0 : -1;
}

/* ---- 2. global knobs ---------------------------------------------------------------------- */

static double median_noise(const perf_tune_search_t *s)
{
    double v[PERF_TUNE_NCOLLS * PERF_TUNE_MAX_SIZES];
    int n = 0;

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        for (int i = 0; perf_tune_tuned(s, c, ~0u) && i < s->plan->coll[c].n; i++) {
            v[n++] = s->noise[c][i];
        }
    }
    return n ? perf_median_of(v, (size_t)n) : s->o->noise_floor;
}

static int global_knob(perf_tune_search_t *s, const perf_tune_knob_t *k)
{
    static double got[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    static double best_bw[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    double need = 1 + median_noise(s), best_score = need;
    int best = -1;

    for (int v = 0; v < k->nvalues; v++) {
        double logsum = 0, score;
        int count = 0, ok = 1;

        if (perf_tune_over_budget(s)) {
            perf_tune_say(s, "tune: %s: budget spent after %d of %d values\n", k->name, v,
                          k->nvalues);
            break;
        }
        for (int c = 0; c < PERF_TUNE_NCOLLS && ok; c++) {
            perf_tune_env_t envs[PERF_TUNE_MAX_SIZES];

            if (!perf_tune_tuned(s, c, k->colls)) {
                continue;
            }
            for (int i = 0; i < s->plan->coll[c].n; i++) {
                envs[i] = s->env[c][i];
                perf_tune_env_apply(&envs[i], k->values[v]);
            }
            int m = perf_tune_measure_map(s, c, envs, NULL, "search", got[c], NULL);
            if (m < 0) {
                return -1;
            }
            ok = m == 1;
            ratio_acc(got[c], s->cur[c], s->plan->coll[c].n, &logsum, &count);
        }
        if (!ok || count == 0) {
            continue;
        }
        score = exp(logsum / count);
        perf_tune_say(s, "tune: %-28s %-40s %6.3fx the current settings (needs > %.3fx)\n", k->name,
                      k->values[v], score, need);
        if (score > best_score) {
            best_score = score;
            best = v;
            memcpy(best_bw, got, sizeof(got));
        }
    }
    if (best >= 0) {
        perf_tune_env_apply(&s->plan->proposed, k->values[best]);
        for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
            for (int i = 0; perf_tune_tuned(s, c, k->colls) && i < s->plan->coll[c].n; i++) {
                perf_tune_env_apply(&s->env[c][i], k->values[best]);
                s->cur[c][i] = best_bw[c][i];
            }
        }
        perf_tune_say(s, "tune: %s: taking %s (%.3fx)\n", k->name, k->values[best], best_score);
    }
    return 0;
}

/* ---- 3. per-size knobs -------------------------------------------------------------------- */

static int per_size_knob(perf_tune_search_t *s, const perf_tune_knob_t *k, int c)
{
    perf_tune_coll_plan_t *p = &s->plan->coll[c];
    double got[PERF_TUNE_MAX_SIZES], best_bw[PERF_TUNE_MAX_SIZES];
    int best[PERF_TUNE_MAX_SIZES];

    for (int i = 0; i < p->n; i++) {
        best[i] = -1;
        best_bw[i] = s->cur[c][i] * (1 + s->noise[c][i]);
    }
    for (int v = 0; v < k->nvalues; v++) {
        perf_tune_env_t envs[PERF_TUNE_MAX_SIZES];
        int wins = 0;

        if (perf_tune_over_budget(s)) {
            perf_tune_say(s, "tune: %s %s: budget spent after %d of %d values\n",
                          sharc_coll_name((sharc_coll_type_t)(c)), k->name, v, k->nvalues);
            break;
        }
        for (int i = 0; i < p->n; i++) {
            envs[i] = s->env[c][i];
            perf_tune_env_apply(&envs[i], k->values[v]);
        }
        if (perf_tune_measure_map(s, c, envs, NULL, "search", got, NULL) < 0) {
            return -1;
        }
        for (int i = 0; i < p->n; i++) {
            if (got[i] > best_bw[i]) {
                best_bw[i] = got[i];
                best[i] = v;
                wins++;
            }
        }
        perf_tune_say(s, "tune: %-14s %-28s %-32s best so far at %d of %d sizes\n",
                      sharc_coll_name((sharc_coll_type_t)(c)), k->name, k->values[v], wins, p->n);
    }
    for (int i = 0; i < p->n; i++) {
        if (best[i] >= 0) {
            perf_tune_env_apply(&s->env[c][i], k->values[best[i]]);
            perf_tune_env_apply(&p->at[i], k->values[best[i]]);
            s->cur[c][i] = best_bw[i];
        }
    }
    return 0;
}

/* ---- the whole run ------------------------------------------------------------------------ */

int perf_tune_run(const perf_tune_opts_t *o, const perf_tune_space_t *space, perf_tune_plan_t *plan)
{
    perf_tune_search_t *s = calloc(1, sizeof(*s));
    int ret = -1;

    if (s == NULL) {
        return -1;
    }
    memset(plan, 0, sizeof(*plan));
    s->o = o;
    s->plan = plan;
    s->t0 = o->now();
    if (defaults(s) != 0) {
        goto out;
    }
    /* global knobs first, then the per-size tables on top of what they chose */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < space->nknobs; k++) {
            const perf_tune_knob_t *knob = &space->knobs[k];
            int any = 0;

            if (knob->per_size != pass) {
                continue;
            }
            for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
                any |= perf_tune_tuned(s, c, knob->colls);
            }
            if (!any) {
                continue;
            }
            if (perf_tune_over_budget(s)) {
                perf_tune_say(s, "tune: %s: not tried (budget spent)\n", knob->name);
                plan->knobs_skipped++;
                continue;
            }
            plan->knobs_tried++;
            if (!pass && global_knob(s, knob) != 0) {
                goto out;
            }
            for (int c = 0; pass && c < PERF_TUNE_NCOLLS; c++) {
                if (perf_tune_tuned(s, c, knob->colls) && per_size_knob(s, knob, c) != 0) {
                    goto out;
                }
            }
        }
    }
    if (perf_tune_finals(s, plan->proposed.n > 0) != 0) {
        goto out;
    }
    ret = 0;
out:
    plan->seconds = o->now() - s->t0;
    free(s);
    return ret;
}
