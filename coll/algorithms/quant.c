/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quant.c: what the collectives over a quantized wire share (allgather_quant.c,
 * reduce_scatter_quant.c, reduce_scatter_quant_hier.c, and quant_device.c on CUDA buffers):
 * the checks of their arguments, the choice among them (a table, by collective and by how
 * many levels the node layout gives a reduce-scatter), and the course of the one-level ones
 * (quantize, exchange the segments by a sub-task, dequantize) with the sub-task's release.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include "../../base/log.h"
#include "algorithms.h"
#include "quant.h"

sharc_status_t sharc_coll_wire_check(const sharc_coll_args_t *a)
{
    const char *name = sharc_coll_name(a->type);

    if ((unsigned)a->wire >= SHARC_WIRE_LAST) {
        sharc_error("%s: wire format %d is not a sharc_wire_t", name, (int)a->wire);
        return SHARC_ERR_INVALID;
    }
    if (a->wire == SHARC_WIRE_FULL) {
        return SHARC_OK;
    }
    if (a->type != SHARC_COLL_ALLGATHER && a->type != SHARC_COLL_REDUCE_SCATTER) {
        sharc_error("%s: a %s wire is for all-gathers and reduce-scatters only", name,
                    sharc_wire_name(a->wire));
        return SHARC_ERR_UNSUPPORTED;
    }
    if (a->block == 0 || a->block > SHARC_WIRE_BLOCK_MAX) {
        sharc_error("%s: block %zu of the %s wire is not in 1 .. %u", name, a->block,
                    sharc_wire_name(a->wire), SHARC_WIRE_BLOCK_MAX);
        return SHARC_ERR_INVALID;
    }
    if (a->dtype != SHARC_DTYPE_F32 && a->dtype != SHARC_DTYPE_BF16 &&
        a->dtype != SHARC_DTYPE_F16) {
        sharc_error("%s: the %s wire quantizes f32, bf16 and f16, not %s", name,
                    sharc_wire_name(a->wire), sharc_dtype_name(a->dtype));
        return SHARC_ERR_UNSUPPORTED;
    }
    if (a->type == SHARC_COLL_REDUCE_SCATTER && a->op != SHARC_OP_SUM && a->op != SHARC_OP_AVG) {
        sharc_error("%s: the %s wire sums (op sum or avg), not %s", name, sharc_wire_name(a->wire),
                    sharc_op_name(a->op));
        return SHARC_ERR_UNSUPPORTED;
    }
    return SHARC_OK;
}

/*
 * How a reduce-scatter's hops are quantized, from the options and the node layout: none (one
 * node, hierarchical: the ranks sum at full precision, exactly), every hop (flat asked for,
 * one rank per node, or nodes of different sizes), or the hops between nodes only.
 */
typedef enum {
    SHARC_COLL_LEVELS_ANY,  /* (a rule for every layout) */
    SHARC_COLL_LEVELS_NONE, /* within one node: full precision */
    SHARC_COLL_LEVELS_FLAT, /* every hop quantized */
    SHARC_COLL_LEVELS_TWO,  /* full precision within nodes, quantized between them */
} sharc_coll_levels_t;

static sharc_coll_levels_t sharc_coll_levels(const sharc_coll_comm_t *cc,
                                             const sharc_coll_args_t *a)
{
    if (a->flat || cc->node_size <= 1) { /* asked for, one rank per node, or uneven nodes */
        return SHARC_COLL_LEVELS_FLAT;
    }
    return cc->nnodes == 1 ? SHARC_COLL_LEVELS_NONE : SHARC_COLL_LEVELS_TWO;
}

/* The algorithms of a quantized wire on host memory: the first row that fits (NULL: the
 * full-precision selection, the wire unused). */
static const struct {
    sharc_coll_type_t type;
    sharc_coll_levels_t levels;
    const sharc_coll_algo_t *algo;
} sharc_coll_wire_rules[] = {
    {SHARC_COLL_ALLGATHER, SHARC_COLL_LEVELS_ANY, &sharc_coll_allgather_quant},
    {SHARC_COLL_REDUCE_SCATTER, SHARC_COLL_LEVELS_NONE, NULL},
    {SHARC_COLL_REDUCE_SCATTER, SHARC_COLL_LEVELS_FLAT, &sharc_coll_reduce_scatter_quant},
    {SHARC_COLL_REDUCE_SCATTER, SHARC_COLL_LEVELS_TWO, &sharc_coll_reduce_scatter_quant_hier},
};

sharc_status_t sharc_coll_select_wire(sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                      const sharc_coll_algo_t **algo_p)
{
    sharc_coll_levels_t levels = sharc_coll_levels(cc, a);

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_coll_wire_rules); i++) {
        if (sharc_coll_wire_rules[i].type != a->type ||
            (sharc_coll_wire_rules[i].levels != SHARC_COLL_LEVELS_ANY &&
             sharc_coll_wire_rules[i].levels != levels)) {
            continue;
        }
        if (sharc_coll_wire_rules[i].algo == NULL) {
            sharc_debug("%s over a %s wire on one node: summed at full precision",
                        sharc_coll_name(a->type), sharc_wire_name(a->wire));
            return sharc_coll_select(cc, a, algo_p);
        }
        *algo_p = sharc_coll_wire_rules[i].algo;
        sharc_debug("%s over a %s wire (block %zu): %s", sharc_coll_name(a->type),
                    sharc_wire_name(a->wire), a->block, (*algo_p)->info.name);
        return SHARC_OK;
    }
    return SHARC_ERR_UNSUPPORTED; /* unreachable: checked by sharc_coll_wire_check */
}

sharc_status_t sharc_coll_quant_progress(sharc_coll_task_t *task, sharc_coll_quant_fn_t start,
                                         sharc_coll_quant_fn_t finish)
{
    sharc_status_t status;

    if (task->args.count == 0) {
        return SHARC_OK;
    }
    if (task->u.quant.phase == 0) {
        status = start(task);
        if (status != SHARC_OK) {
            return status;
        }
        task->u.quant.phase = 1;
    }
    status = sharc_coll_child_progress(task, task->u.quant.child);
    return (status == SHARC_OK) ? finish(task) : status;
}

void sharc_coll_quant_finalize(sharc_coll_task_t *task)
{
    if (task->u.quant.child != NULL) {
        sharc_coll_task_free(task->u.quant.child);
        task->u.quant.child = NULL;
    }
}
