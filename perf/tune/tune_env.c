/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_env.c: the environments of `sharc-perf tune`: the settings of one candidate as
 * key-value pairs (set, apply a knob's value, merge, compare, print), and the relative spread
 * of repeated figures. Not the search (tune_search.c) nor what is written (tune_out.c).
 */
#include <stdlib.h>
#include <string.h>

#include "../common/perf_util.h"
#include "tune.h"

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

double perf_tune_spread(const double *v, int n, double *med_p)
{
    double lo = v[0], hi = v[0], med = perf_median_of(v, (size_t)n);

    for (int i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    if (med_p != NULL) {
        *med_p = med;
    }
    return med > 0 ? (hi - lo) / med : 0;
}
