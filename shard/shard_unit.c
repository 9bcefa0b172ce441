/*
 * shard_unit.c: moving a unit's data. Gathering casts the f32 master shard into the
 * unsharded buffer at this rank's place and all-gathers in place; reducing reduce-scatters
 * the unsharded gradients in place (then, with HSDP, all-reduces the shard across replicas)
 * and adds the result, scaled once for AVG, to the f32 gradient shard. Reductions complete in
 * posting order through the group's queue. Also the buffer pool and the per-unit calls of
 * sharc/shard.h.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/mem.h>

#include "../src/log.h"
#include "../src/util.h"
#include "shard.h"

/* ---- buffers ------------------------------------------------------------------------- */

/*
 * Unsharded buffers come from sharc_mem_alloc, so node-local peers copy straight from them,
 * and go back to a small pool: units of one model mostly share a size, and a reused buffer
 * is neither faulted in again nor mapped again by the peers.
 */
void *sharc_shard_buf_get(sharc_shard_group_t *g, size_t bytes)
{
    int best = -1;
    void *ptr = NULL;

    for (int i = 0; i < g->npool; i++) {
        if (g->pool[i].bytes >= bytes && (best < 0 || g->pool[i].bytes < g->pool[best].bytes)) {
            best = i;
        }
    }
    if (best >= 0 && g->pool[best].bytes <= 2 * bytes) {
        ptr = g->pool[best].ptr;
        g->pool[best] = g->pool[--g->npool];
        return ptr;
    }
    if (sharc_mem_alloc(g->ctx, bytes, &ptr) != SHARC_OK) {
        return NULL;
    }
    return ptr;
}

void sharc_shard_buf_put(sharc_shard_group_t *g, void *ptr, size_t bytes)
{
    if (ptr == NULL) {
        return;
    }
    if (g->npool == g->pool_max) { /* full: the oldest goes */
        sharc_mem_free(g->ctx, g->pool[0].ptr);
        memmove(g->pool, g->pool + 1, sizeof(*g->pool) * (size_t)(g->npool - 1));
        g->npool--;
    }
    g->pool[g->npool].ptr = ptr;
    g->pool[g->npool].bytes = bytes;
    g->npool++;
}

/* ---- gathering ----------------------------------------------------------------------- */

/* A collective of the group failed: the group stops communicating. */
static sharc_status_t sharc_shard_fail(sharc_shard_group_t *g, sharc_status_t status,
                                       const sharc_shard_unit_t *u, const char *what)
{
    if (g->failed == SHARC_OK) {
        sharc_error("%s of unit %d failed (%s); the group stops", what, u->id,
                    sharc_status_string(status));
        g->failed = status;
    }
    return status;
}

sharc_status_t sharc_shard_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    size_t bytes = u->padded * g->pesize, off = (size_t)g->shard_rank * u->shard * g->pesize;
    sharc_status_t status;

    u->pbuf = sharc_shard_buf_get(g, bytes);
    if (u->pbuf == NULL) {
        sharc_error("no memory for unit %d's %zu-byte unsharded parameters", u->id, bytes);
        return SHARC_ERR_NOMEM;
    }
    u->ag.t_post = sharc_time_now();
    if (g->pdtype == SHARC_DTYPE_F32) {
        /* straight from the master: the collective copies this rank's block itself, in the
         * progress thread when there is one, not on the caller's time */
        status =
            sharc_allgather(u->master, u->pbuf, u->shard, g->pdtype, g->shard_comm, &u->ag.req);
    } else {
        /* this rank's block first, in the param dtype: then the all-gather runs in place */
        g->kern->cast((char *)u->pbuf + off, g->pdtype, u->master, SHARC_DTYPE_F32, u->shard, NULL);
        status = sharc_allgather((char *)u->pbuf + off, u->pbuf, u->shard, g->pdtype, g->shard_comm,
                                 &u->ag.req);
    }
    if (status != SHARC_OK) {
        sharc_shard_buf_put(g, u->pbuf, bytes);
        u->pbuf = NULL;
        return sharc_shard_fail(g, status, u, "all-gather");
    }
    u->pstate = SHARC_SHARD_GATHERING;
    g->alive++;
    sharc_shard_stats_mem(g, u, (long long)bytes);
    return SHARC_OK;
}

