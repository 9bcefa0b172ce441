/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune.h: `sharc-perf tune`, which finds the NCCL, UCX and sharc settings that make a
 * cluster's collectives fastest. Each candidate setting is a fresh job (settings are read at
 * process start) launched through the user's launcher; the search is coordinate descent over
 * the knobs of a space built for the detected topology; finalists are re-measured interleaved
 * with the defaults and kept only where they beat them by more than the measured spread.
 *
 * The pieces: tune_env.c (a candidate's settings), tune_space.c (the knobs, filtered by
 * topology; the user's space file), tune_search.c and tune_finals.c (search and decisions, over
 * a measuring callback so that tests can give it a deterministic stand-in), tune_launch.c
 * (launch template, timeouts, the results journal that makes an interrupted sweep resumable),
 * tune_out.c (env file, shell exports, sharc's tune file, NCCL's tuner CSV, report and plot,
 * --check), tune_main.c (the command line).
 */
#ifndef SHARC_PERF_TUNE_H
#define SHARC_PERF_TUNE_H

#include <stddef.h>
#include <stdio.h>
#include <sharc/coll.h>

#define PERF_TUNE_MAX_SIZES  40
#define PERF_TUNE_MAX_KV     24 /* settings in one environment */
#define PERF_TUNE_MAX_KNOBS  48
#define PERF_TUNE_MAX_VALUES 12
#define PERF_TUNE_NAME       64
#define PERF_TUNE_VALUE      160

/* The collectives tune measures: sharc_coll_type_t's before the barrier (sharc/coll.h),
 * named by sharc_coll_name. */
#define PERF_TUNE_NCOLLS SHARC_COLL_BARRIER

/* ---- environments: the settings of one candidate ---------------------------------------- */

typedef struct {
    char key[PERF_TUNE_NAME];
    char value[PERF_TUNE_VALUE];
} perf_tune_kv_t;

typedef struct {
    perf_tune_kv_t kv[PERF_TUNE_MAX_KV];
    int n;
} perf_tune_env_t;

/* Set KEY to VALUE (replacing it if set). 0, or -1 when full or too long. */
int perf_tune_env_set(perf_tune_env_t *env, const char *key, const char *value);
/* Apply "K=V;K=V" (a knob's value). 0 or -1. */
int perf_tune_env_apply(perf_tune_env_t *env, const char *assignments);
/* The value of KEY, or NULL. */
const char *perf_tune_env_get(const perf_tune_env_t *env, const char *key);
/* env = a with b's settings on top. */
void perf_tune_env_merge(perf_tune_env_t *env, const perf_tune_env_t *a, const perf_tune_env_t *b);
/* Canonical text: "K=V K=V", keys sorted ("defaults" when empty). */
void perf_tune_env_text(const perf_tune_env_t *env, char *buf, size_t len);
int perf_tune_env_equal(const perf_tune_env_t *a, const perf_tune_env_t *b);

/* ---- the search space ----------------------------------------------------------------------- */

typedef struct {
    char name[PERF_TUNE_NAME]; /* the variable, or "NCCL_ALGO+NCCL_PROTO" for a joint knob */
    char values[PERF_TUNE_MAX_VALUES][PERF_TUNE_VALUE]; /* each "K=V[;K=V]" */
    int nvalues;
    int per_size;   /* chosen per collective and size (an algorithm table), else one value */
    unsigned colls; /* bit (1u << sharc_coll_type_t) for each collective it matters to */
    char why[160];  /* why it is in the space */
} perf_tune_knob_t;

/* What the space is built for: the job and what sharc-topo detected. */
typedef struct {
    int cuda;             /* device buffers (collectives through NCCL) */
    int np, nodes;        /* ranks and nodes of the job */
    char fabric[16];      /* sharc-topo's fabric: InfiniBand, RoCE, EFA, Ethernet, none */
    char intra[16];       /* GPUs within a node: NVSwitch, NVLink, PCIe, host, single, none */
    int ngpus, nnics;     /* GPUs and RDMA devices of this node */
    int gpu_sm;           /* compute capability x10 of GPU 0, 0 unknown */
    int nvlinks;          /* NVLinks of GPU 0 (its model's), 0 unknown or none */
    double gpu_net_gbps;  /* network Gb/s per GPU from the topology, 0 none, -1 unknown */
    double nic_gbps;      /* fastest active port of the node (Gb/s), 0 none */
    int ucx;              /* UCX carries host traffic (SHARC_TRANSPORT=ucx, or several nodes) */
    int shm;              /* sharc's shm transport carries it (one node, transport auto/shm) */
    int nccl_version;     /* NCCL's version code, 0 none (set by the caller) */
    char fingerprint[17]; /* 64-bit hash of fp_text, hex */
    char fp_text[1024];   /* what the fingerprint covers, one "key: value" per line */
} perf_tune_target_t;

typedef struct {
    perf_tune_knob_t knobs[PERF_TUNE_MAX_KNOBS];
    int nknobs;
    char left_out[PERF_TUNE_MAX_KNOBS][200]; /* "KNOB: why it is not searched here" */
    int nleft;
} perf_tune_space_t;

