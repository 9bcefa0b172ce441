/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_coll.c: the public collective calls (sharc/coll.h): each posts through its
 * communicator's collective state, ordered on CUDA buffers by the communicator's stream
 * (sharc_comm_set_cuda_stream). Checks, algorithms and requests are coll/'s.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <sharc/coll.h>

#include "../base/log.h"
#include "comm.h"

static sharc_status_t sharc_comm_post(sharc_comm_h comm, sharc_coll_args_t *a,
                                      sharc_request_h *req_p)
{
    if (comm == NULL) {
        sharc_error("%s: communicator is NULL", sharc_coll_name(a->type));
        return SHARC_ERR_INVALID;
    }
    a->stream = comm->stream;
    return sharc_coll_post(comm->coll, a, req_p);
}

/* The options into the collective's arguments (NULL: the defaults). */
static void sharc_comm_opts(sharc_coll_args_t *a, const sharc_coll_opts_t *opts)
{
    a->block = SHARC_WIRE_BLOCK;
    if (opts == NULL) {
        return;
    }
    if (opts->field_mask & SHARC_COLL_OPT_WIRE) {
        a->wire = opts->wire;
    }
    if (opts->field_mask & SHARC_COLL_OPT_BLOCK) {
        a->block = opts->block;
    }
    if (opts->field_mask & SHARC_COLL_OPT_FLAT) {
        a->flat = opts->flat;
    }
}

sharc_status_t sharc_allgather_ex(const void *sendbuf, void *recvbuf, size_t count,
                                  sharc_dtype_t dtype, const sharc_coll_opts_t *opts,
                                  sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_ALLGATHER,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype};

    sharc_comm_opts(&a, opts);
    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_allgather(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, sharc_comm_h comm, sharc_request_h *req_p)
{
    return sharc_allgather_ex(sendbuf, recvbuf, count, dtype, NULL, comm, req_p);
}

sharc_status_t sharc_reduce_scatter_ex(const void *sendbuf, void *recvbuf, size_t recvcount,
                                       sharc_dtype_t dtype, sharc_op_t op,
                                       const sharc_coll_opts_t *opts, sharc_comm_h comm,
                                       sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_REDUCE_SCATTER,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = recvcount,
                           .dtype = dtype,
                           .op = op};

    sharc_comm_opts(&a, opts);
    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                                    sharc_request_h *req_p)
{
    return sharc_reduce_scatter_ex(sendbuf, recvbuf, recvcount, dtype, op, NULL, comm, req_p);
}

sharc_status_t sharc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                               sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_ALLREDUCE,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .op = op};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, int root, sharc_comm_h comm,
                               sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_BROADCAST,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .root = root};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_alltoall(const void *sendbuf, void *recvbuf, size_t count, sharc_dtype_t dtype,
                              sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_ALLTOALL,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_barrier(sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_BARRIER, .dtype = SHARC_DTYPE_U8};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_reduce(const void *sendbuf, void *recvbuf, size_t count, sharc_dtype_t dtype,
                            sharc_op_t op, int root, sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_REDUCE,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .op = op,
                           .root = root};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_gather(const void *sendbuf, void *recvbuf, size_t count, sharc_dtype_t dtype,
                            int root, sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_GATHER,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .root = root};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_scatter(const void *sendbuf, void *recvbuf, size_t count, sharc_dtype_t dtype,
                             int root, sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_SCATTER,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .root = root};

    return sharc_comm_post(comm, &a, req_p);
}

/* An uneven collective's total count (its messages and SHARC_CHECK name it), 0 without
 * counts (refused by the checks). */
static size_t sharc_comm_total(sharc_comm_h comm, const size_t *counts)
{
    size_t total = 0;

    for (int i = 0; comm != NULL && counts != NULL && i < comm->size; i++) {
        total += counts[i];
    }
    return total;
}

sharc_status_t sharc_allgatherv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                const size_t *displs, sharc_dtype_t dtype, sharc_comm_h comm,
                                sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_ALLGATHERV,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = sharc_comm_total(comm, recvcounts),
                           .dtype = dtype,
                           .counts = recvcounts,
                           .displs = displs};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                     sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                                     sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_REDUCE_SCATTERV,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = sharc_comm_total(comm, recvcounts),
                           .dtype = dtype,
                           .op = op,
                           .counts = recvcounts};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                               void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                               sharc_dtype_t dtype, sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {.type = SHARC_COLL_ALLTOALLV,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = sharc_comm_total(comm, recvcounts),
                           .dtype = dtype,
                           .counts = recvcounts,
                           .displs = rdispls,
                           .scounts = sendcounts,
                           .sdispls = sdispls};

    return sharc_comm_post(comm, &a, req_p);
}
