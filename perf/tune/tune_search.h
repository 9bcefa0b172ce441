/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_search.h: the state of a search of `sharc-perf tune` as tune_search.c (the defaults
 * and the knobs) and tune_finals.c (the finals, --check's comparison) share it, and the
 * helpers both use to launch and to say what happens (tune_measure.c). Internal to tune;
 * tune.h is the interface.
 */
#ifndef SHARC_PERF_TUNE_SEARCH_H
#define SHARC_PERF_TUNE_SEARCH_H

#include "tune.h"

typedef struct {
    const perf_tune_opts_t *o;
    perf_tune_plan_t *plan;
    double t0;
    /* per collective: sizes of the defaults' run, settings and busbw where the search is */
    perf_tune_env_t env[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES]; /* global + per size */
    double cur[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    double noise[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];
    int stop; /* measure asked to stop */
} perf_tune_search_t;

/* A line of what was tried, to o->log (none without one). */
void perf_tune_say(const perf_tune_search_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The search's share of the budget is spent. */
int perf_tune_over_budget(const perf_tune_search_t *s);

/* Collective c is tuned (asked for, among @p colls, and its defaults measured). */
int perf_tune_tuned(const perf_tune_search_t *s, int c, unsigned colls);

/* One launch through the callback; counts it. 0 measured (maybe failed), -1 stop. */
int perf_tune_launch(perf_tune_search_t *s, int coll, size_t minb, size_t maxb,
                     const perf_tune_env_t *env, const char *tag, perf_tune_result_t *r);

/*
 * busbw of collective c with settings envs[i] at size i of its plan (the sizes need[] marks,
 * all with NULL): one launch per group of sizes with equal settings, over the group's range.
 * 1 all measured, 0 a launch failed, -1 stop. Values of sizes not measured are 0.
 */
int perf_tune_measure_map(perf_tune_search_t *s, int c, const perf_tune_env_t *envs,
                          const int *need, const char *tag, double *busbw, double *memcpy_bw);

/* The finals (tune_finals.c): the interleaved rounds that decide what is kept. 0 or -1. */
int perf_tune_finals(perf_tune_search_t *s, int with_global);

#endif
