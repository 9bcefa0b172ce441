/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_logic.c: the decisions of `sharc-perf check` that depend on figures only, never on the
 * job: the round-robin schedule, the verdict and its confirmation, the budget's plan. Every
 * rank that calls them with the same input gets the same answer; tests/perf/test_check.c checks
 * them.
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>

#include "../common/perf_util.h"

/* ---- the schedule ------------------------------------------------------------------------ */

int perf_check_rr_rounds(int n)
{
    return n < 2 ? 0 : (n % 2 == 0 ? n - 1 : n);
}

int perf_check_rr_round(int n, int r, perf_check_pair_t *pairs)
{
    /* m places, the last one fixed; with odd n the last place is empty and whoever faces it
     * sits out the round. The others turn: in round r place r faces the fixed one, and
     * r + k faces r - k (mod m - 1). */
    int m = (n % 2 == 0) ? n : n + 1, np = 0;

    if (n < 2 || r < 0 || r >= m - 1) {
        return 0;
    }
    for (int k = 0; k < m / 2; k++) {
        int a = (k == 0) ? m - 1 : (r + k) % (m - 1);
        int b = (k == 0) ? r : (r - k + (m - 1)) % (m - 1);

        if (a >= n || b >= n) {
            continue; /* the empty place: b sits out */
        }
        pairs[np].a = a < b ? a : b;
        pairs[np].b = a < b ? b : a;
        np++;
    }
    return np;
}

int perf_check_greedy_rounds(const perf_check_pair_t *pairs, int npairs, int nmembers,
                             int *round_of)
{
    int nrounds = 0;

    (void)nmembers;
    for (int i = 0; i < npairs; i++) {
        int r = 0;

        for (;; r++) {
            int busy = 0;

            for (int j = 0; j < i && !busy; j++) {
                busy = round_of[j] == r && (pairs[j].a == pairs[i].a || pairs[j].a == pairs[i].b ||
                                            pairs[j].b == pairs[i].a || pairs[j].b == pairs[i].b);
            }
            if (!busy) {
                break;
            }
        }
        round_of[i] = r;
        nrounds = r + 1 > nrounds ? r + 1 : nrounds;
    }
    return nrounds;
}

/* ---- the verdict ------------------------------------------------------------------------- */

static double median_of(double *v, int n)
{
    return n > 0 ? perf_median(v, (size_t)n) : 0;
}

/* Every member's best link from the links' figures (eff), and the count of measured ones. */
static void member_best(perf_check_graph_t *g)
{
    for (int i = 0; i < g->nm; i++) {
        g->m[i].best = -1;
        g->m[i].nlinks = 0;
    }
    for (int k = 0; k < g->nl; k++) {
        perf_check_link_t *l = &g->l[k];

        if (l->eff < 0) {
            continue;
        }
        for (int s = 0; s < 2; s++) {
            perf_check_member_t *m = &g->m[s ? l->b : l->a];
            m->nlinks++;
            m->best = l->eff > m->best ? l->eff : m->best;
        }
    }
}

void perf_check_verdict(perf_check_graph_t *g)
{
    double *v = malloc(sizeof(double) * (size_t)(g->nm > 0 ? g->nm : 1));
    int n = 0;

    for (int k = 0; k < g->nl; k++) {
        g->l[k].retest = -1;
        g->l[k].eff = g->l[k].gbps;
        g->l[k].suspect = g->l[k].named = g->l[k].below_expect = 0;
    }
    member_best(g);
    for (int i = 0; i < g->nm; i++) {
        perf_check_member_t *m = &g->m[i];

        m->best0 = m->best;
        m->best_retest = -1;
        m->copy_retest = -1;
        m->copy_eff = m->copy;
        m->suspect = m->named = 0;
        m->below_expect = 0;
        if (m->nlinks > 0) {
            v[n++] = m->best;
        }
    }
    g->ref = median_of(v, n);
    n = 0;
    for (int i = 0; i < g->nm; i++) {
        if (g->m[i].copy >= 0) {
            v[n++] = g->m[i].copy;
        }
    }
    g->ref_copy = median_of(v, n);
    g->ref_retest = g->ref;
    g->ref_copy_retest = g->ref_copy;
    free(v);

    for (int i = 0; i < g->nm; i++) {
        perf_check_member_t *m = &g->m[i];

        if (m->nlinks > 0 && m->best < g->threshold * g->ref) {
            m->suspect |= PERF_CHECK_BY_LINKS;
        }
        if (m->copy >= 0 && m->copy < g->threshold * g->ref_copy) {
            m->suspect |= PERF_CHECK_BY_COPY;
        }
    }
    for (int k = 0; k < g->nl; k++) {
        perf_check_link_t *l = &g->l[k];

        l->suspect = l->gbps >= 0 && l->gbps < g->threshold * g->ref &&
                     !(g->m[l->a].suspect & PERF_CHECK_BY_LINKS) &&
                     !(g->m[l->b].suspect & PERF_CHECK_BY_LINKS);
    }
}

