/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_p2p.c: one rank of the multi-rank test of the point-to-point calls (public API only):
 * a ring exchange of every dtype at counts 0 .. 1M + 3 (eager and rendezvous on every
 * transport), ping-pong, matching (test_p2p_match.c), a message too long for its receive,
 * zero-size messages, 1000 requests in flight, sends to self, groups, and bad arguments
 * refused on the calling rank. SHARCTEST_P2P_CRASH=R: rank R dies while the
 * others wait in receives, which must fail within 2 s naming it; SHARCTEST_P2P_TIMEOUT=1: a
 * receive nobody sends to ends at SHARC_TIMEOUT.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../elem.h"
#include "test_p2p.h"

int check_failures;

int nranks, me;

/* Element i of message @p seq with @p tag from rank @p src: a small integer, exact in every
 * dtype (u8 and the 16-bit floats included). */
double value(int src, int tag, int seq, size_t i)
{
    return (double)((src * 13 + tag * 5 + seq * 3 + (int)(i % 89)) % 97);
}

void fill(void *buf, sharc_dtype_t dt, size_t n, int src, int tag, int seq)
{
    for (size_t i = 0; i < n; i++) {
        elem_put(buf, dt, i, value(src, tag, seq, i));
    }
}

/* Elements of @p buf that are not message @p seq with @p tag from @p src. */
size_t wrong(const void *buf, sharc_dtype_t dt, size_t n, int src, int tag, int seq)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; i++) {
        bad += elem_get(buf, dt, i) != value(src, tag, seq, i);
    }
    return bad;
}

/* SHARCTEST_MEM_ALLOC=1: message buffers come from sharc_mem_alloc (shm maps them, verbs
 * reads them zero-copy) */
sharc_context_h shared_ctx;

void *alloc_bytes(size_t bytes)
{
    void *p = NULL;

    if (shared_ctx != NULL) {
        CHECK(sharc_mem_alloc(shared_ctx, bytes > 0 ? bytes : 1, &p) == SHARC_OK);
    } else {
        p = malloc(bytes > 0 ? bytes : 1);
    }
    CHECK(p != NULL);
    return p;
}

void free_bytes(void *p)
{
    if (shared_ctx != NULL) {
        CHECK(sharc_mem_free(shared_ctx, p) == SHARC_OK);
    } else {
        free(p);
    }
}

/* A receive's request completed fine from @p src with @p tag and @p count elements. */
void check_info(sharc_request_h req, int src, int tag, size_t count, const char *what)
{
    sharc_recv_info_t info = {-2, -2, 0, 0};
    sharc_status_t st = sharc_request_recv_info(req, &info);

    CHECK_MSG(st == SHARC_OK, "%s: recv_info: %s", what, sharc_status_string(st));
    CHECK_MSG(info.source == src && info.tag == tag && info.count == count,
              "%s: received from %d with tag %d, %zu elements; expected %d, %d, %zu", what,
              info.source, info.tag, info.count, src, tag, count);
}

/* Each rank sends to the next and receives from the previous one (receive posted first). */
static void run_ring(sharc_comm_h comm, sharc_dtype_t dt, size_t count)
{
    int right = (me + 1) % nranks, left = (me + nranks - 1) % nranks, tag = (int)(count % 1000);
    size_t bytes = count * sharc_dtype_size(dt);
    char *sbuf = alloc_bytes(bytes), *rbuf = alloc_bytes(bytes + 64);
    sharc_request_h rreq, sreq;
    char what[96];

    snprintf(what, sizeof(what), "ring %s %zu", sharc_dtype_name(dt), count);
    fill(sbuf, dt, count, me, tag, 0);
    memset(rbuf, 0xee, bytes + 64);
    CHECK(sharc_recv(rbuf, count, dt, left, tag, comm, &rreq) == SHARC_OK);
    CHECK(sharc_send(sbuf, count, dt, right, tag, comm, &sreq) == SHARC_OK);
    CHECK_MSG(sharc_request_wait(sreq) == SHARC_OK, "%s: send", what);
    CHECK_MSG(sharc_request_wait(rreq) == SHARC_OK, "%s: recv", what);
    CHECK_MSG(wrong(rbuf, dt, count, left, tag, 0) == 0, "%s: wrong data", what);
    CHECK_MSG((unsigned char)rbuf[bytes] == 0xee && (unsigned char)rbuf[bytes + 63] == 0xee,
              "%s: wrote past the message", what);
    check_info(rreq, left, tag, count, what);
    sharc_request_free(rreq);
    sharc_request_free(sreq);
    free_bytes(sbuf);
    free_bytes(rbuf);
}

