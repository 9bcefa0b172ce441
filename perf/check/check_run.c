/*
 * check_run.c: what `sharc-perf check` measures, on every rank. An exchange is a 2-rank
 * all-gather on a communicator split off the job for one round (both ranks send at once);
 * every exchange of a round starts after a barrier of the whole job, so the pairs of a round
 * run at once, and each rank's times end up on every rank (an all-gather), which therefore
 * compute the same figures. What comes next (a re-test) is decided by rank 0 and broadcast.
 * Every wait is bounded: an exchange by --timeout (past it the rank says which peer it waited
 * for and leaves the job, which the others then learn from sharc), the rest by SHARC_TIMEOUT.
 */
#include "config.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_job.h"
#include "../common/perf_cuda.h"
#include "../common/perf_util.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static int fail(const perf_check_job_t *j, const char *what, sharc_status_t status)
{
    fprintf(stderr, "sharc-perf check: rank %d (%s): %s failed: %s (sharc's log above says why)\n",
            j->rank, j->host[j->node], what, sharc_status_string(status));
    return -1;
}

/* The exchange buffers for @p size bytes (recv holds both ranks' blocks): on the device with
 * --device cuda, else from sharc_mem_alloc, as the sharding engine's are (node-local peers
 * copy straight from them). */
static int ensure_bufs(perf_check_job_t *j, size_t size)
{
    void *send = NULL, *recv = NULL;

    if (size <= j->bufsize && j->send != NULL) {
        return 0;
    }
    perf_check_free_bufs(j);
    if (j->o->cuda) {
        send = perf_cuda_alloc(size);
        recv = perf_cuda_alloc(2 * size);
    } else if (sharc_mem_alloc(j->ctx, size, &send) != SHARC_OK ||
               sharc_mem_alloc(j->ctx, 2 * size, &recv) != SHARC_OK) {
        recv = NULL;
    }
    j->send = send;
    j->recv = recv;
    if (j->send == NULL || j->recv == NULL) {
        fprintf(stderr, "sharc-perf check: rank %d: no memory for %zu-byte buffers\n", j->rank,
                size);
        return -1;
    }
    if (!j->o->cuda) {
        memset(j->send, j->rank & 0xff, size);
    }
    j->bufsize = size;
    return 0;
}

void perf_check_free_bufs(perf_check_job_t *j)
{
    if (j->o->cuda) {
        perf_cuda_free(j->send);
        perf_cuda_free(j->recv);
    } else {
        sharc_mem_free(j->ctx, j->send);
        sharc_mem_free(j->ctx, j->recv);
    }
    j->send = j->recv = NULL;
    j->bufsize = 0;
}

static int barrier(perf_check_job_t *j)
{
    sharc_status_t status = sharc_barrier(j->world, NULL);

    return status == SHARC_OK ? 0 : fail(j, "a barrier of the job", status);
}

/* Every rank's @p n doubles to every rank: out[r * n ..]. */
static int gather(perf_check_job_t *j, const double *mine, int n, double *out)
{
    sharc_status_t status = sharc_allgather(mine, out, (size_t)n, SHARC_DTYPE_F64, j->world, NULL);

    return status == SHARC_OK ? 0 : fail(j, "gathering the figures", status);
}

static double max_over_job(perf_check_job_t *j, double v)
{
    if (sharc_allreduce(&v, &v, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, j->world, NULL) != SHARC_OK) {
        return -1;
    }
    return v;
}

/*
 * Wait for @p n requests; done_s[i] receives the seconds from @p t0 to request i's end. Past
 * --timeout this rank gives up on the job: a request cannot be withdrawn, and leaving is what
 * tells the other ranks at once (sharc fails their collectives naming this rank) instead of at
 * their own timeouts. A tool's decision, so it lives here and not in the library.
 */
