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
 * step.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>

#include "../src/base/log.h"
#include "../src/base/util.h"
#include "shard.h"

/* Gather waits are exposed when they pass this share of the step, and this many seconds. */
#define SHARC_SHARD_AUTO_EXPOSED   0.01
#define SHARC_SHARD_AUTO_EXPOSED_S 50e-6
/* A raise must cut the waits by this share to stay (small: a trial is two steps, and on a
 * noisy machine a stricter test takes back raises that help, measured: depth 2 gave 87%
 * against 78% at depth 1 on 2 ranks, where a fifth as the test kept depth 1 in half the
 * runs). */
#define SHARC_SHARD_AUTO_GAIN 0.05
/* Steps looked at per depth: their smallest wait counts, so that one step slowed by
 * something else (a noisy machine, a step that differs) does not decide alone. */
#define SHARC_SHARD_AUTO_WINDOW 2

static const char *const sharc_shard_auto_whys[] = {
    [SHARC_SHARD_AUTO_START] = "start",
    [SHARC_SHARD_AUTO_RAISE] = "gathers waited for, the bound admits one more",
    [SHARC_SHARD_AUTO_REVERT] = "the last raise did not cut the waits",
    [SHARC_SHARD_AUTO_MEMORY] = "the bound on unsharded units evicted or held back prefetches",
    [SHARC_SHARD_AUTO_RESET] = "the schedule was recorded anew",
};

const char *sharc_shard_auto_why(int why)
{
    return (why >= 0 && why < SHARC_SHARD_AUTO_WHY_LAST) ? sharc_shard_auto_whys[why] : "?";
}

/* ---- the decision ---------------------------------------------------------------------- */

void sharc_shard_auto_init(sharc_shard_auto_state_t *s, int cap)
{
    *s = (sharc_shard_auto_state_t){.cap = SHARC_MAX(cap, 0), .why = SHARC_SHARD_AUTO_START};
    s->depth = SHARC_MIN(1, s->cap);
}

/* The smallest wait of the window, and whether it is exposed in its step. */
static double sharc_shard_auto_least(const sharc_shard_auto_state_t *s, int *exposed_p)
{
    int best = 0;

    for (int i = 1; i < s->nhist; i++) {
        best = (s->hist_wait[i] < s->hist_wait[best]) ? i : best;
    }
    *exposed_p = s->hist_wait[best] > SHARC_SHARD_AUTO_EXPOSED * s->hist_step[best] &&
                 s->hist_wait[best] > SHARC_SHARD_AUTO_EXPOSED_S;
    return s->hist_wait[best];
}

int sharc_shard_auto_decide(sharc_shard_auto_state_t *s, const sharc_shard_auto_input_t *in)
{
    int old = s->depth, exposed;
    double least;

    if (in->reset) { /* another schedule: what was learnt is about the old one */
        s->settled = s->trial = s->nhist = 0;
        s->why = SHARC_SHARD_AUTO_RESET;
    }
    if (!in->followed) {
        return 0; /* off the schedule, prefetch stopped: the step says nothing of the depth */
    }
    if (in->evictions > 0 || in->deferred > 0) {
        s->depth = SHARC_MAX(SHARC_MIN(1, s->cap), s->depth - 1);
        s->settled = 1;
        s->trial = s->nhist = 0;
        s->why = SHARC_SHARD_AUTO_MEMORY;
        return s->depth != old;
    }
    if (s->nhist == SHARC_SHARD_AUTO_WINDOW) {
        for (int i = 1; i < s->nhist; i++) {
            s->hist_wait[i - 1] = s->hist_wait[i];
            s->hist_step[i - 1] = s->hist_step[i];
        }
        s->nhist--;
    }
    s->hist_wait[s->nhist] = in->gather_wait_s;
    s->hist_step[s->nhist] = in->step_s;
    s->nhist++;
    if (s->nhist < SHARC_SHARD_AUTO_WINDOW) {
        return 0;
    }
    least = sharc_shard_auto_least(s, &exposed);
    if (s->trial) {
        s->trial = 0;
        if (least > (1.0 - SHARC_SHARD_AUTO_GAIN) * s->wait_before) {
            s->depth--;
            s->settled = 1;
            s->nhist = 0;
            s->why = SHARC_SHARD_AUTO_REVERT;
            return 1;
        }
        /* it helped: the window is the new depth's; one more if still exposed */
    }
    if (!s->settled && exposed && s->depth < s->cap) {
        s->wait_before = least;
        s->depth++;
        s->trial = 1;
        s->nhist = 0;
        s->why = SHARC_SHARD_AUTO_RAISE;
    }
    return s->depth != old;
}

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
    sharc_coll_args_t args = {SHARC_COLL_ALLREDUCE, a->vote,      a->vote, 2,
                              SHARC_DTYPE_F64,      SHARC_OP_MAX, 0,       NULL};
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
    status = sharc_coll_start_lane(g->reduce_comm->coll, &args, g->reduce_lane, &a->req);
    if (status != SHARC_OK) {
        a->req = NULL;
        return sharc_shard_fail(g, status, NULL, "agreeing on the prefetch depth");
    }
    return SHARC_OK;
}
