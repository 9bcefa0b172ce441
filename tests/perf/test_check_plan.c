/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_check_plan.c: what `sharc-perf check` decides before it measures (perf/check/
 * check_logic.c): the round-robin schedule (every pair exactly once, no member twice in a
 * round, odd counts), the greedy rounds of the re-test, the budget's plan, and the expected
 * figure read from sharc-topo's JSON. Part of test_check (its main: test_check.c).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../perf/check/check.h"
#include "../../perf/check/check_job.h"
#include "test_check.h"

/* ---- the schedule ------------------------------------------------------------------------ */

void test_round_robin(void)
{
    for (int n = 0; n <= 33; n++) {
        int rounds = perf_check_rr_rounds(n);
        int *met = calloc((size_t)(n * n + 1), sizeof(int));
        int *sat_out = calloc((size_t)(n + 1), sizeof(int));
        perf_check_pair_t pairs[32];

        CHECK_MSG(rounds == (n < 2 ? 0 : (n % 2 ? n : n - 1)), "n %d: %d rounds", n, rounds);
        for (int r = 0; r < rounds; r++) {
            int busy[34] = {0};
            int np = perf_check_rr_round(n, r, pairs);

            CHECK_MSG(np == n / 2, "n %d round %d: %d pairs", n, r, np);
            for (int i = 0; i < np; i++) {
                int a = pairs[i].a, b = pairs[i].b;
                CHECK_MSG(a >= 0 && a < b && b < n, "n %d round %d: pair %d-%d", n, r, a, b);
                if (!(a >= 0 && a < b && b < n)) {
                    continue;
                }
                CHECK_MSG(!busy[a] && !busy[b], "n %d round %d: %d or %d twice", n, r, a, b);
                busy[a] = busy[b] = 1;
                met[a * n + b]++;
            }
            for (int m = 0; m < n; m++) {
                sat_out[m] += !busy[m];
            }
        }
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                CHECK_MSG(met[a * n + b] == 1, "n %d: %d-%d met %d times", n, a, b, met[a * n + b]);
            }
            /* odd counts: each member sits out exactly one round; even: never */
            CHECK_MSG(sat_out[a] == (n % 2 && n > 1 ? 1 : 0), "n %d: %d sat out %d rounds", n, a,
                      sat_out[a]);
        }
        CHECK(perf_check_rr_round(n, rounds, pairs) == 0); /* past the last round */
        CHECK(perf_check_rr_round(n, -1, pairs) == 0);
        free(met);
        free(sat_out);
    }
}

void test_greedy(void)
{
    unsigned long long rng = 12345;

    for (int trial = 0; trial < 200; trial++) {
        int nm = 2 + trial % 15, np = 0, deg[17] = {0}, maxdeg = 0;
        perf_check_pair_t p[64];
        int round_of[64];

        for (int i = 0; i < 64 && np < 1 + trial % 40; i++) {
            int a, b, dup = 0;
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            a = (int)((rng >> 33) % (unsigned)nm);
            b = (int)((rng >> 17) % (unsigned)nm);
            if (a == b) {
                continue;
            }
            for (int k = 0; k < np; k++) {
                dup |= (p[k].a == (a < b ? a : b) && p[k].b == (a < b ? b : a));
            }
            if (dup) {
                continue;
            }
            p[np].a = a < b ? a : b;
            p[np].b = a < b ? b : a;
            deg[a]++;
            deg[b]++;
            np++;
        }
        for (int m = 0; m < nm; m++) {
            maxdeg = deg[m] > maxdeg ? deg[m] : maxdeg;
        }
        int rounds = perf_check_greedy_rounds(p, np, nm, round_of);
        /* greedy colouring of the pairs: at most 2 * maxdeg - 1 rounds, at least maxdeg */
        CHECK_MSG(rounds >= maxdeg && rounds <= (maxdeg > 0 ? 2 * maxdeg - 1 : 0),
                  "trial %d: %d rounds, max degree %d", trial, rounds, maxdeg);
        for (int i = 0; i < np; i++) {
            CHECK(round_of[i] >= 0 && round_of[i] < rounds);
            for (int k = 0; k < i; k++) {
                int share =
                    p[k].a == p[i].a || p[k].a == p[i].b || p[k].b == p[i].a || p[k].b == p[i].b;
                CHECK_MSG(!(share && round_of[k] == round_of[i]),
                          "trial %d: pairs %d and %d share a member in round %d", trial, k, i,
                          round_of[i]);
            }
        }
    }
    /* a suspect against two peers and a suspect link: 3 pairs, two of them share node 2 */
    {
        perf_check_pair_t p[3] = {{0, 2}, {2, 3}, {1, 4}};
        int round_of[3];
        CHECK(perf_check_greedy_rounds(p, 3, 5, round_of) == 2);
        CHECK(round_of[0] == 0 && round_of[1] == 1 && round_of[2] == 0);
    }
    CHECK(perf_check_greedy_rounds(NULL, 0, 4, NULL) == 0);
}

