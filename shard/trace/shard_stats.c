/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_stats.c: what a step cost. Each completed collective leaves its interval (posted to
 * done, the time its task finished); communication time is the union of those intervals,
 * exposed time is what the caller spent blocked in sharc's waits, and the rest of the
 * communication ran hidden behind the caller's compute. Memory is the bytes of unsharded
 * parameters and gradients held, with its peak. On CUDA the times come from events: a
 * collective's interval runs from where the stream it follows reached it to where a stream
 * that only waits for it saw it end, and exposed time is how long the caller's stream
 * waited for communication; a step's events are read only when its statistics are (the
 * next step's end recycles what is done), so a step never waits for them.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/trace/shard_record.h"

void sharc_shard_stats_op(sharc_shard_group_t *g, sharc_shard_unit_t *u, sharc_coll_type_t type,
                          double t0, double t1, size_t bytes)
{
    sharc_shard_stats_t *all[2] = {&g->stats, &u->stats};

    for (int i = 0; i < 2; i++) {
        switch (type) {
        case SHARC_COLL_ALLGATHER:
            all[i]->allgathers++;
            all[i]->bytes_gathered += bytes;
            break;
        case SHARC_COLL_REDUCE_SCATTER:
            all[i]->reduce_scatters++;
            all[i]->bytes_reduced += bytes;
            break;
        default:
            all[i]->allreduces++;
            all[i]->bytes_reduced += bytes;
            break;
        }
    }
    if (t1 >= 0) {
        sharc_shard_stats_span(g, u->id, t0, t1);
    }
}

void sharc_shard_stats_span(sharc_shard_group_t *g, int unit, double t0, double t1)
{
    if (sharc_array_grow(&g->spans, &g->spans_cap, g->nspans, sizeof(*g->spans), 64) != 0) {
        return; /* the time of this one goes uncounted; nothing else depends on it */
    }
    g->spans[g->nspans++] = (sharc_shard_span_t){t0, SHARC_MAX(t0, t1), unit};
}

void sharc_shard_stats_exposed(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                               sharc_coll_type_t type, double t0)
{
    double t1 = sharc_time_now(), dt = t1 - t0;
    int gather = type == SHARC_COLL_ALLGATHER;

    g->stats.exposed_s += dt;
    g->stats.gather_wait_s += gather ? dt : 0;
    if (u != NULL) {
        u->stats.exposed_s += dt;
        u->stats.gather_wait_s += gather ? dt : 0;
    }
    if (g->trace != NULL) {
        sharc_shard_trace_wait(g, u ? u->id : -1, type, t0, t1);
    }
}

void sharc_shard_stats_engine(sharc_shard_group_t *g, double t0)
{
    if (g != NULL) {
        g->stats.engine_s += sharc_time_now() - t0;
    }
}

void sharc_shard_stats_mem(sharc_shard_group_t *g, sharc_shard_unit_t *u, long long delta)
{
    g->unsharded_bytes += delta;
    g->stats.peak_unsharded_bytes = SHARC_MAX(g->stats.peak_unsharded_bytes, g->unsharded_bytes);
    g->stats.peak_units_alive = SHARC_MAX(g->stats.peak_units_alive, g->plan.alive);
    u->unsharded_bytes += delta;
    u->stats.peak_unsharded_bytes = SHARC_MAX(u->stats.peak_unsharded_bytes, u->unsharded_bytes);
}

static int sharc_shard_span_cmp(const void *a, const void *b)
{
    double x = ((const sharc_shard_span_t *)a)->t0, y = ((const sharc_shard_span_t *)b)->t0;

    return (x > y) - (x < y);
}

/* Length of the union of the spans of @p unit (-1: all), which are sorted by start. */
static double sharc_shard_union(const sharc_shard_span_t *spans, size_t n, int unit)
{
    double total = 0, start = 0, end = -1;

    for (size_t i = 0; i < n; i++) {
        if (unit >= 0 && spans[i].unit != unit) {
            continue;
        }
        if (spans[i].t0 > end) {
            total += (end > start) ? end - start : 0;
            start = spans[i].t0;
            end = spans[i].t1;
        } else {
            end = SHARC_MAX(end, spans[i].t1);
        }
    }
    return total + ((end > start) ? end - start : 0);
}

/* comm_s and hidden_s of @p s from its spans; then keep it as @p last and start anew. */
static void sharc_shard_stats_close(sharc_shard_stats_t *s, sharc_shard_stats_t *last,
                                    double comm_s, size_t unsharded_bytes, int alive)
{
    s->comm_s = comm_s;
    s->hidden_s = SHARC_MAX(0.0, comm_s - s->exposed_s);
    s->units_alive = alive;
    *last = *s;
    memset(s, 0, sizeof(*s));
    /* what is held across the step boundary counts toward the next step's peak */
    s->peak_unsharded_bytes = unsharded_bytes;
    s->peak_units_alive = alive;
}

