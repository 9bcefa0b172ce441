/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_sim.c: one step of the sharding engine, simulated. The caller's thread runs each
 * unit's begin, compute and end as the engine's calls do (shard/shard_step.c), and every
 * decision (what to gather, prefetch, hold back, evict, keep; the schedule's recording) is
 * the engine's own planner's (shard/plan/shard_plan.c), driven by a virtual clock. Collectives
 * run on queues, each a serial resource in posting order: gathers; reductions (beside the
 * gathers, or on the same queue); HSDP's all-reduces. With offload, an offloaded unit's
 * reduced shard goes down (a copy queue), the host lands and updates it (the CPU, a queue of
 * its own; the updates wait for every landing with clipping) and its parameters go up (a
 * copy queue), and the unit's next gather waits for them. Not simulated: memory, the
 * contention of compute and copies for the same cores or memory bandwidth, stragglers.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict.h"
#include "shard/plan/shard_plan.h"

enum { Q_GATHER, Q_REDUCE, Q_REPLICA, Q_DOWN, Q_CPU, Q_UP, Q_LAST };

/* Steps simulated with auto prefetch: the decision looks at two steps per depth, so this
 * covers raising to the cap (3) and a revert with room to spare. */
#define PRED_AUTO_STEPS 16

typedef struct {
    const pred_sched_t *s;
    sharc_shard_plan_t plan;
    double now;           /* the caller's clock */
    double qfree[Q_LAST]; /* when each queue is free */
    double *ag_end;       /* per unit: its gather's end (while unsharded) */
    double *red_end;      /* per unit: its reduction's end */
    double *up_end;       /* per unit: offload: its parameters' upload's end (its update's) */
    double land_end;      /* offload: the step's last landing on the host */
    char *secondary;      /* hpZ, per unit: its secondary shard is kept (forward to backward) */
    double secondary_bytes;
    int followed, changed; /* the last step followed the schedule; it was recorded anew */
    int sync;              /* this pass reduces (the last micro-batch's: set_sync) */
    pred_step_t st;
} sim_t;

static double sim_max(double a, double b)
{
    return a > b ? a : b;
}

/* A collective of @p dur seconds posted now on queue @p q (following @p after): its end. */
static double sim_post(sim_t *m, int q, double after, double dur)
{
    double start = sim_max(sim_max(m->now, after), m->qfree[q]);

    m->qfree[q] = start + dur;
    m->st.comm_s += dur;
    return start + dur;
}

/* Offload's work of @p dur seconds on queue @p q after @p after (not a collective): its end. */
static double sim_run(sim_t *m, int q, double after, double dur)
{
    double start = sim_max(after, m->qfree[q]);

    m->qfree[q] = start + dur;
    return start + dur;
}

/* An offloaded unit's update on the host after @p after, and its upload: the next gather's. */
static void sim_update(sim_t *m, int unit, double after)
{
    const pred_unit_t *u = &m->s->units[unit];

    m->up_end[unit] = sim_run(m, Q_UP, sim_run(m, Q_CPU, after, u->update_s), u->up_s);
}

/* The caller waits until @p t (exposed). */
static void sim_wait(sim_t *m, double t, int gather)
{
    if (t > m->now) {
        m->st.gather_wait_s += gather ? t - m->now : 0;
        m->now = t;
    }
}

static void sim_gather(sim_t *m, int unit, int prefetched)
{
    const pred_unit_t *u = &m->s->units[unit];
    int node = m->secondary[unit]; /* hpZ: from the secondary shards, inside the node */

    /* after its update's upload (offload; managed: the master read over the link first) */
    m->ag_end[unit] =
        sim_post(m, Q_GATHER, m->up_end[unit], node ? u->ag_node_s : u->ag_s + u->link_ag_s);
    m->st.xnode_bytes += node ? 0 : u->xnode_ag;
    if (node) {
        m->secondary[unit] = 0;
        m->secondary_bytes -= u->secondary_bytes;
    }
    sharc_shard_plan_gathered(&m->plan, unit, prefetched);
    m->st.gathers++;
    if (m->plan.alive > m->st.peak_unsharded) {
        m->st.peak_unsharded = m->plan.alive;
    }
}

/* Release: a unit still gathering is waited for first (the engine does the same). */
static void sim_release(sim_t *m, int unit)
{
    if (m->plan.units[unit].unsharded) {
        sim_wait(m, m->ag_end[unit], 1);
        sharc_shard_plan_released(&m->plan, unit);
    }
}

static void sim_prefetch(sim_t *m)
{
    int unit, ahead, deferred;

    while ((unit = sharc_shard_plan_prefetch_next(&m->plan, &ahead, &deferred)) >= 0) {
        sim_gather(m, unit, 1);
        m->st.prefetches++;
    }
    m->st.deferred += unit == SHARC_SHARD_PLAN_DEFER;
}

static int sim_begin(sim_t *m, int phase, int unit)
{
    m->now += m->s->call_s;
    sharc_shard_plan_begin(&m->plan, phase, unit);
    if (!m->plan.units[unit].unsharded) {
        int full, victim = sharc_shard_plan_victim(&m->plan, &full);

        if (full && victim < 0) {
            fprintf(stderr,
                    "sharc-perf predict: unit %d cannot be gathered: %d units are "
                    "unsharded, the bound (max_unsharded)\n",
                    unit, m->plan.alive);
            return -1;
        }
        if (full) {
            sim_release(m, victim);
            m->st.evictions++;
        }
        sim_gather(m, unit, 0);
    }
    sharc_shard_plan_use(&m->plan, unit);
    sim_wait(m, m->ag_end[unit], 1); /* its own gather first, then the prefetches */
    sim_prefetch(m);
    if (phase == SHARC_SHARD_PLAN_BACKWARD) {
        sim_wait(m, m->red_end[unit], 0);    /* the last micro-batch's reduction */
        m->now += m->s->units[unit].grads_s; /* its gradient buffer, zeroed */
    }
    return 0;
}

static void sim_end(sim_t *m, int phase, int unit)
{
    const pred_unit_t *u = &m->s->units[unit];
    int keep = 0;

    m->now += m->s->call_s;
    sharc_shard_plan_unuse(&m->plan, unit);
    if (phase == SHARC_SHARD_PLAN_FORWARD) {
        keep = sharc_shard_plan_keep(&m->plan, unit);
    } else if (m->sync) {
        int rq = m->s->queues >= 2 ? Q_REDUCE : Q_GATHER;
        double end = sim_post(m, rq, 0, u->rs_s);

        m->st.xnode_bytes += u->xnode_red;

        if (u->ar_s > 0) { /* HSDP: the shard across replicas, after its reduce-scatter */
            end = sim_post(m, Q_REPLICA, end, u->ar_s);
        }
        m->red_end[unit] = end;
        if (u->host) { /* down to the host, landed; updated at once without clipping */
            end = sim_run(m, Q_CPU, sim_run(m, Q_DOWN, end, u->down_s), u->land_s);
            m->land_end = sim_max(m->land_end, end);
            if (!m->s->clip) {
                sim_update(m, unit, end);
            }
        }
    }
    if (!keep && phase == SHARC_SHARD_PLAN_FORWARD && m->s->hpz && !m->secondary[unit]) {
        m->secondary[unit] = 1; /* hpZ: kept for the backward's gather inside the node */
        m->secondary_bytes += u->secondary_bytes;
        if (m->secondary_bytes > m->st.peak_secondary_bytes) {
            m->st.peak_secondary_bytes = m->secondary_bytes;
        }
    }
    if (!keep) {
        sim_release(m, unit);
    }
    sim_prefetch(m);
}

/* One step: passes of forward 0..n-1 and backward n-1..0, then finish and the optimizer. */
static int sim_step(sim_t *m)
{
    const pred_sched_t *s = m->s;
    int n = s->nunits;

    m->land_end = 0;
    for (int p = 0; p < (s->passes > 0 ? s->passes : 1); p++) {
        /* gradients accumulate unreduced until the last micro-batch, which reduces them (as
         * the trainer sets sharc_shard_set_sync) */
        m->sync = p == (s->passes > 0 ? s->passes : 1) - 1;
        for (int u = 0; u < n; u++) {
            if (sim_begin(m, SHARC_SHARD_PLAN_FORWARD, u) != 0) {
                return -1;
            }
            m->now += s->units[u].fwd_s;
            sim_end(m, SHARC_SHARD_PLAN_FORWARD, u);
        }
        for (int u = n - 1; u >= 0; u--) {
            if (sim_begin(m, SHARC_SHARD_PLAN_BACKWARD, u) != 0) {
                return -1;
            }
            m->now += s->units[u].bwd_s;
            sim_end(m, SHARC_SHARD_PLAN_BACKWARD, u);
        }
    }
    /* finish: every reduction, then units prefetched and not used go */
    sim_wait(m, sim_max(m->qfree[s->queues >= 2 ? Q_REDUCE : Q_GATHER], m->qfree[Q_REPLICA]), 0);
    for (int u = 0; u < n; u++) {
        if (m->plan.units[u].prefetched && !m->plan.units[u].in_use) {
            sim_release(m, u);
        }
        if (m->secondary[u]) { /* hpZ: dropped at finish */
            m->secondary[u] = 0;
            m->secondary_bytes -= s->units[u].secondary_bytes;
        }
    }
    /* offload: finish waits for every landing (the global norm); with clipping the updates
     * follow it, in forward order */
    sim_wait(m, m->land_end, 0);
    for (int u = 0; s->clip && u < n; u++) {
        if (s->units[u].host) {
            sim_update(m, u, m->now);
        }
    }
    m->followed = sharc_shard_plan_followed(&m->plan);
    m->changed = sharc_shard_plan_step(&m->plan) != 0;
    m->now += s->optim_s;
    return 0;
}

/* Run one step from now and account for it: compute, exposed, the shared cores' bound. */
static int sim_measured_step(sim_t *m, double compute)
{
    double t0 = m->now;

    memset(&m->st, 0, sizeof(m->st));
    m->st.depth = m->plan.prefetch;
    if (sim_step(m) != 0) {
        return -1;
    }
    m->st.step_s = m->now - t0;
    if (m->s->shared_cores && m->st.step_s < compute + m->st.comm_s) {
        m->st.step_s = compute + m->st.comm_s;
    }
    m->st.compute_s = compute;
    m->st.exposed_s = m->st.step_s - compute;
    return 0;
}

int pred_simulate(const pred_sched_t *s, pred_step_t *out)
{
    sim_t m;
    sharc_shard_auto_state_t as;
    double compute = 0;
    int n = s->nunits, ret = -1, adaptive = s->prefetch < 0;

    memset(&m, 0, sizeof(m));
    m.s = s;
    if (n <= 0 || sharc_shard_plan_init(&m.plan, n) != 0) {
        fprintf(stderr, "sharc-perf predict: no units, or no memory\n");
        return -1;
    }
    m.ag_end = calloc((size_t)n, sizeof(double));
    m.red_end = calloc((size_t)n, sizeof(double));
    m.up_end = calloc((size_t)n, sizeof(double));
    m.secondary = calloc((size_t)n, 1);
    if (m.ag_end == NULL || m.red_end == NULL || m.up_end == NULL || m.secondary == NULL) {
        goto out;
    }
    m.plan.reshard_after_forward = s->reshard_after_forward;
    /* derived as the engine derives it (shard_group.c) */
    m.plan.max_unsharded = s->max_unsharded > 0        ? s->max_unsharded
                           : !s->reshard_after_forward ? n
                           : adaptive                  ? SHARC_SHARD_AUTO_DEPTH_MAX + 1
                                                       : s->prefetch + 1;
    /* auto: the engine's adaptive depth, from its own decision (shard_plan_auto.c) */
    sharc_shard_auto_init(&as, m.plan.max_unsharded - 1);
    m.plan.prefetch = adaptive ? as.depth : s->prefetch;
    for (int u = 0; u < n; u++) {
        compute += s->units[u].fwd_s + s->units[u].bwd_s + s->units[u].grads_s;
    }
    /* per pass each unit's compute and its four calls (begin and end, forward and backward) */
    compute = (compute + 4.0 * n * s->call_s) * (s->passes > 0 ? s->passes : 1) + s->optim_s;
    /* the first step records the schedule; the next runs along it (auto: as many steps as
     * the decision needs to settle; the last one is reported) */
    for (int k = 0; k < (adaptive ? PRED_AUTO_STEPS : 2); k++) {
        if (sim_measured_step(&m, compute) != 0) {
            goto out;
        }
        if (adaptive) {
            sharc_shard_auto_input_t in = {.gather_wait_s = m.st.gather_wait_s,
                                           .step_s = m.st.step_s,
                                           .evictions = m.st.evictions,
                                           .deferred = m.st.deferred,
                                           .followed = m.followed,
                                           .reset = m.changed};

            sharc_shard_auto_decide(&as, &in);
            m.plan.prefetch = as.depth;
        }
    }
    *out = m.st;
    ret = 0;
out:
    free(m.ag_end);
    free(m.red_end);
    free(m.up_end);
    free(m.secondary);
    sharc_shard_plan_free(&m.plan);
    return ret;
}
