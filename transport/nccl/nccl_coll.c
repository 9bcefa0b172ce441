/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_coll.c: collectives through NCCL. Each runs on the backend's communication stream
 * after the work queued on the caller's stream (an event recorded there, waited for on the
 * device), and records an event of its own when it is queued; progress completes requests
 * in posting order as their events fire, and turns NCCL's asynchronous errors (a peer that
 * failed) into SHARC_ERR_REMOTE for everything in flight. No host synchronization.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>

#include "../../base/log.h"
#include "nccl.h"

int sharc_tp_nccl_dtype(sharc_dtype_t dtype, ncclDataType_t *out)
{
    static const ncclDataType_t map[SHARC_DTYPE_LAST] = {
        [SHARC_DTYPE_F32] = ncclFloat32, [SHARC_DTYPE_F64] = ncclFloat64,
        [SHARC_DTYPE_F16] = ncclFloat16, [SHARC_DTYPE_BF16] = ncclBfloat16,
        [SHARC_DTYPE_I32] = ncclInt32,   [SHARC_DTYPE_I64] = ncclInt64,
        [SHARC_DTYPE_U8] = ncclUint8,
    };

    if ((unsigned)dtype >= SHARC_DTYPE_LAST) {
        return -1;
    }
    *out = map[dtype];
    return 0;
}

static ncclRedOp_t sharc_tp_nccl_op(sharc_op_t op)
{
    switch (op) {
    case SHARC_OP_PROD: return ncclProd;
    case SHARC_OP_MIN: return ncclMin;
    case SHARC_OP_MAX: return ncclMax;
    case SHARC_OP_AVG: return ncclAvg;
    default: return ncclSum;
    }
}

cudaEvent_t sharc_tp_nccl_event_get(sharc_tp_comm_t *tp)
{
    cudaEvent_t e = NULL;

    if (tp->nevents > 0) {
        return tp->events[--tp->nevents];
    }
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return e;
}

void sharc_tp_nccl_event_put(sharc_tp_comm_t *tp, cudaEvent_t e)
{
    if (tp->nevents == tp->cap) {
        int cap = tp->cap ? 2 * tp->cap : 16;
        cudaEvent_t *ev = realloc(tp->events, sizeof(*ev) * (size_t)cap);

        if (ev == NULL) {
            cudaEventDestroy(e);
            return;
        }
        tp->events = ev;
        tp->cap = cap;
    }
    tp->events[tp->nevents++] = e;
}

/* All-to-all as one group of a send and a receive per rank (NCCL has no call of its own). */
static ncclResult_t sharc_tp_nccl_alltoall(sharc_tp_comm_t *tp, const sharc_tp_coll_args_t *a,
                                           ncclDataType_t dt)
{
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    ncclResult_t res = SHARC_NCCL(ncclGroupStart)();

    for (int p = 0; p < tp->size && (res == ncclSuccess || res == ncclInProgress); p++) {
        res = SHARC_NCCL(ncclSend)((const char *)a->sendbuf + (size_t)p * bytes, a->count, dt, p,
                                   tp->nccl, tp->stream);
        if (res == ncclSuccess || res == ncclInProgress) {
            res = SHARC_NCCL(ncclRecv)((char *)a->recvbuf + (size_t)p * bytes, a->count, dt, p,
                                       tp->nccl, tp->stream);
        }
    }
    if (res != ncclSuccess && res != ncclInProgress) {
        SHARC_NCCL(ncclGroupEnd)();
        return res;
    }
    return SHARC_NCCL(ncclGroupEnd)();
}

/* Gather, scatter and the uneven all-gather and all-to-all: NCCL has no call of their own
 * (ncclAllGather takes even blocks), so each is one group of sends and receives, as
 * ProcessGroupNCCL does; the blocks are the collective's own (coll.h's sharc_coll_vcount). */
