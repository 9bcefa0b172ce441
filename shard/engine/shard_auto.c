/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_auto.c: adaptive prefetch (SHARC_SHARD_PREFETCH=auto). The depth starts at 1 and
 * goes up by one while the caller waits for all-gathers and the bound on unsharded units
 * admits one more ahead; a raise that does not cut the waits is taken back, and memory
 * pressure (the bound evicting or holding back prefetches) takes one back; then the depth
 * stays until the schedule is recorded anew.
 *
 * Every rank must post the same gathers in the same order, so the depth must change alike
 * on every rank, and per-rank timing cannot decide it. At each step's finish the ranks post
 * an all-reduce (maximum) of their gather waits and step times on the reduction queue; the
 * next step's first begin completes it (it has had the optimizer's time) and feeds the
 * agreed values, with counts that follow from the calls alone, to a pure decision function.
 * Every rank thus computes the same depth from the same bits at the same point of the same
 * step. The decision itself is the planner's (shard_plan_auto.c), which sharc-perf predict
 * replays too.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>

#include "base/log.h"
#include "base/util.h"
#include "shard/engine/shard_engine.h"
#include "shard/trace/shard_record.h"

/* ---- the group's ------------------------------------------------------------------------ */

struct sharc_shard_auto {
    sharc_shard_auto_state_t s;
    sharc_shard_auto_input_t pending; /* the step under agreement: its counts */
    double vote[2];                   /* this rank's gather wait and step time; then maxima */
    sharc_request_h req;              /* the agreement in flight, or NULL */
    int deferred;                     /* this step's prefetches held back by the bound */
};

sharc_status_t sharc_shard_auto_create(sharc_shard_group_t *g)
{
    g->autop = calloc(1, sizeof(*g->autop));
    if (g->autop == NULL) {
        return SHARC_ERR_NOMEM;
    }
    /* the bound admits the unit in use and max_unsharded - 1 ahead */
    sharc_shard_auto_init(&g->autop->s, g->plan.max_unsharded - 1);
    g->plan.prefetch = g->autop->s.depth;
    return SHARC_OK;
}

void sharc_shard_auto_destroy(sharc_shard_group_t *g)
{
    if (g->autop == NULL) {
        return;
    }
    if (g->autop->req != NULL) { /* a failed request still completes before it is freed */
        sharc_request_wait(g->autop->req);
        sharc_request_free(g->autop->req);
    }
    free(g->autop);
    g->autop = NULL;
}

void sharc_shard_auto_deferred(sharc_shard_group_t *g)
{
    if (g->autop != NULL) {
        g->autop->deferred++;
    }
}

sharc_status_t sharc_shard_auto_apply(sharc_shard_group_t *g)
{
    struct sharc_shard_auto *a = g->autop;
    sharc_shard_auto_input_t in;
    double t0 = sharc_time_now();
    sharc_status_t status;
    int old;

    if (a == NULL || a->req == NULL) {
        return SHARC_OK;
    }
    status = sharc_request_wait(a->req); /* the caller's wait: exposed, if only microseconds */
    sharc_shard_stats_exposed(g, NULL, SHARC_COLL_ALLREDUCE, t0);
    sharc_request_free(a->req);
    a->req = NULL;
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, NULL, "agreeing on the prefetch depth");
    }
    in = a->pending;
    in.gather_wait_s = a->vote[0];
    in.step_s = a->vote[1];
    old = a->s.depth;
    if (sharc_shard_auto_decide(&a->s, &in) || in.reset) {
        sharc_info("prefetch depth %d -> %d (auto: %s)", old, a->s.depth,
                   sharc_shard_auto_why(a->s.why));
        sharc_shard_trace_depth(g, old, a->s.depth, a->s.why);
    }
    g->plan.prefetch = a->s.depth;
    return SHARC_OK;
}

sharc_status_t sharc_shard_auto_step(sharc_shard_group_t *g, int followed, int reset)
{
    struct sharc_shard_auto *a = g->autop;
    sharc_coll_args_t args = {.type = SHARC_COLL_ALLREDUCE,
                              .sendbuf = a->vote,
                              .recvbuf = a->vote,
                              .count = 2,
                              .dtype = SHARC_DTYPE_F64,
                              .op = SHARC_OP_MAX};
    sharc_status_t status = sharc_shard_auto_apply(g); /* a step without begins: its turn */

    if (status != SHARC_OK) {
        return status;
    }
    a->pending = (sharc_shard_auto_input_t){
        .evictions = (int)g->stats.evictions,
        .deferred = a->deferred,
        .followed = followed,
        .reset = reset,
    };
    a->deferred = 0;
    a->vote[0] = g->stats.gather_wait_s;
    a->vote[1] = sharc_time_now() - g->step_t0;
    /* on the reduction queue: empty at a step's end, and never ahead of a gather */
    status = sharc_coll_post_lane(g->reduce_comm->coll, &args, g->reduce_lane, &a->req);
    if (status != SHARC_OK) {
        a->req = NULL;
        return sharc_shard_fail(g, status, NULL, "agreeing on the prefetch depth");
    }
    return SHARC_OK;
}
