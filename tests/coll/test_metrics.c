/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_metrics.c: a job's metrics as an operator reads them. Every rank runs known
 * collectives (5 all-reduces of 256 f32, 3 all-gathers of 4096 f32 a rank, 2 ring sends and
 * receives of 100 i32), then, with SHARCTEST_METRICS_PORT (the job's SHARC_METRICS_PORT),
 * scrapes its own endpoint (port + local rank) and checks the counts and bytes of its series,
 * saves the text to SHARCTEST_METRICS_OUT/scrape.r<rank>.prom (for promtool), and rank 0
 * sends the endpoint bad requests: an unknown path, a POST, a GET with a body, headers of
 * 64 KiB, a client that stalls mid-request while another scrapes; each is refused and the
 * counts do not change. SHARCTEST_METRICS_HOLD=S keeps all-reducing for S seconds (a
 * Prometheus scrapes meanwhile), 20 ms apart, SHARCTEST_METRICS_SLOW=R:MS making rank R take
 * MS more each time (a straggler); SHARCTEST_METRICS_LATE=R:S makes rank R come S seconds late
 * to the first all-reduce (a stall, then a straggler's figures). The files of SHARC_METRICS_FILE
 * are the script's to check.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../check.h"

#define AR_COUNT  256
#define AR_TIMES  5
#define AG_COUNT  4096
#define AG_TIMES  3
#define P2P_COUNT 100
#define P2P_TIMES 2

static int me, nranks, port;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int connect_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        fd = -1;
    }
    CHECK_MSG(fd >= 0, "connect to port %d: %s", port, strerror(errno));
    return fd;
}

/* Everything the server sends until it closes (at most 10 s): malloc'd, NUL-terminated. */
static char *read_all(int fd)
{
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    double until = now_s() + 10;

    while (buf != NULL && now_s() < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (poll(&p, 1, 200) <= 0) {
            continue;
        }
        if (len + 4096 >= cap) {
            buf = realloc(buf, cap *= 2);
            if (buf == NULL) {
                break;
            }
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    if (buf != NULL) {
        buf[len] = '\0';
    }
    return buf;
}

/* Send @p req whole, read the answer; its status code (0: none), its body in *body_p. */
static int http(const char *req, size_t len, char **body_p)
{
    int fd = connect_port(), code = 0;
    char *resp, *body;

    *body_p = NULL;
    if (fd < 0) {
        return 0;
    }
    for (size_t off = 0; off < len;) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break; /* (the server may refuse before it has read everything) */
        }
        off += (size_t)n;
    }
    resp = read_all(fd);
    close(fd);
    if (resp != NULL && sscanf(resp, "HTTP/1.%*d %d", &code) != 1) {
        code = 0;
    }
    body = resp != NULL ? strstr(resp, "\r\n\r\n") : NULL;
    if (body != NULL) {
        memmove(resp, body + 4, strlen(body + 4) + 1);
        *body_p = resp;
    } else {
        free(resp);
    }
    return code;
}

static char *scrape(void)
{
    static const char req[] =
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    char *body;
    int code = http(req, sizeof(req) - 1, &body);

    CHECK_MSG(code == 200, "GET /metrics answered %d", code);
    return body;
}

/* The value of the sample of family @p name whose labels hold this rank and @p want (each a
 * label="value" text), or -1 when there is none. */
static double sample(const char *text, const char *name, const char *want1, const char *want2)
{
    char rank[32], head[128];
    size_t hl;

    snprintf(rank, sizeof(rank), "rank=\"%d\"", me);
    hl = (size_t)snprintf(head, sizeof(head), "%s{", name);
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n'), *close;
        char buf[1024];
        size_t n = end != NULL ? (size_t)(end - line) : strlen(line);

        if (n < sizeof(buf) && strncmp(line, head, hl) == 0) {
            memcpy(buf, line, n);
            buf[n] = '\0';
            close = strrchr(buf, '}');
            if (close != NULL && strstr(buf, rank) != NULL &&
                (want1 == NULL || strstr(buf, want1) != NULL) &&
                (want2 == NULL || strstr(buf, want2) != NULL)) {
                return strtod(close + 1, NULL);
            }
        }
        line = end != NULL ? end + 1 : NULL;
    }
    return -1;
}

