/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter_quant.c: reduce-scatter over a quantized wire, every hop quantized (ZeRO++'s
 * qgZ in one level). Computes: rank i's recvbuf = the sum (AVG: / n) of every rank's block i,
 * its own at full precision and the others' each within sharc_wire_t's bound.
 * Steps: the n blocks of sendbuf are quantized once into n segments; the segments are
 * exchanged by an all-to-all of bytes (a sub-task with the next tag, whose algorithm the host
 * selection picks); the n-1 segments received are dequantized and summed onto this rank's
 * own block in f32 in rank order, and the sum is rounded once into recvbuf (one pass).
 * Bytes per rank: (n-1) segments of recvcount * (1 + 4 / block) bytes each way, against
 * recvcount * esize. Extra memory: 2n segments, and recvcount f32 for a 16-bit own block.
 * In place (recvbuf == sendbuf + rank * recvcount): every block is quantized, and the own
 * block read, before recvbuf is written.
 */
#include "config.h"

#include <stdint.h>

#include "../algorithms.h"
#include "../quant.h"

static size_t sharc_reduce_scatter_quant_tags(const sharc_coll_task_t *task)
{
    return 1; /* the all-to-all of the segments */
}

/* Scratch: the segments sent, the segments received, and the own block in f32. */
static size_t sharc_reduce_scatter_quant_own(const sharc_coll_task_t *task)
{
    return 2 * task->u.quant.seg * (size_t)task->cc->size;
}

/* This rank's block, where it is in sendbuf. */
static const void *sharc_reduce_scatter_quant_block(const sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;

    return (const char *)a->sendbuf +
           (size_t)task->cc->rank * a->count * sharc_dtype_size(a->dtype);
}

/* Whether the own block is summed onto straight from sendbuf (f32, aligned), or from an f32
 * copy in the scratch. */
static int sharc_reduce_scatter_quant_in_place(const sharc_coll_task_t *task)
{
    return task->args.dtype == SHARC_DTYPE_F32 &&
           (uintptr_t)sharc_reduce_scatter_quant_block(task) % sizeof(float) == 0;
}

static sharc_status_t sharc_reduce_scatter_quant_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t own = sharc_reduce_scatter_quant_in_place(task) ? 0 : a->count * sizeof(float);

    task->u.quant.phase = 0;
    task->u.quant.child = NULL;
    task->u.quant.seg = sharc_wire_size(a->wire, a->count, a->block, a->dtype);
    if (sharc_coll_scratch(task, sharc_reduce_scatter_quant_own(task) + own + 16) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

/* This rank's block in f32, to sum onto. */
static const float *sharc_reduce_scatter_quant_base(sharc_coll_task_t *task)
{
    if (sharc_reduce_scatter_quant_in_place(task)) {
        return sharc_reduce_scatter_quant_block(task);
    }
    return (const float *)(void *)(task->scratch + sharc_reduce_scatter_quant_own(task));
}

/* Quantize every block, keep the own one in f32, start the exchange. */
static sharc_status_t sharc_reduce_scatter_quant_start(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t n = (size_t)task->cc->size, seg = task->u.quant.seg;
    sharc_kern_wire_t w = {a->wire, a->block};
    sharc_coll_args_t bytes = {.type = SHARC_COLL_ALLTOALL,
                               .sendbuf = task->scratch,
                               .recvbuf = task->scratch + n * seg,
                               .count = seg,
                               .dtype = SHARC_DTYPE_U8};
    sharc_status_t status;

    status =
        sharc_kern_cpu_ops.quantize(task->scratch, w, a->sendbuf, a->dtype, a->count, (int)n, NULL);
    if (status == SHARC_OK && !sharc_reduce_scatter_quant_in_place(task)) {
        status = sharc_kern_cpu_ops.cast((void *)sharc_reduce_scatter_quant_base(task),
                                         SHARC_DTYPE_F32, sharc_reduce_scatter_quant_block(task),
                                         a->dtype, a->count, NULL);
    }
    if (status != SHARC_OK) {
        return status;
    }
    return sharc_coll_child_start(task, &bytes, 0, &task->u.quant.child);
}

/* The segments received summed onto the own block, in f32, rounded once into recvbuf. */
static sharc_status_t sharc_reduce_scatter_quant_finish(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    int n = task->cc->size;
    sharc_kern_wire_t w = {a->wire, a->block};

    return sharc_kern_cpu_ops.dequantize_sum(
        a->recvbuf, a->dtype, sharc_reduce_scatter_quant_base(task),
        task->scratch + (size_t)n * task->u.quant.seg, w, a->count, n, task->cc->rank,
        a->op == SHARC_OP_AVG ? 1.0 / n : 1.0, NULL);
}

static sharc_status_t sharc_reduce_scatter_quant_progress(sharc_coll_task_t *task)
{
    return sharc_coll_quant_progress(task, sharc_reduce_scatter_quant_start,
                                     sharc_reduce_scatter_quant_finish);
}

const sharc_coll_algo_t sharc_coll_reduce_scatter_quant = {
    .info = {.name = "quant", .flags = 0},
    .type = SHARC_COLL_REDUCE_SCATTER,
    .tags = sharc_reduce_scatter_quant_tags,
    .init = sharc_reduce_scatter_quant_init,
    .progress = sharc_reduce_scatter_quant_progress,
    .finalize = sharc_coll_quant_finalize,
};