/* ---- the plan ---------------------------------------------------------------------------- */

void test_plan(void)
{
    perf_check_budget_t b = {.budget_s = 60,
                             .spent_s = 2,
                             .rounds = 10,
                             .retest_rounds = 3,
                             .round_s = 0.05,
                             .lat_s = 1e-4,
                             .gbps = 10,
                             .min_size = 256 << 10,
                             .max_size = 64 << 20,
                             .min_iters = 3,
                             .want_iters = 5,
                             .max_iters = 20};
    perf_check_plan_t p, prev = {0, 0, 0};

    /* a fast fabric: the largest size, then more iterations up to the cap */
    CHECK(perf_check_plan(&b, &p) == 0);
    CHECK(p.size == b.max_size && p.iters == 20 && p.est_s <= b.budget_s - b.spent_s);

    /* slower and slower: never more than the budget, the size first to give way */
    for (double gbps = 10; gbps > 0.001; gbps /= 2) {
        b.gbps = gbps;
        if (perf_check_plan(&b, &p) != 0) {
            CHECK_MSG(p.est_s > b.budget_s - b.spent_s, "gbps %g: failed but fits", gbps);
            break;
        }
        CHECK_MSG(p.est_s <= b.budget_s - b.spent_s, "gbps %g: %g s over the budget", gbps,
                  p.est_s);
        CHECK(p.size >= b.min_size && p.size <= b.max_size && p.iters >= b.min_iters &&
              p.iters <= b.max_iters);
        CHECK_MSG(prev.size == 0 || p.size <= prev.size, "gbps %g: the size grew", gbps);
        /* the largest size that fits, then as many iterations as fit */
        if (p.size < b.max_size) {
            size_t twice = 2 * p.size < b.max_size ? 2 * p.size : b.max_size;
            CHECK_MSG(perf_check_plan_time(&b, twice, b.want_iters) > b.budget_s - b.spent_s,
                      "gbps %g: %zu B chosen, %zu B would fit", gbps, p.size, twice);
        }
        CHECK(p.iters == b.max_iters ||
              perf_check_plan_time(&b, p.size, p.iters + 1) > b.budget_s - b.spent_s);
        prev = p;
    }
    /* a larger budget never gives a smaller size or fewer iterations */
    b.gbps = 0.05;
    prev = (perf_check_plan_t){0, 0, 0};
    for (double budget = 5; budget <= 2000; budget *= 1.5) {
        b.budget_s = budget;
        if (perf_check_plan(&b, &p) != 0) {
            CHECK(prev.size == 0); /* once it fits, it keeps fitting */
            continue;
        }
        CHECK_MSG(p.size > prev.size || (p.size == prev.size && p.iters >= prev.iters),
                  "budget %g: %zu x %d after %zu x %d", budget, p.size, p.iters, prev.size,
                  prev.iters);
        prev = p;
    }
    CHECK(prev.size == b.max_size && prev.iters == b.max_iters);

    /* too small: -1, and the time the least plan needs */
    b.budget_s = 3;
    b.spent_s = 2;
    b.gbps = 0.01;
    CHECK(perf_check_plan(&b, &p) == -1);
    CHECK(p.size == b.min_size && p.iters == b.min_iters);
    CHECK(fabs(p.est_s - perf_check_plan_time(&b, b.min_size, b.min_iters)) < 1e-9);
    CHECK(p.est_s > 1);
    /* the budget already spent */
    b.budget_s = 60;
    b.spent_s = 61;
    b.gbps = 10;
    CHECK(perf_check_plan(&b, &p) == -1);

    /* min_size only: fewer iterations before giving up */
    b = (perf_check_budget_t){.budget_s = 10,
                              .spent_s = 0,
                              .rounds = 4,
                              .retest_rounds = 0,
                              .round_s = 0,
                              .lat_s = 0,
                              .gbps = 1e-3,
                              .min_size = 1 << 20,
                              .max_size = 1 << 20,
                              .min_iters = 3,
                              .want_iters = 5,
                              .max_iters = 20};
    /* each exchange 1.048576 s; a round of 4 iterations (+1) is 5.24 s x 4 rounds x 1.25 */
    b.budget_s = perf_check_plan_time(&b, 1 << 20, 3) + 0.01;
    CHECK(perf_check_plan(&b, &p) == 0 && p.iters == 3 && p.size == (1u << 20));
}

