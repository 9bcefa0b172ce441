/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_trace_json.c: the timeline trace as Chrome trace JSON (Perfetto, chrome://tracing,
 * tools/trace-plot): per rank a process, the caller's track (step calls, waits, compute,
 * prefetch decisions, steps) and one track per queue of collectives, a lane more for each
 * collective still in flight when the next one is posted. Rank 0 writes it from every
 * rank's events (shard_trace.c gathers them).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "shard/trace/shard_trace.h"

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
    case SHARC_SHARD_Q_NODE: return "queue: gathers within the node (secondary shards)";
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
/* One event of the caller's track (a collective goes on its queue's track instead). */
static void sharc_shard_json_event(sharc_shard_json_t *j, int pid, const sharc_shard_tev_t *e)
{
    char name[96], args[512];
    const char *what = NULL;

    switch (e->kind) {
    case SHARC_SHARD_TEV_COLL: break; /* on the queues' tracks (sharc_shard_json_queues) */
    case SHARC_SHARD_TEV_WAIT:
        snprintf(name, sizeof(name), "wait %s u%d", sharc_shard_coll_label(e->arg), e->unit);
        snprintf(args, sizeof(args), "\"unit\": %d, \"step\": %d, \"ms\": %.6f", e->unit, e->step,
                 (e->t1 - e->t0) * 1e3);
        sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "wait", e->t0, e->t1, args);
        break;
    case SHARC_SHARD_TEV_ALLOC:
        snprintf(name, sizeof(name), "new %.1f MiB buffer", e->x[0] / 1048576.0);
        snprintf(args, sizeof(args), "\"step\": %d, \"MiB\": %.3f", e->step, e->x[0] / 1048576.0);
        sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "alloc", e->t0, e->t1, args);
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
        sharc_shard_json_span(j, pid, SHARC_SHARD_TID_CALLER, name, "compute", e->t0, e->t1, args);
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

/* The collectives by post time, each on the first lane of its queue that is free by then. */
static void sharc_shard_json_queues(sharc_shard_json_t *j, int pid, const sharc_shard_tev_t **colls,
                                    size_t ncolls, int shared_queue)
{
    double lanes[SHARC_SHARD_LANES * SHARC_SHARD_Q_LAST];
    int used[SHARC_SHARD_LANES * SHARC_SHARD_Q_LAST] = {0};
    char label[96];

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
}

static void sharc_shard_json_rank(sharc_shard_json_t *j, int pid, const sharc_shard_trace_rank_t *r,
                                  int shared_queue)
{
    const sharc_shard_tev_t **colls = malloc(r->n * sizeof(*colls) + 1);
    size_t ncolls = 0;
    char name[96];

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

        if (e->kind == SHARC_SHARD_TEV_COLL) {
            if (colls != NULL) {
                colls[ncolls++] = e;
            }
        } else {
            sharc_shard_json_event(j, pid, e);
        }
    }
    sharc_shard_json_queues(j, pid, colls, ncolls, shared_queue);
    free(colls);
}

/* Rank 0: the file, from every rank's events. 0, or -1 when writing failed (logged). */
int sharc_shard_trace_json(sharc_shard_group_t *g, const sharc_shard_trace_rank_t *ranks,
                           int nranks)
{
    sharc_shard_trace_t *tr = g->trace;
    sharc_shard_json_t j = {.f = tr->file, .first = 1};
    int shared = g->reduce_comm == g->shard_comm && g->reduce_lane == 0;

    fprintf(j.f,
            "{\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"producer\": \"sharc\", "
            "\"ranks\": %d, \"units\": %d, \"shard_size\": %d, \"prefetch\": \"%s\", "
            "\"max_unsharded\": %d, \"reduce_queue\": %s, \"steps_dropped\": %d, "
            "\"clock\": \"CLOCK_MONOTONIC\", \"origin_s\": %.9f},\n"
            "\"traceEvents\": [",
            nranks, g->nunits, g->shard_size, g->prefetch_auto ? "auto" : "fixed",
            g->plan.max_unsharded, shared ? "false" : "true", tr->dropped, ranks[0].origin);
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