/* Rank 0 and the last rank bounce a message back and forth with blocking calls. */
static void run_pingpong(sharc_comm_h comm, size_t count)
{
    int peer = (me == 0) ? nranks - 1 : 0;
    float *buf = alloc_bytes(count * sizeof(float));

    if (nranks < 2 || (me != 0 && me != nranks - 1)) {
        free_bytes(buf);
        return;
    }
    for (int round = 0; round < 5; round++) {
        if (me == 0) {
            fill(buf, SHARC_DTYPE_F32, count, me, 1, round);
            CHECK(sharc_send(buf, count, SHARC_DTYPE_F32, peer, 1, comm, NULL) == SHARC_OK);
            CHECK(sharc_recv(buf, count, SHARC_DTYPE_F32, peer, 2, comm, NULL) == SHARC_OK);
            CHECK_MSG(wrong(buf, SHARC_DTYPE_F32, count, 0, 1, round) == 0,
                      "ping-pong %zu round %d", count, round);
        } else {
            CHECK(sharc_recv(buf, count, SHARC_DTYPE_F32, peer, 1, comm, NULL) == SHARC_OK);
            CHECK(sharc_send(buf, count, SHARC_DTYPE_F32, peer, 2, comm, NULL) == SHARC_OK);
        }
    }
    free_bytes(buf);
}

/*
 * A message longer than its receive fails that receive only, with SHARC_ERR_INVALID (small
 * and large messages); a shorter one fills the start of the buffer; the communicator goes on.
 */
static void run_truncation(sharc_comm_h comm)
{
    size_t sizes[2] = {100, 300000};
    float *buf = alloc_bytes(sizes[1] * 4);

    if (nranks < 2 || me > 1) {
        free_bytes(buf);
        return;
    }
    for (int k = 0; k < 2; k++) {
        if (me == 0) {
            fill(buf, SHARC_DTYPE_F32, sizes[k], 0, 21, k);
            CHECK(sharc_send(buf, sizes[k], SHARC_DTYPE_F32, 1, 21, comm, NULL) == SHARC_OK);
            CHECK(sharc_send(buf, sizes[k] / 2, SHARC_DTYPE_F32, 1, 22, comm, NULL) == SHARC_OK);
        } else {
            sharc_status_t st = sharc_recv(buf, sizes[k] / 2, SHARC_DTYPE_F32, 0, 21, comm, NULL);
            sharc_request_h req;

            CHECK_MSG(st == SHARC_ERR_INVALID, "a %zu-element message into %zu elements: %s",
                      sizes[k], sizes[k] / 2, sharc_status_string(st));
            CHECK(sharc_recv(buf, sizes[k], SHARC_DTYPE_F32, 0, 22, comm, &req) == SHARC_OK);
            CHECK(sharc_request_wait(req) == SHARC_OK);
            check_info(req, 0, 22, sizes[k] / 2, "a shorter message");
            CHECK(wrong(buf, SHARC_DTYPE_F32, sizes[k] / 2, 0, 21, k) == 0);
            sharc_request_free(req);
        }
    }
    free_bytes(buf);
}

