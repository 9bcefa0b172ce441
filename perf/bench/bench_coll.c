/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_coll.c: one collective of the benchmarks on the buffers of one size: the buffers'
 * layout, sharc's call, NCCL's (--vs-nccl) on the same buffers, and -c, which runs sharc's
 * once on known inputs and counts the wrong elements. Not MPI's (bench_mpi.c), the timing nor
 * the output (bench_sweep.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "bench.h"

/* ---- the buffers ------------------------------------------------------------------------- */

static void bench_layout(const perf_bench_opts_t *o, int n, size_t size, perf_bench_bufs_t *b)
{
    size_t esize = sharc_dtype_size(o->dtype);

    b->count = size / esize;
    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
    case SHARC_COLL_ALLGATHERV:
    case SHARC_COLL_GATHER:
        b->sendcount = b->count / n;
        b->recvcount = b->sendcount * n;
        break;
    case SHARC_COLL_REDUCE_SCATTER:
    case SHARC_COLL_REDUCE_SCATTERV:
    case SHARC_COLL_SCATTER:
        b->recvcount = b->count / n;
        b->sendcount = b->recvcount * n;
        break;
    case SHARC_COLL_ALLTOALL:
    case SHARC_COLL_ALLTOALLV:
        b->blockcount = b->count / n;
        b->sendcount = b->recvcount = b->blockcount * n;
        break;
    default: b->sendcount = b->recvcount = b->count; break;
    }
    b->count = SHARC_PERF_MAX(b->sendcount, b->recvcount);
    b->size = b->count * esize;
}

/* A zeroed buffer of @p bytes: on the device with --device cuda, from sharc_mem_alloc with
 * -R 1, else from the heap. */
static char *bench_alloc(const perf_bench_opts_t *o, sharc_context_h ctx, size_t bytes)
{
    void *p = NULL;

    if (o->cuda) {
        return perf_cuda_alloc(bytes);
    }
    if (!o->registered) {
        return calloc(1, bytes);
    }
    return sharc_mem_alloc(ctx, bytes, &p) == SHARC_OK ? p : NULL;
}

static void bench_free(const perf_bench_opts_t *o, sharc_context_h ctx, char *p)
{
    if (o->cuda) {
        perf_cuda_free(p);
    } else if (o->registered) {
        sharc_mem_free(ctx, p);
    } else {
        free(p);
    }
}

int perf_bench_bufs_alloc(const perf_bench_opts_t *o, sharc_context_h ctx, int n, size_t size,
                          perf_bench_bufs_t *b)
{
    bench_layout(o, n, size, b);
    b->vcounts = calloc((size_t)n, sizeof(*b->vcounts)); /* the uneven ones' even blocks */
    for (int i = 0; b->vcounts != NULL && i < n; i++) {
        b->vcounts[i] = (o->coll == SHARC_COLL_ALLGATHERV) ? b->sendcount
                        : (o->coll == SHARC_COLL_ALLTOALLV) ? b->blockcount
                                                            : b->recvcount;
    }
    b->send = bench_alloc(o, ctx, b->size + 64);
    b->recv = bench_alloc(o, ctx, b->size + 64);
    b->hsend = o->cuda ? calloc(1, b->size + 64) : b->send;
    b->hrecv = o->cuda ? calloc(1, b->size + 64) : b->recv;
    if (b->send == NULL || b->recv == NULL || b->hsend == NULL || b->hrecv == NULL ||
        b->vcounts == NULL) {
        perf_bench_bufs_free(o, ctx, b);
        return -1;
    }
    if (!o->cuda) {
        /* written before anything is timed (as nccl-tests initializes its data): calloc's
         * untouched pages all read the kernel's one zero page, which a peer copies from its
         * cache at twice the rate of memory; the values (0.75 as f32) stay finite under any
         * op. -c fills them with its own data after the timed calls. */
        memset(b->send, 0x3f, b->size + 64);
        memset(b->recv, 0x3f, b->size + 64);
    }
    return 0;
}

void perf_bench_bufs_free(const perf_bench_opts_t *o, sharc_context_h ctx, perf_bench_bufs_t *b)
{
    free(b->vcounts);
    if (o->cuda) {
        free(b->hsend);
        free(b->hrecv);
    }
    bench_free(o, ctx, b->send);
    bench_free(o, ctx, b->recv);
}

/* ---- the sides of the comparison --------------------------------------------------------- */

