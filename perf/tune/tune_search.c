/*
 * tune_search.c: the search and the decisions of `sharc-perf tune`, over a measuring
 * callback (a launcher in sharc-perf, a deterministic stand-in in the tests).
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

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- environments ------------------------------------------------------------------------- */

int perf_tune_env_set(perf_tune_env_t *env, const char *key, const char *value)
{
    int i;

    if (strlen(key) >= PERF_TUNE_NAME || strlen(value) >= PERF_TUNE_VALUE) {
        return -1;
    }
    for (i = 0; i < env->n && strcmp(env->kv[i].key, key) != 0; i++) {
    }
    if (i == env->n) {
        if (env->n == PERF_TUNE_MAX_KV) {
            return -1;
        }
        env->n++;
    }
    perf_snprintf(env->kv[i].key, sizeof(env->kv[i].key), "%s", key);
    perf_snprintf(env->kv[i].value, sizeof(env->kv[i].value), "%s", value);
    return 0;
}

int perf_tune_env_apply(perf_tune_env_t *env, const char *assignments)
{
    char buf[PERF_TUNE_VALUE * 2];
    char *save = NULL;

    perf_snprintf(buf, sizeof(buf), "%s", assignments);
    for (char *a = strtok_r(buf, ";", &save); a != NULL; a = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(a, '=');

        if (eq == NULL || eq == a) {
            return -1;
        }
        *eq = '\0';
        if (perf_tune_env_set(env, a, eq + 1) != 0) {
            return -1;
        }
    }
    return 0;
}

const char *perf_tune_env_get(const perf_tune_env_t *env, const char *key)
{
    for (int i = 0; i < env->n; i++) {
        if (strcmp(env->kv[i].key, key) == 0) {
            return env->kv[i].value;
        }
    }
    return NULL;
}

void perf_tune_env_merge(perf_tune_env_t *env, const perf_tune_env_t *a, const perf_tune_env_t *b)
{
    perf_tune_env_t out = *a;

    for (int i = 0; i < b->n; i++) {
        perf_tune_env_set(&out, b->kv[i].key, b->kv[i].value);
    }
    *env = out;
}

static int kv_cmp(const void *x, const void *y)
{
    return strcmp(((const perf_tune_kv_t *)x)->key, ((const perf_tune_kv_t *)y)->key);
}

void perf_tune_env_text(const perf_tune_env_t *env, char *buf, size_t len)
{
    perf_tune_env_t sorted = *env;
    size_t used = 0;

    qsort(sorted.kv, (size_t)sorted.n, sizeof(sorted.kv[0]), kv_cmp);
    buf[0] = '\0';
    if (sorted.n == 0) {
        perf_snprintf(buf, len, "defaults");
    }
    for (int i = 0; i < sorted.n && used < len; i++) {
        int w = perf_snprintf(buf + used, len - used, "%s%s=%s", i ? " " : "", sorted.kv[i].key,
                              sorted.kv[i].value);
        used += w > 0 ? (size_t)w : 0;
    }
}

int perf_tune_env_equal(const perf_tune_env_t *a, const perf_tune_env_t *b)
{
    char x[PERF_TUNE_MAX_KV * (PERF_TUNE_NAME + PERF_TUNE_VALUE)];
    char y[sizeof(x)];

    perf_tune_env_text(a, x, sizeof(x));
    perf_tune_env_text(b, y, sizeof(y));
    return strcmp(x, y) == 0;
}

