/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_flight.c: the flight recorder and what it tells of a hang, through the public API
 * (tests/coll/flight.sh checks the dumps and the logs).
 *
 *   test_flight dump DIR   10 all-reduces, 3 all-gathers, a broadcast, then sharc_comm_dump
 *                          to DIR; a dump to a directory that does not exist fails with
 *                          SHARC_ERR_IO, one with no directory at all with SHARC_ERR_INVALID
 *   test_flight skip R     rank R skips the 4th of 8 all-reduces (of SHARCTEST_LOOP, the
 *                          one in its middle), then idles for SHARCTEST_IDLE seconds
 *                          (default 20) and dumps on request (SHARC_FLIGHT_DIR); the others'
 *                          last all-reduce hangs until SHARC_TIMEOUT, which fails it (they
 *                          dump on the timeout). Rank R prints the wall-clock time at which
 *                          it moved past its last all-reduce (the stall's start), the others
 *                          the time their last one failed, for tests/net/net_stall.sh.
 *                          SHARCTEST_LATE=Q:S: rank Q posts its last all-reduce S seconds late;
 *                          SHARCTEST_POLL=Q:1: rank Q waits for it with sharc_request_test.
 *   test_flight drain      the last rank posts an all-reduce and destroys its communicator,
 *                          whose destroy completes it; rank 0 posts its own 3 s later. The
 *                          waiting destroy keeps its rank's heartbeats and verdicts going
 *                          (flight.sh sets them short): both complete, nobody is named gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../check.h"

static sharc_comm_h make_comm(sharc_context_h *ctx_p)
{
    sharc_comm_h comm = NULL;

    CHECK(sharc_context_create(NULL, ctx_p) == SHARC_OK);
    CHECK(sharc_comm_create(*ctx_p, NULL, &comm) == SHARC_OK);
    return comm;
}

static void test_dump(const char *dir)
{
    sharc_context_h ctx;
    sharc_comm_h comm = make_comm(&ctx);
    int n = sharc_comm_size(comm);
    float x[64], *all = calloc((size_t)n * 64, sizeof(float));

    for (int i = 0; i < 64; i++) {
        x[i] = (float)i;
    }
    for (int i = 0; i < 10; i++) {
        CHECK(sharc_allreduce(x, x, 64, SHARC_DTYPE_F32, SHARC_OP_MAX, comm, NULL) == SHARC_OK);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(sharc_allgather(x, all, 64, SHARC_DTYPE_F32, comm, NULL) == SHARC_OK);
    }
    CHECK(sharc_broadcast(x, x, 7, SHARC_DTYPE_F32, 0, comm, NULL) == SHARC_OK);
    CHECK(sharc_comm_dump(comm, dir) == SHARC_OK);
    CHECK(sharc_comm_dump(comm, "/nonexistent/sharc-flight") == SHARC_ERR_IO);
    if (getenv("SHARC_FLIGHT_DIR") == NULL) {
        CHECK(sharc_comm_dump(comm, NULL) == SHARC_ERR_INVALID);
    }
    CHECK(sharc_comm_dump(NULL, dir) == SHARC_ERR_INVALID);
    free(all);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
}

/* The wall clock (the same on every node of one machine; namespace nodes share it). */
static double wall_now(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* The value of "R:V" in the variable @p name for rank @p me, else @p dflt. */
static int rank_knob(const char *name, int me, int dflt)
{
    const char *v = getenv(name);
    int r, val;

    return (v != NULL && sscanf(v, "%d:%d", &r, &val) == 2 && r == me) ? val : dflt;
}

/* The last all-reduce of a rank that waits by polling sharc_request_test, as a program that
 * computes between its tests does: no SHARC_TIMEOUT ends it, only its communicator's failure. */
static sharc_status_t allreduce_polled(float *x, sharc_comm_h comm)
{
    sharc_request_h req;
    sharc_status_t status = sharc_allreduce(x, x, 256, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, &req);

    if (status != SHARC_OK) {
        return status; /* (refused: no request) */
    }
    while ((status = sharc_request_test(req)) == SHARC_INPROGRESS) {
        usleep(1000);
    }
    sharc_request_free(req);
    return status;
}

static void test_skip(int skipper)
{
    sharc_context_h ctx;
    sharc_comm_h comm = make_comm(&ctx);
    int me = sharc_comm_rank(comm);
    const char *idle = getenv("SHARCTEST_IDLE"), *loop = getenv("SHARCTEST_LOOP");
    int n = loop ? atoi(loop) : 8, late = rank_knob("SHARCTEST_LATE", me, 0);
    int polled = rank_knob("SHARCTEST_POLL", me, 0), i;
    float x[256];
    sharc_status_t status = SHARC_OK;

    for (i = 0; i < 256; i++) {
        x[i] = 1.0f;
    }
    CHECK(n >= 2);
    for (i = 0; i < n && status == SHARC_OK; i++) {
        if (me == skipper && i == n / 2 - 1) {
            continue; /* the skipped call: every later one of this rank is one behind */
        }
        if (i == n - 1 && late > 0) {
            sleep((unsigned)late); /* a rank that posts the stalled collective later */
        }
        status = (i == n - 1 && polled)
                     ? allreduce_polled(x, comm)
                     : sharc_allreduce(x, x, 256, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
    }
    if (me == skipper) {
        CHECK(status == SHARC_OK); /* its n - 1 matched the others' first n - 1 */
        printf("rank %d: moved past its last all-reduce at %.3f\n", me, wall_now());
        fflush(stdout);
        sleep(idle ? (unsigned)atoi(idle) : 20u);
        CHECK(sharc_comm_dump(comm, NULL) == SHARC_OK);
        printf("rank %d: skipped one, idled, dumped\n", me);
    } else {
        /* a polling rank's ends when the others give up and leave */
        CHECK_MSG(i == n && (status == SHARC_ERR_TIMEOUT || (polled && status == SHARC_ERR_REMOTE)),
                  "rank %d: all-reduce %d of %d ended with %s", me, i, n,
                  sharc_status_string(status));
        printf("rank %d: the last all-reduce failed (%s) at %.3f\n", me,
               sharc_status_string(status), wall_now());
    }
    fflush(stdout);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
}

static void test_drain(void)
{
    sharc_context_h ctx;
    sharc_comm_h comm = make_comm(&ctx);
    int me = sharc_comm_rank(comm), n = sharc_comm_size(comm);
    sharc_request_h req;
    float x[64];

    for (int i = 0; i < 64; i++) {
        x[i] = 1.0f;
    }
    if (me == n - 1) {
        CHECK(sharc_allreduce(x, x, 64, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, &req) == SHARC_OK);
        sharc_comm_destroy(comm); /* completes the all-reduce, which waits for rank 0 */
        CHECK_MSG(x[0] == (float)n, "rank %d: the drained all-reduce gave %g", me, x[0]);
    } else {
        if (me == 0) {
            sleep(3);
        }
        CHECK(sharc_allreduce(x, x, 64, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL) == SHARC_OK);
        CHECK_MSG(x[0] == (float)n, "rank %d: the all-reduce gave %g", me, x[0]);
        sharc_comm_destroy(comm);
    }
    printf("rank %d: all-reduce complete\n", me);
    sharc_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0) {
        test_dump(argv[2]);
    } else if (argc == 3 && strcmp(argv[1], "skip") == 0) {
        test_skip(atoi(argv[2]));
    } else if (argc == 2 && strcmp(argv[1], "drain") == 0) {
        test_drain();
    } else {
        fprintf(stderr, "usage: test_flight dump DIR | skip RANK | drain\n");
        return 2;
    }
    return check_result("test_flight");
}
