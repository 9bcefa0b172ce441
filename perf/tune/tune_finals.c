/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_finals.c: step 4 of `sharc-perf tune` (tune_search.c says the whole), the finals:
 * `rounds` rounds interleaved of the defaults, the per-size table alone and the table with the
 * global settings, and the decisions of what is kept; and --check's comparison of saved
 * settings with the defaults, interleaved the same way.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/perf_util.h"
#include "tune.h"
#include "tune_search.h"

#define PERF_TUNE_MAX_ROUNDS 16

typedef struct {
    double v[PERF_TUNE_MAX_ROUNDS][PERF_TUNE_MAX_SIZES];
    double cp[PERF_TUNE_MAX_ROUNDS][PERF_TUNE_MAX_SIZES];
    int ok[PERF_TUNE_MAX_SIZES]; /* measured in every round */
} rounds_t;

/* median and absolute spread of size i over the rounds */
static double rounds_median(const rounds_t *r, int rounds, int i, double *spread_p)
{
    double v[PERF_TUNE_MAX_ROUNDS], med;

    for (int k = 0; k < rounds; k++) {
        v[k] = r->v[k][i];
    }
    *spread_p = perf_tune_spread(v, rounds, &med) * med;
    return med;
}

static double rounds_min(const rounds_t *r, int rounds, int i)
{
    double v = r->v[0][i];

    for (int k = 1; k < rounds; k++) {
        v = r->v[k][i] < v ? r->v[k][i] : v;
    }
    return v;
}

static double rounds_max(const rounds_t *r, int rounds, int i)
{
    double v = r->v[0][i];

    for (int k = 1; k < rounds; k++) {
        v = r->v[k][i] > v ? r->v[k][i] : v;
    }
    return v;
}

/* The median over the rounds of the one-core copy seen beside size i (0 none). */
static double rounds_copy(const rounds_t *r, int rounds, int i)
{
    double cp[PERF_TUNE_MAX_ROUNDS];

    for (int k = 0; k < rounds; k++) {
        cp[k] = r->cp[k][i];
    }
    return perf_median_of(cp, (size_t)rounds);
}

/* The rounds asked for, within 1 .. PERF_TUNE_MAX_ROUNDS. */
static int rounds_of(const perf_tune_opts_t *o)
{
    return o->rounds < 1 ? 1 : o->rounds > PERF_TUNE_MAX_ROUNDS ? PERF_TUNE_MAX_ROUNDS : o->rounds;
}

/*
 * With the global settings kept: the sizes whose per-size setting was dropped ran under it in
 * the "table + global" rounds, which is not what is kept there. Measure them again with the
 * global settings alone, so that the tuned figures are of what the outputs hold.
 */
static int finals_dropped(perf_tune_search_t *s, int rounds)
{
    perf_tune_plan_t *plan = s->plan;
    static rounds_t again[PERF_TUNE_NCOLLS];
    static int need[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    int any[PERF_TUNE_NCOLLS] = {0};

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        for (int i = 0; perf_tune_tuned(s, c, ~0u) && i < plan->coll[c].n; i++) {
            need[c][i] = plan->coll[c].at[i].n > 0 && !plan->coll[c].kept[i];
            any[c] |= need[c][i];
        }
    }
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
            perf_tune_env_t envs[PERF_TUNE_MAX_SIZES];
            char tag[32];

            if (!any[c]) {
                continue;
            }
            for (int i = 0; i < plan->coll[c].n; i++) {
                envs[i] = plan->global;
            }
            perf_snprintf(tag, sizeof(tag), "final.global.%d", r + 1);
            if (perf_tune_measure_map(s, c, envs, need[c], tag, again[c].v[r], NULL) < 0) {
                return -1;
            }
        }
    }
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        perf_tune_coll_plan_t *p = &plan->coll[c];
        for (int i = 0; any[c] && i < p->n; i++) {
            double sa;
            if (need[c][i]) {
                p->tuned[i] = rounds_median(&again[c], rounds, i, &sa);
                p->spread[i] = sa > p->spread[i] ? sa : p->spread[i];
            }
        }
    }
    return 0;
}

/* The finals' rounds of every collective: the defaults, the per-size table (where a size has
 * a setting) and the table with the global settings; which sizes have a table. */