/* The all-gather completed (status from test or wait). */
static sharc_status_t sharc_shard_gathered(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                           sharc_status_t status)
{
    sharc_request_h req = u->ag.req;

    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u, "all-gather");
    }
    sharc_shard_stats_op(g, u, SHARC_COLL_ALLGATHER, u->ag.t_post, req->t_done,
                         u->padded * g->pesize);
    sharc_request_free(req);
    u->ag.req = NULL;
    u->pstate = SHARC_SHARD_GATHERED;
    return SHARC_OK;
}

/* Block until the unit's all-gather is done; the time counts as exposed. */
static sharc_status_t sharc_shard_wait_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    double t0 = sharc_time_now();
    sharc_status_t status = sharc_request_wait(u->ag.req);

    sharc_shard_stats_exposed(g, u, t0);
    return sharc_shard_gathered(g, u, status);
}

sharc_status_t sharc_shard_release(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_status_t status = SHARC_OK;

    if (u->pstate == SHARC_SHARD_SHARDED) {
        return SHARC_OK;
    }
    if (u->pstate == SHARC_SHARD_GATHERING) {
        status = sharc_shard_wait_gather(g, u);
        if (status != SHARC_OK) {
            return status;
        }
    }
    sharc_shard_buf_put(g, u->pbuf, u->padded * g->pesize);
    sharc_shard_stats_mem(g, u, -(long long)(u->padded * g->pesize));
    u->pbuf = NULL;
    u->pstate = SHARC_SHARD_SHARDED;
    u->prefetched = 0;
    g->alive--;
    return SHARC_OK;
}

/*
 * Make room for one more unsharded unit: when max_unsharded are out, release a unit that was
 * prefetched and not used yet (the last one issued: it is needed last).
 */
static sharc_status_t sharc_shard_make_room(sharc_shard_group_t *g, const sharc_shard_unit_t *want)
{
    sharc_shard_unit_t *victim = NULL;

    if (g->alive < g->max_unsharded) {
        return SHARC_OK;
    }
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        if (u->pstate != SHARC_SHARD_SHARDED && u->prefetched && !u->in_use &&
            (victim == NULL || u->ag.t_post > victim->ag.t_post)) {
            victim = u;
        }
    }
    if (victim == NULL) {
        sharc_error("unit %d cannot be gathered: %d units are unsharded already, the "
                    "limit (max_unsharded, SHARC_SHARD_MAX_UNSHARDED); reshard one first",
                    want->id, g->alive);
        return SHARC_ERR_INVALID;
    }
    sharc_debug("unit %d, prefetched and not used yet, released for unit %d", victim->id, want->id);
    g->stats.evictions++;
    victim->stats.evictions++;
    return sharc_shard_release(g, victim);
}

sharc_status_t sharc_shard_unshard(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_unshard");
    sharc_shard_unit_t *u;

    if (status != SHARC_OK) {
        return status;
    }
    u = &g->units[unit];
    if (u->pstate != SHARC_SHARD_SHARDED) {
        return sharc_shard_poll(g);
    }
    status = sharc_shard_make_room(g, u);
    return (status == SHARC_OK) ? sharc_shard_gather(g, u) : status;
}