/* Messages of no data (NULL buffers), to the next rank and to self. */
static void run_zero(sharc_comm_h comm)
{
    int right = (me + 1) % nranks, left = (me + nranks - 1) % nranks;
    sharc_request_h req[4] = {NULL}; /* (a failed post leaves its slot NULL) */

    CHECK(sharc_recv(NULL, 0, SHARC_DTYPE_F64, left, 5, comm, &req[0]) == SHARC_OK);
    CHECK(sharc_recv(NULL, 0, SHARC_DTYPE_U8, me, 6, comm, &req[1]) == SHARC_OK);
    CHECK(sharc_send(NULL, 0, SHARC_DTYPE_F64, right, 5, comm, &req[2]) == SHARC_OK);
    CHECK(sharc_send(NULL, 0, SHARC_DTYPE_U8, me, 6, comm, &req[3]) == SHARC_OK);
    for (int k = 3; k >= 0; k--) {
        CHECK(sharc_request_wait(req[k]) == SHARC_OK);
    }
    check_info(req[0], left, 5, 0, "zero size");
    check_info(req[1], me, 6, 0, "zero size to self");
    for (int k = 0; k < 4; k++) {
        sharc_request_free(req[k]);
    }
}

/* 1000 sends and 1000 receives in flight at once, around the ring, waited for in an order
 * of their own (several tags, messages of 1..40 elements). */
static void run_many(sharc_comm_h comm)
{
    enum { N = 1000 };
    int right = (me + 1) % nranks, left = (me + nranks - 1) % nranks;
    sharc_request_h *rreq = malloc(sizeof(*rreq) * N), *sreq = malloc(sizeof(*sreq) * N);
    int64_t *sbuf = malloc(sizeof(int64_t) * N * 40), *rbuf = malloc(sizeof(int64_t) * N * 40);
    size_t bad = 0;

    for (int i = 0; i < N; i++) {
        CHECK(sharc_recv(rbuf + i * 40, 40, SHARC_DTYPE_I64, left, i % 7, comm, &rreq[i]) ==
              SHARC_OK);
    }
    for (int i = 0; i < N; i++) {
        fill(sbuf + i * 40, SHARC_DTYPE_I64, 1 + i % 40, me, i % 7, i);
        CHECK(sharc_send(sbuf + i * 40, 1 + i % 40, SHARC_DTYPE_I64, right, i % 7, comm,
                         &sreq[i]) == SHARC_OK);
    }
    for (int i = 0; i < N; i++) {
        int j = (i * 397) % N; /* every request once, out of order */

        CHECK(sharc_request_wait(rreq[j]) == SHARC_OK);
        CHECK(sharc_request_wait(sreq[N - 1 - j]) == SHARC_OK);
    }
    for (int i = 0; i < N; i++) {
        bad += wrong(rbuf + i * 40, SHARC_DTYPE_I64, 1 + i % 40, left, i % 7, i);
        sharc_request_free(rreq[i]);
        sharc_request_free(sreq[i]);
    }
    CHECK_MSG(bad == 0, "1000 in flight: %zu wrong elements", bad);
    free(rreq);
    free(sreq);
    free(sbuf);
    free(rbuf);
}

/* Sends to self: the receive posted first (a blocking send), or after (a request). */
static void run_self(sharc_comm_h comm)
{
    size_t sizes[2] = {9, 200000};
    uint8_t *s = alloc_bytes(sizes[1]), *r = alloc_bytes(sizes[1]);

    for (int k = 0; k < 2; k++) {
        sharc_request_h rreq, sreq;

        fill(s, SHARC_DTYPE_U8, sizes[k], me, 30, k);
        CHECK(sharc_recv(r, sizes[k], SHARC_DTYPE_U8, me, 30, comm, &rreq) == SHARC_OK);
        CHECK(sharc_send(s, sizes[k], SHARC_DTYPE_U8, me, 30, comm, NULL) == SHARC_OK);
        CHECK(sharc_request_wait(rreq) == SHARC_OK);
        CHECK_MSG(wrong(r, SHARC_DTYPE_U8, sizes[k], me, 30, k) == 0, "self, receive first");
        sharc_request_free(rreq);
        memset(r, 0, sizes[k]);
        CHECK(sharc_send(s, sizes[k], SHARC_DTYPE_U8, me, 31, comm, &sreq) == SHARC_OK);
        CHECK(sharc_recv(r, sizes[k], SHARC_DTYPE_U8, SHARC_ANY_SOURCE, 31, comm, &rreq) ==
              SHARC_OK);
        CHECK(sharc_request_wait(rreq) == SHARC_OK);
        CHECK(sharc_request_wait(sreq) == SHARC_OK);
        CHECK_MSG(wrong(r, SHARC_DTYPE_U8, sizes[k], me, 30, k) == 0, "self, send first");
        check_info(rreq, me, 31, sizes[k], "self from any rank");
        sharc_request_free(rreq);
        sharc_request_free(sreq);
    }
    free_bytes(s);
    free_bytes(r);
}

