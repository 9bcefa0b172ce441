/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_coll.c: one collective of the benchmarks on the buffers of one size: the buffers'
 * layout, sharc's call, MPI's (--vs-mpi) and NCCL's (--vs-nccl) on the same buffers, and -c,
 * which runs sharc's once on known inputs and counts the wrong elements. Not the timing nor
 * the output (bench_sweep.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

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
        b->sendcount = b->count / n;
        b->recvcount = b->sendcount * n;
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        b->recvcount = b->count / n;
        b->sendcount = b->recvcount * n;
        break;
    case SHARC_COLL_ALLTOALL:
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
    b->send = bench_alloc(o, ctx, b->size + 64);
    b->recv = bench_alloc(o, ctx, b->size + 64);
    b->hsend = o->cuda ? calloc(1, b->size + 64) : b->send;
    b->hrecv = o->cuda ? calloc(1, b->size + 64) : b->recv;
    if (b->send == NULL || b->recv == NULL || b->hsend == NULL || b->hrecv == NULL) {
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

#ifdef HAVE_MPI
static int bench_mpi_types(const perf_bench_opts_t *o, MPI_Datatype *dt_p, MPI_Op *op_p)
{
    switch (o->dtype) {
    case SHARC_DTYPE_F32: *dt_p = MPI_FLOAT; break;
    case SHARC_DTYPE_F64: *dt_p = MPI_DOUBLE; break;
    case SHARC_DTYPE_I32: *dt_p = MPI_INT32_T; break;
    case SHARC_DTYPE_I64: *dt_p = MPI_INT64_T; break;
    case SHARC_DTYPE_U8: *dt_p = MPI_UINT8_T; break;
    default: return -1; /* MPI has no f16 / bf16 */
    }
    switch (o->op) {
    case SHARC_OP_SUM: *op_p = MPI_SUM; break;
    case SHARC_OP_PROD: *op_p = MPI_PROD; break;
    case SHARC_OP_MIN: *op_p = MPI_MIN; break;
    case SHARC_OP_MAX: *op_p = MPI_MAX; break;
    default: /* MPI has no average: fine where nothing is reduced */
        return (o->coll == SHARC_COLL_ALLGATHER || o->coll == SHARC_COLL_BROADCAST ||
                o->coll == SHARC_COLL_ALLTOALL || o->coll == PERF_SENDRECV)
                   ? 0
                   : -1;
    }
    return 0;
}

/* MPI's own error handler ends the job on a failure, so there is none to report. */
int perf_bench_run_mpi(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                       int inplace)
{
    MPI_Datatype dt = MPI_BYTE;
    MPI_Op op = MPI_SUM;

    (void)comm;
    (void)inplace;
    bench_mpi_types(o, &dt, &op);
    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
        MPI_Allgather(b->send, (int)b->sendcount, dt, b->recv, (int)b->sendcount, dt,
                      MPI_COMM_WORLD);
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(b->send, b->recv, (int)b->recvcount, dt, op, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_ALLREDUCE:
        MPI_Allreduce(b->send, b->recv, (int)b->count, dt, op, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_ALLTOALL:
        MPI_Alltoall(b->send, (int)b->blockcount, dt, b->recv, (int)b->blockcount, dt,
                     MPI_COMM_WORLD);
        break;
    case PERF_SENDRECV: perf_bench_sendrecv_mpi(o, b, &dt); break;
    default: MPI_Bcast(b->send, (int)b->count, dt, o->root, MPI_COMM_WORLD); break;
    }
    return 0;
}

void perf_bench_barrier_mpi(sharc_comm_h comm)
{
    (void)comm;
    MPI_Barrier(MPI_COMM_WORLD);
}
#endif

int perf_bench_mpi_init(const perf_bench_opts_t *o, int *argc, char ***argv)
{
#ifdef HAVE_MPI
    if (o->vs_mpi) {
        MPI_Datatype dt = MPI_BYTE;
        MPI_Op op = MPI_SUM;
        int provided;

        if (bench_mpi_types(o, &dt, &op) != 0) {
            fprintf(stderr, "sharc-perf: --vs-mpi: MPI has no %s or no %s reduction\n",
                    sharc_dtype_name(o->dtype), sharc_op_name(o->op));
            return 2;
        }
        MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    }
#else
    (void)argc;
    (void)argv;
    if (o->vs_mpi) {
        fprintf(stderr, "sharc-perf: --vs-mpi needs sharc built with MPI\n");
        return 2;
    }
#endif
    return 0;
}

void perf_bench_mpi_fini(const perf_bench_opts_t *o)
{
#ifdef HAVE_MPI
    if (o->vs_mpi) {
        MPI_Finalize();
    }
#else
    (void)o;
#endif
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

size_t perf_bench_check(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                        int inplace)
{
    int n = sharc_comm_size(comm), rank = sharc_comm_rank(comm);
    size_t esize = sharc_dtype_size(o->dtype);

    switch (o->coll) {
    case PERF_SENDRECV: return inplace ? 0 : perf_bench_sendrecv_check(o, comm, b);
    case SHARC_COLL_ALLGATHER:
        perf_fill(inplace ? b->hrecv + rank * b->sendcount * esize : b->hsend, o->dtype,
                  b->sendcount, rank, (size_t)rank * b->sendcount, o->op);
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return bench_wrong_blocks(o, b->hrecv, n, b->sendcount, 0, b->sendcount);
    case SHARC_COLL_REDUCE_SCATTER:
        /* block i of every rank holds the elements i * recvcount .. of the vector */
        perf_fill(b->hsend, o->dtype, b->sendcount, rank, 0, o->op);
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return perf_wrong(inplace ? b->hsend + rank * b->recvcount * esize : b->hrecv, o->dtype,
                          b->recvcount, (size_t)rank * b->recvcount, -1, n, o->op);
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
    default: /* allreduce, broadcast: the whole vector, all ranks' op or the root's */
        perf_fill(b->hsend, o->dtype, b->count, rank, 0, o->op);
        if (bench_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return perf_wrong(inplace ? b->hsend : b->hrecv, o->dtype, b->count, 0,
                          o->coll == SHARC_COLL_BROADCAST ? o->root : -1, n, o->op);
    }
}
