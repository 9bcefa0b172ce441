/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_p2p.c: the public point-to-point calls (sharc/p2p.h): each posts through its
 * communicator's collective state, ordered on CUDA buffers by the communicator's stream
 * (sharc_comm_set_cuda_stream). Checks, routing, matching order and requests are coll/'s
 * (sendrecv_post.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <sharc/p2p.h>

#include "../base/log.h"
#include "comm.h"

/* Post it; a blocking call (@p req_p NULL) waits for it and releases it. */
static sharc_status_t sharc_comm_p2p(sharc_comm_h comm, sharc_coll_p2p_args_t *a,
                                     sharc_request_h *req_p)
{
    sharc_request_h req = NULL;
    sharc_status_t status;

    if (comm == NULL) {
        sharc_error("%s: communicator is NULL", a->is_send ? "send" : "recv");
        return SHARC_ERR_INVALID;
    }
    a->stream = comm->stream;
    a->blocking = req_p == NULL;
    status = sharc_coll_p2p_post(comm->coll, a, &req);
    if (status != SHARC_OK || req_p != NULL) {
        if (status == SHARC_OK) {
            *req_p = req;
        }
        return status;
    }
    status = sharc_request_wait(req);
    sharc_request_free(req);
    return status;
}

sharc_status_t sharc_send(const void *buf, size_t count, sharc_dtype_t dtype, int peer, int tag,
                          sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_p2p_args_t a = {
        .is_send = 1, .buf = (void *)buf, .count = count, .dtype = dtype, .peer = peer, .tag = tag};

    return sharc_comm_p2p(comm, &a, req_p);
}

sharc_status_t sharc_recv(void *buf, size_t count, sharc_dtype_t dtype, int peer, int tag,
                          sharc_comm_h comm, sharc_request_h *req_p)
{
    sharc_coll_p2p_args_t a = {
        .is_send = 0, .buf = buf, .count = count, .dtype = dtype, .peer = peer, .tag = tag};

    return sharc_comm_p2p(comm, &a, req_p);
}

sharc_status_t sharc_p2p_group_start(sharc_comm_h comm)
{
    if (comm == NULL) {
        sharc_error("sharc_p2p_group_start: communicator is NULL");
        return SHARC_ERR_INVALID;
    }
    return sharc_coll_group_start(comm->coll);
}

sharc_status_t sharc_p2p_group_end(sharc_comm_h comm)
{
    if (comm == NULL) {
        sharc_error("sharc_p2p_group_end: communicator is NULL");
        return SHARC_ERR_INVALID;
    }
    return sharc_coll_group_end(comm->coll);
}