/* ---- CUDA: events -------------------------------------------------------------------- */

void *sharc_shard_stats_mark(sharc_shard_group_t *g, void *stream)
{
    void *e = NULL;

    if (g->nev_free > 0) {
        e = g->ev_free[--g->nev_free];
    } else if (sharc_gpu_event_create(1, &e) != SHARC_OK) {
        return NULL;
    }
    if (sharc_gpu_event_record(e, stream) != SHARC_OK) {
        sharc_gpu_event_destroy(e);
        return NULL;
    }
    return e;
}

static void sharc_shard_ev_put(sharc_shard_group_t *g, void *e)
{
    if (e == NULL) {
        return;
    }
    if (sharc_array_grow(&g->ev_free, &g->ev_free_cap, g->nev_free, sizeof(*g->ev_free), 64) != 0) {
        sharc_gpu_event_destroy(e);
        return;
    }
    g->ev_free[g->nev_free++] = e;
}

void sharc_shard_stats_evspan(sharc_shard_group_t *g, sharc_shard_unit_t *u, void *e0, void *e1,
                              int comm)
{
    if (e0 == NULL || e1 == NULL ||
        sharc_array_grow(&g->ev.span, &g->ev.cap, g->ev.n, sizeof(*g->ev.span), 64) != 0) {
        sharc_shard_ev_put(g, e0); /* uncounted, as on the host */
        sharc_shard_ev_put(g, e1);
        return;
    }
    g->ev.span[g->ev.n++] = (sharc_shard_evspan_t){e0, e1, u ? u->id : -1, comm};
}

/* Seconds from @p ref to @p e (which must be done: the caller synchronized). */
static double sharc_shard_ev_time(void *ref, void *e)
{
    double s = 0;

    return sharc_gpu_event_elapsed(ref, e, &s) == SHARC_OK ? s : 0;
}

/* CUDA: @p e is done, polled until @p deadline (0: it is not). */
static int sharc_shard_ev_wait(void *e, double deadline)
{
    while (sharc_gpu_event_query(e) == SHARC_INPROGRESS) {
        if (sharc_time_now() > deadline) {
            return 0;
        }
        sched_yield();
    }
    return 1;
}

/* CUDA: the last finished step's events (its start included) are done, waiting up to the
 * timeout. */
static int sharc_shard_stats_done(sharc_shard_group_t *g)
{
    double deadline = sharc_time_now() + sharc_coll_cfg(g->ctx->cfg)->timeout;
    int done = sharc_shard_ev_wait(g->step_ev_last, deadline);

    for (size_t i = 0; done && i < g->ev_last.n; i++) {
        done = sharc_shard_ev_wait(g->ev_last.span[i].e0, deadline) &&
               sharc_shard_ev_wait(g->ev_last.span[i].e1, deadline);
    }
    if (!done) {
        sharc_warn("the last step's device work is not done after %.0f s: its communication "
                   "statistics are left out",
                   sharc_coll_cfg(g->ctx->cfg)->timeout);
    }
    return done;
}

/* CUDA: an event of a finished step back to the free list when done, else destroyed (the
 * runtime releases it once it is); nothing waits. */
static void sharc_shard_ev_retire(sharc_shard_group_t *g, void *e)
{
    if (e == NULL) {
        return;
    }
    if (sharc_gpu_event_query(e) == SHARC_OK) {
        sharc_shard_ev_put(g, e);
    } else {
        sharc_gpu_event_destroy(e);
    }
}

/* CUDA: the last finished step's events retired. */
static void sharc_shard_stats_recycle(sharc_shard_group_t *g)
{
    for (size_t i = 0; i < g->ev_last.n; i++) {
        sharc_shard_ev_retire(g, g->ev_last.span[i].e0);
        sharc_shard_ev_retire(g, g->ev_last.span[i].e1);
    }
    g->ev_last.n = 0;
    sharc_shard_ev_retire(g, g->step_ev_last);
    g->step_ev_last = NULL;
}

/*
 * CUDA: the last finished step's events into its statistics, when they are read: exposed
 * time, and the intervals of its collectives (their union is its communication time; a
 * step whose collectives were staged through the host keeps its host intervals' union).
 * Waits for the events, at most the timeout: reading statistics is where a step's device
 * work may be waited for, never inside a step.
 */