/* ---- statistics --------------------------------------------------------------------------- */

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[PERF_TUNE_NCOLLS * PERF_TUNE_MAX_SIZES];

    if (n <= 0 || n > (int)(sizeof(s) / sizeof(s[0]))) {
        return 0;
    }
    memcpy(s, v, (size_t)n * sizeof(*v));
    qsort(s, (size_t)n, sizeof(*s), dbl_cmp);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double perf_tune_spread(const double *v, int n, double *med_p)
{
    double lo = v[0], hi = v[0], med = median(v, n);

    for (int i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    if (med_p != NULL) {
        *med_p = med;
    }
    return med > 0 ? (hi - lo) / med : 0;
}

/* ---- measuring ---------------------------------------------------------------------------- */

typedef struct {
    const perf_tune_opts_t *o;
    perf_tune_plan_t *plan;
    double t0;
    /* per collective: sizes of the defaults' run, settings and busbw where the search is */
    perf_tune_env_t env[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES]; /* global + per size */
    double cur[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    double noise[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    int stop; /* measure asked to stop */
} search_t;

static void say(const search_t *s, const char *fmt, ...)
{
    va_list ap;

    if (s->o->log == NULL) {
        return;
    }
    va_start(ap, fmt);
    vfprintf(s->o->log, fmt, ap);
    va_end(ap);
    fflush(s->o->log);
}

static int over_budget(const search_t *s)
{
    return s->o->budget_s > 0 && s->o->now() - s->t0 > s->o->budget_s * s->o->search_share;
}

/* One launch through the callback; counts it. 0 measured (maybe failed), -1 stop. */
static int launch(search_t *s, int coll, size_t minb, size_t maxb, const perf_tune_env_t *env,
                  const char *tag, perf_tune_result_t *r)
{
    memset(r, 0, sizeof(*r));
    if (s->o->measure(s->o->measure_arg, coll, minb, maxb, env, tag, r) != 0) {
        s->stop = 1;
        return -1;
    }
    if (r->seconds > 0) {
        s->plan->launches++;
    } else {
        s->plan->cached++;
    }
    if (!r->ok) {
        char text[512];
        perf_tune_env_text(env, text, sizeof(text));
        say(s, "tune: %s with %s failed: %s\n", sharc_coll_name((sharc_coll_type_t)(coll)), text,
            r->error);
        s->plan->failures++;
    }
    return 0;
}

/*
 * busbw of collective c with settings envs[i] at size i of its plan (the sizes need[] marks,
 * all with NULL): one launch per group of sizes with equal settings, over the group's range.
 * 1 all measured, 0 a launch failed, -1 stop. Values of sizes not measured are 0.
 */
static int measure_map(search_t *s, int c, const perf_tune_env_t *envs, const int *need,
                       const char *tag, double *busbw, double *memcpy_bw)
{
    const perf_tune_coll_plan_t *p = &s->plan->coll[c];
    int done[PERF_TUNE_MAX_SIZES] = {0}, all = 1;

    for (int i = 0; i < p->n; i++) {
        busbw[i] = 0;
        if (memcpy_bw != NULL) {
            memcpy_bw[i] = 0;
        }
    }
    for (int i = 0; i < p->n; i++) {
        int last = i;
        perf_tune_result_t r;

        if (done[i] || (need != NULL && !need[i])) {
            continue;
        }
        for (int j = i; j < p->n; j++) {
            if (!done[j] && (need == NULL || need[j]) && perf_tune_env_equal(&envs[i], &envs[j])) {
                last = j;
            }
        }
        if (launch(s, c, p->size[i], p->size[last], &envs[i], tag, &r) != 0) {
            return -1;
        }
        for (int j = i; j <= last; j++) {
            if (done[j] || (need != NULL && !need[j]) || !perf_tune_env_equal(&envs[i], &envs[j])) {
                continue;
            }
            done[j] = 1;
            for (int k = 0; r.ok && k < r.n; k++) {
                if (r.size[k] == p->size[j]) {
                    busbw[j] = r.busbw[k];
                    if (memcpy_bw != NULL) {
                        memcpy_bw[j] = r.memcpy[k];
                    }
                }
            }
            all &= busbw[j] > 0;
        }
    }
    return all;
}

/* Geometric mean of a[i] / b[i] over sizes both measured. */
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

static int defaults(search_t *s)
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
        if (launch(s, c, o->minb, o->maxb, &none, "base.1", &r1) != 0 ||
            launch(s, c, o->minb, o->maxb, &none, "base.2", &r2) != 0) {
            return -1;
        }
        if (!r1.ok || !r2.ok || r1.n == 0 || r1.n != r2.n) {
            say(s, "tune: %s: the defaults could not be measured; not tuned\n",
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
        say(s, "tune: %s defaults measured at %d sizes\n", sharc_coll_name((sharc_coll_type_t)(c)),
            p->n);
    }
    return any ? 0 : -1;
}

static int tuned_coll(const search_t *s, int c, unsigned colls)
{
    return (s->o->colls & colls & (1u << c)) && !s->plan->coll[c].failed;
}

/* ---- 2. global knobs ---------------------------------------------------------------------- */

static double median_noise(const search_t *s)
{
    double v[PERF_TUNE_NCOLLS * PERF_TUNE_MAX_SIZES];
    int n = 0;

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        for (int i = 0; tuned_coll(s, c, ~0u) && i < s->plan->coll[c].n; i++) {
            v[n++] = s->noise[c][i];
        }
    }
    return n ? median(v, n) : s->o->noise_floor;
}

static int global_knob(search_t *s, const perf_tune_knob_t *k)
{
    static double got[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    static double best_bw[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    double need = 1 + median_noise(s), best_score = need;
    int best = -1;

    for (int v = 0; v < k->nvalues; v++) {
        double logsum = 0, score;
        int count = 0, ok = 1;

        if (over_budget(s)) {
            say(s, "tune: %s: budget spent after %d of %d values\n", k->name, v, k->nvalues);
            break;
        }
        for (int c = 0; c < PERF_TUNE_NCOLLS && ok; c++) {
            perf_tune_env_t envs[PERF_TUNE_MAX_SIZES];

            if (!tuned_coll(s, c, k->colls)) {
                continue;
            }
            for (int i = 0; i < s->plan->coll[c].n; i++) {
                envs[i] = s->env[c][i];
                perf_tune_env_apply(&envs[i], k->values[v]);
            }
            int m = measure_map(s, c, envs, NULL, "search", got[c], NULL);
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
        say(s, "tune: %-28s %-40s %6.3fx the current settings (needs > %.3fx)\n", k->name,
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
            for (int i = 0; tuned_coll(s, c, k->colls) && i < s->plan->coll[c].n; i++) {
                perf_tune_env_apply(&s->env[c][i], k->values[best]);
                s->cur[c][i] = best_bw[c][i];
            }
        }
        say(s, "tune: %s: taking %s (%.3fx)\n", k->name, k->values[best], best_score);
    }
    return 0;
}

/* ---- 3. per-size knobs -------------------------------------------------------------------- */

static int per_size_knob(search_t *s, const perf_tune_knob_t *k, int c)
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

        if (over_budget(s)) {
            say(s, "tune: %s %s: budget spent after %d of %d values\n",
                sharc_coll_name((sharc_coll_type_t)(c)), k->name, v, k->nvalues);
            break;
        }
        for (int i = 0; i < p->n; i++) {
            envs[i] = s->env[c][i];
            perf_tune_env_apply(&envs[i], k->values[v]);
        }
        if (measure_map(s, c, envs, NULL, "search", got, NULL) < 0) {
            return -1;
        }
        for (int i = 0; i < p->n; i++) {
            if (got[i] > best_bw[i]) {
                best_bw[i] = got[i];
                best[i] = v;
                wins++;
            }
        }
        say(s, "tune: %-14s %-28s %-32s best so far at %d of %d sizes\n",
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

/* ---- 4. finals ---------------------------------------------------------------------------- */

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

/*
 * With the global settings kept: the sizes whose per-size setting was dropped ran under it in
 * the "table + global" rounds, which is not what is kept there. Measure them again with the
 * global settings alone, so that the tuned figures are of what the outputs hold.
 */
static int finals_dropped(search_t *s, int rounds)
{
    perf_tune_plan_t *plan = s->plan;
    static rounds_t again[PERF_TUNE_NCOLLS];
    static int need[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    int any[PERF_TUNE_NCOLLS] = {0};

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        for (int i = 0; tuned_coll(s, c, ~0u) && i < plan->coll[c].n; i++) {
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
            if (measure_map(s, c, envs, need[c], tag, again[c].v[r], NULL) < 0) {
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

static int finals(search_t *s, int with_global)
{
    const perf_tune_opts_t *o = s->o;
    perf_tune_plan_t *plan = s->plan;
    int rounds = o->rounds < 1                      ? 1
                 : o->rounds > PERF_TUNE_MAX_ROUNDS ? PERF_TUNE_MAX_ROUNDS
                                                    : o->rounds;
    static rounds_t base[PERF_TUNE_NCOLLS], table[PERF_TUNE_NCOLLS], full[PERF_TUNE_NCOLLS];
    int has_table[PERF_TUNE_NCOLLS] = {0};
    static int has_at[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES]; /* sizes with per-size settings */
    double logsum = 0, spreads[PERF_TUNE_NCOLLS * PERF_TUNE_MAX_SIZES];
    int count = 0, nspreads = 0;

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        for (int i = 0; tuned_coll(s, c, ~0u) && i < plan->coll[c].n; i++) {
            has_at[c][i] = plan->coll[c].at[i].n > 0;
            has_table[c] |= has_at[c][i];
            base[c].ok[i] = table[c].ok[i] = full[c].ok[i] = 1;
        }
    }
    say(s, "tune: finals, %d interleaved rounds: defaults, per-size table%s\n", rounds,
        with_global ? ", table + global settings" : "");
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
            perf_tune_coll_plan_t *p = &plan->coll[c];
            perf_tune_env_t envs[PERF_TUNE_MAX_SIZES];
            char tag[32];

            if (!tuned_coll(s, c, ~0u)) {
                continue;
            }
            memset(envs, 0, sizeof(envs));
            perf_snprintf(tag, sizeof(tag), "final.%d", r + 1);
            if (measure_map(s, c, envs, NULL, tag, base[c].v[r], base[c].cp[r]) < 0) {
                return -1;
            }
            if (has_table[c] && measure_map(s, c, p->at, has_at[c], tag, table[c].v[r], NULL) < 0) {
                return -1;
            }
            for (int i = 0; with_global && i < p->n; i++) {
                perf_tune_env_merge(&envs[i], &plan->proposed, &p->at[i]);
            }
            if (with_global && measure_map(s, c, envs, NULL, tag, full[c].v[r], NULL) < 0) {
                return -1;
            }
            for (int i = 0; i < p->n; i++) {
                base[c].ok[i] &= base[c].v[r][i] > 0;
                table[c].ok[i] &= !has_at[c][i] || table[c].v[r][i] > 0;
                full[c].ok[i] &= !with_global || full[c].v[r][i] > 0;
            }
        }
    }

    /* per-size settings: the table against the defaults */
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        perf_tune_coll_plan_t *p = &plan->coll[c];

        for (int i = 0; tuned_coll(s, c, ~0u) && i < p->n; i++) {
            double sb, st = 0, mb = rounds_median(&base[c], rounds, i, &sb);
            double mt = has_at[c][i] ? rounds_median(&table[c], rounds, i, &st) : mb;
            double cp[PERF_TUNE_MAX_ROUNDS];

            for (int k = 0; k < rounds; k++) {
                cp[k] = base[c].cp[k][i];
            }
            p->memcpy[i] = median(cp, rounds);
            p->base[i] = mb;
            p->spread[i] = sb > st ? sb : st;
            /* every round of the table above every round of the defaults, and the medians
             * apart by more than the spread plus the noise floor */
            p->kept[i] = p->at[i].n > 0 && base[c].ok[i] && table[c].ok[i] &&
                         rounds_min(&table[c], rounds, i) > rounds_max(&base[c], rounds, i) &&
                         mt - mb > p->spread[i] + o->noise_floor * mb;
            p->tuned[i] = p->kept[i] ? mt : mb;
        }
    }
    /* global settings: the table + them against the table (the defaults where it has nothing) */
    if (with_global) {
        for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
            perf_tune_coll_plan_t *p = &plan->coll[c];

            for (int i = 0; tuned_coll(s, c, ~0u) && i < p->n; i++) {
                /* where a per-size setting was dropped, "table + global" ran with it, which
                 * is not what would be written: those sizes do not vote */
                const rounds_t *ref = has_at[c][i] ? &table[c] : &base[c];
                double sr, sf, mr = rounds_median(ref, rounds, i, &sr);
                double mf = rounds_median(&full[c], rounds, i, &sf);

                if (has_at[c][i] && !p->kept[i]) {
                    continue;
                }
                if (full[c].ok[i] && ref->ok[i] && mr > 0) {
                    logsum += log(mf / mr);
                    count++;
                    spreads[nspreads++] = (sr > sf ? sr : sf) / mr;
                }
            }
        }
        plan->global_gain = count ? exp(logsum / count) : 0;
        plan->global_spread = nspreads ? median(spreads, nspreads) : 0;
        if (count > 0 && plan->global_gain - 1 > plan->global_spread + o->noise_floor) {
            plan->global = plan->proposed;
            for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
                perf_tune_coll_plan_t *p = &plan->coll[c];
                for (int i = 0; tuned_coll(s, c, ~0u) && i < p->n; i++) {
                    double sf;
                    p->tuned[i] = rounds_median(&full[c], rounds, i, &sf);
                    p->spread[i] = sf > p->spread[i] ? sf : p->spread[i];
                }
            }
            if (finals_dropped(s, rounds) != 0) {
                return -1;
            }
        }
        say(s, "tune: global settings: %.3fx over the table, spread %.1f%%: %s\n",
            plan->global_gain, 100 * plan->global_spread,
            plan->global.n ? "kept" : "dropped (within noise)");
    }
    return 0;
}

/* ---- the whole run ------------------------------------------------------------------------ */

int perf_tune_run(const perf_tune_opts_t *o, const perf_tune_space_t *space, perf_tune_plan_t *plan)
{
    search_t *s = calloc(1, sizeof(*s));
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
                any |= tuned_coll(s, c, knob->colls);
            }
            if (!any) {
                continue;
            }
            if (over_budget(s)) {
                say(s, "tune: %s: not tried (budget spent)\n", knob->name);
                plan->knobs_skipped++;
                continue;
            }
            plan->knobs_tried++;
            if (!pass && global_knob(s, knob) != 0) {
                goto out;
            }
            for (int c = 0; pass && c < PERF_TUNE_NCOLLS; c++) {
                if (tuned_coll(s, c, knob->colls) && per_size_knob(s, knob, c) != 0) {
                    goto out;
                }
            }
        }
    }
    if (finals(s, plan->proposed.n > 0) != 0) {
        goto out;
    }
    ret = 0;
out:
    plan->seconds = o->now() - s->t0;
    free(s);
    return ret;
}

int perf_tune_compare(const perf_tune_opts_t *o, perf_tune_plan_t *plan)
{
    search_t *s = calloc(1, sizeof(*s));
    int ret = -1, rounds = o->rounds < 1 ? 1 : o->rounds > PERF_TUNE_MAX_ROUNDS ? 16 : o->rounds;
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

            if (!tuned_coll(s, c, ~0u) || p->n == 0) {
                continue;
            }
            memset(none, 0, sizeof(none));
            for (int i = 0; i < p->n; i++) {
                perf_tune_env_merge(&envs[i], &plan->global, p->kept[i] ? &p->at[i] : &none[i]);
            }
            perf_snprintf(tag, sizeof(tag), "check.%d", r + 1);
            if (measure_map(s, c, none, NULL, tag, base[c].v[r], base[c].cp[r]) < 0 ||
                measure_map(s, c, envs, NULL, tag, saved[c].v[r], NULL) < 0) {
                goto out;
            }
        }
    }
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        perf_tune_coll_plan_t *p = &plan->coll[c];

        for (int i = 0; tuned_coll(s, c, ~0u) && i < p->n; i++) {
            double sb, st;
            double cp[PERF_TUNE_MAX_ROUNDS];
            p->base[i] = rounds_median(&base[c], rounds, i, &sb);
            p->tuned[i] = rounds_median(&saved[c], rounds, i, &st);
            p->spread[i] = sb > st ? sb : st;
            for (int k = 0; k < rounds; k++) {
                cp[k] = base[c].cp[k][i];
            }
            p->memcpy[i] = median(cp, rounds);
        }
    }
    ret = 0;
out:
    plan->seconds = o->now() - s->t0;
    free(s);
    return ret;
}
