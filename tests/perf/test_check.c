/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_check.c: the decisions of `sharc-perf check` (perf/check/check_logic.c): the verdict (a
 * slow node, a slow link, a slow rank's copy; noise that the re-test clears; ties and the
 * strict threshold; two nodes, three nodes; groups); and main, which runs the schedule's and
 * the plan's tests too (test_check_plan.c).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../perf/check/check.h"
#include "../../perf/check/check_job.h"
#include "test_check.h"

int check_failures;

/* ---- the verdict ------------------------------------------------------------------------- */

typedef struct {
    perf_check_member_t m[16];
    perf_check_link_t l[128];
    perf_check_graph_t g;
} graph_t;

/* A complete graph of n members in one group, every link @p v (GB/s), noise +-@p noise. */
static void complete(graph_t *x, int n, double v, double noise, unsigned long long seed)
{
    memset(x, 0, sizeof(*x));
    for (int i = 0; i < n; i++) {
        x->m[i].copy = -1;
        x->m[i].copy_retest = -1;
        x->m[i].expect = -1;
    }
    for (int a = 0; a < n; a++) {
        for (int b = a + 1; b < n; b++) {
            perf_check_link_t *l = &x->l[x->g.nl++];
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            l->a = a;
            l->b = b;
            l->gbps = v * (1 + noise * (2.0 * (double)(seed >> 11) / 9007199254740992.0 - 1));
            l->retest = -1;
            l->expect = -1;
        }
    }
    x->g.m = x->m;
    x->g.nm = n;
    x->g.l = x->l;
    x->g.threshold = 0.75;
    x->g.expect_frac = 0.5;
}

static perf_check_link_t *link_of(graph_t *x, int a, int b)
{
    return &x->l[perf_check_find_link(&x->g, a, b)];
}

/* Every link of member k at factor f of what it holds. */
static void slow_member(graph_t *x, int k, double f)
{
    for (int i = 0; i < x->g.nl; i++) {
        if (x->l[i].a == k || x->l[i].b == k) {
            x->l[i].gbps *= f;
        }
    }
}

static int count_suspects(const graph_t *x, int *links_p)
{
    int n = 0, l = 0;
    for (int i = 0; i < x->g.nm; i++) {
        n += x->m[i].suspect != 0;
    }
    for (int k = 0; k < x->g.nl; k++) {
        l += x->l[k].suspect;
    }
    *links_p = l;
    return n;
}

/* The re-test as the job runs it: each pair re-measured at @p f(a, b). */
static int retest(graph_t *x, double (*f)(int a, int b))
{
    perf_check_pair_t p[128];
    int copy, n = perf_check_retest_pairs(&x->g, 2, p, 128, &copy);

    for (int i = 0; i < n; i++) {
        link_of(x, p[i].a, p[i].b)->retest = f(p[i].a, p[i].b);
    }
    return n;
}

static int slow_node;
static double retest_node_slow(int a, int b)
{
    return (a == slow_node || b == slow_node) ? 0.25 : 1.0;
}
static double retest_all_fine(int a, int b)
{
    (void)a;
    (void)b;
    return 1.0;
}
static double retest_link_13_slow(int a, int b)
{
    return (a == 1 && b == 3) ? 0.3 : 1.0;
}

static void test_clean(void)
{
    graph_t x;
    int links;

    /* 10% noise never reaches 75% of the median, at any node count */
    for (int n = 2; n <= 16; n++) {
        for (unsigned long long seed = 1; seed <= 20; seed++) {
            complete(&x, n, 1.0, 0.10, seed * 7919 + (unsigned long long)n);
            perf_check_verdict(&x.g);
            CHECK_MSG(count_suspects(&x, &links) == 0 && links == 0, "n %d seed %llu: suspects", n,
                      seed);
            CHECK(perf_check_confirm(&x.g) == 0);
        }
    }
}

