/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_p2p.c: sends and receives through NCCL, for the point-to-point calls on CUDA buffers.
 * A batch of them is issued in one NCCL group (so that a rank may send to and receive from a
 * peer at once without a deadlock), on the communication stream after the work queued on each
 * caller's stream, each finished by an event of its own, which progress polls (nccl_coll.c).
 * NCCL has no tags: between two ranks, sends match receives in the order they were issued.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>

#include "../../base/log.h"
#include "nccl.h"

/* The calls of the batch between ncclGroupStart and ncclGroupEnd (which is always called). */
static ncclResult_t sharc_tp_nccl_group(sharc_tp_comm_t *tp, const sharc_tp_p2p_args_t *args,
                                        size_t n)
{
    ncclResult_t res = SHARC_NCCL(ncclGroupStart)(), end;

    for (size_t i = 0; i < n && (res == ncclSuccess || res == ncclInProgress); i++) {
        const sharc_tp_p2p_args_t *a = &args[i];
        ncclDataType_t dt = ncclUint8;

        sharc_tp_nccl_dtype(a->dtype, &dt);
        res = a->is_send
                  ? SHARC_NCCL(ncclSend)(a->buf, a->count, dt, a->peer, tp->nccl, tp->stream)
                  : SHARC_NCCL(ncclRecv)(a->buf, a->count, dt, a->peer, tp->nccl, tp->stream);
    }
    end = SHARC_NCCL(ncclGroupEnd)();
    return (res == ncclSuccess || res == ncclInProgress) ? end : res;
}

/* The communication stream follows every stream of the batch (each one once). */
static sharc_status_t sharc_tp_nccl_follow_all(sharc_tp_comm_t *tp, const sharc_tp_p2p_args_t *args,
                                               size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cudaStream_t s = (cudaStream_t)args[i].stream;
        cudaEvent_t ready;
        size_t j = 0;

        while (j < i && args[j].stream != args[i].stream) {
            j++;
        }
        if (j < i || s == tp->stream) {
            continue;
        }
        ready = sharc_tp_nccl_event_get(tp);
        if (ready == NULL) {
            sharc_error("nccl: cannot create a CUDA event");
            return SHARC_ERR_BACKEND;
        }
        if (sharc_tp_nccl_follow(tp, s, ready) != SHARC_OK) {
            return SHARC_ERR_BACKEND;
        }
    }
    return SHARC_OK;
}

/* Check the batch and take a completion event for each of its operations. */
static sharc_status_t sharc_tp_nccl_p2p_prepare(sharc_tp_comm_t *tp,
                                                const sharc_tp_p2p_args_t *args, size_t n,
                                                cudaEvent_t *done)
{
    ncclDataType_t dt;

    if (tp->failed != SHARC_OK) {
        sharc_error("nccl: the communicator failed earlier (%s)", sharc_status_string(tp->failed));
        return tp->failed;
    }
    for (size_t i = 0; i < n; i++) {
        if (sharc_tp_nccl_dtype(args[i].dtype, &dt) != 0 || args[i].peer < 0 ||
            args[i].peer >= tp->size) {
            sharc_error("nccl: a %s with dtype %d and peer %d",
                        args[i].is_send ? "send" : "receive", (int)args[i].dtype, args[i].peer);
            return SHARC_ERR_INVALID;
        }
    }
    for (size_t i = 0; i < n; i++) {
        done[i] = sharc_tp_nccl_event_get(tp);
        if (done[i] == NULL) {
            sharc_error("nccl: cannot create a CUDA event");
            while (i-- > 0) {
                sharc_tp_nccl_event_put(tp, done[i]);
            }
            return SHARC_ERR_BACKEND;
        }
    }
    return SHARC_OK;
}

sharc_status_t sharc_tp_nccl_p2p(sharc_tp_comm_t *tp, const sharc_tp_p2p_args_t *args, size_t n,
                                 sharc_tp_req_t *const *reqs)
{
    cudaEvent_t *done = calloc(n > 0 ? n : 1, sizeof(*done));
    sharc_status_t status;
    size_t i;

    if (done == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_tp_nccl_p2p_prepare(tp, args, n, done);
    if (status != SHARC_OK) {
        free(done);
        return status;
    }
    status = sharc_tp_nccl_follow_all(tp, args, n);
    if (status == SHARC_OK) {
        status = sharc_tp_nccl_settle(tp, sharc_tp_nccl_group(tp, args, n), tp->timeout,
                                      "point-to-point operations");
    }
    for (i = 0; status == SHARC_OK && i < n; i++) {
        if (cudaEventRecord(done[i], tp->stream) != cudaSuccess) {
            sharc_error("nccl: cannot record a completion event: %s",
                        cudaGetErrorString(cudaGetLastError()));
            status = SHARC_ERR_BACKEND; /* (issued, yet unseen: the communicator must fail) */
        }
    }
    if (status != SHARC_OK) {
        for (i = 0; i < n; i++) {
            sharc_tp_nccl_event_put(tp, done[i]);
        }
        free(done);
        return status;
    }
    for (i = 0; i < n; i++) {
        reqs[i]->status = SHARC_INPROGRESS;
        reqs[i]->bytes = args[i].count * sharc_dtype_size(args[i].dtype);
        reqs[i]->peer = args[i].peer;
        reqs[i]->event = done[i];
        sharc_tp_queue_push(&tp->inflight, reqs[i]);
    }
    free(done);
    return SHARC_INPROGRESS;
}
