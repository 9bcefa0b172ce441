/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sendrecv.c: the point-to-point benchmark of sharc-perf (sendrecv, as nccl-tests'
 * sendrecv_perf): each rank posts a receive from the previous rank and a send to the next one
 * (in one group, as CUDA buffers through NCCL need) and waits for both; size is the bytes
 * each rank sends, and busbw = algbw. In place, a rank sends from and receives into one buffer
 * (as nccl-tests does; the data race makes -c meaningless there, so it is not checked). MPI's
 * side is MPI_Sendrecv on the same buffers. Not the timing nor the output (bench_sweep.c).
 */
#include "config.h"

#include <stdio.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "../common/perf_cuda.h"
#include "bench.h"

static sharc_status_t bench_sendrecv_once(const perf_bench_opts_t *o, sharc_comm_h comm,
                                          perf_bench_bufs_t *b, int inplace)
{
    int n = sharc_comm_size(comm), rank = sharc_comm_rank(comm);
    char *sbuf = inplace ? b->recv : b->send;
    sharc_request_h req[2] = {NULL, NULL};
    sharc_status_t st, st2;

    sharc_p2p_group_start(comm);
    st = sharc_recv(b->recv, b->count, o->dtype, (rank + n - 1) % n, 0, comm, &req[0]);
    if (st == SHARC_OK) {
        st = sharc_send(sbuf, b->count, o->dtype, (rank + 1) % n, 0, comm, &req[1]);
    }
    st2 = sharc_p2p_group_end(comm);
    st = (st == SHARC_OK) ? st2 : st;
    for (int i = 0; i < 2; i++) {
        if (req[i] != NULL) {
            st2 = sharc_request_wait(req[i]);
            st = (st == SHARC_OK) ? st2 : st;
            sharc_request_free(req[i]);
        }
    }
    return st;
}

int perf_bench_sendrecv_sharc(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                              int inplace)
{
    sharc_status_t status = bench_sendrecv_once(o, comm, b, inplace);

    if (status != SHARC_OK) {
        fprintf(stderr, "sharc-perf: rank %d: sendrecv of %zu bytes failed: %s\n",
                sharc_comm_rank(comm), b->size, sharc_status_string(status));
        return -1;
    }
    return 0;
}

#ifdef HAVE_MPI
void perf_bench_sendrecv_mpi(const perf_bench_opts_t *o, perf_bench_bufs_t *b, void *dt)
{
    int n, rank;

    (void)o;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Sendrecv(b->send, (int)b->count, *(MPI_Datatype *)dt, (rank + 1) % n, 0, b->recv,
                 (int)b->count, *(MPI_Datatype *)dt, (rank + n - 1) % n, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}
#endif

size_t perf_bench_sendrecv_check(const perf_bench_opts_t *o, sharc_comm_h comm,
                                 perf_bench_bufs_t *b)
{
    int n = sharc_comm_size(comm), rank = sharc_comm_rank(comm);

    perf_fill(b->hsend, o->dtype, b->count, rank, 0, o->op);
    if ((o->cuda && (perf_cuda_put(b->send, b->hsend, b->size) |
                     perf_cuda_put(b->recv, b->hrecv, b->size)) != 0) ||
        perf_bench_sendrecv_sharc(o, comm, b, 0) != 0 ||
        (o->cuda && perf_cuda_get(b->hrecv, b->recv, b->size) != 0)) {
        return b->count;
    }
    return perf_wrong(b->hrecv, o->dtype, b->count, 0, (rank + n - 1) % n, n, o->op);
}
