/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_metrics_text.c: the Prometheus text of made-up communicators
 * (coll/diagnostics/metrics_text.c): exact samples of a histogram (cumulative buckets, sum,
 * count), bytes and failures; the labels, a communicator's name escaped; each family's HELP
 * and TYPE once, its samples together; the health gauges of a quiet communicator and of one
 * whose oldest collective the ranks' stall verdict blames on rank 3; a sharding group's step
 * figures where one reported them. With an argument, it
 * prints the text (for `promtool check metrics`).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../../base/util.h"
#include "../../coll/coll.h"
#include "../../coll/diagnostics/metrics.h"
#include "../check.h"

static const char hosts[4][SHARC_HOST_MAX] = {"node-a", "node-a", "node-b", "node-c"};

static void make_comm(sharc_coll_comm_t *cc, int rank, const char *name)
{
    memset(cc, 0, sizeof(*cc));
    pthread_mutex_init(&cc->lock, NULL);
    cc->rank = rank;
    cc->size = 4;
    cc->local_rank = rank % 2;
    cc->hosts = hosts;
    cc->name = name;
    cc->tp_name = "shm";
    cc->verdict_ordinal = UINT64_MAX;
    cc->verdict_rank = -1;
    cc->lost_rank = -1;
}

static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = strstr(text, line); p != NULL; p = strstr(p + 1, line)) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n') {
            return 1;
        }
    }
    return 0;
}

/* Each family's TYPE line once, and its samples right after it, never apart. */
static void check_grouped(const char *text)
{
    char seen[64][64];
    int nseen = 0;
    char cur[64] = "";

    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        char name[64];

        CHECK(end != NULL); /* every line ends in a newline */
        if (end == NULL) {
            return;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            CHECK(sscanf(line + 7, "%63s", name) == 1);
            for (int i = 0; i < nseen; i++) {
                CHECK_MSG(strcmp(seen[i], name) != 0, "family %s typed twice", name);
            }
            if (nseen < 64) {
                snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
            }
            snprintf(cur, sizeof(cur), "%s", name);
        } else if (line[0] != '#') {
            size_t n = strcspn(line, "{ ");

            CHECK_MSG(strncmp(line, cur, strlen(cur)) == 0 && n >= strlen(cur),
                      "a sample of another family inside %s: %.*s", cur, (int)(end - line), line);
        }
        line = end + 1;
    }
    CHECK_MSG(nseen == 22, "%d families, not 22", nseen);
}

/* The lines communicator a's text must hold (%s: its labels): its all-reduces and send by
 * size class, its health, its sharding group's steps. */
static const char *const a_lines[] = {
    "sharc_collective_seconds_bucket{%s,collective=\"allreduce\",size_class=\"4KiB\","
    "le=\"8e-06\"} 1",
    "sharc_collective_seconds_bucket{%s,collective=\"allreduce\",size_class=\"4KiB\","
    "le=\"3.2e-05\"} 1",
    "sharc_collective_seconds_bucket{%s,collective=\"allreduce\",size_class=\"4KiB\","
    "le=\"0.000128\"} 3",
    "sharc_collective_seconds_bucket{%s,collective=\"allreduce\",size_class=\"4KiB\","
    "le=\"+Inf\"} 3",
    "sharc_collective_seconds_sum{%s,collective=\"allreduce\",size_class=\"4KiB\"} "
    "0.000001500",
    "sharc_collective_seconds_count{%s,collective=\"allreduce\",size_class=\"4KiB\"} 3",
    "sharc_collective_bytes_total{%s,collective=\"allreduce\",size_class=\"4KiB\"} 3072",
    "sharc_collective_failures_total{%s,collective=\"allreduce\",size_class=\"4KiB\"} 1",
    "sharc_collective_seconds_bucket{%s,collective=\"send\",size_class=\"1MiB\","
    "le=\"0.524288\"} 0",
    "sharc_collective_seconds_bucket{%s,collective=\"send\",size_class=\"1MiB\","
    "le=\"2.097152\"} 1",
    "sharc_collective_seconds_sum{%s,collective=\"send\",size_class=\"1MiB\"} 2.000000000",
    "sharc_comm_ranks{%s} 4",
    "sharc_collectives_in_flight{%s} 0",
    "sharc_stall{%s} 0",
    "sharc_stall_culprit_rank{%s} -1",
    "sharc_comm_failed{%s} 0",
    "sharc_peer_lost_rank{%s} -1",
    "sharc_shard_steps_total{%s} 3",
    "sharc_shard_step_seconds_total{%s} 3.000000000",
    "sharc_shard_exposed_comm_seconds_total{%s} 1.500000000",
    "sharc_shard_gathered_bytes_total{%s} 1000",
    "sharc_shard_prefetch_depth{%s} 2",
    "sharc_shard_evictions_total{%s} 0",
};

/* ... and b's: the stall in force and its culprit, the failure, the lost rank. */
static const char *const b_lines[] = {
    "sharc_collectives_in_flight{%s} 1", "sharc_stall{%s} 1",
    "sharc_stall_culprit_rank{%s} 3",    "sharc_comm_failed{%s} 1",
    "sharc_peer_lost_rank{%s} 1",
};