static ncclResult_t sharc_tp_nccl_exchange(sharc_tp_comm_t *tp, const sharc_tp_coll_args_t *a,
                                           ncclDataType_t dt)
{
    size_t esize = sharc_dtype_size(a->dtype);
    int me = tp->rank, gather = a->type == SHARC_COLL_GATHER,
        scatter = a->type == SHARC_COLL_SCATTER;
    ncclResult_t res = SHARC_NCCL(ncclGroupStart)();

    for (int p = 0; p < tp->size && (res == ncclSuccess || res == ncclInProgress); p++) {
        /* what this rank sends to p, and receives from p */
        size_t sn = 0, soff = 0, rn = 0, roff = 0;

        if (a->type == SHARC_COLL_ALLTOALLV) {
            sn = a->scounts[p], soff = a->sdispls[p], rn = a->counts[p], roff = a->displs[p];
        } else if (a->type == SHARC_COLL_ALLGATHERV) {
            sn = a->counts[me], rn = a->counts[p], roff = a->displs[p];
        } else if (gather) {
            sn = (p == a->root) ? a->count : 0;
            rn = (me == a->root) ? a->count : 0, roff = (size_t)p * a->count;
        } else if (scatter) {
            sn = (me == a->root) ? a->count : 0, soff = (size_t)p * a->count;
            rn = (p == a->root) ? a->count : 0;
        }
        if (sn > 0) {
            res = SHARC_NCCL(ncclSend)((const char *)a->sendbuf + soff * esize, sn, dt, p, tp->nccl,
                                       tp->stream);
        }
        if (rn > 0 && (res == ncclSuccess || res == ncclInProgress)) {
            res = SHARC_NCCL(ncclRecv)((char *)a->recvbuf + roff * esize, rn, dt, p, tp->nccl,
                                       tp->stream);
        }
    }
    if (res != ncclSuccess && res != ncclInProgress) {
        SHARC_NCCL(ncclGroupEnd)();
        return res;
    }
    return SHARC_NCCL(ncclGroupEnd)();
}

/* The uneven reduce-scatter: a group of one reduce per rank, rooted at the rank whose block
 * it is (as ProcessGroupNCCL's reduce_scatter of uneven blocks). */
static ncclResult_t sharc_tp_nccl_reduce_scatterv(sharc_tp_comm_t *tp,
                                                  const sharc_tp_coll_args_t *a, ncclDataType_t dt)
{
    size_t esize = sharc_dtype_size(a->dtype);
    ncclResult_t res = SHARC_NCCL(ncclGroupStart)();

    for (int p = 0; p < tp->size && (res == ncclSuccess || res == ncclInProgress); p++) {
        res = SHARC_NCCL(ncclReduce)((const char *)a->sendbuf + a->displs[p] * esize,
                                     p == tp->rank ? a->recvbuf : NULL, a->counts[p], dt,
                                     sharc_tp_nccl_op(a->op), p, tp->nccl, tp->stream);
    }
    if (res != ncclSuccess && res != ncclInProgress) {
        SHARC_NCCL(ncclGroupEnd)();
        return res;
    }
    return SHARC_NCCL(ncclGroupEnd)();
}

/* Queue the NCCL call of @p a on the communication stream. */
static ncclResult_t sharc_tp_nccl_call(sharc_tp_comm_t *tp, const sharc_tp_coll_args_t *a,
                                       ncclDataType_t dt)
{
    switch (a->type) {
    case SHARC_COLL_ALLTOALL: return sharc_tp_nccl_alltoall(tp, a, dt);
    case SHARC_COLL_GATHER:
    case SHARC_COLL_SCATTER:
    case SHARC_COLL_ALLGATHERV:
    case SHARC_COLL_ALLTOALLV: return sharc_tp_nccl_exchange(tp, a, dt);
    case SHARC_COLL_REDUCE_SCATTERV: return sharc_tp_nccl_reduce_scatterv(tp, a, dt);
    case SHARC_COLL_REDUCE:
        return SHARC_NCCL(ncclReduce)(a->sendbuf, a->recvbuf, a->count, dt, sharc_tp_nccl_op(a->op),
                                      a->root, tp->nccl, tp->stream);
    case SHARC_COLL_ALLGATHER:
        return SHARC_NCCL(ncclAllGather)(a->sendbuf, a->recvbuf, a->count, dt, tp->nccl,
                                         tp->stream);
    case SHARC_COLL_REDUCE_SCATTER:
        return SHARC_NCCL(ncclReduceScatter)(a->sendbuf, a->recvbuf, a->count, dt,
                                             sharc_tp_nccl_op(a->op), tp->nccl, tp->stream);
    case SHARC_COLL_ALLREDUCE:
        return SHARC_NCCL(ncclAllReduce)(a->sendbuf, a->recvbuf, a->count, dt,
                                         sharc_tp_nccl_op(a->op), tp->nccl, tp->stream);
    default:
        return SHARC_NCCL(ncclBroadcast)(a->sendbuf, a->recvbuf, a->count, dt, a->root, tp->nccl,
                                         tp->stream);
    }
}