sharc_status_t sharc_shard_wait(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_wait");
    sharc_shard_unit_t *u;

    if (status != SHARC_OK) {
        return status;
    }
    u = &g->units[unit];
    if (u->pstate == SHARC_SHARD_SHARDED) {
        sharc_error("sharc_shard_wait: unit %d is not being gathered (sharc_shard_unshard first)",
                    unit);
        return SHARC_ERR_INVALID;
    }
    if (u->pstate == SHARC_SHARD_GATHERING) {
        status = sharc_shard_wait_gather(g, u);
    }
    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

sharc_status_t sharc_shard_reshard(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_reshard");

    if (status == SHARC_OK) {
        g->units[unit].in_use = 0;
        status = sharc_shard_release(g, &g->units[unit]);
    }
    return status;
}

/* ---- reducing ------------------------------------------------------------------------ */

sharc_status_t sharc_shard_reduce_grads(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_reduce_grads");
    sharc_shard_unit_t *u;
    size_t off;

    if (status != SHARC_OK) {
        return status;
    }
    u = &g->units[unit];
    if (u->gstate != SHARC_SHARD_GRAD_OPEN) {
        sharc_error("sharc_shard_reduce_grads: unit %d has %s", unit,
                    u->gstate == SHARC_SHARD_GRAD_NONE
                        ? "no gradients since its last reduction (gather it and write them "
                          "through sharc_shard_grad_ptr first)"
                        : "a reduction in flight already");
        return SHARC_ERR_INVALID;
    }
    u->rs.t_post = sharc_time_now();
    u->rs_direct = g->rdtype == SHARC_DTYPE_F32 && g->replica_comm == NULL && u->grad_zero;
    if (u->rs_direct) {
        /* the first reduction into a zero f32 shard, no replicas: the collective writes the
         * shard itself, AVG's one scaling included (the same rounding as below) */
        status = sharc_reduce_scatter(u->gbuf, u->grad, u->shard, SHARC_DTYPE_F32, g->grad_op,
                                      g->shard_comm, &u->rs.req);
    } else {
        /* sums only: AVG is one scaling of the final sum, so HSDP's two reductions round once */
        off = (size_t)g->shard_rank * u->shard * g->resize;
        status = sharc_reduce_scatter(u->gbuf, (char *)u->gbuf + off, u->shard, g->rdtype,
                                      SHARC_OP_SUM, g->shard_comm, &u->rs.req);
    }
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u, "reduce-scatter");
    }
    u->gstate = SHARC_SHARD_GRAD_REDUCING;
    u->next_reduction = NULL;
    if (g->rtail != NULL) {
        g->rtail->next_reduction = u;
    } else {
        g->rhead = u;
    }
    g->rtail = u;
    return sharc_shard_poll(g);
}

/*
 * The reduced shard of gbuf goes into the f32 gradient shard, scaled once for AVG (unless the
 * reduce-scatter wrote the shard itself), and gbuf is released.
 */
static void sharc_shard_accumulate(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    void *part = (char *)u->gbuf + (size_t)g->shard_rank * u->shard * g->resize;
    float *f32 = part;

    if (!u->rs_direct) {
        if (g->rdtype != SHARC_DTYPE_F32) {
            g->kern->cast(g->scratch, SHARC_DTYPE_F32, part, g->rdtype, u->shard, NULL);
            f32 = g->scratch;
        }
        if (g->grad_op == SHARC_OP_AVG) {
            g->kern->scale(f32, u->shard, SHARC_DTYPE_F32, 1.0 / g->size, NULL);
        }
        g->kern->reduce(u->grad, u->grad, f32, u->shard, SHARC_DTYPE_F32, SHARC_OP_SUM, NULL);
    }
    u->grad_zero = 0;
    sharc_shard_buf_put(g, u->gbuf, u->padded * g->resize);
    sharc_shard_stats_mem(g, u, -(long long)(u->padded * g->resize));
    u->gbuf = NULL;
    u->gstate = SHARC_SHARD_GRAD_NONE;
}

/*
 * Advance the unit at the head of the reduction queue by one stage if its collective is
 * done (@p block: wait for it). Returns SHARC_OK when it moved, SHARC_INPROGRESS when not.
 */
