/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_out.h: the target of a tune (topology, versions, fingerprint) and tune.json, which
 * --check reads back (tune_json.c), and the files it writes (tune_out.c).
 */
#ifndef SHARC_PERF_TUNE_OUT_H
#define SHARC_PERF_TUNE_OUT_H

#include "tune.h"

/* A saved tune (tune.json) for --check. */
typedef struct {
    char fingerprint[17];
    char fp_text[1024];
    int np, nodes, cuda;
    unsigned colls;
    perf_tune_env_t base_env;
    perf_tune_plan_t plan; /* global, and per collective: sizes, at, kept */
    double tuned[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES];  /* busbw when it was tuned */
    double spread[PERF_TUNE_NCOLLS][PERF_TUNE_MAX_SIZES]; /* and its spread then */
} perf_tune_saved_t;

/*
 * Fill the topology fields of @p t from @p topo_cmd's output (`sharc-topo --json`), then its
 * fingerprint over the topology, the job (t->np, t->nodes, t->cuda, t->nccl_version, set by
 * the caller), the
 * GPU driver, the kernel and the library versions. 0, or -1 with err.
 */
int perf_tune_target_detect(perf_tune_target_t *t, const char *topo_cmd, char *err, size_t errlen);
/* busbw per rank the hardware should deliver (GB/s), 0 unknown; @p memcpy_gbps for host. */
double perf_tune_expected_gbps(const perf_tune_target_t *t, double memcpy_gbps);
/* Every output file into @p dir. 0 or -1 (printed). */
int perf_tune_write(const char *dir, const perf_tune_target_t *t, const perf_tune_space_t *space,
                    const perf_tune_plan_t *plan, const perf_tune_env_t *base_env);
/* The markdown table of collective c (default vs @p tuned_name per size). */
void perf_tune_report_table(FILE *f, const perf_tune_target_t *t, const perf_tune_plan_t *plan,
                            int c, const char *tuned_name);
/* Write tune.json into @p dir: 0 or -1. */
int perf_tune_write_json(const char *dir, const perf_tune_target_t *t, const perf_tune_plan_t *plan,
                         const perf_tune_env_t *base_env);

/* Read tune.json. 0, or -1 with err. */
int perf_tune_load(const char *path, perf_tune_saved_t *saved, char *err, size_t errlen);

#endif
