/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_pass.c: the passes of `sharc-perf check`, on every rank, over the exchanges of
 * check_run.c: the probe (how fast an exchange between nodes is, for the plan), the first
 * pass (each rank's copy, the pairs inside the nodes round by round, the node pairs over the
 * rails, the ring), and the re-test of what rank 0's verdict suspects, which confirms it.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/perf_util.h"
#include "check_job.h"

static double max_over_job(perf_check_job_t *j, double v)
{
    if (sharc_allreduce(&v, &v, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, j->world, NULL) != SHARC_OK) {
        return -1;
    }
    return v;
}

/* ---- node and rank pairs ---------------------------------------------------------------- */

/* The ranks of the rails of nodes a and b: (a's rail i, b's rail i) as pairs. */
static int rail_pairs(const perf_check_job_t *j, int a, int b, perf_check_pair_t *out)
{
    for (int i = 0; i < j->rails; i++) {
        int ra = j->by_node[j->first[a] + i], rb = j->by_node[j->first[b] + i];
        out[i].a = ra < rb ? ra : rb;
        out[i].b = ra < rb ? rb : ra;
    }
    return j->rails;
}

/* Node pairs as rank pairs over the rails; the figures of the node pairs from one size. */
static int run_node_pairs(perf_check_job_t *j, const perf_check_pair_t *np, int n, size_t size,
                          int iters, double *gbps)
{
    perf_check_pair_t *rp = calloc((size_t)(n * j->rails + 1), sizeof(*rp));
    double *t = malloc(sizeof(double) * (size_t)(j->nranks * iters));
    int *ranks = malloc(sizeof(int) * (size_t)(2 * j->rails));
    int nrp = 0, ret;

    for (int i = 0; i < n; i++) {
        nrp += rail_pairs(j, np[i].a, np[i].b, rp + nrp);
    }
    ret = perf_check_pairs(j, rp, nrp, &size, 1, iters, t, NULL);
    for (int i = 0; i < n && ret == 0; i++) {
        for (int r = 0; r < j->rails; r++) {
            ranks[2 * r] = j->by_node[j->first[np[i].a] + r];
            ranks[2 * r + 1] = j->by_node[j->first[np[i].b] + r];
        }
        gbps[i] = (double)j->rails * (double)size /
                  perf_check_slowest_median(t, 1, 0, iters, ranks, 2 * j->rails) / 1e9;
    }
    free(rp);
    free(t);
    free(ranks);
    return ret;
}

/* Rank pairs (each its own link); their figures from one size. */
static int run_rank_pairs(perf_check_job_t *j, const perf_check_pair_t *rp, int n, size_t size,
                          int iters, double *gbps)
{
    double *t = malloc(sizeof(double) * (size_t)(j->nranks * iters));
    int ret = perf_check_pairs(j, rp, n, &size, 1, iters, t, NULL);

    for (int i = 0; i < n && ret == 0; i++) {
        int ranks[2] = {rp[i].a, rp[i].b};
        gbps[i] = (double)size / perf_check_slowest_median(t, 1, 0, iters, ranks, 2) / 1e9;
    }
    free(t);
    return ret;
}

/* ---- the probe and the plan -------------------------------------------------------------- */

/* Exchanges of each probe size: a rank's best of them is its link's speed (one exchange held
 * up on a busy machine would make the plan refuse a budget that suffices). */
#define PERF_CHECK_PROBE_ITERS 3

