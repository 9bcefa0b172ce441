/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_measure.c: what the search (tune_search.c) and its finals (tune_finals.c) both do:
 * launch a measurement through the callback within the budget, measure a collective's sizes
 * under their settings, say what happens.
 */
#include "../common/perf_util.h"
#include "tune.h"
#include "tune_search.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void perf_tune_say(const perf_tune_search_t *s, const char *fmt, ...)
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

int perf_tune_over_budget(const perf_tune_search_t *s)
{
    return s->o->budget_s > 0 && s->o->now() - s->t0 > s->o->budget_s * s->o->search_share;
}

/* One launch through the callback; counts it. 0 measured (maybe failed), -1 stop. */
int perf_tune_launch(perf_tune_search_t *s, int coll, size_t minb, size_t maxb,
                     const perf_tune_env_t *env, const char *tag, perf_tune_result_t *r)
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
        perf_tune_say(s, "tune: %s with %s failed: %s\n",
                      sharc_coll_name((sharc_coll_type_t)(coll)), text, r->error);
        s->plan->failures++;
    }
    return 0;
}

/*
 * busbw of collective c with settings envs[i] at size i of its plan (the sizes need[] marks,
 * all with NULL): one launch per group of sizes with equal settings, over the group's range.
 * 1 all measured, 0 a launch failed, -1 stop. Values of sizes not measured are 0.
 */
int perf_tune_measure_map(perf_tune_search_t *s, int c, const perf_tune_env_t *envs,
                          const int *need, const char *tag, double *busbw, double *memcpy_bw)
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
        if (perf_tune_launch(s, c, p->size[i], p->size[last], &envs[i], tag, &r) != 0) {
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

int perf_tune_tuned(const perf_tune_search_t *s, int c, unsigned colls)
{
    return (s->o->colls & colls & (1u << c)) && !s->plan->coll[c].failed;
}
