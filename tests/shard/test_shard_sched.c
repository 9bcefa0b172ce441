/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_sched.c: test_shard's schedule tests: the order recorded in the first step and
 * followed after, prefetch counts and the bound on unsharded units (eviction, a step off the
 * schedule, re-recording when the order changes, an order set by the caller, micro-batches,
 * units kept from forward to backward); adaptive prefetch between ranks (the depth the same
 * on every rank, within the bound, settling).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../kernels/kernels.h"
#include "test_shard.h"

static void check_order(sharc_shard_group_h g, sharc_shard_phase_t ph, const int *want, int n)
{
    int got[MAX_PARAMS], k = -1;

    CHECK(sharc_shard_get_order(g, ph, got, MAX_PARAMS, &k) == SHARC_OK);
    CHECK_MSG(k == n && memcmp(got, want, sizeof(int) * (size_t)n) == 0,
              "rank %d: %s order of %d units, want %d", me,
              ph == SHARC_SHARD_FORWARD ? "forward" : "backward", k, n);
}

/* The order changes: followed without prefetch, then re-recorded; in the third step a unit out
 * of schedule at the bound evicts the prefetched one. */
static void prefetch_order_change(sharc_shard_group_h g, int U, const int *fwd, int bound)
{
    int swapped[MAX_PARAMS];
    sharc_shard_stats_t st;

    memcpy(swapped, fwd, sizeof(int) * (size_t)U);
    swapped[1] = 2;
    swapped[2] = 1;
    for (int step = 0; step < 3; step++) {
        for (int u = 0; u < U; u++) {
            CHECK(sharc_shard_forward_begin(g, swapped[u]) == SHARC_OK);
            if (step == 2 && u == 0) {
                /* a unit out of schedule at the bound: the prefetched one goes */
                CHECK(sharc_shard_unshard(g, 4) == SHARC_OK);
                CHECK(sharc_shard_reshard(g, 4) == SHARC_OK);
            }
            CHECK(sharc_shard_forward_end(g, swapped[u]) == SHARC_OK);
        }
        for (int u = U - 1; u >= 0; u--) {
            CHECK(sharc_shard_backward_begin(g, u) == SHARC_OK);
            CHECK(sharc_shard_backward_end(g, u) == SHARC_OK);
        }
        CHECK(sharc_shard_finish(g) == SHARC_OK);
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        check_order(g, SHARC_SHARD_FORWARD, swapped, U);
        CHECK(st.peak_units_alive <= bound);
        if (step == 1) { /* the new schedule is followed */
            CHECK(st.evictions == 0 && st.prefetches == (uint64_t)(2 * U - 2));
        }
        if (step == 2) {
            CHECK_MSG(st.evictions == 1, "evictions %llu", (unsigned long long)st.evictions);
        }
    }
}

/* Prefetch depth @p k at the bound @p max_unsharded (0: derived): the first step records the
 * schedule, the second follows it. @p first: the order changes too, and the group is printed. */
static void prefetch_case(model_t *m, int k, int max_unsharded, int first)
{
    int bound = max_unsharded ? max_unsharded : k + 1;
    int U = m->nunits, fwd[MAX_PARAMS], bwd[MAX_PARAMS];
    sharc_shard_group_h g =
        make_group(m, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, k, max_unsharded);
    sharc_shard_stats_t st;

    if (g == NULL) {
        return;
    }
    for (int u = 0; u < U; u++) {
        fwd[u] = u;
        bwd[u] = U - 1 - u;
    }
    run_step(g, m, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, NULL, 0); /* records */
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    CHECK(st.prefetches == 0 && st.allgathers == (uint64_t)(2 * U));
    check_order(g, SHARC_SHARD_FORWARD, fwd, U);
    check_order(g, SHARC_SHARD_BACKWARD, bwd, U);
    run_step(g, m, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, NULL, 0);
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    /* the forward's last unit is kept for the backward: one gather fewer */
    CHECK_MSG(st.allgathers == (uint64_t)(2 * U - 1), "allgathers %llu",
              (unsigned long long)st.allgathers);
    CHECK_MSG(st.prefetches == (k > 0 ? (uint64_t)(2 * U - 2) : 0), "prefetches %llu (k %d)",
              (unsigned long long)st.prefetches, k);
    CHECK(st.evictions == 0);
    CHECK_MSG(st.peak_units_alive <= bound && st.peak_units_alive >= SHARC_MIN(bound, k + 1),
              "peak %d units alive, bound %d", st.peak_units_alive, bound);
    CHECK(st.reduce_scatters == (uint64_t)U && st.allreduces == 0);
    CHECK(st.units_alive == 0);
    if (first) {
        prefetch_order_change(g, U, fwd, bound);
    }
    if (me == 0 && first) {
        sharc_shard_schedule_print(g, stdout);
        sharc_shard_stats_print(g, stdout);
    }
    sharc_shard_destroy(g);
}