static sharc_status_t sharc_shard_reduce_step(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                              int block)
{
    sharc_shard_op_t *op = (u->gstate == SHARC_SHARD_GRAD_REDUCING) ? &u->rs : &u->ar;
    sharc_status_t status;
    double t0 = sharc_time_now();

    if (block) {
        status = sharc_request_wait(op->req);
        sharc_shard_stats_exposed(g, u, t0);
    } else {
        status = sharc_request_test(op->req);
    }
    if (status == SHARC_INPROGRESS) {
        return status;
    }
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u,
                                op == &u->rs ? "reduce-scatter" : "all-reduce across replicas");
    }
    sharc_shard_stats_op(g, u, op == &u->rs ? SHARC_COLL_REDUCE_SCATTER : SHARC_COLL_ALLREDUCE,
                         op->t_post, op->req->t_done,
                         op == &u->rs ? u->padded * g->resize : u->shard * g->resize);
    sharc_request_free(op->req);
    op->req = NULL;
    if (u->gstate == SHARC_SHARD_GRAD_REDUCING && g->replica_comm != NULL) {
        void *part = (char *)u->gbuf + (size_t)g->shard_rank * u->shard * g->resize;

        u->ar.t_post = sharc_time_now();
        status = sharc_allreduce(part, part, u->shard, g->rdtype, SHARC_OP_SUM, g->replica_comm,
                                 &u->ar.req);
        if (status != SHARC_OK) {
            return sharc_shard_fail(g, status, u, "all-reduce across replicas");
        }
        u->gstate = SHARC_SHARD_GRAD_REPLICA;
        return SHARC_OK;
    }
    sharc_shard_accumulate(g, u);
    g->rhead = u->next_reduction;
    if (g->rhead == NULL) {
        g->rtail = NULL;
    }
    u->next_reduction = NULL;
    return SHARC_OK;
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

sharc_status_t sharc_shard_poll(sharc_shard_group_t *g)
{
    sharc_status_t status;

    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        if (u->pstate == SHARC_SHARD_GATHERING) {
            status = sharc_request_test(u->ag.req);
            if (status != SHARC_INPROGRESS && sharc_shard_gathered(g, u, status) != SHARC_OK) {
                return g->failed;
            }
        }
    }
    /* in posting order: replica all-reduces go out in the same order on every rank */
    while (g->rhead != NULL) {
        status = sharc_shard_reduce_step(g, g->rhead, 0);
        if (status == SHARC_INPROGRESS) {
            break;
        }
        if (status != SHARC_OK) {
            return status;
        }
    }
    return g->failed;
}

sharc_status_t sharc_shard_progress(sharc_shard_group_h g)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_progress");

    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

sharc_status_t sharc_shard_finish(sharc_shard_group_h g)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_finish");
    double t0 = sharc_time_now();

    while (status == SHARC_OK && g->rhead != NULL) {
        status = sharc_shard_reduce_step(g, g->rhead, 1);
    }
    for (int i = 0; status == SHARC_OK && i < g->nunits; i++) {
        if (g->units[i].in_use) {
            sharc_warn("step finished while unit %d is between its begin and end", i);
        }
    }
    if (status != SHARC_OK) {
        return status;
    }
    sharc_shard_sched_step(g);
    sharc_shard_stats_engine(g, t0);
    sharc_debug("sharc_shard_finish: %.3f ms", (sharc_time_now() - t0) * 1e3);
    sharc_shard_stats_step(g);
    return SHARC_OK;
}

sharc_status_t sharc_shard_zero_grads(sharc_shard_group_h g)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_zero_grads");

    if (status != SHARC_OK) {
        return status;
    }
    if (g->rhead != NULL) {
        sharc_error("sharc_shard_zero_grads: reductions are in flight (sharc_shard_finish "
                    "first)");
        return SHARC_ERR_INVALID;
    }
    for (int i = 0; i < g->nunits; i++) {
        memset(g->units[i].grad, 0, g->units[i].shard * sizeof(float));
        g->units[i].grad_zero = 1;
    }
    return SHARC_OK;
}

