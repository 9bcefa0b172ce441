/*
 * shard_trace.c: the timeline trace (SHARC_SHARD_TRACE). Each rank records what its group
 * sees, in memory: every collective with its post, start, end and completion times, the
 * caller's step calls, waits and compute, the prefetch decisions and depth, a span per step;
 * it keeps the last SHARC_SHARD_TRACE_STEPS steps. At destroy the ranks send theirs to rank 0
 * through the bootstrap, and rank 0 writes one Chrome trace JSON file (Perfetto,
 * chrome://tracing, tools/trace-plot). It sees what the engine sees; it is not a profiler of
 * the collective layer or the transports.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/base/log.h"
#include "../src/base/util.h"
#include "shard.h"

typedef enum {
    SHARC_SHARD_TEV_COLL,     /* a collective: t0 post, t1 seen by the engine; x: start, done,
                               * complete (0: unknown, as on CUDA, where t1 is when a stream
                               * was made to wait for it), bytes; arg: its type; queue */
    SHARC_SHARD_TEV_WAIT,     /* the caller blocked on a collective (arg: its type) */
    SHARC_SHARD_TEV_CALL,     /* a step call (arg: sharc_shard_call_t) */
    SHARC_SHARD_TEV_COMPUTE,  /* the caller between a begin and its next call (arg: the begin) */
    SHARC_SHARD_TEV_PREFETCH, /* instant: a gather issued ahead (arg: entries ahead) */
    SHARC_SHARD_TEV_DEFER,    /* instant: a prefetch the bound held back */
    SHARC_SHARD_TEV_EVICT,    /* instant: a prefetched unit released unused (arg: for which) */
    SHARC_SHARD_TEV_DEPTH,    /* instant: the depth from now on (arg: depth, queue: old, x[0]:
                               * why) */
    SHARC_SHARD_TEV_STEP,     /* a step, t0 .. t1; x: exposed, comm, gather wait, engine time;
                               * arg: the depth it ran with */
    SHARC_SHARD_TEV_ALLOC,    /* a new unsharded buffer (x[0]: bytes), on the caller's time */
} sharc_shard_tev_kind_t;

/* One event; plain data, the same layout on every rank (sent to rank 0 as bytes). */
typedef struct {
    double t0, t1; /* sharc_time_now's clock; t1 < 0: an instant */
    double x[4];
    int32_t kind, unit, arg, step, queue, pad;
} sharc_shard_tev_t;

struct sharc_shard_trace {
    char *path;
    FILE *file;    /* rank 0: created with the group */
    double origin; /* this rank's time zero (the ranks left an exchange together) */
    size_t keep;   /* steps to write */
    sharc_shard_tev_t *ev;
    size_t nev, cap;
    /* where each step still held begins in ev[], the running one last: steps are dropped in
     * batches of `keep` once 2 * keep are held, so a finish rarely moves memory */
    size_t *starts;
    size_t nstarts;
    int dropped; /* steps dropped (the oldest ones) */
    /* the caller's last step call: a begin's compute runs until the next call */
    int last_call, last_unit;
    double last_t1;
};

typedef struct sharc_shard_trace sharc_shard_trace_t;

static const char *const sharc_shard_call_names[] = {
    [SHARC_SHARD_CALL_FORWARD_BEGIN] = "forward_begin",
    [SHARC_SHARD_CALL_FORWARD_END] = "forward_end",
    [SHARC_SHARD_CALL_BACKWARD_BEGIN] = "backward_begin",
    [SHARC_SHARD_CALL_BACKWARD_END] = "backward_end",
    [SHARC_SHARD_CALL_FINISH] = "finish",
};

static const char *sharc_shard_coll_label(int type)
{
    switch (type) {
    case SHARC_COLL_ALLGATHER: return "all-gather";
    case SHARC_COLL_REDUCE_SCATTER: return "reduce-scatter";
    default: return "all-reduce";
    }
}

/* ---- recording ------------------------------------------------------------------------ */

