/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_job.c: the job of `sharc-perf check` on every rank, around what it measures: the
 * context and communicator, the layout of ranks on nodes, each node's expected figure (from
 * --expect or sharc-topo), the graphs of links to measure, the plan that fits the budget, what
 * a rank says when the job breaks, and the teardown. Not the exchanges (check_run.c), the
 * passes (check_pass.c) nor the command line (check_main.c).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "check_job.h"

/* A context whose collectives give up a while after an exchange would (SHARC_TIMEOUT, unless
 * set: the exchanges' own bound then names the link first), and the job's communicator. */
static int open_job(perf_check_job_t *j)
{
    sharc_config_h config = NULL;
    char value[32];

    if (sharc_config_create(0, &config) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: bad SHARC_* settings (see the log above)\n");
        return 2;
    }
    if (getenv("SHARC_TIMEOUT") == NULL) {
        perf_snprintf(value, sizeof(value), "%.0fs", j->o->timeout_s + 5);
        sharc_config_set(config, "TIMEOUT", value);
    }
    if (sharc_context_create(config, &j->ctx) != SHARC_OK) {
        sharc_config_destroy(config);
        fprintf(stderr, "sharc-perf check: cannot create a context (see the log above)\n");
        return 2;
    }
    sharc_config_destroy(config);
    if (sharc_comm_create(j->ctx, NULL, &j->world) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: cannot join the job: a rank is missing or unreachable "
                        "(the log above names it)\n");
        sharc_context_destroy(j->ctx);
        return 2;
    }
    j->rank = sharc_comm_rank(j->world);
    j->nranks = sharc_comm_size(j->world);
    j->nnodes = sharc_comm_nnodes(j->world);
    j->node = sharc_comm_node(j->world);
    j->lrank = sharc_comm_local_rank(j->world);
    return 0;
}

/* Every rank's node, local rank and host name; the nodes' ranks in local rank order. */
static int layout(perf_check_job_t *j)
{
    int32_t mine[2] = {j->node, j->lrank}, *all = malloc(sizeof(int32_t) * 2 * (size_t)j->nranks);
    char me[PERF_CHECK_HOST] = "", *hosts = malloc((size_t)j->nranks * PERF_CHECK_HOST);

    gethostname(me, sizeof(me) - 1);
    if (sharc_allgather(mine, all, 2, SHARC_DTYPE_I32, j->world, NULL) != SHARC_OK ||
        sharc_allgather(me, hosts, PERF_CHECK_HOST, SHARC_DTYPE_U8, j->world, NULL) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: rank %d: cannot learn the job's layout\n", j->rank);
        free(all);
        free(hosts);
        return 2;
    }
    j->node_of = calloc((size_t)j->nranks, sizeof(int));
    j->lrank_of = calloc((size_t)j->nranks, sizeof(int));
    j->by_node = calloc((size_t)j->nranks, sizeof(int));
    j->first = calloc((size_t)j->nnodes, sizeof(int));
    j->count = calloc((size_t)j->nnodes, sizeof(int));
    j->host = calloc((size_t)j->nnodes, sizeof(*j->host));
    for (int r = 0; r < j->nranks; r++) {
        j->node_of[r] = all[2 * r];
        j->lrank_of[r] = all[2 * r + 1];
        j->count[j->node_of[r]]++;
    }
    j->rails = j->nranks;
    for (int n = 0; n < j->nnodes; n++) {
        j->first[n] = n ? j->first[n - 1] + j->count[n - 1] : 0;
        j->rails = j->count[n] < j->rails ? j->count[n] : j->rails;
        j->maxlocal = j->count[n] > j->maxlocal ? j->count[n] : j->maxlocal;
    }
    for (int r = 0; r < j->nranks; r++) {
        j->by_node[j->first[j->node_of[r]] + j->lrank_of[r]] = r;
        if (j->lrank_of[r] == 0) {
            perf_snprintf(j->host[j->node_of[r]], PERF_CHECK_HOST, "%.*s", PERF_CHECK_HOST - 1,
                          hosts + (size_t)r * PERF_CHECK_HOST);
        }
    }
    free(all);
    free(hosts);
    return 0;
}