typedef struct {
    rounds_t base[PERF_TUNE_NCOLLS], table[PERF_TUNE_NCOLLS], full[PERF_TUNE_NCOLLS];
    int has_table[PERF_TUNE_NCOLLS];
    int has_at[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES]; /* sizes with per-size settings */
} finals_t;

/* Round r of collective c, interleaved: the defaults, the table, the table + global. */
static int finals_round(perf_tune_search_t *s, finals_t *f, int c, int r, int with_global)
{
    perf_tune_coll_plan_t *p = &s->plan->coll[c];
    perf_tune_env_t envs[PERF_TUNE_MAX_SIZES];
    char tag[32];

    memset(envs, 0, sizeof(envs));
    perf_snprintf(tag, sizeof(tag), "final.%d", r + 1);
    if (perf_tune_measure_map(s, c, envs, NULL, tag, f->base[c].v[r], f->base[c].cp[r]) < 0) {
        return -1;
    }
    if (f->has_table[c] &&
        perf_tune_measure_map(s, c, p->at, f->has_at[c], tag, f->table[c].v[r], NULL) < 0) {
        return -1;
    }
    for (int i = 0; with_global && i < p->n; i++) {
        perf_tune_env_merge(&envs[i], &s->plan->proposed, &p->at[i]);
    }
    if (with_global && perf_tune_measure_map(s, c, envs, NULL, tag, f->full[c].v[r], NULL) < 0) {
        return -1;
    }
    for (int i = 0; i < p->n; i++) {
        f->base[c].ok[i] &= f->base[c].v[r][i] > 0;
        f->table[c].ok[i] &= !f->has_at[c][i] || f->table[c].v[r][i] > 0;
        f->full[c].ok[i] &= !with_global || f->full[c].v[r][i] > 0;
    }
    return 0;
}

/* Per-size settings: the table against the defaults. */
static void finals_per_size(perf_tune_search_t *s, const finals_t *f, int rounds)
{
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        perf_tune_coll_plan_t *p = &s->plan->coll[c];
        const rounds_t *base = &f->base[c], *table = &f->table[c];

        for (int i = 0; perf_tune_tuned(s, c, ~0u) && i < p->n; i++) {
            double sb, st = 0, mb = rounds_median(base, rounds, i, &sb);
            double mt = f->has_at[c][i] ? rounds_median(table, rounds, i, &st) : mb;

            p->memcpy[i] = rounds_copy(base, rounds, i);
            p->base[i] = mb;
            p->spread[i] = sb > st ? sb : st;
            /* every round of the table above every round of the defaults, and the medians
             * apart by more than the spread plus the noise floor */
            p->kept[i] = p->at[i].n > 0 && base->ok[i] && table->ok[i] &&
                         rounds_min(table, rounds, i) > rounds_max(base, rounds, i) &&
                         mt - mb > p->spread[i] + s->o->noise_floor * mb;
            p->tuned[i] = p->kept[i] ? mt : mb;
        }
    }
}

/* Global settings: the table + them against the table (the defaults where it has nothing);
 * kept when the geometric-mean gain beats the median relative spread plus the noise floor. */