/* A group on host buffers: posted at once, completed after the end; what a group refuses. */
static void run_group(sharc_comm_h comm)
{
    int right = (me + 1) % nranks, left = (me + nranks - 1) % nranks;
    double s[3] = {me, me + 0.5, me + 0.25}, r[3] = {0};
    sharc_request_h req[2] = {NULL};

    CHECK(sharc_p2p_group_end(comm) == SHARC_ERR_INVALID); /* none open */
    CHECK(sharc_p2p_group_start(comm) == SHARC_OK);
    CHECK(sharc_p2p_group_start(comm) == SHARC_OK); /* nested */
    CHECK(sharc_send(s, 3, SHARC_DTYPE_F64, right, 50, comm, &req[0]) == SHARC_OK);
    CHECK(sharc_recv(r, 3, SHARC_DTYPE_F64, left, 50, comm, &req[1]) == SHARC_OK);
    CHECK(sharc_send(s, 3, SHARC_DTYPE_F64, right, 50, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_barrier(comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_p2p_group_end(comm) == SHARC_OK);
    CHECK(sharc_p2p_group_end(comm) == SHARC_OK);
    CHECK(sharc_request_wait(req[1]) == SHARC_OK);
    CHECK(sharc_request_wait(req[0]) == SHARC_OK);
    CHECK_MSG(r[0] == left && r[1] == left + 0.5 && r[2] == left + 0.25, "group: %g %g %g", r[0],
              r[1], r[2]);
    sharc_request_free(req[0]);
    sharc_request_free(req[1]);
}

/* Bad arguments fail on the calling rank alone, before anything is sent. */
static void run_bad_args(sharc_comm_h comm)
{
    float v[4] = {0};
    sharc_recv_info_t info;
    sharc_request_h req;

    CHECK(sharc_send(v, 4, SHARC_DTYPE_F32, nranks, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_send(v, 4, SHARC_DTYPE_F32, -1, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_send(v, 4, SHARC_DTYPE_F32, SHARC_ANY_SOURCE, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_recv(v, 4, SHARC_DTYPE_F32, nranks, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_recv(v, 4, SHARC_DTYPE_F32, -2, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_send(NULL, 4, SHARC_DTYPE_F32, 0, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_recv(NULL, 1, SHARC_DTYPE_U8, 0, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_send(v, 4, (sharc_dtype_t)99, 0, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_recv(v, 4, SHARC_DTYPE_LAST, 0, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_send(v, 4, SHARC_DTYPE_F32, 0, -1, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_recv(v, 4, SHARC_DTYPE_F32, 0, -7, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_send(v, SIZE_MAX / 2, SHARC_DTYPE_F32, 0, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_send(v, 4, SHARC_DTYPE_F32, 0, 0, NULL, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_request_recv_info(NULL, &info) == SHARC_ERR_INVALID);
    /* the largest tag is a tag; recv_info asks of receives only */
    CHECK(sharc_send(v, 4, SHARC_DTYPE_F32, me, SHARC_TAG_MAX, comm, &req) == SHARC_OK);
    CHECK(sharc_request_recv_info(req, &info) == SHARC_ERR_INVALID);
    CHECK(sharc_recv(v, 4, SHARC_DTYPE_F32, me, SHARC_TAG_MAX, comm, NULL) == SHARC_OK);
    CHECK(sharc_request_wait(req) == SHARC_OK);
    sharc_request_free(req);
    CHECK(sharc_p2p_group_start(NULL) == SHARC_ERR_INVALID);
}

/* Rank @p victim dies while the others wait: rank 0 (or 1) in a receive from it, the rest in
 * receives from any rank. They fail with SHARC_ERR_REMOTE within 2 s, and say after how long. */
static int run_crash(sharc_comm_h comm, int victim)
{
    struct timespec t0, t1;
    float v[1024];
    sharc_status_t st;
    double s;

    CHECK(sharc_barrier(comm, NULL) == SHARC_OK);
    if (me == victim) {
        usleep(200 * 1000); /* the others are in their receives */
        fprintf(stderr, "rank %d: crashing on purpose\n", me);
        _exit(3);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = sharc_recv(v, 1024, SHARC_DTYPE_F32,
                    (me == (victim == 0 ? 1 : 0)) ? victim : SHARC_ANY_SOURCE, 3, comm, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr, "rank %d: recv after rank %d died: %s after %.2f s\n", me, victim,
            sharc_status_string(st), s);
    st = sharc_send(v, 1, SHARC_DTYPE_F32, me, 4, comm, NULL);
    fprintf(stderr, "rank %d: the next send: %s\n", me, sharc_status_string(st));
    return s < 2.0 ? 1 : 2; /* the job fails either way; the script reads the times */
}

/* A receive nobody sends to: SHARC_TIMEOUT ends its wait with SHARC_ERR_TIMEOUT (the job
 * fails; the script reads the message and the time). */
static int run_timeout(sharc_comm_h comm)
{
    float v;
    sharc_status_t st = sharc_recv(&v, 1, SHARC_DTYPE_F32, SHARC_ANY_SOURCE, 77, comm, NULL);

    fprintf(stderr, "rank %d: a receive nobody sends to: %s\n", me, sharc_status_string(st));
    return 1;
}

int main(int argc, char **argv)
{
    static const size_t counts[] = {0, 1, 7, 4097};
    size_t big = (argc > 1) ? strtoul(argv[1], NULL, 10) : (1u << 20) + 3;
    sharc_context_h ctx;
    sharc_comm_h comm;

    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    CHECK(check_failures == 0 && sharc_comm_create(ctx, NULL, &comm) == SHARC_OK);
    if (check_failures != 0) {
        return check_result("test_p2p");
    }
    nranks = sharc_comm_size(comm);
    me = sharc_comm_rank(comm);
    if (getenv("SHARCTEST_MEM_ALLOC") != NULL) {
        shared_ctx = ctx;
    }
    if (getenv("SHARCTEST_P2P_TIMEOUT") != NULL) {
        return run_timeout(comm);
    }
    if (getenv("SHARCTEST_P2P_CRASH") != NULL) {
        return run_crash(comm, atoi(getenv("SHARCTEST_P2P_CRASH")));
    }
    for (int dt = 0; dt < SHARC_DTYPE_LAST; dt++) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            run_ring(comm, (sharc_dtype_t)dt, counts[c]);
        }
    }
    run_ring(comm, SHARC_DTYPE_F32, big);
    run_ring(comm, SHARC_DTYPE_BF16, big);
    run_pingpong(comm, 1);
    run_pingpong(comm, big);
    run_tags(comm);
    run_any_source(comm);
    run_any_order(comm);
    run_truncation(comm);
    run_zero(comm);
    run_many(comm);
    run_self(comm);
    run_unordered(comm);
    run_group(comm);
    run_bad_args(comm);
    CHECK(sharc_barrier(comm, NULL) == SHARC_OK);
    printf("rank %d of %d: point-to-point %s\n", me, nranks, check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_p2p");
}
