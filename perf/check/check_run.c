/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_run.c: the exchanges `sharc-perf check` measures, on every rank (the passes that use
 * them are check_pass.c's): each rank's copy, pair rounds and the ring. An exchange is a 2-rank
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

int perf_check_fail(const perf_check_job_t *j, const char *what, sharc_status_t status)
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

int perf_check_barrier(perf_check_job_t *j)
{
    sharc_status_t status = sharc_barrier(j->world, NULL);

    return status == SHARC_OK ? 0 : perf_check_fail(j, "a barrier of the job", status);
}

/* Every rank's @p n doubles to every rank: out[r * n ..]. */
static int gather(perf_check_job_t *j, const double *mine, int n, double *out)
{
    sharc_status_t status = sharc_allgather(mine, out, (size_t)n, SHARC_DTYPE_F64, j->world, NULL);

    return status == SHARC_OK ? 0 : perf_check_fail(j, "gathering the figures", status);
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
    uint64_t h;
    double mine[2], *all = malloc(sizeof(double) * 2 * (size_t)j->nranks);
    int ret;

    if (f != NULL) {
        if (fgets(id, sizeof(id), f) == NULL) {
            id[0] = '\0';
        }
        fclose(f);
    }
    h = perf_fnv1a(id);
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

    if (ensure_bufs(j, size) != 0 || perf_check_barrier(j) != 0) {
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
        if (j->copy_turns > 1 && perf_check_barrier(j) != 0) {
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
        return perf_check_fail(j, "splitting the job into pairs", status);
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

            if (perf_check_barrier(j) != 0) {
                ret = -1;
                break;
            }
            if (pc == NULL) {
                continue;
            }
            t0 = perf_now();
            status = sharc_allgather(j->send, j->recv, sizes[s], SHARC_DTYPE_U8, pc, &req);
            if (status != SHARC_OK) {
                ret = perf_check_fail(j, "posting an exchange", status);
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
double perf_check_slowest_median(const double *t, int nsizes, int s, int iters, const int *ranks,
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
            ret = perf_check_fail(j, "splitting the job into the ring's hops", status);
        } else if (comm != NULL) {
            *(key ? &cin : &cout) = comm;
        }
    }
    for (int it = 0; it <= iters && ret == 0; it++) {
        sharc_request_h reqs[2] = {NULL, NULL};
        double done[2] = {0, 0}, t0;
        sharc_status_t status;

        if (perf_check_barrier(j) != 0) {
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
            ret = perf_check_fail(j, "posting the ring's hops", status);
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
        j->ring_hop[v] = (double)j->rails * (double)size /
                         perf_check_slowest_median(t, 1, 0, iters, ranks, j->rails) / 1e9;
        if (j->ring_gbps < 0 || j->ring_hop[v] < j->ring_gbps) {
            j->ring_gbps = j->ring_hop[v];
        }
    }
    free(tin);
    free(t);
    free(ranks);
    return ret;
}
