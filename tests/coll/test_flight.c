/*
 * test_flight.c: the flight recorder and what it tells of a hang, through the public API
 * (tests/coll/flight.sh checks the dumps and the logs).
 *
 *   test_flight dump DIR   10 all-reduces, 3 all-gathers, a broadcast, then sharc_comm_dump
 *                          to DIR; a dump to a directory that does not exist fails with
 *                          SHARC_ERR_IO, one with no directory at all with SHARC_ERR_INVALID
 *   test_flight skip R     rank R skips the 4th of 8 all-reduces, then idles for
 *                          SHARCTEST_IDLE seconds (default 20) and dumps on request
 *                          (SHARC_FLIGHT_DIR); the others' 8th all-reduce hangs until
 *                          SHARC_TIMEOUT, which fails it (they dump on the timeout)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void test_skip(int skipper)
{
    sharc_context_h ctx;
    sharc_comm_h comm = make_comm(&ctx);
    int me = sharc_comm_rank(comm);
    const char *idle = getenv("SHARCTEST_IDLE");
    float x[256];
    sharc_status_t status = SHARC_OK;

    for (int i = 0; i < 256; i++) {
        x[i] = 1.0f;
    }
    for (int i = 0; i < 8 && status == SHARC_OK; i++) {
        if (me == skipper && i == 3) {
            continue; /* the skipped call: every later one of this rank is one behind */
        }
        status = sharc_allreduce(x, x, 256, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
    }
    if (me == skipper) {
        CHECK(status == SHARC_OK); /* its 7 matched the others' first 7 */
        sleep(idle ? (unsigned)atoi(idle) : 20u);
        CHECK(sharc_comm_dump(comm, NULL) == SHARC_OK);
        printf("rank %d: skipped one, idled, dumped\n", me);
    } else {
        CHECK_MSG(status == SHARC_ERR_TIMEOUT, "rank %d: the 8th all-reduce ended with %s", me,
                  sharc_status_string(status));
        printf("rank %d: the 8th all-reduce timed out\n", me);
    }
    fflush(stdout);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0) {
        test_dump(argv[2]);
    } else if (argc == 3 && strcmp(argv[1], "skip") == 0) {
        test_skip(atoi(argv[2]));
    } else {
        fprintf(stderr, "usage: test_flight dump DIR | skip RANK\n");
        return 2;
    }
    return check_result("test_flight");
}