/* Each node's expected link rate: --expect, or sharc-topo run by the node's local rank 0. */
static int expectations(perf_check_job_t *j)
{
    perf_check_expect_t mine = {.gbit = -1, .nports = 0, .why = "unknown"};
    perf_check_expect_t *all = calloc((size_t)j->nranks, sizeof(*all));
    int ret = 0;

    if (j->o->expect_gbit > 0) {
        mine.gbit = j->o->expect_gbit;
        mine.nports = 1;
        perf_snprintf(mine.why, sizeof(mine.why), "--expect");
    } else if (j->o->expect_gbit == 0) {
        perf_snprintf(mine.why, sizeof(mine.why), "--expect none");
    } else if (j->lrank == 0) {
        FILE *f = popen(j->o->topo_cmd, "r");
        char *text = calloc(1, 1u << 22);
        size_t len = 0, n;

        while (f != NULL && text != NULL && len + 1 < (1u << 22) &&
               (n = fread(text + len, 1, (1u << 22) - 1 - len, f)) > 0) {
            len += n;
        }
        if (f != NULL) {
            pclose(f);
        }
        if (text == NULL || len == 0) {
            perf_snprintf(mine.why, sizeof(mine.why), "no topology (sharc-topo did not run)");
        } else if (perf_check_topo_expect(text, &mine) != 0) {
            mine.gbit = -1; /* mine.why says why */
        }
        free(text);
    }
    /* the struct travels as bytes: every rank runs this same build */
    if (sharc_allgather(&mine, all, sizeof(mine), SHARC_DTYPE_U8, j->world, NULL) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: rank %d: cannot gather the topology\n", j->rank);
        ret = 2;
    }
    j->expect = calloc((size_t)j->nnodes, sizeof(*j->expect));
    for (int n = 0; n < j->nnodes && ret == 0; n++) {
        j->expect[n] = all[j->by_node[j->first[n]]];
        j->expect[n].why[sizeof(mine.why) - 1] = '\0';
    }
    free(all);
    return ret;
}

/* GB/s a node's link should carry with the job's rails: its ports' rate, or the share of it
 * that as many flows as rails can use (one port each); <= 0 unknown. */
static double node_expect(const perf_check_job_t *j, int n)
{
    const perf_check_expect_t *e = &j->expect[n];
    int used = j->rails < e->nports ? j->rails : e->nports;

    return (e->gbit > 0 && e->nports > 0) ? e->gbit * used / e->nports / 8 : -1;
}

/* The links of both levels, in the order of their rounds. */
/* Inter-node: members are the nodes, links every pair of nodes in their rounds. */
static void build_inter(perf_check_job_t *j, perf_check_pair_t *p)
{
    int rounds = perf_check_rr_rounds(j->nnodes), k = 0;

    j->inter = (perf_check_graph_t){
        .nm = j->nnodes, .threshold = j->o->threshold, .expect_frac = j->o->expect_frac};
    j->inter.m = calloc((size_t)j->nnodes, sizeof(perf_check_member_t));
    j->inter.nl = j->nnodes * (j->nnodes - 1) / 2;
    j->inter.l = calloc((size_t)j->inter.nl, sizeof(perf_check_link_t));
    j->inter_round = calloc((size_t)j->inter.nl, sizeof(int));
    j->inter_rounds = rounds;
    for (int n = 0; n < j->nnodes; n++) {
        j->inter.m[n].copy = -1;
        j->inter.m[n].expect = node_expect(j, n);
    }
    for (int r = 0; r < rounds; r++) {
        int np = perf_check_rr_round(j->nnodes, r, p);
        for (int i = 0; i < np; i++, k++) {
            double ea = node_expect(j, p[i].a), eb = node_expect(j, p[i].b);
            j->inter.l[k] = (perf_check_link_t){
                .a = p[i].a, .b = p[i].b, .gbps = -1, .retest = -1, .expect = ea < eb ? ea : eb};
            j->inter_round[k] = r;
        }
    }
}

/* Intra-node: members are the ranks (grouped by node), links every pair within a node; round r
 * is round r of every node's own tournament. */
