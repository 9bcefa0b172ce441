/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quant_device.c: an all-gather or reduce-scatter over a quantized wire on CUDA buffers,
 * queued whole on the device without host synchronization: the CUDA quantizers
 * (kernels/cuda/quant.cu) on the caller's stream, the exchange of the wire segments as bytes
 * by the CUDA backend (NCCL all-gather, or an all-to-all of grouped sends and
 * receives), then, once the caller's stream waits for it, the dequantization (all-gather:
 * every segment, the own one included) or the dequantizing sum onto the own block at full
 * precision (reduce-scatter, always flat: every hop quantized). The wire buffer comes from
 * the device's stream-ordered pool and goes back there after the last kernel. The task's
 * event fires when recvbuf is written; the host sees it done by polling that event.
 * Extra device memory: n segments (all-gather), 2n segments and an f32 block (reduce-scatter).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include "../../base/gpu.h"
#include "../../base/log.h"
#include "device.h"
#include "../algorithms/quant.h"

/* Device scratch of a task: [0, 2n segments): the wire; then the own block in f32. */
static size_t sharc_quant_device_bytes(const sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t n = (size_t)task->cc->size, seg = task->u.quant.seg;

    if (a->type == SHARC_COLL_ALLGATHER) {
        return n * seg;
    }
    return 2 * n * seg + a->count * sizeof(float);
}

/* Quantize on the caller's stream and post the exchange of the segments to the backend. */
static sharc_status_t sharc_quant_device_post(sharc_coll_task_t *task, char *wire)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_kern_ops_t *kern = sharc_kern_cuda();
    size_t n = (size_t)task->cc->size, seg = task->u.quant.seg;
    size_t own = (size_t)task->cc->rank * a->count * sharc_dtype_size(a->dtype);
    sharc_kern_wire_t w = {a->wire, a->block};
    sharc_coll_args_t bytes = {.type = a->type,
                               .sendbuf = wire,
                               .recvbuf = wire,
                               .count = seg,
                               .dtype = SHARC_DTYPE_U8,
                               .stream = a->stream};
    sharc_coll_task_t *child;
    sharc_status_t status;

    if (a->type == SHARC_COLL_ALLGATHER) {
        bytes.sendbuf = wire + (size_t)task->cc->rank * seg;
        status = kern->quantize(wire + (size_t)task->cc->rank * seg, w, a->sendbuf, a->dtype,
                                a->count, 1, a->stream);
    } else {
        bytes.type = SHARC_COLL_ALLTOALL;
        bytes.recvbuf = wire + n * seg;
        status = kern->quantize(wire, w, a->sendbuf, a->dtype, a->count, (int)n, a->stream);
        if (status == SHARC_OK) { /* the own block, at full precision, in f32 */
            status = kern->cast(wire + 2 * n * seg, SHARC_DTYPE_F32, (const char *)a->sendbuf + own,
                                a->dtype, a->count, a->stream);
        }
    }
    if (status != SHARC_OK) {
        return status;
    }
    child = sharc_coll_task_new(task->cc, &bytes, task->lane);
    if (child == NULL) {
        return SHARC_ERR_NOMEM;
    }
    child->algo = &sharc_coll_cuda_backend;
    task->u.quant.child = child;
    status = child->algo->init(child);
    /* the caller's stream takes the result up once the bytes are there */
    return status == SHARC_OK ? sharc_gpu_stream_wait(a->stream, child->event) : status;
}

static sharc_status_t sharc_quant_device_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_kern_ops_t *kern = sharc_kern_cuda();
    int n = task->cc->size;
    sharc_kern_wire_t w = {a->wire, a->block};
    char *wire = NULL;
    sharc_status_t status;

    task->u.quant.seg = sharc_wire_size(a->wire, a->count, a->block, a->dtype);
    if (a->count == 0) {
        return SHARC_OK;
    }
    status = sharc_gpu_alloc_async(sharc_quant_device_bytes(task), a->stream, (void **)&wire);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_quant_device_post(task, wire);
    if (status == SHARC_OK && a->type == SHARC_COLL_ALLGATHER) {
        status = kern->dequantize(a->recvbuf, a->dtype, wire, w, a->count, n, a->stream);
    } else if (status == SHARC_OK) {
        size_t seg = task->u.quant.seg;

        status = kern->dequantize_sum(a->recvbuf, a->dtype,
                                      (const float *)(void *)(wire + 2 * (size_t)n * seg),
                                      wire + (size_t)n * seg, w, a->count, n, task->cc->rank,
                                      a->op == SHARC_OP_AVG ? 1.0 / n : 1.0, a->stream);
    }
    /* after the last kernel that reads it (or, on an error, what was queued) */
    sharc_gpu_free_async(wire, a->stream);
    if (status == SHARC_OK) {
        status = sharc_gpu_event_create(0, &task->u.quant.event);
    }
    if (status == SHARC_OK) {
        status = sharc_gpu_event_record(task->u.quant.event, a->stream);
    }
    task->event = task->u.quant.event; /* what a stream waits for (request_wait_stream) */
    return status;
}

static sharc_status_t sharc_quant_device_progress(sharc_coll_task_t *task)
{
    sharc_status_t status = SHARC_OK;

    if (task->u.quant.child != NULL) {
        status = task->u.quant.child->algo->progress(task->u.quant.child);
    }
    if (status == SHARC_OK && task->u.quant.event != NULL) {
        status = sharc_gpu_event_query(task->u.quant.event);
    }
    return status;
}

static void sharc_quant_device_finalize(sharc_coll_task_t *task)
{
    sharc_coll_quant_finalize(task);
    sharc_gpu_event_destroy(task->u.quant.event); /* (a recorded event may be destroyed) */
    task->u.quant.event = NULL;
    task->event = NULL;
}

const sharc_coll_algo_t sharc_coll_quant_device = {
    .info = {.name = "quant_device", .flags = 0},
    .init = sharc_quant_device_init,
    .progress = sharc_quant_device_progress,
    .finalize = sharc_quant_device_finalize,
    .device = 1,
};