static void test_slow_node(void)
{
    graph_t x;
    int links;

    for (int n = 3; n <= 16; n++) {
        for (int k = 0; k < n; k += 3) {
            complete(&x, n, 1.0, 0.10, (unsigned long long)(n * 31 + k));
            slow_member(&x, k, 0.25);
            perf_check_verdict(&x.g);
            CHECK_MSG(count_suspects(&x, &links) == 1 && x.m[k].suspect == PERF_CHECK_BY_LINKS,
                      "n %d: node %d is not the one suspect", n, k);
            /* its links are explained by it: not suspects of their own */
            CHECK_MSG(links == 0, "n %d: %d link suspects", n, links);
            slow_node = k;
            /* re-tested against two healthy peers, beside one or two controls */
            {
                perf_check_pair_t p[128];
                int copy, np = perf_check_retest_pairs(&x.g, 2, p, 128, &copy), with_k = 0;
                for (int i = 0; i < np; i++) {
                    with_k += p[i].a == k || p[i].b == k;
                }
                CHECK_MSG(with_k == 2 && np - with_k == (n == 3 ? 1 : 2) && copy == 0,
                          "n %d: %d re-test pairs, %d with node %d", n, np, with_k, k);
            }
            retest(&x, retest_node_slow);
            CHECK(perf_check_confirm(&x.g) == 1);
            CHECK(x.m[k].named == PERF_CHECK_BY_LINKS);
            for (int i = 0; i < n; i++) {
                CHECK_MSG(i == k || x.m[i].named == 0, "n %d: node %d named too", n, i);
            }
        }
    }
    /* three nodes: two of the three links are the slow node's, so the links' own median is
     * the slow figure; the best-link rule still names the right node and only it */
    complete(&x, 3, 1.0, 0, 1);
    slow_member(&x, 2, 0.25);
    perf_check_verdict(&x.g);
    CHECK(x.m[2].suspect && !x.m[0].suspect && !x.m[1].suspect);
    CHECK(fabs(x.g.ref - 1.0) < 1e-12);
}

static void test_noise(void)
{
    graph_t x;
    int links;

    /* one noisy sample on one link: a suspect link, cleared by its re-test */
    complete(&x, 5, 1.0, 0.05, 99);
    link_of(&x, 1, 3)->gbps = 0.3;
    perf_check_verdict(&x.g);
    CHECK(count_suspects(&x, &links) == 0 && links == 1 && link_of(&x, 1, 3)->suspect);
    CHECK(retest(&x, retest_all_fine) == 3); /* the link and two controls */
    CHECK(link_of(&x, 1, 3)->retest == 1.0);
    CHECK(perf_check_confirm(&x.g) == 0);
    CHECK(!link_of(&x, 1, 3)->named);

    /* the same link slow again in the re-test: named, and no node */
    complete(&x, 5, 1.0, 0.05, 99);
    link_of(&x, 1, 3)->gbps = 0.3;
    perf_check_verdict(&x.g);
    retest(&x, retest_link_13_slow);
    CHECK(perf_check_confirm(&x.g) == 1);
    CHECK(link_of(&x, 1, 3)->named && x.m[1].named == 0 && x.m[3].named == 0);

    /* a node whose every link was slow during its rounds (a passing hiccup): suspect, and the
     * re-test against healthy peers clears it */
    complete(&x, 6, 1.0, 0.05, 7);
    slow_member(&x, 4, 0.3);
    perf_check_verdict(&x.g);
    CHECK(x.m[4].suspect == PERF_CHECK_BY_LINKS);
    retest(&x, retest_all_fine);
    CHECK(perf_check_confirm(&x.g) == 0 && x.m[4].named == 0);

    /* a suspect that was not re-tested (no re-test ran) is never named */
    complete(&x, 6, 1.0, 0.05, 7);
    slow_member(&x, 4, 0.3);
    perf_check_verdict(&x.g);
    CHECK(perf_check_confirm(&x.g) == 0);
}