static int wait_all(perf_check_job_t *j, sharc_request_h *reqs, int n, double t0, double *done_s,
                    const char *what, int peer)
{
    double deadline = t0 + j->o->timeout_s;
    int left = n, ret = 0;

    while (left > 0) {
        int moved = 0;

        for (int i = 0; i < n; i++) {
            sharc_status_t status;

            if (reqs[i] == NULL || (status = sharc_request_test(reqs[i])) == SHARC_INPROGRESS) {
                continue;
            }
            done_s[i] = perf_now() - t0;
            sharc_request_free(reqs[i]);
            reqs[i] = NULL;
            left--;
            moved = 1;
            if (status != SHARC_OK) {
                fprintf(stderr, "sharc-perf check: rank %d (%s): %s with rank %d (%s) failed: %s\n",
                        j->rank, j->host[j->node], what, peer, j->host[j->node_of[peer]],
                        sharc_status_string(status));
                ret = -1;
            }
        }
        if (left > 0 && !moved) {
            if (perf_now() > deadline) {
                fprintf(stderr,
                        "sharc-perf check: rank %d (%s): %s with rank %d (%s) did not finish in "
                        "%.0f s (--timeout): the link between %s and %s is down or far too "
                        "slow; leaving the job\n",
                        j->rank, j->host[j->node], what, peer, j->host[j->node_of[peer]],
                        j->o->timeout_s, j->host[j->node], j->host[j->node_of[peer]]);
                fflush(stdout);
                fflush(stderr);
                _exit(2); /* no exit handlers: nothing of the job is torn down */
            }
            sched_yield();
        }
    }
    return ret;
}

/* ---- the copy test ----------------------------------------------------------------------- */

/* The host copy runs for at least this long (and iters times), at most _MAX iterations. */
#define PERF_CHECK_COPY_S   0.05
#define PERF_CHECK_COPY_MAX 1000

/*
 * The ranks that share this rank's kernel (the same boot id: one machine, whatever its host
 * names, as namespace nodes are) take turns at the host copy: *turn_p is this rank's turn,
 * *turns_p the most ranks on one machine. Without a boot id a rank is a machine of its own.
 */