static int finals_global(perf_tune_search_t *s, const finals_t *f, int rounds)
{
    perf_tune_plan_t *plan = s->plan;
    double logsum = 0, spreads[PERF_TUNE_NCOLLS * PERF_TUNE_MAX_SIZES];
    int count = 0, nspreads = 0;

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        perf_tune_coll_plan_t *p = &plan->coll[c];

        for (int i = 0; perf_tune_tuned(s, c, ~0u) && i < p->n; i++) {
            /* where a per-size setting was dropped, "table + global" ran with it, which
             * is not what would be written: those sizes do not vote */
            const rounds_t *ref = f->has_at[c][i] ? &f->table[c] : &f->base[c];
            double sr, sf, mr = rounds_median(ref, rounds, i, &sr);
            double mf = rounds_median(&f->full[c], rounds, i, &sf);

            if (f->has_at[c][i] && !p->kept[i]) {
                continue;
            }
            if (f->full[c].ok[i] && ref->ok[i] && mr > 0) {
                logsum += log(mf / mr);
                count++;
                spreads[nspreads++] = (sr > sf ? sr : sf) / mr;
            }
        }
    }
    plan->global_gain = count ? exp(logsum / count) : 0;
    plan->global_spread = nspreads ? perf_median_of(spreads, (size_t)nspreads) : 0;
    if (count > 0 && plan->global_gain - 1 > plan->global_spread + s->o->noise_floor) {
        plan->global = plan->proposed;
        for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
            perf_tune_coll_plan_t *p = &plan->coll[c];
            for (int i = 0; perf_tune_tuned(s, c, ~0u) && i < p->n; i++) {
                double sf;
                p->tuned[i] = rounds_median(&f->full[c], rounds, i, &sf);
                p->spread[i] = sf > p->spread[i] ? sf : p->spread[i];
            }
        }
        if (finals_dropped(s, rounds) != 0) {
            return -1;
        }
    }
    perf_tune_say(s, "tune: global settings: %.3fx over the table, spread %.1f%%: %s\n",
                  plan->global_gain, 100 * plan->global_spread,
                  plan->global.n ? "kept" : "dropped (within noise)");
    return 0;
}

int perf_tune_finals(perf_tune_search_t *s, int with_global)
{
    perf_tune_plan_t *plan = s->plan;
    int rounds = rounds_of(s->o);
    static finals_t f;

    memset(f.has_table, 0, sizeof(f.has_table));
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        for (int i = 0; perf_tune_tuned(s, c, ~0u) && i < plan->coll[c].n; i++) {
            f.has_at[c][i] = plan->coll[c].at[i].n > 0;
            f.has_table[c] |= f.has_at[c][i];
            f.base[c].ok[i] = f.table[c].ok[i] = f.full[c].ok[i] = 1;
        }
    }
    perf_tune_say(s, "tune: finals, %d interleaved rounds: defaults, per-size table%s\n", rounds,
                  with_global ? ", table + global settings" : "");
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
            if (perf_tune_tuned(s, c, ~0u) && finals_round(s, &f, c, r, with_global) != 0) {
                return -1;
            }
        }
    }
    finals_per_size(s, &f, rounds);
    return with_global ? finals_global(s, &f, rounds) : 0;
}

/* ---- --check ------------------------------------------------------------------------------ */

int perf_tune_compare(const perf_tune_opts_t *o, perf_tune_plan_t *plan)
{
    perf_tune_search_t *s = calloc(1, sizeof(*s));
    int ret = -1, rounds = rounds_of(o);
    static rounds_t base[PERF_TUNE_NCOLLS], saved[PERF_TUNE_NCOLLS];

    if (s == NULL) {
        return -1;
    }
    s->o = o;
    s->plan = plan;
    s->t0 = o->now();
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
            perf_tune_coll_plan_t *p = &plan->coll[c];
            perf_tune_env_t none[PERF_TUNE_MAX_SIZES], envs[PERF_TUNE_MAX_SIZES];
            char tag[32];

            if (!perf_tune_tuned(s, c, ~0u) || p->n == 0) {
                continue;
            }
            memset(none, 0, sizeof(none));
            for (int i = 0; i < p->n; i++) {
                perf_tune_env_merge(&envs[i], &plan->global, p->kept[i] ? &p->at[i] : &none[i]);
            }
            perf_snprintf(tag, sizeof(tag), "check.%d", r + 1);
            if (perf_tune_measure_map(s, c, none, NULL, tag, base[c].v[r], base[c].cp[r]) < 0 ||
                perf_tune_measure_map(s, c, envs, NULL, tag, saved[c].v[r], NULL) < 0) {
                goto out;
            }
        }
    }
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        perf_tune_coll_plan_t *p = &plan->coll[c];

        for (int i = 0; perf_tune_tuned(s, c, ~0u) && i < p->n; i++) {
            double sb, st;

            p->base[i] = rounds_median(&base[c], rounds, i, &sb);
            p->tuned[i] = rounds_median(&saved[c], rounds, i, &st);
            p->spread[i] = sb > st ? sb : st;
            p->memcpy[i] = rounds_copy(&base[c], rounds, i);
        }
    }
    ret = 0;
out:
    plan->seconds = o->now() - s->t0;
    free(s);
    return ret;
}
