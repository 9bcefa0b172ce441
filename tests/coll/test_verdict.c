/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verdict.c: the stall verdict (coll/diagnostics/verdict.c) from made-up heads of 4 ranks: a
 * rank that has not posted the stalled collective, ranks that did not answer, a rank that posted
 * another collective in its place, data that does not arrive from a rank that finished its
 * part, a ring of waits with no one cause, nothing stalled. Every case names the culprit
 * and no one else as the culprit; equal heads give equal text.
 */
#include <stdio.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../../coll/coll.h"
#include "../../coll/engine/flight.h"
#include "../check.h"

#define N 4

static const char hosts[N][SHARC_HOST_MAX] = {"node-a", "node-a", "node-b", "node-c"};

/* Every rank answered, posted 8 all-reduces of 256 f32 and waits in the 8th (ordinal 7). */
static void stalled_all(sharc_coll_head_t *h)
{
    memset(h, 0, sizeof(*h) * N);
    for (int r = 0; r < N; r++) {
        h[r] = (sharc_coll_head_t){.rank = r,
                                   .answered = 1,
                                   .posted = 8,
                                   .stalled = 7,
                                   .st_type = SHARC_COLL_ALLREDUCE,
                                   .st_dtype = SHARC_DTYPE_F32,
                                   .st_op = SHARC_OP_SUM,
                                   .st_count = 256,
                                   .st_age = 61,
                                   .last_type = SHARC_COLL_ALLREDUCE,
                                   .last_dtype = SHARC_DTYPE_F32,
                                   .last_count = 256,
                                   .last_state = SHARC_COLL_TASK_RUNNING,
                                   .last_age = 61,
                                   .last_done_age = -1};
        snprintf(h[r].host, sizeof(h[r].host), "%s", hosts[r]);
    }
}

static void expect(const char *what, const sharc_coll_head_t *h, int culprit,
                   const char *const *want, const char *const *not_want)
{
    char buf[2048], again[2048];
    int blamed = sharc_coll_verdict(h, N, hosts, "w0", 1, buf, sizeof(buf));

    sharc_coll_verdict(h, N, hosts, "w0", 1, again, sizeof(again));
    CHECK_MSG(strcmp(buf, again) == 0, "%s: the same heads gave two texts", what);
    CHECK_MSG(blamed == culprit, "%s: rank %d blamed, not %d", what, blamed, culprit);
    for (int i = 0; want[i] != NULL; i++) {
        CHECK_MSG(strstr(buf, want[i]) != NULL, "%s: '%s' not in: %s", what, want[i], buf);
    }
    for (int i = 0; not_want != NULL && not_want[i] != NULL; i++) {
        CHECK_MSG(strstr(buf, not_want[i]) == NULL, "%s: '%s' in: %s", what, not_want[i], buf);
    }
    printf("%s:\n  %s\n", what, buf);
}

int main(void)
{
    sharc_coll_head_t h[N];

    /* rank 2 skipped a call: it posted 7 and waits for nothing */
    stalled_all(h);
    h[2].posted = h[2].stalled = 7;
    h[2].last_state = SHARC_COLL_TASK_COMPLETE;
    h[2].last_done_age = 60;
    expect("a rank that skipped one", h, 2,
           (const char *const[]){"collective #7 (allreduce of 256 f32, lane 0)",
                                 "rank 2 (node-b) has not posted it", "its last collective was #6",
                                 NULL},
           (const char *const[]){"posted another", "no answer", "not arriving", NULL});

    /* rank 3 did not answer (its node cut off) */
    stalled_all(h);
    h[3].answered = 0;
    expect("a rank that did not answer", h, 3,
           (const char *const[]){"no answer from rank 3 (node-c)", NULL},
           (const char *const[]){"has not posted", "not arriving", NULL});

    /* rank 1 posted an all-gather as #7 */
    stalled_all(h);
    h[1].st_type = SHARC_COLL_ALLGATHER;
    expect(
        "a desync", h, 1,
        (const char *const[]){"rank 1 (node-a) posted another collective as #7: allgather", NULL},
        (const char *const[]){"has not posted", NULL});

    /* rank 2 finished its part; rank 3 waits for its data */
    stalled_all(h);
    h[2].stalled = 8;
    h[2].last_state = SHARC_COLL_TASK_DONE;
    h[3].npending = 1;
    h[3].pending[0] = 2;
    h[0].npending = 1;
    h[0].pending[0] = 3;
    expect(
        "data that does not arrive", h, 2,
        (const char *const[]){"data from rank 2 (node-b) is not arriving at rank 3 (node-c)", NULL},
        (const char *const[]){"data from rank 3", "has not posted", NULL});

    /* a ring of waits: no rank is the cause on its own */
    stalled_all(h);
    for (int r = 0; r < N; r++) {
        h[r].npending = 1;
        h[r].pending[0] = (r + N - 1) % N;
    }
    expect("a ring of waits", h, -1,
           (const char *const[]){"every rank posted it and waits", "rank 0 for rank 3", NULL},
           (const char *const[]){"not arriving", NULL});

    /* nothing stalled */
    stalled_all(h);
    for (int r = 0; r < N; r++) {
        h[r].stalled = h[r].posted;
    }
    expect("nothing stalled", h, -1, (const char *const[]){"no collective is stalled now", NULL},
           NULL);
    return check_result("test_verdict");
}
