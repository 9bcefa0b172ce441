/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_text.c: communicators' metrics in Prometheus' text exposition format (0.0.4): names
 * in base units (seconds, bytes) with _total on counters, every series labelled with the
 * rank, its local rank, its node (host), the communicator and its transport; the collectives
 * by kind and size class. Series of a kind and size class appear once one such task finished.
 */
#include "config.h"

#include <stdarg.h>
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
static void sharc_coll_text_escape(char *out, size_t size, const char *in)
{
    size_t o = 0;

    for (; *in != '\0' && o + 3 < size; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

/* The labels every series of @p cc carries, without braces. */
static void sharc_coll_text_labels(const sharc_coll_comm_t *cc, char *out, size_t size)
{
    char node[2 * SHARC_HOST_MAX + 1], comm[160], tp[64];

    sharc_coll_text_escape(node, sizeof(node), sharc_coll_host(cc, cc->rank));
    sharc_coll_text_escape(comm, sizeof(comm), cc->name);
    sharc_coll_text_escape(tp, sizeof(tp), cc->tp_name != NULL ? cc->tp_name : "none");
    snprintf(out, size, "rank=\"%d\",local_rank=\"%d\",node=\"%s\",comm=\"%s\",transport=\"%s\"",
             cc->rank, cc->local_rank, node, comm, tp);
}

static uint64_t sharc_coll_load(const uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* What a scrape reads of a communicator's queue and health (its lock held a moment). */
typedef struct {
    int in_flight;     /* collectives started, not complete */
    double oldest_age; /* seconds since the oldest of them was started (0: none) */
    int stalled;       /* the ranks' stall verdict is on the oldest of them */
    int culprit;       /* the rank that verdict blames, or -1 */
    int failed;        /* the communicator failed */
    int lost;          /* a rank the store said is gone, or -1 */
} sharc_coll_health_t;

static void sharc_coll_health(sharc_coll_comm_t *cc, double now, sharc_coll_health_t *h)
{
    const sharc_coll_task_t *oldest;

    sharc_coll_lock(cc);
    *h = (sharc_coll_health_t){.culprit = -1, .lost = cc->lost_rank};
    for (const sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
        h->in_flight += t->kind == SHARC_COLL_KIND_COLL && t->state != SHARC_COLL_TASK_HANDED;
    }
    oldest = sharc_coll_oldest(cc);
    if (oldest != NULL) {
        h->oldest_age = now - oldest->t_post;
        if (sharc_coll_verdict_on(cc, oldest->ordinal) != NULL) {
            h->stalled = 1;
            h->culprit = cc->verdict_rank;
        }
    }
    h->failed = cc->failed != SHARC_OK;
    sharc_coll_unlock(cc);
}

/* One family's header. */
static void sharc_coll_text_family(sharc_coll_text_t *t, const char *name, const char *type,
                                   const char *help)
{
    sharc_coll_text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The histogram, the bytes and the failures of every kind and size class that saw a task. */
static void sharc_coll_text_tasks(sharc_coll_comm_t *const *ccs, size_t n, char (*labels)[512],
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
            const sharc_coll_metrics_t *ms = ccs[i]->metrics;

            for (int k = 0; ms != NULL && k < SHARC_COLL_METRIC_KINDS; k++) {
                for (int c = 0; c < SHARC_COLL_SIZE_CLASSES; c++) {
                    const sharc_coll_metric_t *m = &ms->m[k][c];
                    uint64_t count = sharc_coll_load(&m->count), failed, cum = 0;
                    char l[768];

                    if (count == 0) {
                        continue;
                    }
                    snprintf(l, sizeof(l), "%s,collective=\"%s\",size_class=\"%s\"", labels[i],
                             sharc_coll_metric_name(k), sharc_coll_size_names[c]);
                    failed = sharc_coll_load(&m->failed);
                    if (f == 1) {
                        sharc_coll_text_printf(t, "%s{%s} %llu\n", families[f][0], l,
                                               (unsigned long long)sharc_coll_load(&m->bytes));
                    } else if (f == 2) {
                        sharc_coll_text_printf(t, "%s{%s} %llu\n", families[f][0], l,
                                               (unsigned long long)failed);
                    } else {
                        for (int b = 0; b < SHARC_COLL_TIME_BUCKETS; b++) {
                            cum += sharc_coll_load(&m->bucket[b]);
                            if (b < SHARC_COLL_TIME_BUCKETS - 1) {
                                sharc_coll_text_printf(t, "%s_bucket{%s,le=\"%.9g\"} %llu\n",
                                                       families[f][0], l, sharc_coll_time_bounds[b],
                                                       (unsigned long long)cum);
                            } else {
                                sharc_coll_text_printf(t, "%s_bucket{%s,le=\"+Inf\"} %llu\n",
                                                       families[f][0], l, (unsigned long long)cum);
                            }
                        }
                        sharc_coll_text_printf(t, "%s_sum{%s} %.9f\n%s_count{%s} %llu\n",
                                               families[f][0], l,
                                               (double)sharc_coll_load(&m->ns) * 1e-9,
                                               families[f][0], l, (unsigned long long)cum);
                    }
                }
            }
        }
    }
}

void sharc_coll_metrics_text(sharc_coll_comm_t *const *ccs, size_t n, sharc_coll_text_t *t)
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
    char(*labels)[512] = calloc(n > 0 ? n : 1, sizeof(*labels));
    sharc_coll_health_t *health = calloc(n > 0 ? n : 1, sizeof(*health));
    double now = sharc_time_now();

    if (labels == NULL || health == NULL) {
        t->oom = 1;
        free(labels);
        free(health);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        sharc_coll_text_labels(ccs[i], labels[i], sizeof(labels[i]));
        sharc_coll_health(ccs[i], now, &health[i]);
    }
    for (size_t g = 0; g < SHARC_ARRAY_SIZE(gauges); g++) {
        sharc_coll_text_family(t, gauges[g][0], "gauge", gauges[g][1]);
        for (size_t i = 0; i < n; i++) {
            const sharc_coll_health_t *h = &health[i];
            double v[] = {ccs[i]->size, h->in_flight, h->oldest_age, h->stalled,
                          h->culprit,   h->failed,    h->lost};

            sharc_coll_text_printf(t, "%s{%s} %.9g\n", gauges[g][0], labels[i], v[g]);
        }
    }
    sharc_coll_text_tasks(ccs, n, labels, t);
    free(labels);
    free(health);
}
