/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_trace.c: test_shard's steps with a sleeping "compute": the timeline trace's
 * (SHARC_SHARD_TRACE set by the caller; each step's statistics printed for
 * tests/shard/check_trace.py) and overlap's (with a progress thread, communication runs while
 * the caller computes).
 */
#include <stdio.h>
#include <unistd.h>

#include "test_shard.h"

/*
 * Steps for the timeline trace (SHARC_SHARD_TRACE set by the caller) with a short sleeping
 * compute; each step's statistics go to stdout as "stats RANK STEP EXPOSED_S GATHER_WAIT_S
 * DEPTH", which tests/shard/check_trace.py holds the trace's waits against.
 */
void test_trace(int autop, int steps, int max_unsharded)
{
    model_t m;
    sharc_shard_group_h g;
    sharc_shard_stats_t st;

    model_make(&m, 6, 0);
    g = make_group(&m, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks,
                   autop ? SHARC_SHARD_PREFETCH_AUTO : 1, max_unsharded);
    for (int step = 0; g != NULL && step < steps; step++) {
        run_step(g, &m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, step % 2 ? 300 : 0);
        CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        printf("stats %d %d %.9f %.9f %d\n", me, step, st.exposed_s, st.gather_wait_s,
               st.prefetch_depth);
    }
    sharc_shard_destroy(g); /* rank 0 writes the trace */
    model_free(&m);
    printf("rank %d: trace steps ok\n", me);
}

/* Overlap: with a progress thread, communication runs while the caller "computes" (sleeps). */
void test_overlap(void)
{
    sharc_shard_param_t p[4];
    char names[4][16];
    sharc_shard_params_t cfg = {.field_mask = SHARC_SHARD_PARAM_NUM_UNITS, .num_units = 4};
    sharc_shard_group_h g = NULL;
    sharc_shard_stats_t st;

    for (int u = 0; u < 4; u++) {
        snprintf(names[u], sizeof(names[u]), "w%d", u);
        p[u] = (sharc_shard_param_t){.name = names[u], .count = 2u << 20, .unit = u};
    }
    CHECK(sharc_shard_create(comm, p, 4, &cfg, &g) == SHARC_OK);
    for (int step = 0; g != NULL && step < 3; step++) {
        for (int u = 0; u < 4; u++) {
            CHECK(sharc_shard_forward_begin(g, u) == SHARC_OK);
            usleep(30000);
            CHECK(sharc_shard_forward_end(g, u) == SHARC_OK);
        }
        for (int u = 3; u >= 0; u--) {
            CHECK(sharc_shard_backward_begin(g, u) == SHARC_OK);
            usleep(30000);
            CHECK(sharc_shard_backward_end(g, u) == SHARC_OK);
        }
        CHECK(sharc_shard_finish(g) == SHARC_OK);
    }
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    CHECK_MSG(st.comm_s > 0 && st.hidden_s > 0 && st.exposed_s < st.comm_s,
              "rank %d: comm %.3f s, exposed %.3f s, hidden %.3f s", me, st.comm_s, st.exposed_s,
              st.hidden_s);
    if (me == 0) {
        sharc_shard_stats_print(g, stdout);
    }
    sharc_shard_destroy(g);
    printf("rank %d: overlap ok (comm %.1f ms, hidden %.1f ms)\n", me, st.comm_s * 1e3,
           st.hidden_s * 1e3);
}
