/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * post.c: posting a collective: the checks every rank makes before communicating, the task
 * and who runs it (host algorithms from select.c; on CUDA buffers the collective backend, or
 * staging through host memory), then the queue's post (queue.c). Blocking calls are post +
 * wait + free. The public collective functions are the core's (core/comm_coll.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/base/gpu.h"
#include "../src/base/log.h"
#include "../src/base/util.h"
#include "coll.h"
#include "quant.h"

/* Do [a, a + alen) and [b, b + blen) overlap? */
static int sharc_coll_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

/* The checks every rank makes before communicating: a bad call fails on its own rank. */
static sharc_status_t sharc_coll_check(const sharc_coll_comm_t *cc, const sharc_coll_args_t *a)
{
    const char *name = sharc_coll_name(a->type);
    size_t esize = sharc_dtype_size(a->dtype), n = (size_t)cc->size;
    size_t sbytes = 0, rbytes = 0;

    sharc_status_t status = sharc_coll_wire_check(a);

    if (status != SHARC_OK) {
        return status;
    }
    if (a->type != SHARC_COLL_BARRIER) {
        if (esize == 0) {
            sharc_error("%s: dtype %d is not a sharc_dtype_t", name, (int)a->dtype);
            return SHARC_ERR_INVALID;
        }
        if ((a->type == SHARC_COLL_REDUCE_SCATTER || a->type == SHARC_COLL_ALLREDUCE) &&
            !sharc_kern_op_valid(a->dtype, a->op)) {
            sharc_error("%s: op %s is not defined for %s", name,
                        sharc_op_name(a->op) ? sharc_op_name(a->op) : "(invalid)",
                        sharc_dtype_name(a->dtype));
            return SHARC_ERR_INVALID;
        }
        if (a->count > SIZE_MAX / esize / n) {
            sharc_error("%s: %zu elements of %s on %zu ranks overflow the address space", name,
                        a->count, sharc_dtype_name(a->dtype), n);
            return SHARC_ERR_INVALID;
        }
    }
    switch (a->type) {
    case SHARC_COLL_ALLGATHER:
        sbytes = a->count * esize;
        rbytes = sbytes * n;
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        rbytes = a->count * esize;
        sbytes = rbytes * n;
        break;
    case SHARC_COLL_ALLREDUCE: sbytes = rbytes = a->count * esize; break;
    case SHARC_COLL_ALLTOALL: sbytes = rbytes = a->count * esize * n; break;
    case SHARC_COLL_BROADCAST:
        if (a->root < 0 || a->root >= cc->size) {
            sharc_error("broadcast: root %d is not a rank of this %d-rank communicator", a->root,
                        cc->size);
            return SHARC_ERR_INVALID;
        }
        rbytes = a->count * esize;
        sbytes = (cc->rank == a->root) ? rbytes : 0;
        break;
    default: break;
    }
    if ((sbytes > 0 && a->sendbuf == NULL) || (rbytes > 0 && a->recvbuf == NULL)) {
        sharc_error("%s: %s is NULL with %zu elements", name,
                    a->recvbuf == NULL ? "recvbuf" : "sendbuf", a->count);
        return SHARC_ERR_INVALID;
    }
    /* the only overlaps allowed are the in-place forms of the buffer contract */
    switch (a->type) {
    case SHARC_COLL_ALLGATHER:
        if (a->sendbuf != (char *)a->recvbuf + (size_t)cc->rank * sbytes &&
            sharc_coll_overlap(a->sendbuf, sbytes, a->recvbuf, rbytes)) {
            sharc_error("allgather: sendbuf overlaps recvbuf but is not recvbuf + rank * count");
            return SHARC_ERR_INVALID;
        }
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        if (a->recvbuf != (const char *)a->sendbuf + (size_t)cc->rank * rbytes &&
            sharc_coll_overlap(a->sendbuf, sbytes, a->recvbuf, rbytes)) {
            sharc_error("reduce_scatter: recvbuf overlaps sendbuf but is not sendbuf + rank * "
                        "recvcount");
            return SHARC_ERR_INVALID;
        }
        break;
    case SHARC_COLL_ALLREDUCE:
    case SHARC_COLL_BROADCAST:
    case SHARC_COLL_ALLTOALL:
        if (a->sendbuf != a->recvbuf &&
            sharc_coll_overlap(a->sendbuf, sbytes, a->recvbuf, rbytes)) {
            sharc_error("%s: sendbuf and recvbuf overlap without being equal", name);
            return SHARC_ERR_INVALID;
        }
        break;
    default: break;
    }
    return SHARC_OK;
}

/* For the collective backend (NCCL, device buffers only): both buffers on the device, or a
 * refusal at once naming the host one (NCCL given a host pointer fails on the device, or waits
 * for peers that took another path, until SHARC_TIMEOUT). The staged path takes either. */
