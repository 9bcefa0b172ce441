/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_trace.c: the timeline trace (SHARC_SHARD_TRACE). Each rank records what its group
 * sees, in memory: every collective with its post, start, end and completion times, the
 * caller's step calls, waits and compute, the prefetch decisions and depth, a span per step;
 * it keeps the last SHARC_SHARD_TRACE_STEPS steps. At destroy the ranks send theirs to rank 0
 * through the bootstrap, and rank 0 writes one Chrome trace JSON file (Perfetto,
 * chrome://tracing, tools/trace-plot; shard_trace_json.c writes it). It sees what the engine
 * sees; it is not a profiler of the collective layer or the transports.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "shard/trace/shard_trace.h"

/* ---- recording ------------------------------------------------------------------------ */

static sharc_shard_tev_t *sharc_shard_tev_add(sharc_shard_group_t *g, int kind, int unit, double t0,
                                              double t1)
{
    sharc_shard_trace_t *tr = g->trace;
    sharc_shard_tev_t *e;

    if (sharc_array_grow(&tr->ev, &tr->cap, tr->nev, sizeof(*tr->ev), 1024) != 0) {
        return NULL; /* the event is lost; the trace says nothing it did not see */
    }
    e = &tr->ev[tr->nev++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->unit = unit;
    e->t0 = t0;
    e->t1 = t1;
    e->step = g->step_no;
    return e;
}

sharc_status_t sharc_shard_trace_open(sharc_shard_group_t *g)
{
    const sharc_shard_cfg_t *cfg = sharc_shard_cfg(g->ctx->cfg);
    sharc_shard_trace_t *tr;

    if (cfg->trace == NULL || cfg->trace[0] == '\0') {
        return SHARC_OK;
    }
    tr = calloc(1, sizeof(*tr));
    if (tr == NULL || (tr->path = strdup(cfg->trace)) == NULL) {
        free(tr);
        return SHARC_ERR_NOMEM;
    }
    tr->keep = (size_t)cfg->trace_steps;
    tr->starts = calloc(2 * tr->keep + 2, sizeof(*tr->starts));
    tr->nstarts = 1; /* the first step starts at event 0 */
    tr->last_call = -1;
    if (tr->starts == NULL) {
        free(tr->path);
        free(tr);
        return SHARC_ERR_NOMEM;
    }
    g->trace = tr;
    if (g->rank == 0) {
        /* now, not at destroy: a path that cannot be written fails the group's creation */
        tr->file = fopen(tr->path, "w");
        if (tr->file == NULL) {
            sharc_error("cannot write the trace file '%s' (SHARC_SHARD_TRACE): %m", tr->path);
            return SHARC_ERR_IO;
        }
    }
    return SHARC_OK;
}

void sharc_shard_trace_origin(sharc_shard_group_t *g)
{
    if (g->trace != NULL) {
        g->trace->origin = sharc_time_now();
    }
}

void sharc_shard_trace_op(sharc_shard_group_t *g, const sharc_shard_unit_t *u,
                          const sharc_shard_coll_t *op, sharc_coll_type_t type, sharc_request_h req,
                          size_t bytes)
{
    sharc_coll_request_times_t t = {0};
    sharc_shard_tev_t *e;

    if (req != NULL) {
        sharc_coll_request_times(req, &t);
    }
    e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_COLL, u->id, op->t_post, sharc_time_now());
    if (e != NULL) {
        e->x[0] = t.start;
        e->x[1] = t.done;
        e->x[2] = t.complete;
        e->x[3] = (double)bytes;
        e->arg = type;
        e->queue = op->queue;
    }
}

void sharc_shard_trace_alloc(sharc_shard_group_t *g, size_t bytes, double t0, double t1)
{
    sharc_shard_tev_t *e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_ALLOC, -1, t0, t1);

    if (e != NULL) {
        e->x[0] = (double)bytes;
    }
}

void sharc_shard_trace_wait(sharc_shard_group_t *g, int unit, sharc_coll_type_t type, double t0,
                            double t1)
{
    sharc_shard_tev_t *e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_WAIT, unit, t0, t1);

    if (e != NULL) {
        e->arg = type;
    }
}

