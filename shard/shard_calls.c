/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_calls.c: the calls of sharc/shard.h that drive one unit or one step: gather and wait
 * (unshard, wait), release (reshard), progress, reduce (reduce_grads), finish a step (finish,
 * zero_grads), and the views of a unit's parameters and gradients. They combine the unit's
 * parameter movements (shard_unit.c), the reductions (shard_reduce.c) and the schedule
 * (shard_sched.c); the begin/end calls over them are in shard_step.c.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include "base/log.h"
#include "base/util.h"
#include "shard/shard_group.h"

sharc_status_t sharc_shard_unshard(sharc_shard_group_h g, int unit)
{
    sharc_shard_unit_t *u;
    sharc_status_t status = sharc_shard_enter_unit(g, unit, "sharc_shard_unshard", &u);

    if (status != SHARC_OK) {
        return status;
    }
    if (u->pstate != SHARC_SHARD_SHARDED) {
        return sharc_shard_poll(g);
    }
    status = sharc_shard_make_room(g, u);
    return (status == SHARC_OK) ? sharc_shard_gather(g, u, 0) : status;
}

sharc_status_t sharc_shard_wait(sharc_shard_group_h g, int unit)
{
    sharc_shard_unit_t *u;
    sharc_status_t status = sharc_shard_enter_unit(g, unit, "sharc_shard_wait", &u);

    if (status != SHARC_OK) {
        return status;
    }
    if (u->pstate == SHARC_SHARD_SHARDED) {
        sharc_error("sharc_shard_wait: unit %d is not being gathered (sharc_shard_unshard first)",
                    unit);
        return SHARC_ERR_INVALID;
    }
    if (u->pstate == SHARC_SHARD_GATHERING) {
        status = sharc_shard_wait_gather(g, u, g->stream); /* CUDA: the caller's stream waits */
    }
    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

sharc_status_t sharc_shard_reshard(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_reshard");

    if (status == SHARC_OK) {
        sharc_shard_plan_unuse(&g->plan, unit);
        status = sharc_shard_release(g, &g->units[unit]);
    }
    return status;
}

sharc_status_t sharc_shard_poll(sharc_shard_group_t *g)
{
    sharc_status_t status = sharc_shard_gathers_poll(g);

    if (status == SHARC_OK) {
        status = sharc_shard_reduce_poll(g);
    }
    return (status == SHARC_OK) ? g->failed : status;
}

sharc_status_t sharc_shard_progress(sharc_shard_group_h g)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_progress");

    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

/* Parameter @p index and its unit, for a view call (@p what). */
static sharc_status_t sharc_shard_param_unit(sharc_shard_group_t *g, int index, void **ptr_p,
                                             const char *what, const sharc_shard_param_info_t **p_p,
                                             sharc_shard_unit_t **u_p)
{
    if (g == NULL || index < 0 || index >= g->nparams || ptr_p == NULL) {
        sharc_error("%s: no group or output, or parameter %d out of range", what, index);
        return SHARC_ERR_INVALID;
    }
    *p_p = &g->params[index];
    *u_p = &g->units[(*p_p)->unit];
    return SHARC_OK;
}

sharc_status_t sharc_shard_param_ptr(sharc_shard_group_h g, int index, void **ptr_p)
{
    const sharc_shard_param_info_t *p;
    sharc_shard_unit_t *u;
    sharc_status_t status =
        sharc_shard_param_unit(g, index, ptr_p, "sharc_shard_param_ptr", &p, &u);

    if (status != SHARC_OK) {
        return status;
    }
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
    const sharc_shard_param_info_t *p;
    sharc_shard_unit_t *u;
    sharc_status_t status = sharc_shard_param_unit(g, index, ptr_p, "sharc_shard_grad_ptr", &p, &u);

    if (status != SHARC_OK) {
        return status;
    }
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

sharc_status_t sharc_shard_reduce_grads(sharc_shard_group_h g, int unit)
{
    sharc_shard_unit_t *u;
    sharc_status_t status = sharc_shard_enter_unit(g, unit, "sharc_shard_reduce_grads", &u);

    if (status != SHARC_OK) {
        return status;
    }
    if (u->gstate != SHARC_SHARD_GRAD_OPEN) {
        sharc_error("sharc_shard_reduce_grads: unit %d has %s", unit,
                    u->gstate == SHARC_SHARD_GRAD_NONE
                        ? "no gradients since its last reduction (gather it and write them "
                          "through sharc_shard_grad_ptr first)"
                        : "a reduction in flight already");
        return SHARC_ERR_INVALID;
    }
    status = sharc_shard_reduce_start(g, u);
    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

/*
 * CUDA: the caller's stream waits for every reduction (exposed time), and the host sees the
 * last step's collectives done (they normally are; a dead peer ends in the timeout).
 */
static sharc_status_t sharc_shard_finish_cuda(sharc_shard_group_t *g)
{
    void *e0 = sharc_shard_stats_mark(g, g->stream);
    sharc_status_t status = sharc_shard_after(g, g->stream, g->estream);

    sharc_shard_stats_evspan(g, NULL, e0, sharc_shard_stats_mark(g, g->stream), 0);
    if (status == SHARC_OK) {
        status = sharc_shard_inflight_retire(g, 0);
    }
    return (status == SHARC_OK)
               ? SHARC_OK
               : sharc_shard_fail(g, status, NULL, "a collective of the last step");
}

sharc_status_t sharc_shard_finish(sharc_shard_group_h g)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_finish");
    double t0 = sharc_time_now();
    int followed, changed;

    if (status == SHARC_OK) {
        status = sharc_shard_reduce_all(g);
    }
    /* units prefetched and not used this step (it left the schedule): gathered from the
     * masters the optimizer is about to change, so they go */
    for (int i = 0; status == SHARC_OK && i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        const sharc_shard_plan_unit_t *pu = &g->plan.units[i];

        if (pu->prefetched && !pu->in_use && u->pstate != SHARC_SHARD_SHARDED) {
            sharc_debug("unit %d, prefetched and not used this step, released", i);
            status = sharc_shard_release(g, u);
        }
    }
    sharc_shard_node_drop_all(g); /* hpZ: secondaries of the masters about to change */
    sharc_shard_free_retired(g);  /* the queues are idle now: their locks are free */
    if (status == SHARC_OK) {     /* the engine's AdamW: the norm, and the updates still due */
        status = sharc_shard_adamw_finish(g);
    }
    if (status == SHARC_OK && g->cuda) {
        status = sharc_shard_finish_cuda(g);
    }
    for (int i = 0; status == SHARC_OK && i < g->nunits; i++) {
        if (g->plan.units[i].in_use) {
            sharc_warn("step finished while unit %d is between its begin and end", i);
        }
    }
    if (status != SHARC_OK) {
        return status;
    }
    /* the step ran along a recorded schedule (the first records it: no prefetch there) */
    followed = sharc_shard_plan_followed(&g->plan);
    changed = sharc_shard_sched_step(g);
    if (g->autop != NULL) {
        status = sharc_shard_auto_step(g, followed, changed);
        if (status != SHARC_OK) {
            return status;
        }
    }
    sharc_shard_stats_engine(g, t0);
    sharc_debug("sharc_shard_finish: %.3f ms", (sharc_time_now() - t0) * 1e3);
    if (g->trace != NULL) {
        sharc_shard_trace_call(g, SHARC_SHARD_CALL_FINISH, -1, t0, sharc_time_now());
    }
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
    /* CUDA: on the caller's stream, after the accumulations (the engine's stream) */
    if (g->cuda) {
        status = sharc_shard_after(g, g->stream, g->estream);
    }
    for (int i = 0; status == SHARC_OK && i < g->nunits; i++) {
        /* a host unit's shard the engine's update may still read: it only counts as zero */
        status = sharc_shard_offload_zero(g, &g->units[i]);
        if (status == SHARC_ERR_UNSUPPORTED) {
            status =
                sharc_shard_zero(g, g->units[i].grad, g->units[i].shard * sizeof(float), g->stream);
        }
        g->units[i].grad_zero = 1;
    }
    return status;
}