static sharc_status_t sharc_coll_device_only(const sharc_coll_comm_t *cc, const sharc_coll_args_t *a)
{
    int send_used = a->type != SHARC_COLL_BROADCAST || cc->rank == a->root;
    int host_send = send_used && a->sendbuf != NULL &&
                    sharc_gpu_memtype(a->sendbuf) == SHARC_MEMTYPE_HOST;
    int host_recv = a->recvbuf != NULL && sharc_gpu_memtype(a->recvbuf) == SHARC_MEMTYPE_HOST;

    if (a->count == 0 || (!host_send && !host_recv)) {
        return SHARC_OK;
    }
    sharc_error("%s: %s in host memory and %s on the GPU: the collective backend (NCCL) takes "
                "device buffers on both sides; copy the host one to the device first",
                sharc_coll_name(a->type), host_send ? "sendbuf" : "recvbuf",
                host_send ? "recvbuf" : "sendbuf");
    return SHARC_ERR_INVALID;
}

/*
 * Who runs the collective: on host buffers a host algorithm over the point-to-point
 * transport; on CUDA buffers (either side) the collective backend (NCCL) where it has the
 * collective (both sides on the device), else staging through host memory.
 */
static sharc_status_t sharc_coll_route(sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                       const sharc_coll_algo_t **algo_p)
{
    int p2p = cc->size == 1 || (cc->tp_ops != NULL && cc->tp_ops->send != NULL);
    int gpu =
        a->type != SHARC_COLL_BARRIER && (sharc_gpu_memtype(a->sendbuf) != SHARC_MEMTYPE_HOST ||
                                          sharc_gpu_memtype(a->recvbuf) != SHARC_MEMTYPE_HOST);

    if (gpu && a->wire != SHARC_WIRE_FULL) {
        if (cc->gpu_ops != NULL && sharc_kern_cuda() != NULL) {
            *algo_p = &sharc_coll_quant_device;
            return sharc_coll_device_only(cc, a);
        }
        sharc_error("%s over a %s wire on CUDA buffers needs the collective backend (NCCL), "
                    "which this communicator does not have",
                    sharc_coll_name(a->type), sharc_wire_name(a->wire));
        return SHARC_ERR_UNSUPPORTED;
    }
    if (gpu && a->type != SHARC_COLL_ALLTOALL) {
        if (cc->gpu_ops != NULL) {
            *algo_p = &sharc_coll_backend;
            return sharc_coll_device_only(cc, a);
        }
        if (cc->gpu_failed != SHARC_OK) {
            sharc_error("%s on CUDA buffers: SHARC_CUDA_BACKEND=nccl, but NCCL could not be "
                        "opened for this communicator (%s)",
                        sharc_coll_name(a->type), sharc_status_string(cc->gpu_failed));
            return cc->gpu_failed;
        }
    }
    if (!p2p) {
        sharc_error("%s: this communicator of %d ranks has no point-to-point transport "
                    "(SHARC_TRANSPORT, and was sharc built with UCX?)",
                    sharc_coll_name(a->type), cc->size);
        return SHARC_ERR_UNSUPPORTED;
    }
    if (gpu) {
        *algo_p = &sharc_coll_staged;
        return SHARC_OK;
    }
    return (a->wire != SHARC_WIRE_FULL) ? sharc_coll_select_wire(cc, a, algo_p)
                                        : sharc_coll_select(cc, a, algo_p);
}

sharc_status_t sharc_coll_start(sharc_coll_comm_t *cc, const sharc_coll_args_t *args,
                                sharc_request_h *req_p)
{
    return sharc_coll_start_lane(cc, args, 0, req_p);
}

sharc_status_t sharc_coll_start_lane(sharc_coll_comm_t *cc, const sharc_coll_args_t *args, int lane,
                                     sharc_request_h *req_p)
{
    sharc_coll_task_t *task;
    sharc_status_t status;

    if (lane < 0 || lane >= SHARC_COLL_LANES) {
        sharc_error("%s: completion lane %d is not in 0 .. %d", sharc_coll_name(args->type), lane,
                    SHARC_COLL_LANES - 1);
        return SHARC_ERR_INVALID;
    }
    if (cc->group_depth > 0) {
        sharc_error("%s: called inside a point-to-point group (sharc_p2p_group_start) on this "
                    "communicator; end the group first",
                    sharc_coll_name(args->type));
        return SHARC_ERR_INVALID;
    }
    status = sharc_coll_check(cc, args);
    if (status != SHARC_OK) {
        return status;
    }
    task = sharc_coll_task_new(cc, args, lane);
    if (task == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_coll_route(cc, args, &task->algo);
    if (status == SHARC_OK) {
        status = sharc_coll_post(task);
    } else {
        sharc_coll_task_free(task);
    }
    if (status != SHARC_OK) {
        return status;
    }
    sharc_trace("%s #%llu posted: %zu %s", sharc_coll_name(args->type),
                (unsigned long long)task->seq, args->count, sharc_dtype_name(args->dtype));
    if (req_p != NULL) {
        *req_p = task;
        return SHARC_OK;
    }
    status = sharc_request_wait(task);
    sharc_request_free(task);
    return status;
}