static sharc_shard_tev_t *sharc_shard_tev_add(sharc_shard_group_t *g, int kind, int unit, double t0,
                                              double t1)
{
    sharc_shard_trace_t *tr = g->trace;
    sharc_shard_tev_t *e;

    if (tr->nev == tr->cap) {
        size_t cap = tr->cap ? 2 * tr->cap : 1024;
        sharc_shard_tev_t *ev = realloc(tr->ev, cap * sizeof(*ev));

        if (ev == NULL) {
            return NULL; /* the event is lost; the trace says nothing it did not see */
        }
        tr->ev = ev;
        tr->cap = cap;
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
    const sharc_cfg_t *cfg = g->ctx->cfg;
    sharc_shard_trace_t *tr;

    if (cfg->shard_trace == NULL || cfg->shard_trace[0] == '\0') {
        return SHARC_OK;
    }
    tr = calloc(1, sizeof(*tr));
    if (tr == NULL || (tr->path = strdup(cfg->shard_trace)) == NULL) {
        free(tr);
        return SHARC_ERR_NOMEM;
    }
    tr->keep = (size_t)cfg->shard_trace_steps;
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
                          const sharc_shard_op_t *op, sharc_coll_type_t type, sharc_request_h req,
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

/* ---- writing -------------------------------------------------------------------------- */

/* The events to write: those of the last `keep` finished steps and of the step running. */
static size_t sharc_shard_trace_first(const sharc_shard_trace_t *tr)
{
    size_t finished = tr->nstarts - 1;

    return (finished > tr->keep) ? tr->starts[finished - tr->keep] : 0;
}

/* One rank's events as the writer sees them. */
typedef struct {
    const sharc_shard_tev_t *ev;
    size_t n;
    double origin; /* seconds subtracted from its times */
} sharc_shard_trace_rank_t;

typedef struct {
    FILE *f;
    int first; /* no event written yet: no comma before the next */
    double origin;
} sharc_shard_json_t;

/* Microseconds from the origin, rounded to nanoseconds, so that a span and the spans in it
 * round alike (ts + dur of a child never passes its parent's). */
static double sharc_shard_us(const sharc_shard_json_t *j, double t)
{
    return round((t - j->origin) * 1e9) / 1e3;
}

static void sharc_shard_json_sep(sharc_shard_json_t *j)
{
    fputs(j->first ? "\n" : ",\n", j->f);
    j->first = 0;
}

/* A complete event ("X") from t0 to t1; @p args: JSON members, or "". */
static void sharc_shard_json_span(sharc_shard_json_t *j, int pid, int tid, const char *name,
                                  const char *cat, double t0, double t1, const char *args)
{
    double ts = sharc_shard_us(j, t0), te = sharc_shard_us(j, t1);

    sharc_shard_json_sep(j);
    fprintf(j->f,
            "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, "
            "\"ts\": %.3f, \"dur\": %.3f, \"args\": {%s}}",
            name, cat, pid, tid, ts, te > ts ? te - ts : 0.0, args);
}

static void sharc_shard_json_instant(sharc_shard_json_t *j, int pid, int tid, const char *name,
                                     const char *cat, double t, const char *args)
{
    sharc_shard_json_sep(j);
    fprintf(j->f,
            "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"i\", \"s\": \"t\", \"pid\": %d, "
            "\"tid\": %d, \"ts\": %.3f, \"args\": {%s}}",
            name, cat, pid, tid, sharc_shard_us(j, t), args);
}

static void sharc_shard_json_meta(sharc_shard_json_t *j, const char *what, int pid, int tid,
                                  const char *key, const char *value, int sort)
{
    sharc_shard_json_sep(j);
    if (value != NULL) {
        fprintf(j->f,
                "{\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": "
                "{\"%s\": \"%s\"}}",
                what, pid, tid, key, value);
    } else {
        fprintf(j->f,
                "{\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": "
                "{\"%s\": %d}}",
                what, pid, tid, key, sort);
    }
}

/* Track ids: the caller, then each queue's rows (collectives of one queue in flight at once
 * go to rows of their own, so that every track's spans nest). */
#define SHARC_SHARD_TID_CALLER           0
#define SHARC_SHARD_TID_QUEUE(_q, _lane) (100 * ((_q) + 1) + (_lane))
#define SHARC_SHARD_LANES                32

static const char *sharc_shard_queue_label(int q, int shared)
{
    switch (q) {
    case SHARC_SHARD_Q_GATHER:
        return shared ? "queue: gathers and reductions (shard communicator)"
                      : "queue: gathers (shard communicator)";
    case SHARC_SHARD_Q_REDUCE: return "queue: reductions (a queue of their own)";
    default: return "queue: all-reduces across replicas";
    }
}

/* When a collective's span ends on its queue: when it became complete, else when seen. */
static double sharc_shard_coll_end(const sharc_shard_tev_t *e)
{
    return (e->x[2] > 0) ? e->x[2] : e->t1;
}

static int sharc_shard_tev_cmp(const void *a, const void *b)
{
    const sharc_shard_tev_t *x = *(const sharc_shard_tev_t *const *)a;
    const sharc_shard_tev_t *y = *(const sharc_shard_tev_t *const *)b;

    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* A collective, on its lane: the span post .. complete, and in it the phases known. */
static void sharc_shard_json_coll(sharc_shard_json_t *j, int pid, int tid,
                                  const sharc_shard_tev_t *e)
{
    double post = e->t0, start = e->x[0], done = e->x[1], complete = e->x[2], seen = e->t1;
    double end = sharc_shard_coll_end(e);
    char name[64], args[512];
    int n;

    snprintf(name, sizeof(name), "%s u%d", sharc_shard_coll_label(e->arg), e->unit);
    n = snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d, \"MiB\": %.3f", e->unit, e->step,
                 e->x[3] / 1048576.0);
    if (start > 0 && done > 0 && complete > 0) {
        snprintf(args + n, sizeof(args) - (size_t)n,
                 ", \"queued_ms\": %.3f, \"running_ms\": %.3f, \"behind_earlier_ms\": %.3f, "
                 "\"seen_after_ms\": %.3f",
                 (start - post) * 1e3, (done - start) * 1e3, (complete - done) * 1e3,
                 (seen - complete) * 1e3);
    }
    sharc_shard_json_span(j, pid, tid, name, "collective", post, end, args);
    if (start > 0 && done > 0 && complete > 0) {
        snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d, \"of\": \"%s\"", e->unit, e->step,
                 sharc_shard_coll_label(e->arg));
        if (start > post) {
            sharc_shard_json_span(j, pid, tid, "queued", "phase", post, start, args);
        }
        sharc_shard_json_span(j, pid, tid, "running", "phase", start, done, args);
        if (complete > done) {
            sharc_shard_json_span(j, pid, tid, "done, completes after earlier collectives", "phase",
                                  done, complete, args);
        }
    }
}

/* Rank @p pid's tracks and events. */
static void sharc_shard_json_rank(sharc_shard_json_t *j, int pid, const sharc_shard_trace_rank_t *r,
                                  int shared_queue)
{
    const sharc_shard_tev_t **colls = malloc(r->n * sizeof(*colls) + 1);
    double lanes[SHARC_SHARD_LANES * SHARC_SHARD_Q_LAST];
    int used[SHARC_SHARD_LANES * SHARC_SHARD_Q_LAST] = {0};
    size_t ncolls = 0;
    char name[96], args[512], label[96];

    j->origin = r->origin;
    snprintf(name, sizeof(name), "rank %d", pid);
    sharc_shard_json_meta(j, "process_name", pid, 0, "name", name, 0);
    sharc_shard_json_meta(j, "process_sort_index", pid, 0, "sort_index", NULL, pid);
    sharc_shard_json_meta(j, "thread_name", pid, SHARC_SHARD_TID_CALLER, "name",
                          "caller: step calls, waits, compute", 0);
    sharc_shard_json_meta(j, "thread_sort_index", pid, SHARC_SHARD_TID_CALLER, "sort_index", NULL,
                          0);
    for (size_t i = 0; i < r->n; i++) {
        const sharc_shard_tev_t *e = &r->ev[i];
        const char *what = NULL;

        switch (e->kind) {
        case SHARC_SHARD_TEV_COLL:
            if (colls != NULL) {
                colls[ncolls++] = e;
            }
            break;
        case SHARC_SHARD_TEV_WAIT:
            snprintf(name, sizeof(name), "wait %s u%d", sharc_shard_coll_label(e->arg), e->unit);
            snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d, \"ms\": %.6f", e->unit,
                     e->step, (e->t1 - e->t0) * 1e3);
            sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "wait", e->t0, e->t1, args);
            break;
        case SHARC_SHARD_TEV_ALLOC:
            snprintf(name, sizeof(name), "new %.1f MiB buffer", e->x[0] / 1048576.0);
            snprintf(args, sizeof(args), "\"step\": %d, \"MiB\": %.3f", e->step,
                     e->x[0] / 1048576.0);
            sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "alloc", e->t0, e->t1,
                                  args);
            break;
        case SHARC_SHARD_TEV_CALL:
            if (e->arg == SHARC_SHARD_CALL_FINISH) {
                snprintf(name, sizeof(name), "finish");
            } else {
                snprintf(name, sizeof(name), "%s u%d", sharc_shard_call_names[e->arg], e->unit);
            }
            snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d", e->unit, e->step);
            sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "call", e->t0, e->t1, args);
            break;
        case SHARC_SHARD_TEV_COMPUTE:
            snprintf(name, sizeof(name), "%s u%d",
                     e->arg == SHARC_SHARD_CALL_FORWARD_BEGIN ? "forward" : "backward", e->unit);
            snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d", e->unit, e->step);
            sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "compute", e->t0, e->t1,
                                  args);
            break;
        case SHARC_SHARD_TEV_PREFETCH:
            snprintf(name, sizeof(name), "prefetch u%d", e->unit);
            snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d, \"ahead\": %d, \"depth\": %d",
                     e->unit, e->step, e->arg, e->queue);
            sharc_shard_json_instant(j, pid, SHARC_SHARD_TID_CALLER, name, "prefetch", e->t0, args);
            break;
        case SHARC_SHARD_TEV_DEFER:
        case SHARC_SHARD_TEV_EVICT:
            what = (e->kind == SHARC_SHARD_TEV_DEFER) ? "held back at the bound" : "evicted";
            snprintf(name, sizeof(name), "prefetch u%d %s", e->unit, what);
            snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d", e->unit, e->step);
            sharc_shard_json_instant(j, pid, SHARC_SHARD_TID_CALLER, name, "prefetch", e->t0, args);
            break;
        case SHARC_SHARD_TEV_DEPTH:
            snprintf(name, sizeof(name), "prefetch depth %d -> %d", e->queue, e->arg);
            snprintf(args, sizeof(args), "\"depth\": %d, \"step\": %d, \"why\": \"%s\"", e->arg,
                     e->step, sharc_shard_auto_why((int)e->x[0]));
            sharc_shard_json_instant(j, pid, SHARC_SHARD_TID_CALLER, name, "prefetch", e->t0, args);
            break;
        case SHARC_SHARD_TEV_STEP:
            snprintf(name, sizeof(name), "step %d", e->step);
            snprintf(args, sizeof(args),
                     "\"step\": %d, \"exposed_ms\": %.6f, \"comm_ms\": %.6f, "
                     "\"gather_wait_ms\": %.6f, \"engine_ms\": %.6f, \"prefetch_depth\": %d",
                     e->step, e->x[0] * 1e3, e->x[1] * 1e3, e->x[2] * 1e3, e->x[3] * 1e3, e->arg);
            sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "step", e->t0, e->t1, args);
            sharc_shard_json_sep(j); /* the depth the step ran with, on a counter track */
            fprintf(j->f,
                    "{\"name\": \"prefetch depth\", \"ph\": \"C\", \"pid\": %d, \"ts\": %.3f, "
                    "\"args\": {\"depth\": %d}}",
                    pid, sharc_shard_us(j, e->t0), e->arg);
            break;
        }
    }
    /* collectives by post time, each on the first lane of its queue that is free by then */
    qsort(colls, ncolls, sizeof(*colls), sharc_shard_tev_cmp);
    for (size_t i = 0; i < ncolls; i++) {
        const sharc_shard_tev_t *e = colls[i];
        int q = (e->queue >= 0 && e->queue < SHARC_SHARD_Q_LAST) ? e->queue : 0, lane = 0;
        double *end = &lanes[q * SHARC_SHARD_LANES];

        while (lane < SHARC_SHARD_LANES - 1 && used[q * SHARC_SHARD_LANES + lane] &&
               end[lane] > e->t0) {
            lane++;
        }
        if (!used[q * SHARC_SHARD_LANES + lane]) {
            used[q * SHARC_SHARD_LANES + lane] = 1;
            snprintf(label, sizeof(label), "%s%s", sharc_shard_queue_label(q, shared_queue),
                     lane ? " (also in flight)" : "");
            sharc_shard_json_meta(j, "thread_name", pid, SHARC_SHARD_TID_QUEUE(q, lane), "name",
                                  label, 0);
            sharc_shard_json_meta(j, "thread_sort_index", pid, SHARC_SHARD_TID_QUEUE(q, lane),
                                  "sort_index", NULL, SHARC_SHARD_TID_QUEUE(q, lane));
        }
        end[lane] = sharc_shard_coll_end(e);
        sharc_shard_json_coll(j, pid, SHARC_SHARD_TID_QUEUE(q, lane), e);
    }
    free(colls);
}