int perf_check_find_link(const perf_check_graph_t *g, int a, int b)
{
    for (int k = 0; k < g->nl; k++) {
        if ((g->l[k].a == a && g->l[k].b == b) || (g->l[k].a == b && g->l[k].b == a)) {
            return k;
        }
    }
    return -1;
}

static int add_pair(perf_check_pair_t *out, int n, int max, int a, int b)
{
    perf_check_pair_t p = {a < b ? a : b, a < b ? b : a};

    for (int i = 0; i < n; i++) {
        if (out[i].a == p.a && out[i].b == p.b) {
            return n;
        }
    }
    if (n < max) {
        out[n++] = p;
    }
    return n;
}

int perf_check_retest_pairs(const perf_check_graph_t *g, int peers, perf_check_pair_t *out, int max,
                            int *copy_p)
{
    int n = 0;
    int *cand = malloc(sizeof(int) * (size_t)(g->nm > 0 ? g->nm : 1));

    *copy_p = 0;
    for (int k = 0; k < g->nl; k++) {
        if (g->l[k].suspect) {
            n = add_pair(out, n, max, g->l[k].a, g->l[k].b);
        }
    }
    for (int i = 0; i < g->nm; i++) {
        const perf_check_member_t *m = &g->m[i];
        int nc = 0;

        *copy_p |= (m->suspect & PERF_CHECK_BY_COPY) != 0;
        if (!(m->suspect & PERF_CHECK_BY_LINKS)) {
            continue;
        }
        /* peers of its group it has a measured link to: healthy ones first, the best first;
         * where none is healthy (a node of two ranks) a suspect peer still gives a second
         * sample */
        for (int j = 0; j < g->nm; j++) {
            int k = perf_check_find_link(g, i, j);
            if (j != i && g->m[j].group == m->group && k >= 0 && g->l[k].gbps >= 0) {
                cand[nc++] = j;
            }
        }
        for (int x = 1; x < nc; x++) { /* insertion sort: stable, so ties keep member order */
            int c = cand[x], y = x - 1;
            const perf_check_member_t *mc = &g->m[c];
            while (y >= 0) {
                const perf_check_member_t *my = &g->m[cand[y]];
                int healthy_c = !(mc->suspect & PERF_CHECK_BY_LINKS);
                int healthy_y = !(my->suspect & PERF_CHECK_BY_LINKS);
                if (healthy_c > healthy_y || (healthy_c == healthy_y && mc->best0 > my->best0)) {
                    cand[y + 1] = cand[y];
                    y--;
                } else {
                    break;
                }
            }
            cand[y + 1] = c;
        }
        for (int x = 0; x < nc && x < peers; x++) {
            n = add_pair(out, n, max, i, cand[x]);
        }
    }
    /* controls: links between healthy members, measured beside the suspects, so that the bar
     * of the second pass follows the job if all of it runs slower then (a shared machine) */
    for (int c = 0; n > 0 && c < peers; c++) {
        int best = -1;
        for (int k = 0; k < g->nl; k++) {
            const perf_check_link_t *l = &g->l[k];
            int used = 0;
            for (int i = 0; i < n && !used; i++) {
                used = out[i].a == (l->a < l->b ? l->a : l->b) &&
                       out[i].b == (l->a < l->b ? l->b : l->a);
            }
            if (!used && !l->suspect && l->gbps >= 0 && !g->m[l->a].suspect &&
                !g->m[l->b].suspect && (best < 0 || l->gbps > g->l[best].gbps)) {
                best = k;
            }
        }
        if (best < 0) {
            break;
        }
        n = add_pair(out, n, max, g->l[best].a, g->l[best].b);
    }
    free(cand);
    return n;
}

