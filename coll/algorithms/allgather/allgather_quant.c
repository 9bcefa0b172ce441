/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allgather_quant.c: all-gather over a quantized wire (int8 or fp8 codes with a scale per
 * block, sharc_wire_t): ZeRO++'s qwZ. Computes: every rank's recvbuf holds every rank's
 * block, each value within sharc_wire_t's bound of the original, the same bits on every rank.
 * Steps: this rank's block is quantized once into its segment of a wire buffer (n segments
 * of sharc_wire_size bytes); the segments are all-gathered as bytes by a sub-task (with the
 * next tag) whose algorithm the host selection picks for that size, the ring for large ones;
 * every segment, this rank's own included, is dequantized into recvbuf: the own one while
 * the others travel, theirs chunk by chunk as the ring delivers them (the dequantization of
 * one chunk overlaps the next ones' transfer), or at the end after another algorithm. Bytes per
 * rank: (n-1) segments of count * (1 + 4 / block) bytes against count * esize. Extra memory: the
 * wire buffer (the communicator's scratch when free). In place (sendbuf == recvbuf + rank *
 * count): the block is quantized before anything is written into recvbuf.
 */
#include "config.h"

#include "../algorithms.h"
#include "../quant.h"

static size_t sharc_allgather_quant_tags(const sharc_coll_task_t *task)
{
    return 1; /* the gather of the segments */
}

static sharc_status_t sharc_allgather_quant_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;

    task->u.quant.phase = 0;
    task->u.quant.child = NULL;
    task->u.quant.arrived = 0;
    task->u.quant.seg = sharc_wire_size(a->wire, a->count, a->block, a->dtype);
    if (sharc_coll_scratch(task, task->u.quant.seg * (size_t)task->cc->size + 1) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

/* Values [first, last) of rank @p r's segment into its block of recvbuf. */
static sharc_status_t sharc_allgather_quant_values(sharc_coll_task_t *task, int r, size_t first,
                                                   size_t last)
{
    const sharc_coll_args_t *a = &task->args;
    sharc_kern_wire_t w = {a->wire, a->block};
    size_t esize = sharc_dtype_size(a->dtype);

    if (first >= last) {
        return SHARC_OK;
    }
    return sharc_kern_cpu_dequantize_range(
        (char *)a->recvbuf + ((size_t)r * a->count + first) * esize, a->dtype,
        task->scratch + (size_t)r * task->u.quant.seg, w, a->count, first, last);
}

/* Quantize this rank's block into its segment, start gathering the segments, and take this
 * rank's own values back from its segment (alike on every rank) while they travel. */
static sharc_status_t sharc_allgather_quant_start(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t seg = task->u.quant.seg;
    char *own = task->scratch + (size_t)task->cc->rank * seg;
    sharc_kern_wire_t w = {a->wire, a->block};
    sharc_coll_args_t bytes = {.type = SHARC_COLL_ALLGATHER,
                               .sendbuf = own,
                               .recvbuf = task->scratch,
                               .count = seg,
                               .dtype = SHARC_DTYPE_U8};
    sharc_status_t status;

    status = sharc_kern_cpu_ops.quantize(own, w, a->sendbuf, a->dtype, a->count, 1, NULL);
    if (status == SHARC_OK) {
        status = sharc_coll_child_start(task, &bytes, 0, &task->u.quant.child);
    }
    return (status == SHARC_OK) ? sharc_allgather_quant_values(task, task->cc->rank, 0, a->count)
                                : status;
}

/* A span of the wire the ring received: the values whose codes it holds (their scales, at the
 * segment's start, came in the same or an earlier chunk of that segment). */
static void sharc_allgather_quant_span(void *arg, int block, size_t off, size_t len)
{
    sharc_coll_task_t *task = arg;
    size_t count = task->args.count, block_values = task->args.block;
    size_t lo = off - (size_t)block * task->u.quant.seg, hi = lo + len;
    size_t codes = (count / block_values + (count % block_values != 0)) * sizeof(float);

    /* (the arguments were checked when the collective was posted: nothing to fail) */
    sharc_allgather_quant_values(
        task, block, SHARC_MAX(lo, codes) - codes,
        SHARC_MIN(hi, codes + count) > codes ? SHARC_MIN(hi, codes + count) - codes : 0);
}

/* Whatever has not been dequantized yet: the rest the ring delivered, or (another algorithm
 * gathered the segments) every other rank's segment. */
static sharc_status_t sharc_allgather_quant_finish(sharc_coll_task_t *task)
{
    sharc_coll_task_t *child = task->u.quant.child;
    sharc_status_t status = SHARC_OK;

    if (child->algo == &sharc_coll_allgather_ring) {
        sharc_coll_ring_arrived(&child->u.ring, &task->u.quant.arrived, sharc_allgather_quant_span,
                                task);
        return SHARC_OK;
    }
    for (int r = 0; status == SHARC_OK && r < task->cc->size; r++) {
        if (r != task->cc->rank) {
            status = sharc_allgather_quant_values(task, r, 0, task->args.count);
        }
    }
    return status;
}

static sharc_status_t sharc_allgather_quant_progress(sharc_coll_task_t *task)
{
    sharc_status_t status =
        sharc_coll_quant_progress(task, sharc_allgather_quant_start, sharc_allgather_quant_finish);
    sharc_coll_task_t *child = task->u.quant.child;

    /* the ring's chunks as they come: their dequantization overlaps the later chunks' travel */
    if (status == SHARC_INPROGRESS && child != NULL && child->algo == &sharc_coll_allgather_ring) {
        sharc_coll_ring_arrived(&child->u.ring, &task->u.quant.arrived, sharc_allgather_quant_span,
                                task);
    }
    return status;
}

const sharc_coll_algo_t sharc_coll_allgather_quant = {
    .info = {.name = "quant", .flags = 0},
    .type = SHARC_COLL_ALLGATHER,
    .tags = sharc_allgather_quant_tags,
    .init = sharc_allgather_quant_init,
    .progress = sharc_allgather_quant_progress,
    .finalize = sharc_coll_quant_finalize,
};