/* Rank 0: the file, from every rank's events. 0, or -1 when writing failed (logged). */
static int sharc_shard_trace_json(sharc_shard_group_t *g, const sharc_shard_trace_rank_t *ranks,
                                  int nranks)
{
    sharc_shard_trace_t *tr = g->trace;
    sharc_shard_json_t j = {.f = tr->file, .first = 1};
    int shared = g->reduce_comm == g->shard_comm && g->reduce_lane == 0;

    fprintf(j.f,
            "{\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"producer\": \"sharc\", "
            "\"ranks\": %d, \"units\": %d, \"shard_size\": %d, \"prefetch\": \"%s\", "
            "\"max_unsharded\": %d, \"reduce_queue\": %s, \"steps_dropped\": %d},\n"
            "\"traceEvents\": [",
            nranks, g->nunits, g->shard_size, g->prefetch_auto ? "auto" : "fixed",
            g->plan.max_unsharded, shared ? "false" : "true", tr->dropped);
    for (int r = 0; r < nranks; r++) {
        sharc_shard_json_rank(&j, r, &ranks[r], shared);
    }
    fputs("\n]}\n", j.f);
    if (ferror(j.f) || fflush(j.f) != 0) {
        sharc_error("writing the trace file '%s' failed: %s", tr->path, strerror(errno));
        return -1;
    }
    return 0;
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
    size_t most = 0, round = g->ctx->cfg->bootstrap_max_msg / (2 * (size_t)g->size);
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
