/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_reduce.c: reducing gradients. A unit's unsharded gradients are reduce-scattered in
 * place (then, with HSDP, its shard is all-reduced across replicas) and the result, scaled
 * once for AVG, is added to the f32 gradient shard. On the host, reductions complete in
 * posting order through the group's queue, advanced by progress calls. On CUDA the whole
 * chain is queued at once: the reduce-scatter follows the caller's stream (the backward
 * wrote the gradients there), the engine's stream waits for it, posts the all-reduce and
 * accumulates, and finish makes the caller's stream wait for the engine's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "shard/shard_group.h"

/* This rank's part of the unit's gradient buffer. */
static void *sharc_shard_part(const sharc_shard_group_t *g, const sharc_shard_unit_t *u)
{
    return (char *)u->gbuf + (size_t)g->shard_rank * u->shard * g->resize;
}

/*
 * The reduced part of gbuf goes into the f32 gradient shard, scaled once for AVG (unless the
 * reduce-scatter wrote the shard itself), and gbuf is released. Kernels run on the engine's
 * stream on CUDA (g->scratch is the engine's: accumulations queue one after another there).
 * A shard that counts as zero is written, not added to (its memory may hold old values:
 * sharc_shard_offload_zero). Then the unit's optimizer, if the engine has one, may run.
 */
static sharc_status_t sharc_shard_accumulate(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    void *part = sharc_shard_part(g, u);
    float *f32 = part;
    sharc_status_t status = SHARC_OK;

    if (u->rs_direct) {
        if (g->cuda && g->grad_op == SHARC_OP_AVG) { /* the collective summed: scale once */
            status = g->kern->scale(u->grad, u->shard, SHARC_DTYPE_F32, 1.0 / g->size, g->estream);
        }
    } else {
        if (g->rdtype != SHARC_DTYPE_F32) {
            status =
                g->kern->cast(g->scratch, SHARC_DTYPE_F32, part, g->rdtype, u->shard, g->estream);
            f32 = g->scratch;
        }
        if (status == SHARC_OK && g->grad_op == SHARC_OP_AVG) {
            status = g->kern->scale(f32, u->shard, SHARC_DTYPE_F32, 1.0 / g->size, g->estream);
        }
        if (status == SHARC_OK && u->grad_zero) {
            status = g->kern->cast(u->grad, SHARC_DTYPE_F32, f32, SHARC_DTYPE_F32, u->shard,
                                   g->estream); /* (equal dtypes copy) */
        } else if (status == SHARC_OK) {
            status = g->kern->reduce(u->grad, u->grad, f32, u->shard, SHARC_DTYPE_F32, SHARC_OP_SUM,
                                     g->estream);
        }
    }
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u, "accumulating the gradient shard");
    }
    u->grad_zero = 0;
    sharc_shard_grads_release(g, u, g->estream);
    return sharc_shard_offload_landed(g, u);
}

/* Post the unit's reduce-scatter (on CUDA after what the caller's stream has queued). */
static sharc_status_t sharc_shard_reduce_scatter(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_status_t status = sharc_shard_adamw_posted(g, u); /* the step's gradient? */

    if (status != SHARC_OK) {
        return status;
    }
    /* (a CUDA group's host units land through offload: the collective writes the device) */
    u->rs_direct = g->rdtype == SHARC_DTYPE_F32 && g->replica_comm == NULL && u->grad_zero &&
                   !(g->cuda && sharc_shard_host_unit(g, u));
    if (u->rs_direct) {
        /* the first reduction into a zero f32 shard, no replicas: the collective writes the
         * shard itself, AVG's one scaling included on the host (the same rounding as
         * accumulating). NCCL averages by scaling each input first: on CUDA it sums, and
         * the accumulation scales. */
        return sharc_shard_post(g, u, &u->rs, SHARC_SHARD_Q_REDUCE, SHARC_COLL_REDUCE_SCATTER,
                                u->gbuf, u->grad, u->shard, SHARC_DTYPE_F32,
                                g->cuda ? SHARC_OP_SUM : g->grad_op, g->stream);
    }
    /* sums only: AVG is one scaling of the final sum, so HSDP's two reductions round once */
    return sharc_shard_post(g, u, &u->rs, SHARC_SHARD_Q_REDUCE, SHARC_COLL_REDUCE_SCATTER, u->gbuf,
                            sharc_shard_part(g, u), u->shard, g->rdtype, SHARC_OP_SUM, g->stream);
}