static sharc_status_t bench_call_sharc(const perf_bench_opts_t *o, sharc_comm_h comm,
                                       perf_bench_bufs_t *b, int inplace)
{
    int rank = sharc_comm_rank(comm);
    size_t esize = sharc_dtype_size(o->dtype);

    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
        return sharc_allgather_ex(inplace ? b->recv + rank * b->sendcount * esize : b->send,
                                  b->recv, b->sendcount, o->dtype, &o->wire, comm, NULL);
    case SHARC_COLL_REDUCE_SCATTER:
        return sharc_reduce_scatter_ex(b->send,
                                       inplace ? b->send + rank * b->recvcount * esize : b->recv,
                                       b->recvcount, o->dtype, o->op, &o->wire, comm, NULL);
    case SHARC_COLL_ALLREDUCE:
        return sharc_allreduce(b->send, inplace ? b->send : b->recv, b->count, o->dtype, o->op,
                               comm, NULL);
    case SHARC_COLL_ALLTOALL:
        return sharc_alltoall(b->send, inplace ? b->send : b->recv, b->blockcount, o->dtype, comm,
                              NULL);
    case SHARC_COLL_REDUCE:
        return sharc_reduce(b->send, inplace ? b->send : b->recv, b->count, o->dtype, o->op,
                            o->root, comm, NULL);
    case SHARC_COLL_GATHER:
        return sharc_gather(inplace && rank == o->root
                                ? b->recv + (size_t)o->root * b->sendcount * esize
                                : b->send,
                            b->recv, b->sendcount, o->dtype, o->root, comm, NULL);
    case SHARC_COLL_SCATTER:
        return sharc_scatter(b->send,
                             inplace && rank == o->root
                                 ? b->send + (size_t)o->root * b->recvcount * esize
                                 : b->recv,
                             b->recvcount, o->dtype, o->root, comm, NULL);
    case SHARC_COLL_ALLGATHERV:
        return sharc_allgatherv(inplace ? b->recv + rank * b->sendcount * esize : b->send,
                                b->recv, b->vcounts, NULL, o->dtype, comm, NULL);
    case SHARC_COLL_REDUCE_SCATTERV:
        return sharc_reduce_scatterv(b->send,
                                     inplace ? b->send + rank * b->recvcount * esize : b->recv,
                                     b->vcounts, o->dtype, o->op, comm, NULL);
    case SHARC_COLL_ALLTOALLV: /* (no in-place form: the in-place columns repeat this) */
        return sharc_alltoallv(b->send, b->vcounts, NULL, b->recv, b->vcounts, NULL, o->dtype,
                               comm, NULL);
    default:
        return sharc_broadcast(b->send, inplace ? b->send : b->recv, b->count, o->dtype, o->root,
                               comm, NULL);
    }
}

/* The collective once; a failure says which and how (the library's log says why), so a job
 * that dies shows when each rank learned it. */
int perf_bench_run_sharc(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                         int inplace)
{
    sharc_status_t status;

    if (o->coll == PERF_SENDRECV) {
        return perf_bench_sendrecv_sharc(o, comm, b, inplace);
    }
    status = bench_call_sharc(o, comm, b, inplace);
    if (status != SHARC_OK) {
        fprintf(stderr, "sharc-perf: rank %d: %s of %zu bytes failed: %s\n", sharc_comm_rank(comm),
                sharc_coll_name(o->coll), b->size, sharc_status_string(status));
        return -1;
    }
    return 0;
}

const char *perf_bench_name(const perf_bench_opts_t *o)
{
    return o->coll == PERF_SENDRECV ? "sendrecv" : sharc_coll_name(o->coll);
}

int perf_bench_run_nccl(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                        int inplace)
{
    size_t count = (o->coll == SHARC_COLL_ALLGATHER)        ? b->sendcount
                   : (o->coll == SHARC_COLL_REDUCE_SCATTER) ? b->recvcount
                                                            : b->count;

    (void)comm;
    (void)inplace;
    return perf_nccl_run((int)o->coll, b->send, b->recv, count, o->dtype, o->op, o->root) != 0 ? -1
                                                                                               : 0;
}

/* ---- -c ---------------------------------------------------------------------------------- */

/* The collective once on the inputs the host copies hold; the results back in them (with
 * --device cuda the copies move to the device and back). */
static int bench_check_run(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                           int inplace)
{
    if (o->cuda && (perf_cuda_put(b->send, b->hsend, b->size) |
                    perf_cuda_put(b->recv, b->hrecv, b->size)) != 0) {
        return -1;
    }
    if (perf_bench_run_sharc(o, comm, b, inplace) != 0) {
        return -1;
    }
    return (o->cuda && (perf_cuda_get(b->hsend, b->send, b->size) |
                        perf_cuda_get(b->hrecv, b->recv, b->size)) != 0)
               ? -1
               : 0;
}