static int copy_turns(perf_check_job_t *j, int *turn_p, int *turns_p)
{
    char id[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    double mine[2], *all = malloc(sizeof(double) * 2 * (size_t)j->nranks);
    int ret;

    if (f != NULL) {
        if (fgets(id, sizeof(id), f) == NULL) {
            id[0] = '\0';
        }
        fclose(f);
    }
    for (const char *c = id; *c != '\0'; c++) {
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    }
    if (id[0] == '\0') {
        h = (uint64_t)j->rank << 32 | 1; /* unlike any hash's high word of another rank */
    }
    mine[0] = (double)(uint32_t)h; /* exact in a double */
    mine[1] = (double)(uint32_t)(h >> 32);
    if (all == NULL) {
        fprintf(stderr, "sharc-perf check: rank %d: no memory\n", j->rank);
        return -1;
    }
    ret = gather(j, mine, 2, all);
    *turn_p = 0;
    *turns_p = 1;
    for (int r = 0; ret == 0 && r < j->nranks; r++) {
        int before = 0;

        for (int q = 0; q < r; q++) {
            before += all[2 * q] == all[2 * r] && all[2 * q + 1] == all[2 * r + 1];
        }
        *turns_p = before + 1 > *turns_p ? before + 1 : *turns_p;
        *turn_p = r == j->rank ? before : *turn_p;
    }
    free(all);
    return ret;
}

int perf_check_copy(perf_check_job_t *j, size_t size, int iters, double *gbps_per_rank)
{
    double mine = 0;

    if (ensure_bufs(j, size) != 0 || barrier(j) != 0) {
        return -1;
    }
    if (j->o->cuda) {
        mine = perf_cuda_copy_bw(j->recv, j->send, size, 1, iters);
    } else if (j->copy_turns == 0 && copy_turns(j, &j->copy_turn, &j->copy_turns) != 0) {
        return -1; /* (the machines do not change between the first pass and the re-test) */
    }
    /* On the host, a rank's figure is its median iteration over at least PERF_CHECK_COPY_S,
     * copying alone on its machine: what its memory path does. A rank sharing its core with
     * another process is slowed in some iterations, not most; a slow socket or DIMM slows
     * every one. (All ranks of a machine at once made the figures a draw of who got a core
     * alone while the others started: on a loaded machine a rank was named in two passes.) */
    for (int k = 0; !j->o->cuda && k < j->copy_turns; k++) {
        double t[PERF_CHECK_COPY_MAX], t_end;
        int n = 0;

        if (k == j->copy_turn) {
            memcpy(j->recv, j->send, size);
            t_end = perf_now() + PERF_CHECK_COPY_S;
            while (n < PERF_CHECK_COPY_MAX && (n < iters || perf_now() < t_end)) {
                double t0 = perf_now();

                memcpy(j->recv, j->send, size);
                t[n++] = perf_now() - t0;
            }
            mine = (double)size / perf_median(t, (size_t)n) / 1e9;
        }
        if (j->copy_turns > 1 && barrier(j) != 0) {
            return -1;
        }
    }
    return gather(j, &mine, 1, gbps_per_rank);
}

/* ---- pair rounds ------------------------------------------------------------------------- */

int perf_check_pairs(perf_check_job_t *j, const perf_check_pair_t *rp, int nrp, const size_t *sizes,
                     int nsizes, int iters, double *t, double *open_s_p)
{
    int mine = -1, peer = -1, key = 0, ret = 0;
    double *tm = malloc(sizeof(double) * (size_t)(nsizes * iters)), t0 = perf_now();
    sharc_comm_h pc = NULL;
    sharc_status_t status;

    for (int i = 0; i < nrp; i++) {
        if (rp[i].a == j->rank || rp[i].b == j->rank) {
            mine = i;
            key = rp[i].b == j->rank;
            peer = key ? rp[i].a : rp[i].b;
        }
    }
    for (int i = 0; i < nsizes * iters; i++) {
        tm[i] = -1;
    }
    status = sharc_comm_split(j->world, mine >= 0 ? mine : SHARC_COMM_SPLIT_NOCOLOR, key, &pc);
    if (status != SHARC_OK) {
        free(tm);
        return fail(j, "splitting the job into pairs", status);
    }
    if (open_s_p != NULL) {
        *open_s_p = perf_now() - t0;
    }
    for (int s = 0; s < nsizes && ret == 0; s++) {
        if (ensure_bufs(j, sizes[s]) != 0) {
            ret = -1;
            break;
        }
        for (int it = 0; it <= iters && ret == 0; it++) {
            sharc_request_h req = NULL;
            double done = 0;

            if (barrier(j) != 0) {
                ret = -1;
                break;
            }
            if (pc == NULL) {
                continue;
            }
            t0 = perf_now();
            status = sharc_allgather(j->send, j->recv, sizes[s], SHARC_DTYPE_U8, pc, &req);
            if (status != SHARC_OK) {
                ret = fail(j, "posting an exchange", status);
                break;
            }
            ret = wait_all(j, &req, 1, t0, &done, "the exchange", peer);
            if (it > 0) {
                tm[s * iters + it - 1] = done;
            }
        }
    }
    sharc_comm_destroy(pc);
    if (ret == 0) {
        ret = gather(j, tm, nsizes * iters, t);
    }
    free(tm);
    return ret;
}

/* Median over the iterations of the slowest of @p nr ranks (layout of perf_check_pairs). */
static double slowest_median(const double *t, int nsizes, int s, int iters, const int *ranks,
                             int nr)
{
    double *v = malloc(sizeof(double) * (size_t)iters), med;

    for (int it = 0; it < iters; it++) {
        v[it] = 0;
        for (int i = 0; i < nr; i++) {
            double x = t[(size_t)ranks[i] * nsizes * iters + s * iters + it];
            v[it] = x > v[it] ? x : v[it];
        }
    }
    med = perf_median(v, (size_t)iters);
    free(v);
    return med;
}

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
                  slowest_median(t, 1, 0, iters, ranks, 2 * j->rails) / 1e9;
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
        gbps[i] = (double)size / slowest_median(t, 1, 0, iters, ranks, 2) / 1e9;
    }
    free(t);
    return ret;
}