/* Each of @p lines, its labels @p labels put in, is a line of @p text. */
static void check_lines(const char *text, const char *const *lines, size_t n, const char *labels)
{
    char want[1024];

    for (size_t i = 0; i < n; i++) {
        snprintf(want, sizeof(want), lines[i], labels);
        CHECK_MSG(has_line(text, want), "missing: %s", want);
    }
}

int main(int argc, char **argv)
{
    sharc_coll_comm_t a, b;
    sharc_coll_metrics_view_t views[2];
    sharc_coll_metrics_t *m = calloc(1, sizeof(*m));
    sharc_coll_task_t *t = calloc(1, sizeof(*t));
    sharc_coll_text_t text = {0};
    const char *l = "rank=\"2\",local_rank=\"0\",node=\"node-b\",comm=\"w0\",transport=\"shm\"";
    char want[1024];

    make_comm(&a, 2, "w0");
    make_comm(&b, 3, "we\"ird\\");
    a.metrics = m;
    m->m[SHARC_COLL_ALLREDUCE][0] = (sharc_coll_metric_t){
        .count = 4, .failed = 1, .bytes = 3072, .ns = 1500, .bucket = {[0] = 1, [2] = 2}};
    m->m[SHARC_COLL_METRIC_SEND][2] = (sharc_coll_metric_t){
        .count = 1, .bytes = 100000, .ns = 2000000000ull, .bucket = {[9] = 1}};
    /* a sharding group over a: 3 steps */
    m->steps = (sharc_coll_step_metrics_t){.steps = 3,
                                           .step_ns = 3000000000ull,
                                           .exposed_ns = 1500000000ull,
                                           .bytes_gathered = 1000,
                                           .prefetch_depth = 2};
    /* b: its oldest collective in flight for 5 s, and the ranks' verdict on it blames rank 3 */
    t->kind = SHARC_COLL_KIND_COLL;
    t->state = SHARC_COLL_TASK_RUNNING;
    t->ordinal = 7;
    t->t_post = sharc_time_now() - 5;
    b.head = b.tail = t;
    b.verdict_ordinal = 7;
    b.verdict_rank = 3;
    b.failed = SHARC_ERR_TIMEOUT;
    b.lost_rank = 1;

    sharc_coll_metrics_view(&a, sharc_time_now(), &views[0]);
    sharc_coll_metrics_view(&b, sharc_time_now(), &views[1]);
    sharc_coll_metrics_text(views, 2, &text);
    CHECK(!text.oom && text.buf != NULL);
    if (text.buf == NULL) {
        return check_result("test_metrics_text");
    }
    if (argc > 1) {
        fputs(text.buf, stdout);
    }
    check_grouped(text.buf);
    CHECK(has_line(text.buf, "# TYPE sharc_collective_seconds histogram"));
    CHECK(has_line(text.buf, "# TYPE sharc_collective_bytes_total counter"));
    check_lines(text.buf, a_lines, sizeof(a_lines) / sizeof(a_lines[0]), l);
    /* no series of a kind and size class that saw nothing, none counted for b */
    CHECK(strstr(text.buf, "collective=\"allgather\"") == NULL);
    CHECK(strstr(text.buf, "size_class=\"64KiB\"") == NULL);
    CHECK(strstr(text.buf, "sharc_collective_seconds_count{rank=\"3\"") == NULL);
    CHECK(strstr(text.buf, "sharc_shard_steps_total{rank=\"3\"") == NULL);
    /* b: the escaped name, the stall and its culprit, the failure, the lost rank */
    l = "rank=\"3\",local_rank=\"1\",node=\"node-c\",comm=\"we\\\"ird\\\\\",transport=\"shm\"";
    check_lines(text.buf, b_lines, sizeof(b_lines) / sizeof(b_lines[0]), l);
    snprintf(want, sizeof(want), "sharc_collective_oldest_seconds{%s} ", l);
    const char *age = strstr(text.buf, want);
    CHECK(age != NULL && strtod(age + strlen(want), NULL) >= 5 &&
          strtod(age + strlen(want), NULL) < 60);
    /* a verdict on another collective than the oldest is not a stall in force */
    b.verdict_ordinal = 6;
    sharc_coll_text_free(&text);
    sharc_coll_metrics_view(&b, sharc_time_now(), &views[1]);
    sharc_coll_metrics_text(views, 2, &text);
    snprintf(want, sizeof(want), "sharc_stall{%s} 0", l);
    CHECK_MSG(text.buf != NULL && has_line(text.buf, want), "missing: %s", want);
    sharc_coll_text_free(&text);
    free(t);
    free(m);
    pthread_mutex_destroy(&a.lock);
    pthread_mutex_destroy(&b.lock);
    if (check_failures == 0 && argc == 1) {
        printf("metrics text ok\n");
    }
    return check_result("test_metrics_text");
}