static void sharc_shard_stats_resolve(sharc_shard_group_t *g)
{
    void *ref = g->step_ev_last;
    size_t nspans = g->nspans;

    if (ref != NULL && g->ev_last.n > 0 && sharc_shard_stats_done(g)) {
        for (size_t i = 0; i < g->ev_last.n; i++) {
            sharc_shard_evspan_t *v = &g->ev_last.span[i];
            double t0 = sharc_shard_ev_time(ref, v->e0), t1 = sharc_shard_ev_time(ref, v->e1);

            if (v->comm) {
                sharc_shard_stats_span(g, v->unit, t0, t1);
            } else {
                g->last.exposed_s += SHARC_MAX(0.0, t1 - t0);
                if (v->unit >= 0) {
                    g->units[v->unit].last.exposed_s += SHARC_MAX(0.0, t1 - t0);
                }
            }
        }
        /* the spans added above, after this step's host spans */
        qsort(g->spans + nspans, g->nspans - nspans, sizeof(*g->spans), sharc_shard_span_cmp);
        for (int i = -1; i < g->nunits; i++) {
            sharc_shard_stats_t *st = (i < 0) ? &g->last : &g->units[i].last;
            double comm = sharc_shard_union(g->spans + nspans, g->nspans - nspans, i);

            st->comm_s = SHARC_MAX(st->comm_s, comm);
            st->hidden_s = SHARC_MAX(0.0, st->comm_s - st->exposed_s);
        }
        g->nspans = nspans;
    }
    sharc_shard_stats_recycle(g);
}

void sharc_shard_stats_free(sharc_shard_group_t *g)
{
    for (size_t i = 0; i < g->ev.n; i++) {
        sharc_gpu_event_destroy(g->ev.span[i].e0);
        sharc_gpu_event_destroy(g->ev.span[i].e1);
    }
    for (size_t i = 0; i < g->ev_last.n; i++) {
        sharc_gpu_event_destroy(g->ev_last.span[i].e0);
        sharc_gpu_event_destroy(g->ev_last.span[i].e1);
    }
    for (size_t i = 0; i < g->nev_free; i++) {
        sharc_gpu_event_destroy(g->ev_free[i]);
    }
    sharc_gpu_event_destroy(g->step_ev);
    sharc_gpu_event_destroy(g->step_ev_last);
    free(g->ev.span);
    free(g->ev_last.span);
    free(g->ev_free);
}

/* ---- steps ------------------------------------------------------------------------- */

/* One writer, readers without a lock (coll/api.h): a relaxed store of the sum. */
static void sharc_shard_metric_add(uint64_t *v, uint64_t n)
{
    __atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* The step just closed (g->last) into the communicator's metrics. */
static void sharc_shard_stats_export(sharc_shard_group_t *g)
{
    sharc_coll_step_metrics_t *m = g->metrics;
    const sharc_shard_stats_t *s = &g->last;

    sharc_shard_metric_add(&m->step_ns, (uint64_t)(SHARC_MAX(s->step_s, 0) * 1e9));
    sharc_shard_metric_add(&m->comm_ns, (uint64_t)(SHARC_MAX(s->comm_s, 0) * 1e9));
    sharc_shard_metric_add(&m->exposed_ns, (uint64_t)(SHARC_MAX(s->exposed_s, 0) * 1e9));
    sharc_shard_metric_add(&m->gather_wait_ns, (uint64_t)(SHARC_MAX(s->gather_wait_s, 0) * 1e9));
    sharc_shard_metric_add(&m->engine_ns, (uint64_t)(SHARC_MAX(s->engine_s, 0) * 1e9));
    sharc_shard_metric_add(&m->bytes_gathered, s->bytes_gathered);
    sharc_shard_metric_add(&m->bytes_reduced, s->bytes_reduced);
    sharc_shard_metric_add(&m->prefetches, s->prefetches);
    sharc_shard_metric_add(&m->evictions, s->evictions);
    __atomic_store_n(&m->prefetch_depth, (uint64_t)SHARC_MAX(s->prefetch_depth, 0),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&m->peak_unsharded_bytes, (uint64_t)s->peak_unsharded_bytes, __ATOMIC_RELAXED);
    sharc_shard_metric_add(&m->steps, 1); /* last: a reader that sees the step sees its sums */
}

void sharc_shard_stats_step(sharc_shard_group_t *g)
{
    double now = sharc_time_now();

    if (g->cuda) { /* the step before: its statistics were not read */
        sharc_shard_stats_recycle(g);
    }
    qsort(g->spans, g->nspans, sizeof(*g->spans), sharc_shard_span_cmp);
    g->stats.step_s = now - g->step_t0;
    g->stats.prefetch_depth = g->plan.prefetch;
    sharc_shard_stats_close(&g->stats, &g->last, sharc_shard_union(g->spans, g->nspans, -1),
                            g->unsharded_bytes, g->plan.alive);
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        u->stats.prefetch_depth = g->plan.prefetch;
        sharc_shard_stats_close(&u->stats, &u->last, sharc_shard_union(g->spans, g->nspans, i),
                                u->unsharded_bytes, u->pstate != SHARC_SHARD_SHARDED);
    }
    if (g->trace != NULL) {
        sharc_shard_trace_step(g, &g->last, g->step_t0, now);
    }
    g->step_no++;
    g->nspans = 0;
    g->step_t0 = now;
    g->have_last = 1;
    if (g->metrics != NULL) {
        sharc_shard_stats_export(g);
    }
    if (g->cuda) { /* this step's events wait until its statistics are read */
        sharc_shard_evspans_t older = g->ev_last;

        g->ev_last = g->ev;
        g->ev = older; /* the older list, emptied, is reused */
        g->ev.n = 0;
        g->step_ev_last = g->step_ev;
        g->step_ev = sharc_shard_stats_mark(g, g->stream);
    }
}