/* ---- the ring ---------------------------------------------------------------------------- */

/* The edge node e -> e + 1 of the ring belongs to one of 2 classes (3 for an odd ring, whose
 * last edge needs its own), so that no node is in two edges of one class: a class is one
 * split of the job. */
static int edge_class(int e, int n)
{
    return (n % 2 == 1 && e == n - 1) ? 2 : e % 2;
}

int perf_check_ring(perf_check_job_t *j, size_t size, int iters)
{
    int n = j->nnodes, nclass = n % 2 ? 3 : 2, ret = 0;
    int out_e = j->node, in_e = (j->node - 1 + n) % n, on = j->lrank < j->rails;
    sharc_comm_h cout = NULL, cin = NULL;
    double *tin = malloc(sizeof(double) * (size_t)iters);
    double *t = malloc(sizeof(double) * (size_t)(j->nranks * iters));
    int *ranks = malloc(sizeof(int) * (size_t)j->rails);

    j->ring_gbps = -1;
    for (int i = 0; i < iters; i++) {
        tin[i] = -1;
    }
    for (int c = 0; c < nclass && ret == 0; c++) {
        int color = SHARC_COMM_SPLIT_NOCOLOR, key = 0;
        sharc_comm_h comm = NULL;
        sharc_status_t status;

        if (on && edge_class(out_e, n) == c) {
            color = out_e * j->rails + j->lrank; /* the sender first: root 0 */
        } else if (on && edge_class(in_e, n) == c) {
            color = in_e * j->rails + j->lrank;
            key = 1;
        }
        status = sharc_comm_split(j->world, color, key, &comm);
        if (status != SHARC_OK) {
            ret = fail(j, "splitting the job into the ring's hops", status);
        } else if (comm != NULL) {
            *(key ? &cin : &cout) = comm;
        }
    }
    for (int it = 0; it <= iters && ret == 0; it++) {
        sharc_request_h reqs[2] = {NULL, NULL};
        double done[2] = {0, 0}, t0;
        sharc_status_t status;

        if (barrier(j) != 0) {
            ret = -1;
            break;
        }
        if (!on) {
            continue;
        }
        t0 = perf_now();
        status = sharc_broadcast(j->send, j->send, size, SHARC_DTYPE_U8, 0, cout, &reqs[0]);
        if (status == SHARC_OK) {
            status = sharc_broadcast(j->recv, j->recv, size, SHARC_DTYPE_U8, 0, cin, &reqs[1]);
        }
        if (status != SHARC_OK) {
            sharc_request_free(reqs[0]);
            ret = fail(j, "posting the ring's hops", status);
            break;
        }
        ret = wait_all(j, reqs, 2, t0, done, "the ring's hops",
                       j->by_node[j->first[(j->node + 1) % n] + j->lrank]);
        if (it > 0) {
            tin[it - 1] = done[1];
        }
    }
    sharc_comm_destroy(cout);
    sharc_comm_destroy(cin);
    if (ret == 0) {
        ret = gather(j, tin, iters, t);
    }
    for (int v = 0; v < n && ret == 0; v++) {
        for (int r = 0; r < j->rails; r++) {
            ranks[r] = j->by_node[j->first[v] + r];
        }
        j->ring_hop[v] =
            (double)j->rails * (double)size / slowest_median(t, 1, 0, iters, ranks, j->rails) / 1e9;
        if (j->ring_gbps < 0 || j->ring_hop[v] < j->ring_gbps) {
            j->ring_gbps = j->ring_hop[v];
        }
    }
    free(tin);
    free(t);
    free(ranks);
    return ret;
}

