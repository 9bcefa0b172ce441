/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_mpi.c: --vs-mpi: MPI's collective on the same buffers as sharc's (MPI_COMM_WORLD, which
 * the ranks of sharc-perf's communicator are under mpirun), MPI's barrier, and MPI's setup.
 * The uneven collectives run with even blocks, as sharc's do in the benchmark.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "bench.h"

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
        return (o->coll == SHARC_COLL_ALLREDUCE || o->coll == SHARC_COLL_REDUCE_SCATTER ||
                o->coll == SHARC_COLL_REDUCE || o->coll == SHARC_COLL_REDUCE_SCATTERV)
                   ? -1
                   : 0;
    }
    return 0;
}

/* The uneven collectives' even blocks as MPI's int counts and displacements. */
static void bench_mpi_blocks(int n, size_t block, int *counts, int *displs)
{
    for (int i = 0; i < n; i++) {
        counts[i] = (int)block;
        displs[i] = (int)block * i;
    }
}

/* MPI's own error handler ends the job on a failure, so there is none to report. */
int perf_bench_run_mpi(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                       int inplace)
{
    MPI_Datatype dt = MPI_BYTE;
    MPI_Op op = MPI_SUM;
    int n = sharc_comm_size(comm), *c = malloc(2 * (size_t)n * sizeof(int)), *d = c + n;

    (void)inplace;
    bench_mpi_types(o, &dt, &op);
    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
        MPI_Allgather(b->send, (int)b->sendcount, dt, b->recv, (int)b->sendcount, dt,
                      MPI_COMM_WORLD);
        break;
    case SHARC_COLL_ALLGATHERV:
        bench_mpi_blocks(n, b->sendcount, c, d);
        MPI_Allgatherv(b->send, (int)b->sendcount, dt, b->recv, c, d, dt, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(b->send, b->recv, (int)b->recvcount, dt, op, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_REDUCE_SCATTERV:
        bench_mpi_blocks(n, b->recvcount, c, d);
        MPI_Reduce_scatter(b->send, b->recv, c, dt, op, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_ALLREDUCE:
        MPI_Allreduce(b->send, b->recv, (int)b->count, dt, op, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_ALLTOALL:
        MPI_Alltoall(b->send, (int)b->blockcount, dt, b->recv, (int)b->blockcount, dt,
                     MPI_COMM_WORLD);
        break;
    case SHARC_COLL_ALLTOALLV:
        bench_mpi_blocks(n, b->blockcount, c, d);
        MPI_Alltoallv(b->send, c, d, dt, b->recv, c, d, dt, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_REDUCE:
        MPI_Reduce(b->send, b->recv, (int)b->count, dt, op, o->root, MPI_COMM_WORLD);
        break;
    case SHARC_COLL_GATHER:
        MPI_Gather(b->send, (int)b->sendcount, dt, b->recv, (int)b->sendcount, dt, o->root,
                   MPI_COMM_WORLD);
        break;
    case SHARC_COLL_SCATTER:
        MPI_Scatter(b->send, (int)b->recvcount, dt, b->recv, (int)b->recvcount, dt, o->root,
                    MPI_COMM_WORLD);
        break;
    case PERF_SENDRECV: perf_bench_sendrecv_mpi(o, b, &dt); break;
    default: MPI_Bcast(b->send, (int)b->count, dt, o->root, MPI_COMM_WORLD); break;
    }
    free(c);
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