int perf_check_confirm(perf_check_graph_t *g)
{
    double *v = malloc(sizeof(double) * (size_t)(g->nl + g->nm + 1)), bar, bar_copy;
    int named = 0, n = 0;

    /* the re-test's own medians: of the controls (re-tested links between healthy members)
     * and of the copies; the bar is the lower of the two passes' */
    for (int k = 0; k < g->nl; k++) {
        const perf_check_link_t *l = &g->l[k];
        if (l->retest >= 0 && !l->suspect && !g->m[l->a].suspect && !g->m[l->b].suspect) {
            v[n++] = l->retest;
        }
    }
    g->ref_retest = n > 0 ? median_of(v, n) : g->ref;
    n = 0;
    for (int i = 0; i < g->nm; i++) {
        if (g->m[i].copy_retest >= 0) {
            v[n++] = g->m[i].copy_retest;
        }
    }
    g->ref_copy_retest = n > 0 ? median_of(v, n) : g->ref_copy;
    free(v);
    bar = g->threshold * (g->ref_retest < g->ref ? g->ref_retest : g->ref);
    bar_copy = g->threshold * (g->ref_copy_retest < g->ref_copy ? g->ref_copy_retest : g->ref_copy);

    /* from here on a re-tested figure stands for its link: the re-test is the later sample,
     * judged against the re-test's bar, as the first sample was against the first pass's */
    for (int k = 0; k < g->nl; k++) {
        perf_check_link_t *l = &g->l[k];
        l->eff = l->retest >= 0 ? l->retest : l->gbps;
    }
    member_best(g);
    for (int i = 0; i < g->nm; i++) {
        perf_check_member_t *m = &g->m[i];
        double best_retest = -1;

        for (int k = 0; k < g->nl; k++) {
            const perf_check_link_t *l = &g->l[k];
            if ((l->a == i || l->b == i) && l->retest > best_retest) {
                best_retest = l->retest;
            }
        }
        m->best_retest = best_retest;
        m->copy_eff = m->copy_retest >= 0 ? m->copy_retest : m->copy;
        m->named = 0;
        if ((m->suspect & PERF_CHECK_BY_LINKS) && best_retest >= 0 && best_retest < bar) {
            m->named |= PERF_CHECK_BY_LINKS;
        }
        if ((m->suspect & PERF_CHECK_BY_COPY) && m->copy_retest >= 0 && m->copy_retest < bar_copy) {
            m->named |= PERF_CHECK_BY_COPY;
        }
        m->below_expect = m->expect > 0 && m->nlinks > 0 && m->best < g->expect_frac * m->expect;
        named += m->named != 0;
    }
    for (int k = 0; k < g->nl; k++) {
        perf_check_link_t *l = &g->l[k];

        l->named = l->suspect && l->retest >= 0 && l->retest < bar &&
                   !(g->m[l->a].named & PERF_CHECK_BY_LINKS) &&
                   !(g->m[l->b].named & PERF_CHECK_BY_LINKS);
        l->below_expect = l->expect > 0 && l->eff >= 0 && l->eff < g->expect_frac * l->expect;
        named += l->named;
    }
    return named;
}

/* ---- the time budget --------------------------------------------------------------------- */

double perf_check_plan_time(const perf_check_budget_t *b, size_t size, int iters)
{
    double gbps = b->gbps > 1e-9 ? b->gbps : 1e-9;
    double exchange = b->lat_s + (double)size / (gbps * 1e9);

    /* a quarter to spare: rounds whose slowest pair is slower than the probe's */
    return 1.25 * (b->rounds + b->retest_rounds) * (b->round_s + (iters + 1) * exchange);
}

int perf_check_plan(const perf_check_budget_t *b, perf_check_plan_t *p)
{
    double avail = b->budget_s - b->spent_s;
    size_t size = b->max_size;

    for (;;) {
        if (perf_check_plan_time(b, size, b->want_iters) <= avail) {
            int iters = b->want_iters;
            while (iters < b->max_iters && perf_check_plan_time(b, size, iters + 1) <= avail) {
                iters++;
            }
            p->size = size;
            p->iters = iters;
            p->est_s = perf_check_plan_time(b, size, iters);
            return 0;
        }
        if (size <= b->min_size) {
            break;
        }
        size = (size / 2 < b->min_size) ? b->min_size : size / 2;
    }
    for (int iters = b->want_iters - 1; iters >= b->min_iters; iters--) {
        if (perf_check_plan_time(b, b->min_size, iters) <= avail) {
            p->size = b->min_size;
            p->iters = iters;
            p->est_s = perf_check_plan_time(b, b->min_size, iters);
            return 0;
        }
    }
    p->size = b->min_size;
    p->iters = b->min_iters;
    p->est_s = perf_check_plan_time(b, b->min_size, b->min_iters);
    return -1;
}
