/*
 * allgather_quant.c: all-gather over a quantized wire (int8 or fp8 codes with a scale per
 * block, sharc_wire_t): ZeRO++'s qwZ. Computes: every rank's recvbuf holds every rank's
 * block, each value within sharc_wire_t's bound of the original, the same bits on every rank.
 * Steps: this rank's block is quantized once into its segment of a wire buffer (n segments
 * of sharc_wire_size bytes); the segments are all-gathered as bytes by a sub-task (with the
 * next tag) whose algorithm the host selection picks for that size, the ring for large ones;
 * then every segment, this rank's own included, is dequantized into recvbuf. Bytes per rank:
 * (n-1) segments of count * (1 + 4 / block) bytes against count * esize. Extra memory: the
 * wire buffer (the communicator's scratch when free). In place (sendbuf == recvbuf + rank *
 * count): the block is quantized before anything is written into recvbuf.
 */
#include "config.h"

#include "../coll.h"

static size_t sharc_allgather_quant_tags(const sharc_coll_task_t *task)
{
    return 1; /* the gather of the segments */
}

static sharc_status_t sharc_allgather_quant_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;

    task->u.quant.phase = 0;
    task->u.quant.child = NULL;
    task->u.quant.seg = sharc_wire_size(a->wire, a->count, a->block, a->dtype);
    if (sharc_coll_scratch(task, task->u.quant.seg * (size_t)task->cc->size + 1) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

/* Quantize this rank's block into its segment and start gathering the segments. */
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
    if (status != SHARC_OK) {
        return status;
    }
    return sharc_coll_child_start(task, &bytes, 0, &task->u.quant.child);
}

/* Every segment, this rank's own included, dequantized into recvbuf. */
static sharc_status_t sharc_allgather_quant_finish(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    sharc_kern_wire_t w = {a->wire, a->block};

    return sharc_kern_cpu_ops.dequantize(a->recvbuf, a->dtype, task->scratch, w, a->count,
                                         task->cc->size, NULL);
}

static sharc_status_t sharc_allgather_quant_progress(sharc_coll_task_t *task)
{
    return sharc_coll_quant_progress(task, sharc_allgather_quant_start,
                                     sharc_allgather_quant_finish);
}

const sharc_coll_algo_t sharc_coll_allgather_quant = {
    .info = {.name = "quant", .flags = 0},
    .type = SHARC_COLL_ALLGATHER,
    .tags = sharc_allgather_quant_tags,
    .init = sharc_allgather_quant_init,
    .progress = sharc_allgather_quant_progress,
    .finalize = sharc_coll_quant_finalize,
};