void sharc_shard_drain(sharc_shard_group_t *g)
{
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        /* a failed request still completes (with its error) before it is freed */
        if (u->ag.req != NULL) {
            sharc_request_wait(u->ag.req);
            sharc_request_free(u->ag.req);
            u->ag.req = NULL;
        }
        for (sharc_shard_op_t *op = &u->rs; op != NULL; op = (op == &u->rs) ? &u->ar : NULL) {
            if (op->req != NULL) {
                sharc_request_wait(op->req);
                sharc_request_free(op->req);
                op->req = NULL;
            }
        }
        if (u->pbuf != NULL) {
            sharc_mem_free(g->ctx, u->pbuf);
            u->pbuf = NULL;
        }
        if (u->gbuf != NULL) {
            sharc_mem_free(g->ctx, u->gbuf);
            u->gbuf = NULL;
        }
    }
    g->rhead = g->rtail = NULL;
    g->alive = 0;
}

/* ---- views --------------------------------------------------------------------------- */

sharc_status_t sharc_shard_open_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    size_t bytes = u->padded * g->resize;

    u->gbuf = sharc_shard_buf_get(g, bytes);
    if (u->gbuf == NULL) {
        sharc_error("no memory for unit %d's %zu-byte gradients", u->id, bytes);
        return SHARC_ERR_NOMEM;
    }
    if (!g->assign_grads) {
        memset(u->gbuf, 0, bytes);
    } else { /* the caller writes every parameter: only gaps and padding, which reduce as zeros */
        size_t end = 0;

        for (int i = u->first_param; i < u->first_param + u->nparams; i++) {
            const sharc_shard_param_info_t *p = &g->params[i];

            memset((char *)u->gbuf + end * g->resize, 0, (p->offset - end) * g->resize);
            end = p->offset + p->count;
        }
        memset((char *)u->gbuf + end * g->resize, 0, (u->padded - end) * g->resize);
    }
    u->gstate = SHARC_SHARD_GRAD_OPEN;
    sharc_shard_stats_mem(g, u, (long long)bytes);
    return SHARC_OK;
}

static sharc_status_t sharc_shard_param_check(sharc_shard_group_t *g, int index, void **ptr_p,
                                              const char *what)
{
    if (g == NULL || index < 0 || index >= g->nparams || ptr_p == NULL) {
        sharc_error("%s: no group or output, or parameter %d out of range", what, index);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

sharc_status_t sharc_shard_param_ptr(sharc_shard_group_h g, int index, void **ptr_p)
{
    sharc_status_t status = sharc_shard_param_check(g, index, ptr_p, "sharc_shard_param_ptr");
    const sharc_shard_param_info_t *p;
    sharc_shard_unit_t *u;

    if (status != SHARC_OK) {
        return status;
    }
    p = &g->params[index];
    u = &g->units[p->unit];
    if (u->pstate != SHARC_SHARD_GATHERED) {
        sharc_error("sharc_shard_param_ptr: '%s' (unit %d) is not gathered%s", p->name, u->id,
                    u->pstate == SHARC_SHARD_GATHERING ? " yet (sharc_shard_wait first)" : "");
        return SHARC_ERR_INVALID;
    }
    *ptr_p = (char *)u->pbuf + p->offset * g->pesize;
    return SHARC_OK;
}

sharc_status_t sharc_shard_grad_ptr(sharc_shard_group_h g, int index, void **ptr_p)
{
    sharc_status_t status = sharc_shard_param_check(g, index, ptr_p, "sharc_shard_grad_ptr");
    const sharc_shard_param_info_t *p;
    sharc_shard_unit_t *u;

    if (status != SHARC_OK) {
        return status;
    }
    p = &g->params[index];
    u = &g->units[p->unit];
    status = sharc_shard_settle_grads(g, u); /* the last micro-batch's, still reducing */
    if (status != SHARC_OK) {
        return status;
    }
    if (u->gstate == SHARC_SHARD_GRAD_NONE) {
        if (u->pstate != SHARC_SHARD_GATHERED) {
            sharc_error("sharc_shard_grad_ptr: '%s' (unit %d) is not gathered: gradients come "
                        "from a backward, between the unit's gather and its reshard",
                        p->name, u->id);
            return SHARC_ERR_INVALID;
        }
        status = sharc_shard_open_grads(g, u);
        if (status != SHARC_OK) {
            return status;
        }
    }
    *ptr_p = (char *)u->gbuf + p->offset * g->resize;
    return SHARC_OK;
}