/* ---- the expected figure from sharc-topo's JSON ------------------------------------------ */

void test_topo_expect(void)
{
    perf_check_expect_t e;
    const char *ib =
        "{\"fabric\":\"InfiniBand\",\"nics\":["
        "{\"name\":\"mlx5_0\",\"fabric\":\"InfiniBand\",\"ports\":[{\"port\":1,\"active\":true,"
        "\"rate_gbps\":400}]},"
        "{\"name\":\"mlx5_1\",\"fabric\":\"InfiniBand\",\"ports\":[{\"port\":1,\"active\":true,"
        "\"rate_gbps\":400}]},"
        "{\"name\":\"mlx5_2\",\"fabric\":\"InfiniBand\",\"ports\":[{\"port\":1,\"active\":false,"
        "\"rate_gbps\":400}]},"
        "{\"name\":\"mlx5_bond\",\"fabric\":\"RoCE\",\"ports\":[{\"port\":1,\"active\":true,"
        "\"rate_gbps\":100}]}]}";
    const char *eth = "{\"fabric\":\"Ethernet\",\"socket_ifs\":[\"eth0\",\"eth1\"],\"netdevs\":["
                      "{\"name\":\"eth0\",\"speed_mbps\":25000},{\"name\":\"eth1\","
                      "\"speed_mbps\":25000},{\"name\":\"eth2\",\"speed_mbps\":1000}]}";
    const char *eth_unknown = "{\"fabric\":\"Ethernet\",\"socket_ifs\":[\"eth0\"],\"netdevs\":["
                              "{\"name\":\"eth0\",\"speed_mbps\":-1}]}";
    const char *ib_norate = "{\"fabric\":\"InfiniBand\",\"nics\":[{\"name\":\"mlx5_0\","
                            "\"fabric\":\"InfiniBand\",\"ports\":[{\"port\":1,\"active\":true,"
                            "\"rate_gbps\":0}]}]}";

    if (!perf_check_have_json()) {
        CHECK(perf_check_topo_expect(eth, &e) == -1 && e.gbit < 0);
        return;
    }
    CHECK(perf_check_topo_expect(ib, &e) == 0 && e.gbit == 800 && e.nports == 2);
    CHECK_MSG(strstr(e.why, "2 InfiniBand ports") != NULL, "%s", e.why);
    CHECK(perf_check_topo_expect(eth, &e) == 0 && e.gbit == 50 && e.nports == 2);
    CHECK(perf_check_topo_expect(eth_unknown, &e) == -1 && e.gbit < 0);
    CHECK_MSG(strstr(e.why, "eth0: speed unknown") != NULL, "%s", e.why);
    CHECK(perf_check_topo_expect(ib_norate, &e) == -1 && e.gbit < 0);
    CHECK(perf_check_topo_expect("{\"fabric\":\"none\"}", &e) == -1 && e.gbit < 0);
    CHECK(perf_check_topo_expect("not json {", &e) == -1 && e.gbit < 0);
    CHECK(perf_check_topo_expect("[1, 2]", &e) == -1 && e.gbit < 0);
}