/* HSDP: post the all-reduce of the unit's reduced part across replicas. */
static sharc_status_t sharc_shard_replica_reduce(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    void *part = sharc_shard_part(g, u);

    return sharc_shard_post(g, u, &u->ar, SHARC_SHARD_Q_REPLICA, SHARC_COLL_ALLREDUCE, part, part,
                            u->shard, g->rdtype, SHARC_OP_SUM, g->estream);
}

/* CUDA: the unit's whole reduction, queued on the device. */
static sharc_status_t sharc_shard_reduce_cuda(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_status_t status = sharc_shard_reduce_scatter(g, u);

    if (status == SHARC_OK) {
        status = sharc_shard_complete(g, u, &u->rs, SHARC_COLL_REDUCE_SCATTER, 1, g->estream);
    }
    if (status == SHARC_OK && g->replica_comm != NULL) {
        status = sharc_shard_replica_reduce(g, u);
        if (status == SHARC_OK) {
            status = sharc_shard_complete(g, u, &u->ar, SHARC_COLL_ALLREDUCE, 1, g->estream);
        }
    }
    if (status == SHARC_OK) { /* offloaded to page-locked memory: down to the host it goes */
        status = sharc_shard_offload_reduced(g, u);
        if (status == SHARC_ERR_UNSUPPORTED) {
            status = sharc_shard_accumulate(g, u);
        }
    }
    return status;
}

/*
 * Host: advance the unit at the head of the reduction queue by one stage if its collective
 * is done (@p block: wait for it). Returns SHARC_OK when it moved, SHARC_INPROGRESS when not.
 */
static sharc_status_t sharc_shard_reduce_step(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                              int block)
{
    int rs = u->gstate == SHARC_SHARD_GRAD_REDUCING;
    sharc_status_t status;

    status =
        sharc_shard_complete(g, u, rs ? &u->rs : &u->ar,
                             rs ? SHARC_COLL_REDUCE_SCATTER : SHARC_COLL_ALLREDUCE, block, NULL);
    if (status != SHARC_OK) {
        return status;
    }
    if (rs && g->replica_comm != NULL) {
        status = sharc_shard_replica_reduce(g, u);
        if (status == SHARC_OK) {
            u->gstate = SHARC_SHARD_GRAD_REPLICA;
        }
        return status;
    }
    g->rhead = u->next_reduction;
    if (g->rhead == NULL) {
        g->rtail = NULL;
    }
    u->next_reduction = NULL;
    return sharc_shard_accumulate(g, u);
}

sharc_status_t sharc_shard_settle_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_status_t status = SHARC_OK;

    /* reductions complete in posting order: finish the queue up to this unit's */
    while (status == SHARC_OK &&
           (u->gstate == SHARC_SHARD_GRAD_REDUCING || u->gstate == SHARC_SHARD_GRAD_REPLICA)) {
        status = sharc_shard_reduce_step(g, g->rhead, 1);
    }
    return status;
}

sharc_status_t sharc_shard_reduce_poll(sharc_shard_group_t *g)
{
    /* in posting order: replica all-reduces go out in the same order on every rank */
    while (g->rhead != NULL) {
        sharc_status_t status = sharc_shard_reduce_step(g, g->rhead, 0);

        if (status == SHARC_INPROGRESS) {
            break;
        }
        if (status != SHARC_OK) {
            return status;
        }
    }
    return SHARC_OK;
}

sharc_status_t sharc_shard_reduce_start(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_status_t status;

    if (g->cuda) {
        return sharc_shard_reduce_cuda(g, u);
    }
    status = sharc_shard_reduce_scatter(g, u);
    if (status != SHARC_OK) {
        return status;
    }
    u->gstate = SHARC_SHARD_GRAD_REDUCING;
    u->next_reduction = NULL;
    if (g->rtail != NULL) {
        g->rtail->next_reduction = u;
    } else {
        g->rhead = u;
    }
    g->rtail = u;
    return SHARC_OK;
}

sharc_status_t sharc_shard_reduce_all(sharc_shard_group_t *g)
{
    sharc_status_t status = SHARC_OK;

    while (status == SHARC_OK && g->rhead != NULL) {
        status = sharc_shard_reduce_step(g, g->rhead, 1);
    }
    return status;
}