int perf_check_probe(perf_check_job_t *j)
{
    perf_check_pair_t *np = malloc(sizeof(*np) * (size_t)(j->nnodes / 2 + 1));
    perf_check_pair_t *rp = malloc(sizeof(*rp) * (size_t)(j->nranks + 1));
    size_t sizes[16];
    int n = perf_check_rr_round(j->nnodes, 0, np), nrp = 0, nsizes = 0, ret = 0;
    double *t, open_s = 0, bar_s, tmax[16];

    for (int i = 0; i < n; i++) {
        nrp += rail_pairs(j, np[i].a, np[i].b, rp + nrp);
    }
    /* one size at a time, from -b up by 4x until the slowest exchange takes 30 ms: long
     * enough to pass a rate limiter's burst, short enough for any budget */
    t = malloc(sizeof(double) * (size_t)j->nranks * PERF_CHECK_PROBE_ITERS);
    for (size_t s = j->o->min_size; nsizes<16; s = s * 4> j->o->max_size ? j->o->max_size : s * 4) {
        double mine = 0;

        sizes[nsizes] = s;
        ret = perf_check_pairs(j, rp, nrp, &s, 1, PERF_CHECK_PROBE_ITERS, t,
                               nsizes == 0 ? &open_s : NULL);
        if (ret != 0) {
            break;
        }
        for (int r = 0; r < j->nranks; r++) { /* each rank's best exchange, the slowest rank's */
            const double *tr = t + (size_t)r * PERF_CHECK_PROBE_ITERS;
            double best = tr[0];

            for (int it = 1; it < PERF_CHECK_PROBE_ITERS; it++) {
                best = tr[it] < best ? tr[it] : best;
            }
            mine = best > mine ? best : mine;
        }
        tmax[nsizes++] = mine; /* the same on every rank: t was gathered */
        if (mine >= 0.03 || s >= j->o->max_size) {
            break;
        }
    }
    free(np);
    free(rp);
    free(t);
    if (ret != 0) {
        return ret;
    }
    /* what one more barrier costs: each exchange of the passes has one */
    bar_s = perf_now();
    if (perf_check_barrier(j) != 0) {
        return -1;
    }
    bar_s = max_over_job(j, perf_now() - bar_s);
    j->round_s = max_over_job(j, open_s);
    if (bar_s < 0 || j->round_s < 0) {
        return perf_check_fail(j, "agreeing on the probe", SHARC_ERR_REMOTE);
    }
    /* the rate from the last two sizes' difference (latency apart); the largest exchange's
     * own rate, latency included, is a floor: below it, one exchange was held up (a busy
     * machine), and the floor is the better guess */
    j->probe_gbps = (double)sizes[nsizes - 1] / tmax[nsizes - 1] / 1e9;
    j->probe_lat_s = 0;
    if (nsizes >= 2 && tmax[nsizes - 1] > tmax[nsizes - 2]) {
        double gbps = (double)(sizes[nsizes - 1] - sizes[nsizes - 2]) /
                      (tmax[nsizes - 1] - tmax[nsizes - 2]) / 1e9;

        if (gbps > j->probe_gbps) {
            j->probe_gbps = gbps;
            j->probe_lat_s = tmax[nsizes - 2] - (double)sizes[nsizes - 2] / (gbps * 1e9);
        }
    }
    j->probe_lat_s = (j->probe_lat_s > 0 ? j->probe_lat_s : 0) + bar_s;
    return 0;
}

/* Pairs measured as node pairs over the rails (@p nodes) or as rank pairs, from one size. */
static int run_pairs(perf_check_job_t *j, const perf_check_pair_t *p, int n, int nodes, size_t size,
                     int iters, double *gbps)
{
    return nodes ? run_node_pairs(j, p, n, size, iters, gbps)
                 : run_rank_pairs(j, p, n, size, iters, gbps);
}

/* ---- the passes -------------------------------------------------------------------------- */

/* The links of @p g round by round (@p round_of: each link's round; a round's links stand
 * together), all pairs of a round at once, as node pairs (@p nodes) or rank pairs: their
 * figures. @p p and @p gbps have room for every link. */
static int measure_graph(perf_check_job_t *j, perf_check_graph_t *g, const int *round_of,
                         int nrounds, int nodes, perf_check_pair_t *p, double *gbps)
{
    int ret = 0;

    for (int r = 0; r < nrounds && ret == 0; r++) {
        int n = 0, first = -1;
        for (int k = 0; k < g->nl; k++) {
            if (round_of[k] == r) {
                first = first < 0 ? k : first;
                p[n].a = g->l[k].a;
                p[n++].b = g->l[k].b;
            }
        }
        ret = run_pairs(j, p, n, nodes, j->plan.size, j->plan.iters, gbps);
        for (int i = 0; i < n && ret == 0; i++) {
            g->l[first + i].gbps = gbps[i];
        }
    }
    return ret;
}

int perf_check_measure(perf_check_job_t *j)
{
    int ret;
    double *copy = malloc(sizeof(double) * (size_t)j->nranks);
    double *gbps = malloc(sizeof(double) * (size_t)(j->inter.nl + j->intra.nl + 1));
    perf_check_pair_t *p = malloc(sizeof(*p) * (size_t)(j->inter.nl + j->intra.nl + 1));

    ret = perf_check_copy(j, PERF_CHECK_COPY_SIZE(j->plan.size), j->plan.iters, copy);
    for (int r = 0; r < j->nranks && ret == 0; r++) {
        j->intra.m[r].copy = copy[r];
    }
    /* inside the nodes: round r of every node's own tournament at once; then between them */
    if (ret == 0) {
        ret = measure_graph(j, &j->intra, j->intra_round, j->intra_rounds, 0, p, gbps);
    }
    if (ret == 0) {
        ret = measure_graph(j, &j->inter, j->inter_round, j->inter_rounds, 1, p, gbps);
    }
    if (ret == 0 && j->nnodes >= 3) {
        ret = perf_check_ring(j, j->plan.size, j->plan.iters);
    }
    free(copy);
    free(gbps);
    free(p);
    return ret;
}

