/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_job.h: the job of `sharc-perf check` as its files share it: the options, the layout of
 * ranks on nodes, the measured figures and the verdicts (the graphs of check.h), and the
 * functions of check_job.c (the job's layout, expectations, graphs and plan), check_run.c (the
 * exchanges), check_pass.c (the probe, the passes, the re-test), check_out.c (tables, heat
 * map) and check_json.c (JSON out, sharc-topo's JSON in). Public API only.
 */
#ifndef SHARC_PERF_CHECK_JOB_H
#define SHARC_PERF_CHECK_JOB_H

#include <stdio.h>

#include <sharc/sharc.h>

#include "check.h"

#define PERF_CHECK_HOST 64

typedef struct {
    double budget_s;    /* --budget */
    double timeout_s;   /* --timeout: one exchange, and SHARC_TIMEOUT unless set */
    double threshold;   /* --threshold */
    double expect_frac; /* --expect-threshold */
    double expect_gbit; /* --expect: Gb/s of every node's link; < 0 from sharc-topo, 0 none */
    size_t min_size, max_size;
    int max_iters; /* -n */
    int peers;     /* re-test partners of a suspect */
    int cuda;
    const char *json, *png;
    char topo_cmd[4200];
} perf_check_opts_t;

/* What sharc-topo says a node's link should carry. */
typedef struct {
    double gbit; /* Gb/s of the node's fabric ports (all of them); <= 0 unknown */
    int nports;  /* how many ports (NICs' ports, interfaces) that is */
    char why[96];
} perf_check_expect_t;

typedef struct {
    const perf_check_opts_t *o;
    sharc_context_h ctx;
    sharc_comm_h world;
    int rank, nranks, nnodes, node, lrank;
    int rails;               /* ranks per node in the inter-node tests: the smallest local size */
    int maxlocal;            /* the largest local size */
    int *node_of, *lrank_of; /* per rank */
    /* the host copy's turn among the ranks of this machine, and the turns (0: not known yet) */
    int copy_turn, copy_turns;
    int *first, *count;            /* per node: index into by_node, and its ranks */
    int *by_node;                  /* ranks node by node, each node's by local rank */
    char (*host)[PERF_CHECK_HOST]; /* per node (its lowest rank's host name) */
    perf_check_expect_t *expect;   /* per node */
    char *send, *recv; /* the exchange's buffers: bufsize, and 2 * bufsize (host or device) */
    size_t bufsize;
    double t0; /* start, on this rank's clock */

    /* the plan and what the probe found (agreed by every rank) */
    perf_check_plan_t plan;
    double probe_gbps, probe_lat_s, round_s;

    /* inter-node: members are nodes, links every pair of nodes */
    perf_check_graph_t inter;
    int *inter_round; /* per link: its round */
    /* intra-node: members are ranks (grouped by node), links every pair within a node;
     * members also carry the copy figures */
    perf_check_graph_t intra;
    int *intra_round;
    int intra_rounds, inter_rounds;
    /* the ring: per node, the hop into it from the previous node (GB/s over the rails) */
    double *ring_hop;
    double ring_gbps; /* the slowest hop; < 0 no ring (fewer than 3 nodes) */
    int retest_inter, retest_intra, retest_copy; /* what the re-test measured */
    int named;                                   /* named members and links, both levels */
    double elapsed_s;
} perf_check_job_t;

/* The copy test's size: the exchanges', but at least 8 MiB, so that it copies through memory
 * and not within a cache. */
#define PERF_CHECK_COPY_SIZE(_size) ((_size) > (8u << 20) ? (_size) : (size_t)(8u << 20))

/* ---- the job (check_job.c); 0, or 2 for a job that cannot be checked (said on stderr) */

/* The context and the job's communicator (with --device cuda the GPU too). */
int perf_check_job_open(perf_check_job_t *j);
/* The layout of ranks on nodes (2 nodes at least), each node's expected figure, the graphs. */
int perf_check_job_layout(perf_check_job_t *j);
/* Rank 0 fits the size and iterations into what is left of the budget; every rank learns it. */
int perf_check_job_plan(perf_check_job_t *j);
/* The intra-node links' expected figure from the first pass's copies (host memory only). */
void perf_check_intra_expect(perf_check_job_t *j);
/* After a step failed on this rank: which ranks still answer (sharc's log names the others). */
void perf_check_job_diagnose(perf_check_job_t *j);
/* Everything perf_check_job_open and the passes made. */
void perf_check_job_close(perf_check_job_t *j);

/* ---- the exchanges (check_run.c); each returns 0, or nonzero after saying why on stderr */

/* Say that @p what failed on this rank with @p status: -1. */
int perf_check_fail(const perf_check_job_t *j, const char *what, sharc_status_t status);
int perf_check_barrier(perf_check_job_t *j);
int perf_check_copy(perf_check_job_t *j, size_t size, int iters, double *gbps_per_rank);
void perf_check_free_bufs(perf_check_job_t *j);
/* Pair rounds: @p rp lists pairs of ranks (each rank in one at most); each rank in a pair
 * exchanges each of @p sizes bytes with its partner @p iters times (after one untimed), all
 * pairs at once, every exchange started by a barrier of the job. @p t receives every rank's
 * times on every rank: t[(rank * nsizes + size) * iters + iteration], -1 for ranks not in a
 * pair. @p open_s_p (or NULL): the seconds the split took here. */
int perf_check_pairs(perf_check_job_t *j, const perf_check_pair_t *rp, int nrp, const size_t *sizes,
                     int nsizes, int iters, double *t, double *open_s_p);
/* Median over the iterations of the slowest of @p nr ranks (the layout of perf_check_pairs). */
double perf_check_slowest_median(const double *t, int nsizes, int s, int iters, const int *ranks,
                                 int nr);
int perf_check_ring(perf_check_job_t *j, size_t size, int iters);

/* ---- the passes (check_pass.c); each returns 0, or nonzero after saying why on stderr */

int perf_check_probe(perf_check_job_t *j);
int perf_check_measure(perf_check_job_t *j);
int perf_check_retest(perf_check_job_t *j);

/* ---- output (check_out.c, on rank 0) */

void perf_check_print(const perf_check_job_t *j, FILE *out);
void perf_check_plot(const perf_check_job_t *j, const char *png);

/* ---- JSON (check_json.c; check_json_none.c without json-c) */

/* 1 when JSON can be written and sharc-topo's read in this build. */
int perf_check_have_json(void);
/* The expected figure of a node from the text of `sharc-topo --json`: 0, or -1 (why said). */
int perf_check_topo_expect(const char *json, perf_check_expect_t *e);
/* Write everything measured and decided to @p path: 0, or -1 (said). */
int perf_check_write_json(const perf_check_job_t *j, const char *path);

#endif