/* An order set by the caller is followed from the first step, and never re-recorded. */
static void prefetch_set_order(model_t *m)
{
    sharc_shard_group_h g =
        make_group(m, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 1, 0);
    int fwd[] = {0, 1, 2, 3, 4, 5}, bwd[] = {5, 4, 3, 2, 1, 0};
    sharc_shard_stats_t st;

    CHECK(sharc_shard_set_order(g, SHARC_SHARD_FORWARD, fwd, 6) == SHARC_OK);
    CHECK(sharc_shard_set_order(g, SHARC_SHARD_BACKWARD, bwd, 6) == SHARC_OK);
    run_step(g, m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    CHECK(st.prefetches == 10 && st.allgathers == 11);
    sharc_shard_destroy(g);
}

/* Micro-batches accumulated without communication: the schedule is one pass's, and every pass
 * follows it from its start. */
static void prefetch_accumulate(model_t *m)
{
    sharc_shard_group_h g =
        make_group(m, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 1, 0);
    int fwd[] = {0, 1, 2, 3, 4, 5}, U = m->nunits;
    sharc_shard_stats_t st;

    run_step(g, m, 3, 1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0); /* records */
    run_step(g, m, 3, 1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    check_order(g, SHARC_SHARD_FORWARD, fwd, U);
    CHECK_MSG(st.allgathers == (uint64_t)(3 * (2 * U - 1)) &&
                  st.prefetches == (uint64_t)(3 * (2 * U - 2)) && st.reduce_scatters == (uint64_t)U,
              "3 micro-batches: %llu all-gathers, %llu prefetched, %llu reduce-scatters",
              (unsigned long long)st.allgathers, (unsigned long long)st.prefetches,
              (unsigned long long)st.reduce_scatters);
    sharc_shard_destroy(g);
}

/* reshard_after_forward off: every unit stays gathered from forward to backward. */
static void prefetch_kept(model_t *m)
{
    sharc_shard_params_t cfg = {
        .field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_RESHARD_AFTER_FORWARD,
        .num_units = m->nunits,
        .reshard_after_forward = 0,
    };
    sharc_shard_group_h g = NULL;
    sharc_shard_stats_t st;

    CHECK(sharc_shard_create(comm, m->p, m->nparams, &cfg, &g) == SHARC_OK);
    run_step(g, m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
    run_step(g, m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    CHECK(st.allgathers == (uint64_t)m->nunits && st.peak_units_alive == m->nunits);
    sharc_shard_destroy(g);
}

void test_prefetch(void)
{
    static const struct {
        int prefetch, max_unsharded;
    } cases[] = {{1, 0}, {2, 3}, {3, 2}, {0, 1}};
    model_t m;

    model_make(&m, 6, 0);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        prefetch_case(&m, cases[c].prefetch, cases[c].max_unsharded, c == 0);
    }
    prefetch_set_order(&m);
    prefetch_accumulate(&m);
    prefetch_kept(&m);
    model_free(&m);
    printf("rank %d: prefetch ok\n", me);
}

/* Every rank's value of @p v is the same. */
static int same_everywhere(int v)
{
    int lo = v, hi = v;

    CHECK(sharc_allreduce(&v, &lo, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, comm, NULL) == SHARC_OK);
    CHECK(sharc_allreduce(&v, &hi, 1, SHARC_DTYPE_I32, SHARC_OP_MAX, comm, NULL) == SHARC_OK);
    return lo == hi;
}

/*
 * Adaptive prefetch between ranks: steps whose gathers the caller waits for (no compute).
 * The depth is the same on every rank after every step, within the bound (max_unsharded - 1,
 * 3 when derived), never evicts, and settles: it goes up one at a time, and a raise taken
 * back is the last change, so it changes at most bound - 1 times (when, depends on timing;
 * tests/shard/test_shard_auto.c holds the decision to exact schedules).
 */
void test_auto(void)
{
    static const int bounds[] = {0, 3, 2};
    model_t m;

    model_make(&m, 6, 0);
    for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
        int bound = bounds[b] ? bounds[b] : 4, depth[16], steps = 14;
        sharc_shard_group_h g = make_group(&m, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG,
                                           nranks, SHARC_SHARD_PREFETCH_AUTO, bounds[b]);
        sharc_shard_stats_t st;

        if (g == NULL) {
            continue;
        }
        for (int step = 0; step < steps; step++) {
            run_step(g, &m, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, NULL, 0);
            CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
            CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
            depth[step] = st.prefetch_depth;
            CHECK_MSG(same_everywhere(depth[step]),
                      "rank %d step %d: depth %d differs between "
                      "ranks",
                      me, step, depth[step]);
            CHECK_MSG(depth[step] >= 1 && depth[step] <= bound - 1,
                      "rank %d step %d: depth %d, bound %d", me, step, depth[step], bound);
            CHECK_MSG(st.peak_units_alive <= bound && st.evictions == 0,
                      "rank %d step %d: peak %d units, bound %d, %llu evictions", me, step,
                      st.peak_units_alive, bound, (unsigned long long)st.evictions);
            CHECK(st.gather_wait_s <= st.exposed_s + 1e-9);
        }
        /* it settles: up one at a time, and once taken back never up again, so at most
         * bound - 1 changes */
        for (int step = 1, changes = 0, down = 0; step < steps; step++) {
            changes += depth[step] != depth[step - 1];
            CHECK_MSG(!down || depth[step] <= depth[step - 1],
                      "rank %d: depth up to %d at step %d after it was taken back", me, depth[step],
                      step);
            CHECK_MSG(depth[step] <= depth[step - 1] + 1, "rank %d: depth %d -> %d at step %d", me,
                      depth[step - 1], depth[step], step);
            down |= depth[step] < depth[step - 1];
            CHECK_MSG(changes <= bound - 1, "rank %d: %d depth changes by step %d", me, changes,
                      step);
        }
        if (me == 0) {
            printf("auto prefetch, bound %d: depths", bound);
            for (int step = 0; step < steps; step++) {
                printf(" %d", depth[step]);
            }
            printf("\n");
            sharc_shard_schedule_print(g, stdout);
        }
        sharc_shard_destroy(g);
    }
    model_free(&m);
    printf("rank %d: auto ok\n", me);
}