static void build_intra(perf_check_job_t *j, perf_check_pair_t *p)
{
    int k = 0;

    j->intra = (perf_check_graph_t){
        .nm = j->nranks, .threshold = j->o->threshold, .expect_frac = j->o->expect_frac};
    j->intra.m = calloc((size_t)j->nranks, sizeof(perf_check_member_t));
    for (int n = 0; n < j->nnodes; n++) {
        j->intra.nl += j->count[n] * (j->count[n] - 1) / 2;
    }
    j->intra.l = calloc((size_t)j->intra.nl + 1, sizeof(perf_check_link_t));
    j->intra_round = calloc((size_t)j->intra.nl + 1, sizeof(int));
    j->intra_rounds = perf_check_rr_rounds(j->maxlocal);
    for (int r = 0; r < j->nranks; r++) {
        j->intra.m[r].group = j->node_of[r];
        j->intra.m[r].copy = -1;
        j->intra.m[r].expect = -1;
    }
    for (int r = 0; r < j->intra_rounds; r++) {
        for (int n = 0; n < j->nnodes; n++) {
            int np = perf_check_rr_round(j->count[n], r, p);
            for (int i = 0; i < np; i++, k++) {
                j->intra.l[k] = (perf_check_link_t){.a = j->by_node[j->first[n] + p[i].a],
                                                    .b = j->by_node[j->first[n] + p[i].b],
                                                    .gbps = -1,
                                                    .retest = -1,
                                                    .expect = -1};
                j->intra_round[k] = r;
            }
        }
    }
}

int perf_check_job_open(perf_check_job_t *j)
{
    int ret = open_job(j);

    if (ret != 0) {
        return ret;
    }
    if (j->o->cuda && perf_cuda_init(j->world) != 0) {
        sharc_comm_destroy(j->world);
        sharc_context_destroy(j->ctx);
        return 2;
    }
    return 0;
}

int perf_check_job_layout(perf_check_job_t *j)
{
    perf_check_pair_t *p;
    int ret = layout(j);

    if (ret == 0 && j->nnodes < 2) {
        if (j->rank == 0) {
            fprintf(stderr,
                    "sharc-perf check: the job's %d rank(s) are all on one node (%s): the check "
                    "compares nodes, so it needs ranks on 2 nodes or more; run it under the "
                    "launcher of the multi-node job\n",
                    j->nranks, j->host[0]);
        }
        ret = 2;
    }
    if (ret == 0) {
        ret = expectations(j);
    }
    if (ret != 0) {
        return ret;
    }
    j->ring_hop = calloc((size_t)j->nnodes, sizeof(double));
    j->ring_gbps = -1; /* none below 3 nodes */
    p = malloc(sizeof(*p) * (size_t)(j->nranks / 2 + j->nnodes / 2 + 2));
    build_inter(j, p);
    build_intra(j, p);
    free(p);
    return 0;
}

/* On host memory a pair inside a node should move what one copy does: the node's median copy
 * bandwidth is the intra-node links' expected figure (on GPUs the copy is HBM's, not NVLink's:
 * unknown). */
void perf_check_intra_expect(perf_check_job_t *j)
{
    double *v = malloc(sizeof(double) * (size_t)j->nranks);

    for (int n = 0; n < j->nnodes && !j->o->cuda; n++) {
        int m = 0;
        double med;
        for (int i = 0; i < j->count[n]; i++) {
            double c = j->intra.m[j->by_node[j->first[n] + i]].copy;
            if (c >= 0) {
                v[m++] = c;
            }
        }
        med = m > 0 ? perf_median(v, (size_t)m) : -1;
        for (int k = 0; k < j->intra.nl; k++) {
            if (j->node_of[j->intra.l[k].a] == n) {
                j->intra.l[k].expect = med;
            }
        }
    }
    free(v);
}

/* Rank 0 fits the size and iterations into what is left of the budget; every rank learns it.
 * 0, or 2 when the budget is too small (said by rank 0). */
