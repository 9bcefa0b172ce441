/*
 * shard_stats.c: what a step cost. Each completed collective leaves its interval (posted to
 * done, the time its task finished); communication time is the union of those intervals,
 * exposed time is what the caller spent blocked in sharc's waits, and the rest of the
 * communication ran hidden behind the caller's compute. Memory is the bytes of unsharded
 * parameters and gradients held, with its peak.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include "../src/log.h"
#include "../src/util.h"
#include "shard.h"

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
    if (g->nspans == g->spans_cap) {
        size_t cap = g->spans_cap ? 2 * g->spans_cap : 64;
        sharc_shard_span_t *spans = realloc(g->spans, cap * sizeof(*spans));

        if (spans == NULL) {
            return; /* the time of this one goes uncounted; nothing else depends on it */
        }
        g->spans = spans;
        g->spans_cap = cap;
    }
    g->spans[g->nspans++] = (sharc_shard_span_t){t0, SHARC_MAX(t0, t1), u->id};
}

void sharc_shard_stats_exposed(sharc_shard_group_t *g, sharc_shard_unit_t *u, double t0)
{
    double dt = sharc_time_now() - t0;

    g->stats.exposed_s += dt;
    if (u != NULL) {
        u->stats.exposed_s += dt;
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
    g->stats.peak_units_alive = SHARC_MAX(g->stats.peak_units_alive, g->alive);
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

void sharc_shard_stats_step(sharc_shard_group_t *g)
{
    double now = sharc_time_now();

    qsort(g->spans, g->nspans, sizeof(*g->spans), sharc_shard_span_cmp);
    g->stats.step_s = now - g->step_t0;
    sharc_shard_stats_close(&g->stats, &g->last, sharc_shard_union(g->spans, g->nspans, -1),
                            g->unsharded_bytes, g->alive);
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        sharc_shard_stats_close(&u->stats, &u->last, sharc_shard_union(g->spans, g->nspans, i),
                                u->unsharded_bytes, u->pstate != SHARC_SHARD_SHARDED);
    }
    g->nspans = 0;
    g->step_t0 = now;
    g->have_last = 1;
}

sharc_status_t sharc_shard_stats(sharc_shard_group_h g, int unit, sharc_shard_stats_t *stats_p)
{
    const sharc_shard_stats_t *s;

    if (g == NULL || stats_p == NULL || unit < -1 || unit >= g->nunits) {
        sharc_error("sharc_shard_stats: no group or output, or unit %d out of range", unit);
        return SHARC_ERR_INVALID;
    }
    if (unit < 0) {
        s = g->have_last ? &g->last : &g->stats;
    } else {
        s = g->have_last ? &g->units[unit].last : &g->units[unit].stats;
    }
    *stats_p = *s;
    if (!g->have_last) { /* a step in progress: its time so far */
        stats_p->units_alive = g->alive;
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
    s = g->have_last ? &g->last : &g->stats;
    fprintf(f,
            "shard step: %.2f ms, %.2f ms of it in the engine's calls; %llu prefetched, %llu "
            "evicted; peak %d units unsharded, %.1f MiB; %d unsharded now\n",
            s->step_s * 1e3, s->engine_s * 1e3, (unsigned long long)s->prefetches,
            (unsigned long long)s->evictions, s->peak_units_alive,
            s->peak_unsharded_bytes / 1048576.0, g->alive);
    fprintf(f, "%-6s %4s %10s %4s %4s %10s %8s %8s %8s %5s %10s\n", "unit", "ag", "gath MiB", "rs",
            "ar", "red MiB", "comm ms", "expo ms", "hidn ms", "hid%", "peak MiB");
    sharc_shard_stats_line(f, "all", s);
    for (int i = 0; i < g->nunits; i++) {
        snprintf(who, sizeof(who), "%d", i);
        sharc_shard_stats_line(f, who, g->have_last ? &g->units[i].last : &g->units[i].stats);
    }
}