/* The built-in knobs for the target, those that cannot matter there left out (with why). */
void perf_tune_space_build(const perf_tune_target_t *t, perf_tune_space_t *space);
/*
 * Apply a space file: lines of
 *     values KNOB V1 V2 ...   replace a knob's candidate values (a value: V, or K=V;K=V)
 *     drop KNOB ...           leave knobs out
 *     only KNOB ...           leave every other knob out
 *     add VAR V1 V2 ... [for COLL,COLL]   a global knob of the user's (an environment
 *                                         variable NCCL_*, UCX_*, SHARC_*, FI_*)
 * '#' starts a comment. An unknown knob, command or collective, or a value with characters
 * a shell would read, is an error: 0, or -1 with the cause in err (file and line).
 */
int perf_tune_space_file(perf_tune_space_t *space, const char *path, char *err, size_t errlen);
/* Bits of the collectives in "allgather,allreduce"; 0 with the unknown name in @p unknown. */
unsigned perf_tune_parse_colls(const char *list, char *unknown, size_t len);
/* Values that pass to a shell unquoted: letters, digits and _ . , : + - / ^ = @ */
int perf_tune_value_ok(const char *value);

/* ---- measurements --------------------------------------------------------------------------- */

typedef struct {
    int ok;          /* measured; else failed, with why */
    char error[256]; /* "timed out after 60 s", "exit status 1: <last line of its log>" */
    int n;
    size_t size[PERF_TUNE_MAX_SIZES];
    double busbw[PERF_TUNE_MAX_SIZES];  /* GB/s, out of place, median over iterations */
    double memcpy[PERF_TUNE_MAX_SIZES]; /* GB/s of a one-core copy in the same run, 0 none */
    double seconds;                     /* wall time of the launch */
} perf_tune_result_t;

/*
 * Measure collective @p coll over sizes [minb, maxb] (factor 2) in a fresh job with @p env
 * on top of the defaults. @p tag tells repeats apart ("base.1", "final.2"). Fills @p out
 * (out->ok = 0 for a candidate that failed). Returns 0, or -1 to stop the whole tune (an
 * interrupt, a broken output directory).
 */
typedef int (*perf_tune_measure_fn_t)(void *arg, int coll, size_t minb, size_t maxb,
                                      const perf_tune_env_t *env, const char *tag,
                                      perf_tune_result_t *out);

/* ---- search and decisions ------------------------------------------------------------------- */

typedef struct {
    unsigned colls;      /* collectives to tune (bits) */
    size_t minb, maxb;   /* size range, factor 2 */
    double budget_s;     /* the search stops starting launches past budget * search_share */
    double search_share; /* default 0.7: the rest is for the finals */
    int rounds;          /* interleaved rounds of the finals (default 3) */
    double noise_floor;  /* smallest relative noise assumed in the search (default 0.02) */
    perf_tune_measure_fn_t measure;
    void *measure_arg;
    double (*now)(void); /* clock for the budget (tests pass a fake one) */
    FILE *log;           /* what was tried, as it happens; NULL: quiet */
} perf_tune_opts_t;

/* One collective's outcome. */
typedef struct {
    int coll;
    int n;
    size_t size[PERF_TUNE_MAX_SIZES];
    perf_tune_env_t at[PERF_TUNE_MAX_SIZES]; /* per-size settings kept (not the global ones) */
    int kept[PERF_TUNE_MAX_SIZES];           /* the per-size settings beat the defaults */
    double base[PERF_TUNE_MAX_SIZES];        /* finals: median busbw with the defaults */
    double tuned[PERF_TUNE_MAX_SIZES];       /* finals: median busbw with what was kept */
    double spread[PERF_TUNE_MAX_SIZES];      /* finals: max - min of either's rounds */
    double memcpy[PERF_TUNE_MAX_SIZES];      /* one-core copy GB/s seen in the finals, 0 none */
    int failed;                              /* the defaults themselves could not be measured */
} perf_tune_coll_plan_t;

typedef struct {
    perf_tune_coll_plan_t coll[PERF_TUNE_NCOLLS];
    perf_tune_env_t global;         /* global settings kept (one value for every size) */
    perf_tune_env_t proposed;       /* global settings the search chose, before the finals */
    double global_gain;             /* finals: geometric mean of with / without them */
    double global_spread;           /* finals: the relative spread they had to beat */
    int launches, failures;         /* launches made (cached ones not counted), failed candidates */
    int cached;                     /* results taken from the journal */
    int knobs_tried, knobs_skipped; /* knobs searched; left for lack of budget */
    double seconds;
} perf_tune_plan_t;

/*
 * Run the search and the finals. 0 (the plan is filled; candidates may have failed), or -1
 * (measure asked to stop, or the defaults fail for every collective: nothing to compare to).
 */
int perf_tune_run(const perf_tune_opts_t *o, const perf_tune_space_t *space,
                  perf_tune_plan_t *plan);

/* The interleaved comparison of --check: @p saved's settings vs the defaults, re-measured.
 * Fills plan->coll[].base/tuned/spread; 0 or -1 as perf_tune_run. */
int perf_tune_compare(const perf_tune_opts_t *o, perf_tune_plan_t *plan);

/* Relative spread: (max - min) / median of n values; median returned through med_p. */
double perf_tune_spread(const double *v, int n, double *med_p);

#endif