/* Rank 0's list of what to re-test, to every rank: 0, or -1. */
static int share_retest(perf_check_job_t *j, perf_check_pair_t *inter, int *ni,
                        perf_check_pair_t *intra, int *na, int *copy)
{
    int32_t head[3] = {*ni, *na, *copy};
    int32_t *pairs;
    int n;

    if (sharc_broadcast(head, head, 3, SHARC_DTYPE_I32, 0, j->world, NULL) != SHARC_OK) {
        return perf_check_fail(j, "sharing the re-test", SHARC_ERR_REMOTE);
    }
    *ni = head[0];
    *na = head[1];
    *copy = head[2];
    n = 2 * (*ni + *na);
    pairs = malloc(sizeof(int32_t) * (size_t)(n + 1));
    for (int i = 0; j->rank == 0 && i < *ni; i++) {
        pairs[2 * i] = inter[i].a;
        pairs[2 * i + 1] = inter[i].b;
    }
    for (int i = 0; j->rank == 0 && i < *na; i++) {
        pairs[2 * (*ni + i)] = intra[i].a;
        pairs[2 * (*ni + i) + 1] = intra[i].b;
    }
    if (n > 0 &&
        sharc_broadcast(pairs, pairs, (size_t)n, SHARC_DTYPE_I32, 0, j->world, NULL) != SHARC_OK) {
        free(pairs);
        return perf_check_fail(j, "sharing the re-test", SHARC_ERR_REMOTE);
    }
    for (int i = 0; i < *ni; i++) {
        inter[i].a = pairs[2 * i];
        inter[i].b = pairs[2 * i + 1];
    }
    for (int i = 0; i < *na; i++) {
        intra[i].a = pairs[2 * (*ni + i)];
        intra[i].b = pairs[2 * (*ni + i) + 1];
    }
    free(pairs);
    return 0;
}

/* The pairs of @p p (members of @p nmembers) in rounds, each round measured as node pairs
 * (@p nodes) or rank pairs; figures into the links of @p g. */
static int retest_rounds(perf_check_job_t *j, perf_check_graph_t *g, const perf_check_pair_t *p,
                         int n, int nmembers, int nodes)
{
    int *round_of = malloc(sizeof(int) * (size_t)(n + 1)), ret = 0;
    int nrounds = perf_check_greedy_rounds(p, n, nmembers, round_of);
    perf_check_pair_t *rp = malloc(sizeof(*rp) * (size_t)(n + 1));
    int *idx = malloc(sizeof(int) * (size_t)(n + 1));
    double *gbps = malloc(sizeof(double) * (size_t)(n + 1));

    for (int r = 0; r < nrounds && ret == 0; r++) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (round_of[i] == r) {
                idx[m] = i;
                rp[m++] = p[i];
            }
        }
        ret = run_pairs(j, rp, m, nodes, j->plan.size, j->plan.iters, gbps);
        for (int i = 0; i < m && ret == 0 && g != NULL; i++) {
            int k = perf_check_find_link(g, p[idx[i]].a, p[idx[i]].b);
            if (k >= 0) {
                g->l[k].retest = gbps[i];
            }
        }
    }
    free(round_of);
    free(rp);
    free(idx);
    free(gbps);
    return ret;
}

int perf_check_retest(perf_check_job_t *j)
{
    int maxp = j->inter.nl + j->intra.nl + 1, ni = 0, na = 0, copy = 0, copy2 = 0, ret;
    perf_check_pair_t *inter = malloc(sizeof(*inter) * (size_t)maxp);
    perf_check_pair_t *intra = malloc(sizeof(*intra) * (size_t)maxp);

    if (j->rank == 0) {
        perf_check_verdict(&j->inter);
        perf_check_verdict(&j->intra);
        ni = perf_check_retest_pairs(&j->inter, j->o->peers, inter, maxp, &copy2);
        na = perf_check_retest_pairs(&j->intra, j->o->peers, intra, maxp, &copy);
    }
    ret = share_retest(j, inter, &ni, intra, &na, &copy);
    if (ret == 0 && ni > 0) {
        ret = retest_rounds(j, j->rank == 0 ? &j->inter : NULL, inter, ni, j->nnodes, 1);
    }
    if (ret == 0 && na > 0) {
        ret = retest_rounds(j, j->rank == 0 ? &j->intra : NULL, intra, na, j->nranks, 0);
    }
    if (ret == 0 && copy) {
        double *gbps = malloc(sizeof(double) * (size_t)j->nranks);
        ret = perf_check_copy(j, PERF_CHECK_COPY_SIZE(j->plan.size), j->plan.iters, gbps);
        for (int r = 0; r < j->nranks && ret == 0 && j->rank == 0; r++) {
            j->intra.m[r].copy_retest = gbps[r];
        }
        free(gbps);
    }
    j->retest_inter = ni;
    j->retest_intra = na;
    j->retest_copy = copy;
    if (ret == 0) {
        int32_t named = 0;
        if (j->rank == 0) {
            named = perf_check_confirm(&j->inter) + perf_check_confirm(&j->intra);
        }
        if (sharc_broadcast(&named, &named, 1, SHARC_DTYPE_I32, 0, j->world, NULL) != SHARC_OK) {
            ret = perf_check_fail(j, "sharing the verdict", SHARC_ERR_REMOTE);
        }
        j->named = named;
    }
    free(inter);
    free(intra);
    return ret;
}