void sharc_shard_trace_call(sharc_shard_group_t *g, sharc_shard_call_t call, int unit, double t0,
                            double t1)
{
    sharc_shard_trace_t *tr = g->trace;
    sharc_shard_tev_t *e;

    if (tr == NULL) {
        return;
    }
    /* the caller's compute: from the return of a begin to its next call (the unit's end) */
    if (tr->last_call == SHARC_SHARD_CALL_FORWARD_BEGIN ||
        tr->last_call == SHARC_SHARD_CALL_BACKWARD_BEGIN) {
        e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_COMPUTE, tr->last_unit, tr->last_t1, t0);
        if (e != NULL) {
            e->arg = tr->last_call;
        }
    }
    e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_CALL, unit, t0, t1);
    if (e != NULL) {
        e->arg = call;
    }
    tr->last_call = call;
    tr->last_unit = unit;
    tr->last_t1 = t1;
}

void sharc_shard_trace_prefetch(sharc_shard_group_t *g, int unit, int ahead)
{
    sharc_shard_tev_t *e;

    if (g->trace == NULL) {
        return;
    }
    e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_PREFETCH, unit, sharc_time_now(), -1);
    if (e != NULL) {
        e->arg = ahead;
        e->queue = g->plan.prefetch;
    }
}

void sharc_shard_trace_defer(sharc_shard_group_t *g, int unit)
{
    if (g->trace != NULL) {
        sharc_shard_tev_add(g, SHARC_SHARD_TEV_DEFER, unit, sharc_time_now(), -1);
    }
}

void sharc_shard_trace_evict(sharc_shard_group_t *g, int unit, int want)
{
    sharc_shard_tev_t *e;

    if (g->trace == NULL) {
        return;
    }
    e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_EVICT, unit, sharc_time_now(), -1);
    if (e != NULL) {
        e->arg = want;
    }
}

void sharc_shard_trace_depth(sharc_shard_group_t *g, int old_depth, int depth, int why)
{
    sharc_shard_tev_t *e;

    if (g->trace == NULL) {
        return;
    }
    e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_DEPTH, -1, sharc_time_now(), -1);
    if (e != NULL) {
        e->arg = depth;
        e->queue = old_depth;
        e->x[0] = why;
    }
}

void sharc_shard_trace_step(sharc_shard_group_t *g, const sharc_shard_stats_t *s, double t0,
                            double t1)
{
    sharc_shard_trace_t *tr = g->trace;
    sharc_shard_tev_t *e;

    if (tr == NULL) {
        return;
    }
    e = sharc_shard_tev_add(g, SHARC_SHARD_TEV_STEP, -1, t0, t1);
    if (e != NULL) {
        e->x[0] = s->exposed_s;
        e->x[1] = s->comm_s;
        e->x[2] = s->gather_wait_s;
        e->x[3] = s->engine_s;
        e->arg = s->prefetch_depth;
    }
    tr->last_call = -1; /* the time between steps is the caller's, not a unit's */
    tr->starts[tr->nstarts++] = tr->nev;
    if (tr->nstarts > 2 * tr->keep) { /* hold 2 * keep steps at most: drop the oldest keep */
        size_t cut = tr->starts[tr->keep];

        memmove(tr->ev, tr->ev + cut, (tr->nev - cut) * sizeof(*tr->ev));
        tr->nev -= cut;
        for (size_t i = tr->keep; i < tr->nstarts; i++) {
            tr->starts[i - tr->keep] = tr->starts[i] - cut;
        }
        tr->nstarts -= tr->keep;
        tr->dropped += (int)tr->keep;
    }
}

/* ---- gathering and writing ------------------------------------------------------------ */

size_t sharc_shard_trace_first(const sharc_shard_trace_t *tr)
{
    size_t finished = tr->nstarts - 1;

    return (finished > tr->keep) ? tr->starts[finished - tr->keep] : 0;
}

/*
 * Every rank's events to rank 0 through the bootstrap: sizes and origins first, then the
 * bytes in rounds that keep each of the store's answers within SHARC_BOOTSTRAP_MAX_MSG.
 * Ranks on rank 0's node share its clock (CLOCK_MONOTONIC) and keep rank 0's origin; the
 * others keep their own, taken as the ranks left an exchange together.
 */
