/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_coll_lanes.c: the collective engine's completion lanes and posts handed to a running
 * progress pass (internal API: coll/api.h, coll/coll.h), which the sharding engine's
 * gathers and reductions go through.
 *
 *   test_coll_lanes          one process: a communicator's collective state without a
 *                            transport, and tasks of a test algorithm that finish when the
 *                            test says so: in one lane a finished task waits for those
 *                            posted before it, lanes pass each other, a bad lane is refused;
 *                            with a progress thread, a post during a pass is handed over
 *                            (not waited for) and queued in order when the pass ends
 *   test_coll_lanes ranks    between ranks (a progress thread from SHARC_PROGRESS_THREAD):
 *                            large reduce-scatters and small all-reduces posted one after
 *                            another in two lanes, many while a pass runs: results right
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../../coll/coll.h"
#include "../../comm/comm.h"
#include "../../comm/context.h"
#include "../../base/util.h"
#include "../check.h"

#define BIG (1u << 20) /* floats per rank of a reduce-scatter: rendezvous, many chunks */

static int me, nranks;

/* ---- one process: a test algorithm --------------------------------------------------- */

/* Per task (by its place in these arrays, the task's root): finish when finish[i] is set;
 * the first call of a slow one sleeps 200 ms in the pass, saying so in slow_running. */
static int finish[8], slow[8], slow_running;

static sharc_status_t fake_init(sharc_coll_task_t *task)
{
    (void)task;
    return SHARC_OK;
}

static sharc_status_t fake_progress(sharc_coll_task_t *task)
{
    int i = task->args.root;

    if (slow[i]) {
        slow[i] = 0;
        __atomic_store_n(&slow_running, 1, __ATOMIC_SEQ_CST);
        usleep(200000);
    }
    return __atomic_load_n(&finish[i], __ATOMIC_SEQ_CST) ? SHARC_OK : SHARC_INPROGRESS;
}

static const sharc_coll_algo_t fake_algo = {
    .info = {.name = "fake"}, .init = fake_init, .progress = fake_progress};

static sharc_coll_task_t *fake_task(sharc_coll_comm_t *cc, int i, int lane)
{
    sharc_coll_args_t args = {.type = SHARC_COLL_BARRIER, .root = i};
    sharc_coll_task_t *t = sharc_coll_task_new(cc, &args, lane);

    CHECK(t != NULL);
    t->algo = &fake_algo;
    return t;
}

/* Post task @p i in @p lane. */
static sharc_coll_task_t *post(sharc_coll_comm_t *cc, int i, int lane)
{
    sharc_coll_task_t *t = fake_task(cc, i, lane);

    CHECK(sharc_coll_task_post(t) == SHARC_OK);
    return t;
}

static sharc_coll_task_state_t state_of(const sharc_coll_task_t *t)
{
    return __atomic_load_n(&t->state, __ATOMIC_SEQ_CST);
}

static sharc_coll_comm_t *make_cc(sharc_config_h config)
{
    sharc_coll_comm_params_t params = {.rank = 0, .size = 1, .cfg = sharc_config_parsed(config)};
    sharc_coll_comm_t *cc = NULL;

    CHECK(sharc_coll_comm_create(&params, &cc) == SHARC_OK);
    return cc;
}

static void test_order(sharc_config_h config)
{
    sharc_coll_comm_t *cc;
    sharc_coll_task_t *a, *b, *c, *d;

    memset(finish, 0, sizeof(finish));
    CHECK(sharc_config_set(config, "PROGRESS_THREAD", "no") == SHARC_OK);
    cc = make_cc(config);
    a = post(cc, 0, 1); /* lane 1 */
    b = post(cc, 1, 0); /* lane 0 */
    c = post(cc, 2, 1); /* lane 1, after a */
    d = post(cc, 3, 0); /* lane 0, after b */
    finish[1] = finish[2] = finish[3] = 1;
    /* b and d (lane 0) pass a; c (lane 1) waits for a */
    CHECK(sharc_request_test(b) == SHARC_OK);
    CHECK(sharc_request_test(d) == SHARC_OK);
    CHECK(sharc_request_test(c) == SHARC_INPROGRESS);
    CHECK(sharc_request_test(a) == SHARC_INPROGRESS);
    finish[0] = 1;
    CHECK(sharc_request_test(c) == SHARC_OK); /* a and then c */
    CHECK(sharc_request_test(a) == SHARC_OK);
    CHECK(a->seq < b->seq && b->seq < c->seq && c->seq < d->seq); /* sequence: posting order */
    /* one lane: a finished task waits for the one before it */
    memset(finish, 0, sizeof(finish));
    sharc_request_free(a);
    sharc_request_free(b);
    sharc_request_free(c);
    sharc_request_free(d);
    a = post(cc, 0, 2);
    b = post(cc, 1, 2);
    finish[1] = 1;
    CHECK(sharc_request_test(b) == SHARC_INPROGRESS);
    finish[0] = 1;
    CHECK(sharc_request_test(b) == SHARC_OK && sharc_request_test(a) == SHARC_OK);
    sharc_request_free(a);
    sharc_request_free(b);
    sharc_coll_comm_quiesce(cc);
    sharc_coll_comm_destroy(cc);
}