/* Wrong elements of @p n blocks of @p count elements from @p buf, block r holding rank r's
 * inputs from global index base + r * step. */
static size_t bench_wrong_blocks(const perf_bench_opts_t *o, const char *buf, int n, size_t count,
                                 size_t base, size_t step)
{
    size_t esize = sharc_dtype_size(o->dtype), wrong = 0;

    for (int r = 0; r < n; r++) {
        wrong += perf_wrong(buf + r * count * esize, o->dtype, count, base + (size_t)r * step, r, n,
                            o->op);
    }
    return wrong;
}

/* -c of gather (the root holds every rank's block, rank r's inputs from r * count) and
 * scatter (every rank holds its block of the root's inputs). */
static size_t bench_check_rooted(const perf_bench_opts_t *o, sharc_comm_h comm,
                                 perf_bench_bufs_t *b, int inplace)
{
    int n = sharc_comm_size(comm), rank = sharc_comm_rank(comm), root = rank == o->root;
    size_t esize = sharc_dtype_size(o->dtype);

    if (o->coll == SHARC_COLL_GATHER) {
        perf_fill(inplace && root ? b->hrecv + (size_t)rank * b->sendcount * esize : b->hsend,
                  o->dtype, b->sendcount, rank, (size_t)rank * b->sendcount, o->op);
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return root ? bench_wrong_blocks(o, b->hrecv, n, b->sendcount, 0, b->sendcount) : 0;
    }
    perf_fill(b->hsend, o->dtype, b->sendcount, rank, 0, o->op); /* (the root's is read) */
    if (bench_check_run(o, comm, b, inplace) != 0) {
        return b->count;
    }
    return perf_wrong(inplace && root ? b->hsend + (size_t)rank * b->recvcount * esize : b->hrecv,
                      o->dtype, b->recvcount, (size_t)rank * b->recvcount, o->root, n, o->op);
}

size_t perf_bench_check(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                        int inplace)
{
    int n = sharc_comm_size(comm), rank = sharc_comm_rank(comm);
    size_t esize = sharc_dtype_size(o->dtype);

    switch (o->coll) {
    case PERF_SENDRECV: return inplace ? 0 : perf_bench_sendrecv_check(o, comm, b);
    case SHARC_COLL_ALLGATHER:
    case SHARC_COLL_ALLGATHERV:
        perf_fill(inplace ? b->hrecv + rank * b->sendcount * esize : b->hsend, o->dtype,
                  b->sendcount, rank, (size_t)rank * b->sendcount, o->op);
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return bench_wrong_blocks(o, b->hrecv, n, b->sendcount, 0, b->sendcount);
    case SHARC_COLL_REDUCE_SCATTER:
    case SHARC_COLL_REDUCE_SCATTERV:
        /* block i of every rank holds the elements i * recvcount .. of the vector */
        perf_fill(b->hsend, o->dtype, b->sendcount, rank, 0, o->op);
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return perf_wrong(inplace ? b->hsend + rank * b->recvcount * esize : b->hrecv, o->dtype,
                          b->recvcount, (size_t)rank * b->recvcount, -1, n, o->op);
    case SHARC_COLL_ALLTOALLV:
        inplace = 0; /* (run out of place: bench_call_sharc) */
        /* fall through */
    case SHARC_COLL_ALLTOALL:
        /* block j of rank r's sendbuf holds perf_input(r, j * (blockcount + 1) + k): the
         * sender and the destination both show in the values (perf_input has period 4) */
        for (int j = 0; j < n; j++) {
            perf_fill(b->hsend + j * b->blockcount * esize, o->dtype, b->blockcount, rank,
                      (size_t)j * (b->blockcount + 1), o->op);
        }
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return bench_wrong_blocks(o, inplace ? b->hsend : b->hrecv, n, b->blockcount,
                                  (size_t)rank * (b->blockcount + 1), 0);
    case SHARC_COLL_GATHER:
    case SHARC_COLL_SCATTER:
        return bench_check_rooted(o, comm, b, inplace);
    default: /* allreduce, broadcast, reduce: the whole vector, all ranks' op or the root's */
        perf_fill(b->hsend, o->dtype, b->count, rank, 0, o->op);
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        if (o->coll == SHARC_COLL_REDUCE && rank != o->root) {
            return 0; /* (only the root has the result) */
        }
        return perf_wrong(inplace ? b->hsend : b->hrecv, o->dtype, b->count, 0,
                          o->coll == SHARC_COLL_BROADCAST ? o->root : -1, n, o->op);
    }
}