static sharc_status_t sharc_shard_trace_gather(sharc_shard_group_t *g,
                                               sharc_shard_trace_rank_t *ranks, char **bufs)
{
    sharc_shard_trace_t *tr = g->trace;
    size_t first = sharc_shard_trace_first(tr), mine = (tr->nev - first) * sizeof(*tr->ev);
    size_t most = 0, round = sharc_boot_cfg(g->ctx->cfg)->max_msg / (2 * (size_t)g->size);
    sharc_shard_vote_t vote = {.a = mine}, *all = calloc((size_t)g->size, sizeof(*all));
    char *send, *recv;
    sharc_status_t status;
    int kept = 1; /* rank 0 has room for every rank's events */

    if (all == NULL) {
        return SHARC_ERR_NOMEM; /* (the others' exchange fails at the bootstrap's timeout) */
    }
    round = SHARC_MIN(SHARC_MAX(round, (size_t)65536), (size_t)4 << 20);
    send = malloc(round);
    recv = malloc(round * (size_t)g->size);
    memcpy(&vote.b, &tr->origin, sizeof(double));
    /* a rank short of memory says so here, and every rank stops together */
    status = sharc_shard_exchange(g, (send && recv) ? SHARC_OK : SHARC_ERR_NOMEM, &vote, all,
                                  "gathering the trace");
    for (int r = 0; status == SHARC_OK && r < g->size; r++) {
        most = SHARC_MAX(most, all[r].a);
        if (g->rank == 0) {
            double origin;

            memcpy(&origin, &all[r].b, sizeof(double));
            ranks[r].n = all[r].a / sizeof(sharc_shard_tev_t);
            ranks[r].origin = (g->comm->node_of[r] == g->comm->node_of[0]) ? tr->origin : origin;
            bufs[r] = malloc(all[r].a + 1);
            kept &= bufs[r] != NULL;
        }
    }
    /* the same rounds on every rank, each at most `round` bytes per rank */
    for (size_t off = 0; status == SHARC_OK && off < most; off += round) {
        size_t len = SHARC_MIN(round, most - off),
               part = (off < mine) ? SHARC_MIN(len, mine - off) : 0;

        memcpy(send, (const char *)(tr->ev + first) + off, part);
        memset(send + part, 0, len - part);
        status = sharc_boot_allgather(g->comm->boot, send, recv, len);
        for (int r = 0; status == SHARC_OK && g->rank == 0 && kept && r < g->size; r++) {
            size_t have = ranks[r].n * sizeof(sharc_shard_tev_t);

            if (off < have) {
                memcpy(bufs[r] + off, recv + (size_t)r * len, SHARC_MIN(len, have - off));
            }
        }
    }
    free(send);
    free(recv);
    free(all);
    return (status == SHARC_OK && !kept) ? SHARC_ERR_NOMEM : status;
}

void sharc_shard_trace_write(sharc_shard_group_t *g)
{
    sharc_shard_trace_t *tr = g->trace;
    sharc_shard_trace_rank_t *ranks;
    char **bufs;
    sharc_status_t status;

    if (tr == NULL) {
        return;
    }
    ranks = calloc((size_t)g->size, sizeof(*ranks));
    bufs = calloc((size_t)g->size, sizeof(*bufs));
    status = (ranks == NULL || bufs == NULL) ? SHARC_ERR_NOMEM
             : (g->size > 1)                 ? sharc_shard_trace_gather(g, ranks, bufs)
                                             : SHARC_OK;
    if (g->rank == 0 && ranks != NULL && bufs != NULL) {
        int nranks = g->size;

        if (status != SHARC_OK || g->size == 1) {
            /* the others' events did not come: rank 0's own, said so */
            size_t first = sharc_shard_trace_first(tr);

            if (g->size > 1) {
                sharc_warn("the trace holds rank 0's events only: gathering the others' "
                           "failed (%s)",
                           sharc_status_string(status));
            }
            ranks[0] = (sharc_shard_trace_rank_t){tr->ev + first, tr->nev - first, tr->origin};
            nranks = 1;
        } else {
            for (int r = 0; r < g->size; r++) {
                ranks[r].ev = (const sharc_shard_tev_t *)bufs[r];
            }
        }
        if (sharc_shard_trace_json(g, ranks, nranks) == 0) {
            sharc_info("trace of %d rank(s), last %zu step(s), written to %s", nranks,
                       SHARC_MIN(tr->keep, tr->nstarts - 1), tr->path);
        }
        if (fclose(tr->file) != 0) {
            sharc_error("closing the trace file '%s' failed: %m", tr->path);
        }
        tr->file = NULL;
    }
    for (int r = 0; bufs != NULL && r < g->size; r++) {
        free(bufs[r]);
    }
    free(bufs);
    free(ranks);
}

void sharc_shard_trace_close(sharc_shard_group_t *g)
{
    sharc_shard_trace_t *tr = g->trace;

    if (tr == NULL) {
        return;
    }
    if (tr->file != NULL) { /* created, never written: the group did not come to be */
        fclose(tr->file);
        unlink(tr->path);
    }
    free(tr->ev);
    free(tr->starts);
    free(tr->path);
    free(tr);
    g->trace = NULL;
}