static void check_counts(const char *text, const char *when)
{
    const char *ag_class =
        (AG_COUNT * 4 * nranks <= 64 << 10) ? "size_class=\"64KiB\"" : "size_class=\"1MiB\"";
    double v;

    v = sample(text, "sharc_collective_seconds_count", "collective=\"allreduce\"",
               "size_class=\"4KiB\"");
    CHECK_MSG(v == AR_TIMES, "%s: %g all-reduces counted, not %d", when, v, AR_TIMES);
    v = sample(text, "sharc_collective_bytes_total", "collective=\"allreduce\"", NULL);
    CHECK_MSG(v == AR_TIMES * AR_COUNT * 4, "%s: all-reduce bytes %g", when, v);
    v = sample(text, "sharc_collective_seconds_count", "collective=\"allgather\"", ag_class);
    CHECK_MSG(v == AG_TIMES, "%s: %g all-gathers counted (%s), not %d", when, v, ag_class,
              AG_TIMES);
    v = sample(text, "sharc_collective_bytes_total", "collective=\"allgather\"", NULL);
    CHECK_MSG(v == (double)AG_TIMES * AG_COUNT * 4 * nranks, "%s: all-gather bytes %g", when, v);
    v = sample(text, "sharc_collective_seconds_bucket", "collective=\"allreduce\"", "le=\"+Inf\"");
    CHECK_MSG(v == AR_TIMES, "%s: the all-reduces' +Inf bucket holds %g", when, v);
    if (nranks > 1) {
        v = sample(text, "sharc_collective_seconds_count", "collective=\"send\"", NULL);
        CHECK_MSG(v == P2P_TIMES, "%s: %g sends counted", when, v);
        v = sample(text, "sharc_collective_bytes_total", "collective=\"recv\"", NULL);
        CHECK_MSG(v == P2P_TIMES * P2P_COUNT * 4, "%s: receive bytes %g", when, v);
    }
    v = sample(text, "sharc_comm_ranks", NULL, NULL);
    CHECK_MSG(v == nranks, "%s: sharc_comm_ranks %g", when, v);
    CHECK_MSG(sample(text, "sharc_collectives_in_flight", NULL, NULL) == 0 &&
                  sample(text, "sharc_stall", NULL, NULL) == 0 &&
                  sample(text, "sharc_stall_culprit_rank", NULL, NULL) == -1 &&
                  sample(text, "sharc_comm_failed", NULL, NULL) == 0 &&
                  sample(text, "sharc_peer_lost_rank", NULL, NULL) == -1,
              "%s: the health gauges of a quiet, healthy job", when);
}