static void test_ties(void)
{
    graph_t x;
    int links;

    /* all equal: nothing */
    complete(&x, 7, 2.0, 0, 1);
    perf_check_verdict(&x.g);
    CHECK(count_suspects(&x, &links) == 0 && links == 0 && x.g.ref == 2.0);

    /* exactly at the threshold is not below it; a hair under is */
    complete(&x, 4, 1.0, 0, 1);
    slow_member(&x, 3, 0.75);
    perf_check_verdict(&x.g);
    CHECK(x.m[3].suspect == 0);
    complete(&x, 4, 1.0, 0, 1);
    slow_member(&x, 3, 0.7499);
    perf_check_verdict(&x.g);
    CHECK(x.m[3].suspect == PERF_CHECK_BY_LINKS);

    /* two equally slow nodes of six: both named, their shared link explained by them */
    complete(&x, 6, 1.0, 0, 1);
    slow_member(&x, 1, 0.25);
    slow_member(&x, 4, 0.25);
    perf_check_verdict(&x.g);
    CHECK(x.m[1].suspect && x.m[4].suspect && count_suspects(&x, &links) == 2 && links == 0);
    slow_node = 1;
    retest(&x, retest_node_slow);
    slow_node = 4;
    for (int k = 0; k < x.g.nl; k++) { /* node 4's re-tests slow too */
        if (x.l[k].retest >= 0 && (x.l[k].a == 4 || x.l[k].b == 4)) {
            x.l[k].retest = 0.25;
        }
    }
    CHECK(perf_check_confirm(&x.g) == 2);

    /* two nodes: one link, the same figure for both: nothing can be named, even a slow link */
    complete(&x, 2, 0.1, 0, 1);
    perf_check_verdict(&x.g);
    CHECK(count_suspects(&x, &links) == 0 && links == 0 && x.g.ref == 0.1);

    /* an even number of members: the median is the mean of the middle two */
    complete(&x, 4, 1.0, 0, 1);
    slow_member(&x, 0, 0.5); /* bests: 0.5, 1, 1, 1 */
    perf_check_verdict(&x.g);
    CHECK(fabs(x.g.ref - 1.0) < 1e-12 && x.m[0].suspect);

    /* a lower threshold spares a node at 60% */
    complete(&x, 5, 1.0, 0, 1);
    slow_member(&x, 2, 0.6);
    x.g.threshold = 0.5;
    perf_check_verdict(&x.g);
    CHECK(x.m[2].suspect == 0);
}

static void test_copy_and_groups(void)
{
    graph_t x;
    perf_check_pair_t p[64];
    int copy, n;

    /* 8 ranks on 2 nodes of 4, links only inside a node; rank 6's copy is slow */
    memset(&x, 0, sizeof(x));
    for (int r = 0; r < 8; r++) {
        x.m[r].group = r / 4;
        x.m[r].copy = r == 6 ? 2.0 : 10.0 + r * 0.1;
        x.m[r].copy_retest = -1;
        x.m[r].expect = -1;
    }
    for (int a = 0; a < 8; a++) {
        for (int b = a + 1; b < 8; b++) {
            if (a / 4 == b / 4) {
                x.l[x.g.nl++] =
                    (perf_check_link_t){.a = a, .b = b, .gbps = 5.0, .retest = -1, .expect = 10.0};
            }
        }
    }
    x.g = (perf_check_graph_t){
        .m = x.m, .nm = 8, .l = x.l, .nl = x.g.nl, .threshold = 0.75, .expect_frac = 0.5};
    /* rank 1: every pair of it slow */
    for (int k = 0; k < x.g.nl; k++) {
        if (x.l[k].a == 1 || x.l[k].b == 1) {
            x.l[k].gbps = 1.0;
        }
    }
    perf_check_verdict(&x.g);
    CHECK(x.m[6].suspect == PERF_CHECK_BY_COPY);
    CHECK(x.m[1].suspect == PERF_CHECK_BY_LINKS);
    n = perf_check_retest_pairs(&x.g, 2, p, 64, &copy);
    CHECK(copy == 1);
    for (int i = 0; i < 2; i++) { /* its peers come from its own node */
        CHECK((p[i].a == 1 || p[i].b == 1) && p[i].a / 4 == 0 && p[i].b / 4 == 0);
    }
    CHECK(n == 4);                /* and two controls, between healthy ranks */
    for (int r = 0; r < 8; r++) { /* the copy is re-tested on every rank */
        x.m[r].copy_retest = r == 6 ? 2.1 : 9.5;
    }
    for (int i = 0; i < n; i++) {
        int with1 = p[i].a == 1 || p[i].b == 1;
        CHECK(with1 || (p[i].a != 6 && p[i].b != 6));
        x.l[perf_check_find_link(&x.g, p[i].a, p[i].b)].retest = with1 ? 1.1 : 5.0;
    }
    CHECK(perf_check_confirm(&x.g) == 2);
    CHECK(x.m[6].named == PERF_CHECK_BY_COPY && x.m[1].named == PERF_CHECK_BY_LINKS);
    /* 5.0 against the node's copy of 10: exactly half is not below half; 1.1 is */
    CHECK(!x.l[perf_check_find_link(&x.g, 2, 3)].below_expect);
    CHECK(x.l[perf_check_find_link(&x.g, 0, 1)].below_expect);
    /* a copy that was fine in the re-test: not named */
    x.m[6].copy_retest = 9.0;
    perf_check_confirm(&x.g);
    CHECK(x.m[6].named == 0);

    /* a node of two ranks whose pair is slow: both suspects, no healthy peer in the node, so
     * the pair itself is the re-test */
    memset(&x, 0, sizeof(x));
    for (int r = 0; r < 4; r++) {
        x.m[r].group = r / 2;
        x.m[r].copy = -1;
        x.m[r].copy_retest = -1;
    }
    x.l[0] = (perf_check_link_t){.a = 0, .b = 1, .gbps = 5.0, .retest = -1};
    x.l[1] = (perf_check_link_t){.a = 2, .b = 3, .gbps = 1.0, .retest = -1};
    x.g = (perf_check_graph_t){.m = x.m, .nm = 4, .l = x.l, .nl = 2, .threshold = 0.75};
    perf_check_verdict(&x.g);
    CHECK(x.m[2].suspect && x.m[3].suspect && !x.m[0].suspect && x.g.ref == 3.0);
    n = perf_check_retest_pairs(&x.g, 2, p, 64, &copy);
    CHECK(n == 2 && p[0].a == 2 && p[0].b == 3 && p[1].a == 0 && p[1].b == 1 && copy == 0);
}