/* With a progress thread: a post while a pass runs is handed over and queued as it ends. */
static void test_hand_over_pass(sharc_config_h config)
{
    sharc_coll_comm_t *cc;
    sharc_coll_task_t *a, *b, *c;
    double t0;

    memset(finish, 0, sizeof(finish));
    CHECK(sharc_config_set(config, "PROGRESS_THREAD", "yes") == SHARC_OK);
    cc = make_cc(config);
    slow[0] = 1;
    slow_running = 0;
    a = post(cc, 0, 0); /* the thread's next pass sleeps in it */
    while (!__atomic_load_n(&slow_running, __ATOMIC_SEQ_CST)) {
        usleep(1000);
    }
    t0 = sharc_time_now();
    b = fake_task(cc, 1, 1);
    c = fake_task(cc, 2, 0);
    CHECK(sharc_coll_task_post(b) == SHARC_OK);
    CHECK_MSG(state_of(b) == SHARC_COLL_TASK_HANDED, "a post during a pass was not handed over");
    CHECK(sharc_coll_task_post(c) == SHARC_OK && state_of(c) == SHARC_COLL_TASK_HANDED);
    CHECK_MSG(sharc_time_now() - t0 < 0.1, "handing over took %.3f s: it waited for the pass",
              sharc_time_now() - t0);
    finish[1] = finish[2] = 1;
    CHECK(sharc_request_wait(b) == SHARC_OK);         /* lane 1: passes a */
    CHECK(sharc_request_test(c) == SHARC_INPROGRESS); /* lane 0: behind a */
    CHECK(sharc_request_test(a) == SHARC_INPROGRESS);
    CHECK(a->seq < b->seq && b->seq < c->seq); /* queued in posting order */
    finish[0] = 1;
    CHECK(sharc_request_wait(c) == SHARC_OK && sharc_request_test(a) == SHARC_OK);
    sharc_request_free(a);
    sharc_request_free(b);
    sharc_request_free(c);
    sharc_coll_comm_quiesce(cc);
    sharc_coll_comm_destroy(cc);
}

static void test_bad_lane(sharc_config_h config)
{
    sharc_coll_comm_t *cc;
    sharc_coll_args_t bar = {.type = SHARC_COLL_BARRIER};

    CHECK(sharc_config_set(config, "PROGRESS_THREAD", "no") == SHARC_OK);
    cc = make_cc(config);
    CHECK(sharc_coll_post_lane(cc, &bar, SHARC_COLL_LANES, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_coll_post_lane(cc, &bar, -1, NULL) == SHARC_ERR_INVALID);
    sharc_coll_comm_quiesce(cc);
    sharc_coll_comm_destroy(cc);
}

/* ---- between ranks ---------------------------------------------------------------------- */

/* Posts while a pass holds the lock: handed over, queued in posting order, results right. */
static void test_hand_over(sharc_comm_h comm)
{
    enum { ROUNDS = 40 };
    float *in = malloc(sizeof(float) * BIG * (size_t)nranks);
    float *out = malloc(sizeof(float) * BIG * ROUNDS / 8);
    double small[ROUNDS];
    sharc_request_h req[2 * ROUNDS];
    int n = 0;

    for (size_t i = 0; i < (size_t)BIG * (size_t)nranks; i++) {
        in[i] = (float)((i * 3 + (size_t)me) % 5);
    }
    for (int k = 0; k < ROUNDS; k++) {
        sharc_coll_args_t rs = {.type = SHARC_COLL_REDUCE_SCATTER,
                                .sendbuf = in,
                                .recvbuf = out + (size_t)k * (BIG / 8),
                                .count = BIG / 8,
                                .dtype = SHARC_DTYPE_F32,
                                .op = SHARC_OP_SUM};
        sharc_coll_args_t ar = {.type = SHARC_COLL_ALLREDUCE,
                                .sendbuf = &small[k],
                                .recvbuf = &small[k],
                                .count = 1,
                                .dtype = SHARC_DTYPE_F64,
                                .op = SHARC_OP_SUM};

        small[k] = me + k;
        CHECK(sharc_coll_post_lane(comm->coll, &rs, 1, &req[n++]) == SHARC_OK);
        CHECK(sharc_coll_post_lane(comm->coll, &ar, 0, &req[n++]) == SHARC_OK);
    }
    for (int i = 0; i < n; i++) {
        CHECK(sharc_request_wait(req[i]) == SHARC_OK);
        sharc_request_free(req[i]);
    }
    for (int k = 0; k < ROUNDS; k++) {
        CHECK_MSG(small[k] == (double)nranks * (nranks - 1) / 2 + (double)nranks * k,
                  "rank %d: all-reduce %d gave %g", me, k, small[k]);
        for (size_t i = 0; i < BIG / 8; i += 997) {
            size_t g = (size_t)me * (BIG / 8) + i;
            float want = 0;

            for (int r = 0; r < nranks; r++) {
                want += (float)((g * 3 + (size_t)r) % 5);
            }
            CHECK_MSG(out[(size_t)k * (BIG / 8) + i] == want, "rank %d: round %d element %zu", me,
                      k, i);
        }
    }
    free(in);
    free(out);
    printf("rank %d: hand-over ok\n", me);
}

int main(int argc, char **argv)
{
    sharc_config_h config = NULL;
    sharc_context_h ctx = NULL;
    sharc_comm_h comm = NULL;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        CHECK(sharc_config_create(SHARC_CONFIG_NO_ENV, &config) == SHARC_OK);
        test_order(config);
        test_hand_over_pass(config);
        test_bad_lane(config);
        sharc_config_destroy(config);
        printf("lanes ok\n");
        return check_result("test_coll_lanes");
    }
    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_coll_lanes: no communicator\n");
        return 1;
    }
    me = sharc_comm_rank(comm);
    nranks = sharc_comm_size(comm);
    test_hand_over(comm);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_coll_lanes");
}
