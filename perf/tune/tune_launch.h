/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_launch.h: the launcher behind `sharc-perf tune` (tune_launch.c): candidates as fresh
 * jobs through a launch template, with a timeout, and a journal of results for resuming.
 */
#ifndef SHARC_PERF_TUNE_LAUNCH_H
#define SHARC_PERF_TUNE_LAUNCH_H

#include "tune.h"

#define PERF_TUNE_PATH 512

typedef struct {
    char key[16384];
    perf_tune_result_t result;
} perf_tune_cached_t;

typedef struct {
    /* set by the caller */
    const char *perf;         /* the sharc-perf to launch */
    const char *launch;       /* the template ({np} {cmd} {env} {exports}) */
    int np;                   /* ranks per job */
    perf_tune_env_t base_env; /* settings of every job, the defaults included (--env) */
    int cuda;                 /* --device cuda */
    int iters, warmup;        /* sharc-perf -n, -w */
    const char *dtype;        /* sharc-perf -d */
    double timeout_s;         /* a job running longer is killed and marked failed */
    char dir[PERF_TUNE_PATH]; /* output directory: results.jsonl, logs/, runs/ */
    /* state */
    FILE *journal;
    perf_tune_cached_t *cached;
    int ncached, capcached;
    int seq;
} perf_tune_launcher_t;

/* Create the directories, load the journal, catch SIGINT/SIGTERM. 0, or -1 with err. */
int perf_tune_launcher_open(perf_tune_launcher_t *l, char *err, size_t errlen);
void perf_tune_launcher_close(perf_tune_launcher_t *l);
/* perf_tune_measure_fn_t over a perf_tune_launcher_t. */
int perf_tune_measure(void *arg, int coll, size_t minb, size_t maxb, const perf_tune_env_t *env,
                      const char *tag, perf_tune_result_t *r);
/* The template with its placeholders filled; -1 when it has no {cmd} or is too long. */
int perf_tune_expand(const char *templ, int np, const perf_tune_env_t *env, const char *cmd,
                     char *out, size_t len);
/* SIGINT or SIGTERM arrived. */
int perf_tune_interrupted(void);

#endif