/* Rank 0: bad requests are refused, and change nothing. */
static void bad_requests(void)
{
    static const char unknown[] = "GET /admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    static const char post[] = "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                               "Content-Length: 5\r\n\r\nhello";
    static const char body[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                               "Content-Length: 5\r\n\r\nhello";
    static const char garbage[] = "\x01\x02 nonsense\r\n\r\n";
    size_t hsize = 64 << 10;
    char *huge = malloc(hsize + 256), *b;
    int code, slow, got;
    double t0;

    code = http(unknown, sizeof(unknown) - 1, &b);
    CHECK_MSG(code == 404, "GET /admin answered %d, not 404", code);
    free(b);
    code = http(post, sizeof(post) - 1, &b);
    CHECK_MSG(code == 405, "POST /metrics answered %d, not 405", code);
    free(b);
    code = http(body, sizeof(body) - 1, &b);
    CHECK_MSG(code == 400, "a GET with a body answered %d, not 400", code);
    free(b);
    code = http(garbage, sizeof(garbage) - 1, &b);
    CHECK_MSG(code == 400 || code == 0, "a malformed request answered %d", code);
    free(b);
    if (huge != NULL) {
        int n = snprintf(huge, 256, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");

        memset(huge + n, 'a', hsize);
        memcpy(huge + n + hsize, "\r\n\r\n", 4);
        code = http(huge, (size_t)n + hsize + 4, &b);
        CHECK_MSG(code == 431 || code == 413, "64 KiB of headers answered %d, not 431", code);
        free(b);
        free(huge);
    }
    /* a client that stalls mid-request holds nobody up, and is dropped */
    slow = connect_port();
    if (slow >= 0) {
        CHECK(send(slow, "GET /met", 8, MSG_NOSIGNAL) == 8);
        t0 = now_s();
        b = scrape();
        CHECK_MSG(now_s() - t0 < 2, "a scrape beside a stalled client took %.1f s", now_s() - t0);
        free(b);
        t0 = now_s();
        b = read_all(slow); /* (until the server closes it) */
        got = b != NULL ? (int)strlen(b) : -1;
        CHECK_MSG(now_s() - t0 < 9, "the stalled client was not dropped in %.1f s (read %d)",
                  now_s() - t0, got);
        free(b);
        close(slow);
    }
}

/* All-reduces every 20 ms for @p secs (SHARCTEST_METRICS_SLOW=R:MS: rank R sleeps MS more
 * between them, a straggler), while a Prometheus scrapes; @p ar: AR_COUNT floats. */
static void hold_on(sharc_comm_h comm, float *ar, double secs)
{
    double until = now_s() + secs;
    int slow = -1, slow_ms = 0;

    if (getenv("SHARCTEST_METRICS_SLOW") != NULL) {
        CHECK(sscanf(getenv("SHARCTEST_METRICS_SLOW"), "%d:%d", &slow, &slow_ms) == 2);
    }
    /* every rank runs as many: the all-reduce carries whether each would go on (its
     * clock), and all stop when one would */
    for (;;) {
        sharc_status_t st;

        memset(ar, 0, AR_COUNT * sizeof(*ar));
        ar[0] = now_s() < until ? 1.0f : 0.0f;
        st = sharc_allreduce(ar, ar, AR_COUNT, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
        CHECK(st == SHARC_OK);
        if (st != SHARC_OK || ar[0] < (float)nranks) {
            break;
        }
        usleep(20000 + (me == slow ? (useconds_t)slow_ms * 1000 : 0));
    }
}

int main(void)
{
    float *ar = calloc(AR_COUNT, sizeof(float)), *ag_in = calloc(AG_COUNT, sizeof(float)), *ag;
    int *sbuf = calloc(P2P_COUNT, sizeof(int)), *rbuf = calloc(P2P_COUNT, sizeof(int));
    const char *out = getenv("SHARCTEST_METRICS_OUT"), *hold = getenv("SHARCTEST_METRICS_HOLD");
    sharc_context_h ctx;
    sharc_comm_h comm;
    char *text;

    port = getenv("SHARCTEST_METRICS_PORT") != NULL ? atoi(getenv("SHARCTEST_METRICS_PORT")) : 0;
    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    CHECK(check_failures == 0 && sharc_comm_create(ctx, NULL, &comm) == SHARC_OK);
    if (check_failures != 0) {
        return check_result("test_metrics");
    }
    me = sharc_comm_rank(comm);
    nranks = sharc_comm_size(comm);
    port += port > 0 ? sharc_comm_local_rank(comm) : 0;
    ag = calloc((size_t)AG_COUNT * (size_t)nranks, sizeof(float));
    if (getenv("SHARCTEST_METRICS_LATE") != NULL) {
        int late = -1;
        double secs = 0;

        CHECK(sscanf(getenv("SHARCTEST_METRICS_LATE"), "%d:%lf", &late, &secs) == 2);
        if (late == me) {
            usleep((useconds_t)(secs * 1e6));
        }
    }
    for (int i = 0; i < AR_TIMES; i++) {
        CHECK(sharc_allreduce(ar, ar, AR_COUNT, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL) ==
              SHARC_OK);
    }
    for (int i = 0; i < AG_TIMES; i++) {
        CHECK(sharc_allgather(ag_in, ag, AG_COUNT, SHARC_DTYPE_F32, comm, NULL) == SHARC_OK);
    }
    for (int i = 0; i < P2P_TIMES && nranks > 1; i++) {
        sharc_request_h r;

        CHECK(sharc_recv(rbuf, P2P_COUNT, SHARC_DTYPE_I32, (me + nranks - 1) % nranks, 3, comm,
                         &r) == SHARC_OK);
        CHECK(sharc_send(sbuf, P2P_COUNT, SHARC_DTYPE_I32, (me + 1) % nranks, 3, comm, NULL) ==
              SHARC_OK);
        CHECK(sharc_request_wait(r) == SHARC_OK);
        sharc_request_free(r);
    }
    if (port > 0) {
        text = scrape();
        if (text != NULL) {
            check_counts(text, "first scrape");
            if (out != NULL) {
                char path[4096];
                FILE *f;

                snprintf(path, sizeof(path), "%s/scrape.r%d.prom", out, me);
                f = fopen(path, "w");
                CHECK(f != NULL && fputs(text, f) >= 0 && fclose(f) == 0);
            }
        }
        free(text);
        if (me == 0) {
            bad_requests();
            text = scrape();
            if (text != NULL) {
                check_counts(text, "after the bad requests");
            }
            free(text);
        }
    }
    if (hold != NULL) { /* a Prometheus scrapes meanwhile */
        hold_on(comm, ar, atof(hold));
    }
    CHECK(sharc_barrier(comm, NULL) == SHARC_OK); /* (every rank scraped before any ends) */
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    if (check_failures == 0) {
        printf("rank %d: metrics ok\n", me);
    }
    free(ar);
    free(ag_in);
    free(ag);
    free(sbuf);
    free(rbuf);
    return check_result("test_metrics");
}