/* The whole job runs at half speed during the re-test (a shared machine): a suspect from noise
 * is cleared against the controls, a slow node is still named, and nothing is re-tested at
 * all when nothing was suspect. */
static double retest_half(int a, int b)
{
    return (a == slow_node || b == slow_node) ? 0.125 : 0.5;
}

static void test_drift(void)
{
    graph_t x;
    perf_check_pair_t p[128];
    int copy;

    complete(&x, 6, 1.0, 0.05, 3);
    slow_member(&x, 2, 0.6); /* noise: every link of node 2 low in the first pass */
    perf_check_verdict(&x.g);
    CHECK(x.m[2].suspect == PERF_CHECK_BY_LINKS);
    slow_node = -1;
    retest(&x, retest_half);
    CHECK(perf_check_confirm(&x.g) == 0 && fabs(x.g.ref_retest - 0.5) < 1e-12);

    complete(&x, 6, 1.0, 0.05, 3);
    slow_member(&x, 2, 0.25);
    perf_check_verdict(&x.g);
    slow_node = 2;
    retest(&x, retest_half);
    CHECK(perf_check_confirm(&x.g) == 1 && x.m[2].named == PERF_CHECK_BY_LINKS);

    /* copies: the whole job slower in the re-test */
    complete(&x, 4, 1.0, 0, 1);
    for (int r = 0; r < 4; r++) {
        x.m[r].copy = r == 1 ? 6.0 : 10.0;
    }
    perf_check_verdict(&x.g);
    CHECK(x.m[1].suspect == PERF_CHECK_BY_COPY);
    for (int r = 0; r < 4; r++) {
        x.m[r].copy_retest = 5.0;
    }
    CHECK(perf_check_confirm(&x.g) == 0);
    x.m[1].copy_retest = 3.0; /* still slow against the others in the re-test */
    CHECK(perf_check_confirm(&x.g) == 1 && x.m[1].named == PERF_CHECK_BY_COPY);

    complete(&x, 5, 1.0, 0.05, 1);
    perf_check_verdict(&x.g);
    CHECK(perf_check_retest_pairs(&x.g, 2, p, 128, &copy) == 0 && copy == 0);
}

static void test_expect(void)
{
    graph_t x;

    complete(&x, 4, 1.0, 0, 1);
    for (int i = 0; i < 4; i++) {
        x.m[i].expect = i == 2 ? 5.0 : 1.5;
    }
    for (int k = 0; k < x.g.nl; k++) {
        x.l[k].expect = 1.5;
    }
    perf_check_verdict(&x.g);
    perf_check_confirm(&x.g);
    /* 1.0 of 5.0 is below half; 1.0 of 1.5 is not: a warning, never a suspect */
    CHECK(x.m[2].below_expect && !x.m[0].below_expect && x.m[2].suspect == 0);
    CHECK(!x.l[0].below_expect);
}

int main(void)
{
    test_round_robin();
    test_greedy();
    test_clean();
    test_slow_node();
    test_noise();
    test_ties();
    test_copy_and_groups();
    test_drift();
    test_expect();
    test_plan();
    test_topo_expect();
    return check_result("test_check");
}