int perf_check_job_plan(perf_check_job_t *j)
{
    double msg[4] = {0, 0, 0, 0};

    if (j->rank == 0) {
        perf_check_budget_t b = {
            .budget_s = j->o->budget_s,
            .spent_s = perf_now() - j->t0,
            .rounds = j->inter_rounds + j->intra_rounds + (j->nnodes >= 3 ? 2 : 0) + 0.5,
            .retest_rounds = 3,
            .round_s = j->round_s,
            .lat_s = j->probe_lat_s,
            .gbps = j->probe_gbps,
            .min_size = j->o->min_size,
            .max_size = j->o->max_size,
            .min_iters = 3,
            .want_iters = j->o->max_iters < 5 ? j->o->max_iters : 5,
            .max_iters = j->o->max_iters,
        };
        perf_check_plan_t p;
        int ok = perf_check_plan(&b, &p) == 0;

        msg[0] = ok;
        msg[1] = (double)p.size;
        msg[2] = p.iters;
        msg[3] = p.est_s;
        if (!ok) {
            fprintf(stderr,
                    "sharc-perf check: --budget %.0fs is too small for %d nodes x %d ranks: the "
                    "probe found %.3g GB/s between nodes and %.2f s a round, so even %zu-byte "
                    "exchanges x %d need about %.0f s more after the %.1f s spent; use --budget "
                    "%.0fs or more, or a smaller -b\n",
                    j->o->budget_s, j->nnodes, j->rails, j->probe_gbps, j->round_s, p.size, p.iters,
                    p.est_s, b.spent_s, b.spent_s + p.est_s + 1);
        }
    }
    if (sharc_broadcast(msg, msg, 4, SHARC_DTYPE_F64, 0, j->world, NULL) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: rank %d: cannot learn the plan\n", j->rank);
        return 2;
    }
    j->plan.size = (size_t)msg[1];
    j->plan.iters = (int)msg[2];
    j->plan.est_s = msg[3];
    return msg[0] != 0 ? 0 : 2;
}

/*
 * After a step failed on this rank: whether every rank still reaches the job's store (the
 * bootstrap's barrier, bounded by SHARC_BOOTSTRAP_TIMEOUT), so that sharc's log names the
 * ranks that do not: a collective that times out cannot say which of its peers went silent.
 */
void perf_check_job_diagnose(perf_check_job_t *j)
{
    sharc_status_t status;

    fprintf(stderr,
            "sharc-perf check: rank %d (%s): the check cannot go on; asking which ranks still "
            "answer (at most SHARC_BOOTSTRAP_TIMEOUT)\n",
            j->rank, j->host[j->node]);
    fflush(stderr);
    status = sharc_comm_barrier(j->world);
    if (status == SHARC_OK) {
        fprintf(stderr,
                "sharc-perf check: rank %d (%s): every rank still reaches the job's store: the "
                "fault is between nodes (the log above names the connection lost)\n",
                j->rank, j->host[j->node]);
    } else if (status == SHARC_ERR_TIMEOUT) {
        fprintf(stderr,
                "sharc-perf check: rank %d (%s): not every rank reached the job's store in time: "
                "the log above names those that did not arrive (their node or its link is "
                "down)\n",
                j->rank, j->host[j->node]);
    } else if (status == SHARC_ERR_REMOTE) {
        /* the store answered: a rank left it (ended, or gave up on a store it could not
         * reach), or the store itself was lost; sharc's log above says which */
        fprintf(stderr,
                "sharc-perf check: rank %d (%s): a rank is gone from the job's store (%s): the "
                "log above names it (it ended, or its node or link is down), or says the store "
                "itself was lost\n",
                j->rank, j->host[j->node], sharc_status_string(status));
    } else {
        fprintf(stderr,
                "sharc-perf check: rank %d (%s): the job's store is out of reach (%s): rank 0 "
                "left or its node's link is down (the log above says which)\n",
                j->rank, j->host[j->node], sharc_status_string(status));
    }
}

void perf_check_job_close(perf_check_job_t *j)
{
    perf_check_free_bufs(j);
    if (j->o->cuda) {
        perf_cuda_fini();
    }
    free(j->node_of);
    free(j->lrank_of);
    free(j->by_node);
    free(j->first);
    free(j->count);
    free(j->host);
    free(j->expect);
    free(j->inter.m);
    free(j->inter.l);
    free(j->inter_round);
    free(j->intra.m);
    free(j->intra.l);
    free(j->intra_round);
    free(j->ring_hop);
    sharc_comm_destroy(j->world);
    sharc_context_destroy(j->ctx);
}