/* ---- the probe and the plan -------------------------------------------------------------- */

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
    t = malloc(sizeof(double) * (size_t)j->nranks);
    for (size_t s = j->o->min_size; nsizes<16; s = s * 4> j->o->max_size ? j->o->max_size : s * 4) {
        double mine = 0;

        sizes[nsizes] = s;
        ret = perf_check_pairs(j, rp, nrp, &s, 1, 1, t, nsizes == 0 ? &open_s : NULL);
        if (ret != 0) {
            break;
        }
        for (int r = 0; r < j->nranks; r++) {
            mine = t[r] > mine ? t[r] : mine;
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
    if (barrier(j) != 0) {
        return -1;
    }
    bar_s = max_over_job(j, perf_now() - bar_s);
    j->round_s = max_over_job(j, open_s);
    if (bar_s < 0 || j->round_s < 0) {
        return fail(j, "agreeing on the probe", SHARC_ERR_REMOTE);
    }
    if (nsizes >= 2 && tmax[nsizes - 1] > tmax[nsizes - 2]) {
        j->probe_gbps = (double)(sizes[nsizes - 1] - sizes[nsizes - 2]) /
                        (tmax[nsizes - 1] - tmax[nsizes - 2]) / 1e9;
        j->probe_lat_s = tmax[nsizes - 2] - (double)sizes[nsizes - 2] / (j->probe_gbps * 1e9);
    } else {
        j->probe_gbps = (double)sizes[nsizes - 1] / tmax[nsizes - 1] / 1e9;
        j->probe_lat_s = 0;
    }
    j->probe_lat_s = (j->probe_lat_s > 0 ? j->probe_lat_s : 0) + bar_s;
    return 0;
}

/* ---- the passes -------------------------------------------------------------------------- */

int perf_check_measure(perf_check_job_t *j)
{
    size_t size = j->plan.size;
    int iters = j->plan.iters, ret = 0;
    double *copy = malloc(sizeof(double) * (size_t)j->nranks);
    double *gbps = malloc(sizeof(double) * (size_t)(j->inter.nl + j->intra.nl + 1));
    perf_check_pair_t *p = malloc(sizeof(*p) * (size_t)(j->inter.nl + j->intra.nl + 1));

    ret = perf_check_copy(j, PERF_CHECK_COPY_SIZE(size), iters, copy);
    for (int r = 0; r < j->nranks && ret == 0; r++) {
        j->intra.m[r].copy = copy[r];
    }
    /* inside the nodes: round r of every node's own tournament at once */
    for (int r = 0; r < j->intra_rounds && ret == 0; r++) {
        int n = 0, first = -1;
        for (int k = 0; k < j->intra.nl; k++) {
            if (j->intra_round[k] == r) {
                first = first < 0 ? k : first;
                p[n].a = j->intra.l[k].a;
                p[n++].b = j->intra.l[k].b;
            }
        }
        ret = run_rank_pairs(j, p, n, size, iters, gbps);
        for (int i = 0; i < n && ret == 0; i++) {
            j->intra.l[first + i].gbps = gbps[i];
        }
    }
    /* between the nodes */
    for (int r = 0; r < j->inter_rounds && ret == 0; r++) {
        int n = 0, first = -1;
        for (int k = 0; k < j->inter.nl; k++) {
            if (j->inter_round[k] == r) {
                first = first < 0 ? k : first;
                p[n].a = j->inter.l[k].a;
                p[n++].b = j->inter.l[k].b;
            }
        }
        ret = run_node_pairs(j, p, n, size, iters, gbps);
        for (int i = 0; i < n && ret == 0; i++) {
            j->inter.l[first + i].gbps = gbps[i];
        }
    }
    if (ret == 0 && j->nnodes >= 3) {
        ret = perf_check_ring(j, size, iters);
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
        return fail(j, "sharing the re-test", SHARC_ERR_REMOTE);
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
        return fail(j, "sharing the re-test", SHARC_ERR_REMOTE);
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
        ret = nodes ? run_node_pairs(j, rp, m, j->plan.size, j->plan.iters, gbps)
                    : run_rank_pairs(j, rp, m, j->plan.size, j->plan.iters, gbps);
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
            ret = fail(j, "sharing the verdict", SHARC_ERR_REMOTE);
        }
        j->named = named;
    }
    free(inter);
    free(intra);
    return ret;
}
