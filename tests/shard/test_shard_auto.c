/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_auto.c: adaptive prefetch's decision on its own (internal API), on synthetic
 * schedules: waits that fall with depth up to a point and then stop falling (it settles on
 * that point), waits that keep falling (it stops at the bound), waits that are hidden from
 * the start (it stays at 1), the bound (never above max_unsharded - 1, and 0 ahead when the
 * bound is 1), memory pressure (one less, then no more raises), a noisy step that must not
 * decide alone, steps off the schedule (ignored), and a schedule recorded anew (it explores
 * again). The decision is a pure function of agreed inputs, so equal inputs give equal
 * depths: what keeps the ranks in lockstep.
 */
#include <stdio.h>
#include <string.h>

#include "shard/plan/shard_plan.h"
#include "../check.h"

#define STEP_S 0.1 /* every synthetic step takes 100 ms */

/* The gather wait a synthetic schedule has at @p depth (index: depth). */
typedef struct {
    const char *what;
    double wait[8];
    int cap, want; /* the bound's cap, and the depth it must settle on */
} schedule_t;

/* Run @p steps steps of @p sc; the depth after each into @p depths. */
static void run(const schedule_t *sc, int steps, int *depths)
{
    sharc_shard_auto_state_t s;

    sharc_shard_auto_init(&s, sc->cap);
    for (int k = 0; k < steps; k++) {
        sharc_shard_auto_input_t in = {
            .gather_wait_s = sc->wait[s.depth], .step_s = STEP_S, .followed = 1};

        sharc_shard_auto_decide(&s, &in);
        CHECK_MSG(s.depth >= 0 && s.depth <= sc->cap, "%s: depth %d, cap %d", sc->what, s.depth,
                  sc->cap);
        depths[k] = s.depth;
    }
}

static void test_converges(void)
{
    static const schedule_t cases[] = {
        /* the waits fall to depth 2, then no more: 2 */
        {"knee at 2", {0, 8e-3, 2e-3, 1.95e-3, 1.95e-3}, 3, 2},
        /* they keep falling: up to the bound */
        {"falls to the bound", {0, 8e-3, 4e-3, 1e-3, 0.5e-3}, 3, 3},
        /* hidden from the start (under 1% of the step): stays at 1 */
        {"hidden", {0, 0.5e-3, 0.1e-3, 0.1e-3}, 3, 1},
        /* exposed, but deeper does not help: tried once and taken back */
        {"no gain", {0, 5e-3, 5e-3, 5e-3}, 3, 1},
        /* a bound of 2 units: one ahead at most */
        {"bound 2", {0, 8e-3, 1e-3}, 1, 1},
        /* a bound of 1 unit: nothing ahead */
        {"bound 1", {5e-3, 5e-3}, 0, 0},
        /* a larger bound: climbs while each step cuts the waits by 5% */
        {"deep", {0, 10e-3, 7e-3, 5e-3, 3.5e-3, 3.3e-3, 3.2e-3, 3.2e-3}, 7, 5},
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int d1[40], d2[40];

        run(&cases[c], 40, d1);
        run(&cases[c], 40, d2);
        CHECK_MSG(memcmp(d1, d2, sizeof(d1)) == 0, "%s: the same inputs, other depths",
                  cases[c].what);
        /* settled: the last 20 steps keep the depth it must settle on */
        for (int k = 20; k < 40; k++) {
            CHECK_MSG(d1[k] == cases[c].want, "%s: depth %d at step %d, want %d", cases[c].what,
                      d1[k], k, cases[c].want);
        }
        printf("%-20s:", cases[c].what);
        for (int k = 0; k < 14; k++) {
            printf(" %d", d1[k]);
        }
        printf(" ... %d\n", d1[39]);
    }
}

static void test_memory(void)
{
    sharc_shard_auto_state_t s;
    sharc_shard_auto_input_t exposed = {.gather_wait_s = 8e-3, .step_s = STEP_S, .followed = 1};
    sharc_shard_auto_input_t full = exposed;

    sharc_shard_auto_init(&s, 3);
    for (int k = 0; k < 2; k++) {
        sharc_shard_auto_decide(&s, &exposed);
    }
    CHECK_MSG(s.depth == 2, "raised to 2, got %d", s.depth);
    exposed.gather_wait_s = 4e-3; /* it helped */
    for (int k = 0; k < 2; k++) {
        sharc_shard_auto_decide(&s, &exposed);
    }
    CHECK_MSG(s.depth == 3, "raised to 3, got %d", s.depth);
    full.evictions = 1; /* the bound evicted a prefetched unit: one less, and stay */
    CHECK(sharc_shard_auto_decide(&s, &full) == 1 && s.depth == 2 &&
          s.why == SHARC_SHARD_AUTO_MEMORY);
    for (int k = 0; k < 10; k++) {
        sharc_shard_auto_decide(&s, &exposed);
        CHECK_MSG(s.depth == 2, "after memory pressure: depth %d", s.depth);
    }
    full.evictions = 0;
    full.deferred = 3; /* prefetches held back at the bound: memory again */
    CHECK(sharc_shard_auto_decide(&s, &full) == 1 && s.depth == 1);
    CHECK(sharc_shard_auto_decide(&s, &full) == 0 && s.depth == 1); /* never below 1 */
    /* a schedule recorded anew: explores again */
    exposed.reset = 1;
    sharc_shard_auto_decide(&s, &exposed);
    CHECK(s.why == SHARC_SHARD_AUTO_RESET && !s.settled);
    exposed.reset = 0;
    sharc_shard_auto_decide(&s, &exposed);
    CHECK_MSG(s.depth == 2, "after a reset, raised again: depth %d", s.depth);
}

static void test_noise_and_schedule(void)
{
    sharc_shard_auto_state_t s;
    sharc_shard_auto_input_t in = {.gather_wait_s = 8e-3, .step_s = STEP_S, .followed = 1};

    /* one slow step does not raise: the least of two steps decides */
    sharc_shard_auto_init(&s, 3);
    in.gather_wait_s = 0.2e-3;
    sharc_shard_auto_decide(&s, &in);
    in.gather_wait_s = 20e-3; /* something else slowed this one */
    sharc_shard_auto_decide(&s, &in);
    CHECK_MSG(s.depth == 1, "one noisy step raised the depth to %d", s.depth);
    /* and one fast step under trial does not keep a raise that did not help */
    sharc_shard_auto_init(&s, 3);
    in.gather_wait_s = 8e-3;
    sharc_shard_auto_decide(&s, &in);
    sharc_shard_auto_decide(&s, &in);
    CHECK(s.depth == 2 && s.trial);
    in.gather_wait_s = 7.9e-3;
    sharc_shard_auto_decide(&s, &in);
    in.gather_wait_s = 7.7e-3;
    sharc_shard_auto_decide(&s, &in);
    CHECK_MSG(s.depth == 1 && s.settled && s.why == SHARC_SHARD_AUTO_REVERT,
              "a raise that cut the waits by 4%% stayed: depth %d", s.depth);
    /* steps off the schedule say nothing */
    sharc_shard_auto_init(&s, 3);
    in.gather_wait_s = 8e-3;
    in.followed = 0;
    for (int k = 0; k < 5; k++) {
        CHECK(sharc_shard_auto_decide(&s, &in) == 0 && s.depth == 1);
    }
    CHECK(s.nhist == 0);
}

int main(void)
{
    test_converges();
    test_memory();
    test_noise_and_schedule();
    return check_result("test_shard_auto");
}
