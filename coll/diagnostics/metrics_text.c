/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_text.c: communicators' metrics in Prometheus' text exposition format (0.0.4): names
 * in base units (seconds, bytes) with _total on counters, every series labelled with the
 * rank, its local rank, its node (host), the communicator and its transport; the collectives
 * by kind and size class. Series of a kind and size class appear once one such task finished.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/util.h"
#include "metrics.h"

void sharc_coll_text_printf(sharc_coll_text_t *t, const char *fmt, ...)
{
    va_list ap;
    int ret;

    if (t->oom) {
        return;
    }
    for (;;) {
        size_t room = t->cap - t->len;

        va_start(ap, fmt);
        ret = vsnprintf(t->buf != NULL ? t->buf + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (ret < 0) {
            t->oom = 1;
            return;
        }
        if ((size_t)ret < room) {
            t->len += (size_t)ret;
            return;
        }
        size_t cap = SHARC_MAX(t->cap * 2, t->len + (size_t)ret + 4096);
        char *buf = realloc(t->buf, cap);

        if (buf == NULL) {
            t->oom = 1;
            return;
        }
        t->buf = buf;
        t->cap = cap;
    }
}

void sharc_coll_text_free(sharc_coll_text_t *t)
{
    free(t->buf);
    *t = (sharc_coll_text_t){0};
}

/* A label value as the format wants it: backslash, double quote and newline escaped. */
static void sharc_coll_text_escape(sharc_coll_text_t *t, const char *in)
{
    for (; *in != '\0'; in++) {
        if (*in == '\\' || *in == '"') {
            sharc_coll_text_printf(t, "\\%c", *in);
        } else if (*in == '\n') {
            sharc_coll_text_printf(t, "\\n");
        } else {
            sharc_coll_text_printf(t, "%c", *in);
        }
    }
}

/* A sample's name and the labels every series of @p v carries, up to the brace they leave
 * open for more ("name{rank="0",...,transport="shm""). */
static void sharc_coll_text_head(sharc_coll_text_t *t, const char *name,
                                 const sharc_coll_metrics_view_t *v)
{
    sharc_coll_text_printf(t, "%s{rank=\"%d\",local_rank=\"%d\",node=\"", name, v->rank,
                           v->local_rank);
    sharc_coll_text_escape(t, v->node);
    sharc_coll_text_printf(t, "\",comm=\"");
    sharc_coll_text_escape(t, v->comm);
    sharc_coll_text_printf(t, "\",transport=\"");
    sharc_coll_text_escape(t, v->transport);
    sharc_coll_text_printf(t, "\"");
}

static uint64_t sharc_coll_load(const uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

void sharc_coll_metrics_view(sharc_coll_comm_t *cc, double now, sharc_coll_metrics_view_t *v)
{
    const sharc_coll_task_t *oldest;

    *v = (sharc_coll_metrics_view_t){.rank = cc->rank,
                                     .local_rank = cc->local_rank,
                                     .size = cc->size,
                                     .culprit = -1,
                                     .metrics = cc->metrics};
    snprintf(v->node, sizeof(v->node), "%s", sharc_coll_host(cc, cc->rank));
    snprintf(v->comm, sizeof(v->comm), "%s", cc->name);
    snprintf(v->transport, sizeof(v->transport), "%s", cc->tp_name != NULL ? cc->tp_name : "none");
    sharc_coll_lock(cc);
    v->lost = cc->lost_rank;
    for (const sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
        v->in_flight += t->kind == SHARC_COLL_KIND_COLL && t->state != SHARC_COLL_TASK_HANDED;
    }
    oldest = sharc_coll_oldest(cc);
    if (oldest != NULL) {
        v->oldest_age = now - oldest->t_post;
        if (sharc_coll_verdict_on(cc, oldest->ordinal) != NULL) {
            v->stalled = 1;
            v->culprit = cc->verdict_rank;
        }
    }
    v->failed = cc->failed != SHARC_OK;
    sharc_coll_unlock(cc);
}

/* One family's header. */
static void sharc_coll_text_family(sharc_coll_text_t *t, const char *name, const char *type,
                                   const char *help)
{
    sharc_coll_text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels of a kind and size class after the common ones, and the brace closed (@p le:
 * a histogram bucket's bound, or NULL). */
static void sharc_coll_text_kind(sharc_coll_text_t *t, int k, int c, const char *le)
{
    sharc_coll_text_printf(t, ",collective=\"%s\",size_class=\"%s\"%s%s%s}",
                           sharc_coll_metric_name(k), sharc_coll_size_names[c],
                           le != NULL ? ",le=\"" : "", le != NULL ? le : "",
                           le != NULL ? "\"" : "");
}

/* A histogram's samples of one kind and size class. */
static void sharc_coll_text_histogram(sharc_coll_text_t *t, const char *name,
                                      const sharc_coll_metrics_view_t *v, int k, int c)
{
    const sharc_coll_metric_t *m = &v->metrics->m[k][c];
    char full[96], le[32];
    uint64_t cum = 0;

    for (int b = 0; b < SHARC_COLL_TIME_BUCKETS; b++) {
        cum += sharc_coll_load(&m->bucket[b]);
        if (b < SHARC_COLL_TIME_BUCKETS - 1) {
            snprintf(le, sizeof(le), "%.9g", sharc_coll_time_bounds[b]);
        } else {
            snprintf(le, sizeof(le), "+Inf");
        }
        snprintf(full, sizeof(full), "%s_bucket", name);
        sharc_coll_text_head(t, full, v);
        sharc_coll_text_kind(t, k, c, le);
        sharc_coll_text_printf(t, " %llu\n", (unsigned long long)cum);
    }
    snprintf(full, sizeof(full), "%s_sum", name);
    sharc_coll_text_head(t, full, v);
    sharc_coll_text_kind(t, k, c, NULL);
    sharc_coll_text_printf(t, " %.9f\n", (double)sharc_coll_load(&m->ns) * 1e-9);
    snprintf(full, sizeof(full), "%s_count", name);
    sharc_coll_text_head(t, full, v);
    sharc_coll_text_kind(t, k, c, NULL);
    sharc_coll_text_printf(t, " %llu\n", (unsigned long long)cum);
}

/* The histogram, the bytes and the failures of every kind and size class that saw a task. */
static void sharc_coll_text_tasks(const sharc_coll_metrics_view_t *views, size_t n,
                                  sharc_coll_text_t *t)
{
    static const char *const families[][3] = {
        {"sharc_collective_seconds", "histogram",
         "Time from post to done of the collectives, sends and receives that finished fine, "
         "by kind and size class (the rank that arrives last at a collective waits least)."},
        {"sharc_collective_bytes_total", "counter",
         "Bytes of the collectives that finished fine, as nccl-tests counts a collective's size "
         "(busbw: rate of this over rate of the seconds' sum, times the collective's factor)."},
        {"sharc_collective_failures_total", "counter",
         "Collectives, sends and receives that ended in an error."},
    };

    for (int f = 0; f < 3; f++) {
        sharc_coll_text_family(t, families[f][0], families[f][1], families[f][2]);
        for (size_t i = 0; i < n; i++) {
            const sharc_coll_metrics_t *ms = views[i].metrics;

            for (int k = 0; ms != NULL && k < SHARC_COLL_METRIC_KINDS; k++) {
                for (int c = 0; c < SHARC_COLL_SIZE_CLASSES; c++) {
                    const sharc_coll_metric_t *m = &ms->m[k][c];

                    if (sharc_coll_load(&m->count) == 0) {
                        continue;
                    }
                    if (f == 0) {
                        sharc_coll_text_histogram(t, families[f][0], &views[i], k, c);
                        continue;
                    }
                    sharc_coll_text_head(t, families[f][0], &views[i]);
                    sharc_coll_text_kind(t, k, c, NULL);
                    sharc_coll_text_printf(
                        t, " %llu\n",
                        (unsigned long long)sharc_coll_load(f == 1 ? &m->bytes : &m->failed));
                }
            }
        }
    }
}

/* A sharding group's step figures, of the communicators that have any. */
static void sharc_coll_text_steps(const sharc_coll_metrics_view_t *views, size_t n,
                                  sharc_coll_text_t *t)
{
#define SHARC_COLL_STEP_FIELD(_f) offsetof(sharc_coll_step_metrics_t, _f)
    static const struct {
        const char *name, *type, *help;
        size_t off;
        double scale;
    } fams[] = {
        {"sharc_shard_steps_total", "counter", "Steps the sharding group finished.",
         SHARC_COLL_STEP_FIELD(steps), 1},
        {"sharc_shard_step_seconds_total", "counter", "Wall time of its steps.",
         SHARC_COLL_STEP_FIELD(step_ns), 1e-9},
        {"sharc_shard_comm_seconds_total", "counter",
         "Time at least one of its collectives was in flight.", SHARC_COLL_STEP_FIELD(comm_ns),
         1e-9},
        {"sharc_shard_exposed_comm_seconds_total", "counter",
         "Time the caller waited for communication (exposed: not hidden behind compute).",
         SHARC_COLL_STEP_FIELD(exposed_ns), 1e-9},
        {"sharc_shard_gather_wait_seconds_total", "counter",
         "The part of the exposed time spent waiting for all-gathers.",
         SHARC_COLL_STEP_FIELD(gather_wait_ns), 1e-9},
        {"sharc_shard_engine_seconds_total", "counter",
         "Time the caller spent inside the engine's step calls, the exposed time included.",
         SHARC_COLL_STEP_FIELD(engine_ns), 1e-9},
        {"sharc_shard_gathered_bytes_total", "counter",
         "Bytes of the unsharded buffers its all-gathers produced, per rank.",
         SHARC_COLL_STEP_FIELD(bytes_gathered), 1},
        {"sharc_shard_reduced_bytes_total", "counter",
         "Bytes of the gradients its reductions took, per rank.",
         SHARC_COLL_STEP_FIELD(bytes_reduced), 1},
        {"sharc_shard_prefetches_total", "counter",
         "All-gathers issued ahead of their unit's begin.", SHARC_COLL_STEP_FIELD(prefetches), 1},
        {"sharc_shard_evictions_total", "counter",
         "Prefetched units released unused, to stay within the bound.",
         SHARC_COLL_STEP_FIELD(evictions), 1},
        {"sharc_shard_prefetch_depth", "gauge", "Units gathered ahead in the last step.",
         SHARC_COLL_STEP_FIELD(prefetch_depth), 1},
        {"sharc_shard_peak_unsharded_bytes", "gauge",
         "Most bytes of gathered parameters and unreduced gradients at once in the last step.",
         SHARC_COLL_STEP_FIELD(peak_unsharded_bytes), 1},
    };
#undef SHARC_COLL_STEP_FIELD

    for (size_t f = 0; f < SHARC_ARRAY_SIZE(fams); f++) {
        int shown = 0;

        for (size_t i = 0; i < n; i++) {
            const sharc_coll_step_metrics_t *s =
                views[i].metrics != NULL ? &views[i].metrics->steps : NULL;
            uint64_t v;

            if (s == NULL || sharc_coll_load(&s->steps) == 0) {
                continue; /* (no sharding group over it, or no step yet) */
            }
            if (!shown++) {
                sharc_coll_text_family(t, fams[f].name, fams[f].type, fams[f].help);
            }
            v = sharc_coll_load((const uint64_t *)((const char *)s + fams[f].off));
            sharc_coll_text_head(t, fams[f].name, &views[i]);
            if (fams[f].scale == 1) {
                sharc_coll_text_printf(t, "} %llu\n", (unsigned long long)v);
            } else {
                sharc_coll_text_printf(t, "} %.9f\n", (double)v * fams[f].scale);
            }
        }
    }
}

void sharc_coll_metrics_text(const sharc_coll_metrics_view_t *views, size_t n, sharc_coll_text_t *t)
{
    static const char *const gauges[][2] = {
        {"sharc_comm_ranks", "Ranks of the communicator."},
        {"sharc_collectives_in_flight", "Collectives this rank started and has not completed."},
        {"sharc_collective_oldest_seconds",
         "Seconds since this rank started the oldest collective it has not completed (0: "
         "none): a stall grows here."},
        {"sharc_stall", "1 while the ranks' stall verdict (SHARC_STALL_WARN) is on the oldest "
                        "collective in flight, else 0."},
        {"sharc_stall_culprit_rank", "The rank the stall verdict in force blames (-1: none)."},
        {"sharc_comm_failed", "1 once the communicator failed (a lost peer, a timeout, a "
                              "transport's error)."},
        {"sharc_peer_lost_rank", "A rank of the communicator the store said is gone (-1: none)."},
    };

    for (size_t g = 0; g < SHARC_ARRAY_SIZE(gauges); g++) {
        sharc_coll_text_family(t, gauges[g][0], "gauge", gauges[g][1]);
        for (size_t i = 0; i < n; i++) {
            const sharc_coll_metrics_view_t *v = &views[i];
            double val[] = {v->size,    v->in_flight, v->oldest_age, v->stalled,
                            v->culprit, v->failed,    v->lost};

            sharc_coll_text_head(t, gauges[g][0], v);
            sharc_coll_text_printf(t, "} %.9g\n", val[g]);
        }
    }
    sharc_coll_text_tasks(views, n, t);
    sharc_coll_text_steps(views, n, t);
}
