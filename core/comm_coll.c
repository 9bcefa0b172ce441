/*
 * comm_coll.c: the public collective calls (sharc/coll.h): each posts through its
 * communicator's collective state, ordered on CUDA buffers by the communicator's stream
 * (sharc_comm_set_cuda_stream). Checks, algorithms and requests are coll/'s.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <sharc/coll.h>

#include "../src/base/log.h"
#include "comm.h"

static sharc_status_t sharc_comm_post(sharc_comm_h comm, sharc_coll_args_t *a,
                                      sharc_request_h *req_p)
{
    if (comm == NULL) {
        sharc_error("%s: communicator is NULL", sharc_coll_name(a->type));
        return SHARC_ERR_INVALID;
    }
    a->stream = comm->stream;
    return sharc_coll_start(comm->coll, a, req_p);
}

sharc_status_t sharc_allgather(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_ALLGATHER, sendbuf, recvbuf, count, dtype,
                           SHARC_OP_SUM,         0,       NULL};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                                    sharc_request_h *req_p)
{
    sharc_coll_args_t a = {
        SHARC_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0, NULL};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                               sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, NULL};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                               sharc_dtype_t dtype, int root, sharc_comm_h comm,
                               sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_BROADCAST, sendbuf, recvbuf, count, dtype,
                           SHARC_OP_SUM,         root,    NULL};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_alltoall(const void *sendbuf, void *recvbuf, size_t count, sharc_dtype_t dtype,
                              sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype,
                           SHARC_OP_SUM,        0,       NULL};

    return sharc_comm_post(comm, &a, req_p);
}

sharc_status_t sharc_barrier(sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_args_t a = {SHARC_COLL_BARRIER, NULL,         NULL, 0,
                           SHARC_DTYPE_U8,     SHARC_OP_SUM, 0,    NULL};

    return sharc_comm_post(comm, &a, req_p);
}