sharc_status_t sharc_tp_nccl_follow(sharc_tp_comm_t *tp, cudaStream_t caller, cudaEvent_t ready)
{
    sharc_status_t status = SHARC_OK;

    if (cudaEventRecord(ready, caller) != cudaSuccess ||
        cudaStreamWaitEvent(tp->stream, ready, 0) != cudaSuccess) {
        sharc_error("nccl: cannot order the communication stream after the caller's: %s",
                    cudaGetErrorString(cudaGetLastError()));
        status = SHARC_ERR_BACKEND;
    }
    sharc_tp_nccl_event_put(tp, ready); /* recorded work keeps its own reference */
    return status;
}

sharc_status_t sharc_tp_nccl_coll(sharc_tp_comm_t *tp, const sharc_tp_coll_args_t *args,
                                  sharc_tp_req_t *req)
{
    cudaStream_t caller = (cudaStream_t)args->stream;
    cudaEvent_t ready = NULL, done;
    sharc_status_t status;
    ncclDataType_t dt;

    if (tp->failed != SHARC_OK) {
        sharc_error("nccl: the communicator failed earlier (%s)", sharc_status_string(tp->failed));
        return tp->failed;
    }
    if (sharc_tp_nccl_dtype(args->dtype, &dt) != 0) {
        sharc_error("nccl: no NCCL type for dtype %d", (int)args->dtype);
        return SHARC_ERR_INVALID;
    }
    done = sharc_tp_nccl_event_get(tp);
    if (done == NULL || (caller != tp->stream && (ready = sharc_tp_nccl_event_get(tp)) == NULL)) {
        sharc_error("nccl: cannot create a CUDA event");
        if (done != NULL) {
            sharc_tp_nccl_event_put(tp, done);
        }
        return SHARC_ERR_BACKEND;
    }
    /* the collective reads what the caller's stream has queued up to now */
    if (ready != NULL && sharc_tp_nccl_follow(tp, caller, ready) != SHARC_OK) {
        sharc_tp_nccl_event_put(tp, done);
        return SHARC_ERR_BACKEND;
    }
    status =
        sharc_tp_nccl_settle(tp, sharc_tp_nccl_call(tp, args, dt), tp->timeout, "a collective");
    if (status == SHARC_OK && cudaEventRecord(done, tp->stream) != cudaSuccess) {
        sharc_error("nccl: cannot record a completion event: %s",
                    cudaGetErrorString(cudaGetLastError()));
        status = SHARC_ERR_BACKEND;
    }
    if (status != SHARC_OK) {
        sharc_tp_nccl_event_put(tp, done);
        return status;
    }
    req->status = SHARC_INPROGRESS;
    req->event = done;
    sharc_tp_queue_push(&tp->inflight, req);
    return SHARC_INPROGRESS;
}

/* Complete the request at the head of the queue with @p status. */
static void sharc_tp_nccl_retire(sharc_tp_comm_t *tp, sharc_status_t status)
{
    sharc_tp_req_t *req = sharc_tp_queue_pop(&tp->inflight);

    sharc_tp_nccl_event_put(tp, (cudaEvent_t)req->event);
    req->event = NULL;
    sharc_tp_req_complete(req, status);
}

int sharc_tp_nccl_progress(sharc_tp_comm_t *tp)
{
    ncclResult_t async = ncclSuccess;
    int n = 0;

    if (tp->failed == SHARC_OK && tp->nccl != NULL &&
        (SHARC_NCCL(ncclCommGetAsyncError)(tp->nccl, &async) != ncclSuccess ||
         (async != ncclSuccess && async != ncclInProgress))) {
        /* a peer failed, or the network went away: nothing in flight will finish */
        sharc_tp_nccl_status(tp, async, "the communicator");
        tp->failed = SHARC_ERR_REMOTE;
        SHARC_NCCL(ncclCommAbort)(tp->nccl);
        tp->nccl = NULL;
    }
    while (tp->inflight.head != NULL) {
        cudaError_t err;

        if (tp->failed != SHARC_OK) {
            sharc_tp_nccl_retire(tp, tp->failed);
            n++;
            continue;
        }
        err = cudaEventQuery((cudaEvent_t)tp->inflight.head->event);
        if (err == cudaErrorNotReady) {
            break;
        }
        if (err != cudaSuccess) {
            sharc_error("nccl: a collective's completion cannot be read: %s",
                        cudaGetErrorString(err));
            tp->failed = SHARC_ERR_BACKEND;
            continue;
        }
        sharc_tp_nccl_retire(tp, SHARC_OK);
        n++;
    }
    return tp->failed != SHARC_OK ? (int)tp->failed : n > 0;
}