sharc_status_t sharc_shard_stats(sharc_shard_group_h g, int unit, sharc_shard_stats_t *stats_p)
{
    const sharc_shard_stats_t *s;

    if (g == NULL || stats_p == NULL || unit < -1 || unit >= g->nunits) {
        sharc_error("sharc_shard_stats: no group or output, or unit %d out of range", unit);
        return SHARC_ERR_INVALID;
    }
    if (g->cuda) {
        sharc_shard_stats_resolve(g);
    }
    if (unit < 0) {
        s = g->have_last ? &g->last : &g->stats;
    } else {
        s = g->have_last ? &g->units[unit].last : &g->units[unit].stats;
    }
    *stats_p = *s;
    if (!g->have_last) { /* a step in progress: its time so far */
        stats_p->units_alive = g->plan.alive;
    }
    return SHARC_OK;
}

static void sharc_shard_stats_line(FILE *f, const char *who, const sharc_shard_stats_t *s)
{
    double pct = (s->comm_s > 0) ? 100.0 * s->hidden_s / s->comm_s : 0;

    fprintf(f, "%-6s %4llu %10.1f %4llu %4llu %10.1f %8.2f %8.2f %8.2f %5.1f %10.1f\n", who,
            (unsigned long long)s->allgathers, s->bytes_gathered / 1048576.0,
            (unsigned long long)s->reduce_scatters, (unsigned long long)s->allreduces,
            s->bytes_reduced / 1048576.0, s->comm_s * 1e3, s->exposed_s * 1e3, s->hidden_s * 1e3,
            pct, s->peak_unsharded_bytes / 1048576.0);
}

void sharc_shard_stats_print(sharc_shard_group_h g, FILE *f)
{
    const sharc_shard_stats_t *s;
    char who[16];

    if (g == NULL || f == NULL) {
        return;
    }
    if (g->cuda) {
        sharc_shard_stats_resolve(g);
    }
    s = g->have_last ? &g->last : &g->stats;
    fprintf(f,
            "shard step: %.2f ms, %.2f ms of it in the engine's calls (%.2f ms waiting for "
            "gathers); %llu prefetched at depth %d%s, %llu evicted; peak %d units unsharded, "
            "%.1f MiB; %d unsharded now\n",
            s->step_s * 1e3, s->engine_s * 1e3, s->gather_wait_s * 1e3,
            (unsigned long long)s->prefetches, s->prefetch_depth, g->prefetch_auto ? " (auto)" : "",
            (unsigned long long)s->evictions, s->peak_units_alive,
            s->peak_unsharded_bytes / 1048576.0, g->plan.alive);
    if (g->node_comm != NULL) {
        fprintf(f, "secondary shards (hpZ, 1/%d of a unit each): peak %.1f MiB\n", g->node_size,
                s->peak_secondary_bytes / 1048576.0);
    }
    fprintf(f, "%-6s %4s %10s %4s %4s %10s %8s %8s %8s %5s %10s\n", "unit", "ag", "gath MiB", "rs",
            "ar", "red MiB", "comm ms", "expo ms", "hidn ms", "hid%", "peak MiB");
    sharc_shard_stats_line(f, "all", s);
    for (int i = 0; i < g->nunits; i++) {
        snprintf(who, sizeof(who), "%d", i);
        sharc_shard_stats_line(f, who, g->have_last ? &g->units[i].last : &g->units[i].stats);
    }
}
