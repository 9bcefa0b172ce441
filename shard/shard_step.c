/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_step.c: the step calls of sharc/shard.h: forward and backward begin and end of a
 * unit, which record the schedule, gather the next units along it ahead of use within
 * max_unsharded (prefetch), wait for the unit's parameters, open and reduce its gradients,
 * and release it; and the choice of reducing in backward_end (set_sync). Each call is timed
 * as the engine's cost on the caller's thread.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include "base/log.h"
#include "base/util.h"
#include "shard/shard_group.h"

/* Gather ahead along the schedule what the plan says, as far as the bound admits. */
static sharc_status_t sharc_shard_prefetch(sharc_shard_group_t *g)
{
    int unit, ahead = 0, deferred = -1;

    while ((unit = sharc_shard_plan_prefetch_next(&g->plan, &ahead, &deferred)) >= 0) {
        sharc_shard_unit_t *u = &g->units[unit];
        sharc_status_t status = sharc_shard_gather(g, u, 1);

        if (status != SHARC_OK) {
            return status;
        }
        g->stats.prefetches++;
        u->stats.prefetches++;
        sharc_shard_trace_prefetch(g, unit, ahead);
    }
    if (unit == SHARC_SHARD_PLAN_DEFER) {
        /* deferred: the next reshard frees a slot and comes back here */
        sharc_shard_auto_deferred(g);
        sharc_shard_trace_defer(g, deferred);
    }
    return SHARC_OK;
}

static sharc_status_t sharc_shard_begin_(sharc_shard_group_t *g, int phase, int unit,
                                         const char *what)
{
    sharc_shard_unit_t *u;
    sharc_status_t status = sharc_shard_enter_unit(g, unit, what, &u);

    if (status != SHARC_OK) {
        return status;
    }
    if (g->plan.units[unit].in_use) {
        sharc_error("%s: unit %d has begun already and not ended", what, unit);
        return SHARC_ERR_INVALID;
    }
    status = sharc_shard_auto_apply(g); /* the depth agreed at the last finish, if any */
    if (status != SHARC_OK) {
        return status;
    }
    sharc_shard_sched_begin(g, phase, unit); /* the next micro-batch, the schedule */
    if (u->pstate == SHARC_SHARD_SHARDED) {
        status = sharc_shard_unshard(g, unit);
        if (status != SHARC_OK) {
            return status;
        }
    }
    sharc_shard_plan_use(&g->plan, unit);
    /* this unit's gather first, then the next units': they run while it is computed. (On
     * the host a wait that is still to come would share the cores and the memory bandwidth
     * with gathers not needed yet: the first unit of a step waited about twice as long with
     * its prefetches posted beside it. The order of posts is the same either way.) */
    status = sharc_shard_wait(g, unit);
    if (status == SHARC_OK) {
        status = sharc_shard_prefetch(g);
    }
    if (status == SHARC_OK && phase == SHARC_SHARD_BACKWARD) {
        status = sharc_shard_settle_grads(g, u); /* the last micro-batch's reduction */
        if (status == SHARC_OK && u->gstate == SHARC_SHARD_GRAD_NONE) {
            status = sharc_shard_open_grads(g, u);
        }
    }
    return status;
}

static sharc_status_t sharc_shard_end_(sharc_shard_group_t *g, int phase, int unit,
                                       const char *what)
{
    sharc_shard_unit_t *u;
    int keep;
    sharc_status_t status = sharc_shard_enter_unit(g, unit, what, &u);

    if (status != SHARC_OK) {
        return status;
    }
    if (!g->plan.units[unit].in_use) {
        sharc_error("%s: unit %d has not begun", what, unit);
        return SHARC_ERR_INVALID;
    }
    sharc_shard_plan_unuse(&g->plan, unit);
    if (phase == SHARC_SHARD_FORWARD) {
        keep = sharc_shard_plan_keep(&g->plan, unit); /* the forward's last unit, or all */
    } else {
        keep = 0;
        if (g->sync) {
            if (u->gstate == SHARC_SHARD_GRAD_NONE) {
                status = sharc_shard_open_grads(g, u); /* every rank reduces, zeros or not */
            }
            if (status == SHARC_OK) {
                status = sharc_shard_reduce_grads(g, unit);
            }
        }
    }
    if (status == SHARC_OK && !keep && phase == SHARC_SHARD_FORWARD && g->node_comm != NULL) {
        status = sharc_shard_node_keep(g, u); /* hpZ: the backward gathers within the node */
    }
    if (status == SHARC_OK && !keep) {
        status = sharc_shard_release(g, u);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_prefetch(g);
    }
    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

/* A step call, timed: the engine's cost on the caller's thread (engine_s; per call at debug). */
static sharc_status_t sharc_shard_timed(sharc_shard_group_t *g, int phase, int unit, int begin,
                                        const char *what)
{
    double t0 = sharc_time_now(), waited = (g != NULL) ? g->stats.exposed_s : 0;
    sharc_status_t status =
        begin ? sharc_shard_begin_(g, phase, unit, what) : sharc_shard_end_(g, phase, unit, what);

    if (g != NULL) {
        double t1 = sharc_time_now();

        sharc_shard_stats_engine(g, t0);
        sharc_debug("%s(%d): %.3f ms, %.3f ms of it waiting", what, unit, (t1 - t0) * 1e3,
                    (g->stats.exposed_s - waited) * 1e3);
        if (g->trace != NULL && unit >= 0 && unit < g->nunits) {
            sharc_shard_trace_call(
                g,
                phase == SHARC_SHARD_FORWARD
                    ? (begin ? SHARC_SHARD_CALL_FORWARD_BEGIN : SHARC_SHARD_CALL_FORWARD_END)
                    : (begin ? SHARC_SHARD_CALL_BACKWARD_BEGIN : SHARC_SHARD_CALL_BACKWARD_END),
                unit, t0, t1);
        }
    }
    return status;
}

/* begin and end, timed: the engine's cost on the caller's thread (engine_s) */
static sharc_status_t sharc_shard_begin(sharc_shard_group_t *g, int phase, int unit,
                                        const char *what)
{
    return sharc_shard_timed(g, phase, unit, 1, what);
}

static sharc_status_t sharc_shard_end(sharc_shard_group_t *g, int phase, int unit, const char *what)
{
    return sharc_shard_timed(g, phase, unit, 0, what);
}

sharc_status_t sharc_shard_forward_begin(sharc_shard_group_h g, int unit)
{
    return sharc_shard_begin(g, SHARC_SHARD_FORWARD, unit, "sharc_shard_forward_begin");
}

sharc_status_t sharc_shard_forward_end(sharc_shard_group_h g, int unit)
{
    return sharc_shard_end(g, SHARC_SHARD_FORWARD, unit, "sharc_shard_forward_end");
}

sharc_status_t sharc_shard_backward_begin(sharc_shard_group_h g, int unit)
{
    return sharc_shard_begin(g, SHARC_SHARD_BACKWARD, unit, "sharc_shard_backward_begin");
}

sharc_status_t sharc_shard_backward_end(sharc_shard_group_h g, int unit)
{
    return sharc_shard_end(g, SHARC_SHARD_BACKWARD, unit, "sharc_shard_backward_end");
}

sharc_status_t sharc_shard_set_sync(sharc_shard_group_h g, int sync)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_set_sync");

    if (status == SHARC_OK) {
        g->sync = sync != 0;
    }
    return status;
}
