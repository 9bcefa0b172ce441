/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_out.c: what `sharc-perf check` prints on rank 0, in sharc-perf's column style (header
 * lines start with '#', figures right-aligned under them), then the verdict, one line a
 * finding (SLOW, noisy, WARN, OK), and the heat map of the pairwise figures through gnuplot.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_job.h"
#include "../common/perf_util.h"

/* A figure, or "-" when there is none. */
static const char *fig(char *buf, size_t len, double v, const char *fmt)
{
    if (v < 0) {
        return "-";
    }
    perf_snprintf(buf, len, fmt, v);
    return buf;
}

static const char *pct(char *buf, size_t len, double v, double ref)
{
    return (v >= 0 && ref > 0) ? (perf_snprintf(buf, len, "%.1f", 100 * v / ref), buf) : "-";
}

static const char *member_verdict(const perf_check_member_t *m, unsigned what)
{
    if (m->named & what) {
        return "SLOW";
    }
    return (m->suspect & what) ? "noisy" : (m->below_expect ? "below-exp" : "ok");
}

/* A link below the bar that a slow member explains says so: "node 2", "rank 5". */
static const char *link_verdict(const perf_check_graph_t *g, const perf_check_link_t *l,
                                const char *what, char *buf, size_t len)
{
    if (l->named || l->suspect) {
        return l->named ? "SLOW" : "noisy";
    }
    if (l->eff >= 0 && l->eff < g->threshold * g->ref) {
        for (int s = 0; s < 2; s++) {
            int m = s ? l->b : l->a;
            if (g->m[m].named & PERF_CHECK_BY_LINKS) {
                perf_snprintf(buf, len, "(%s %d)", what, m);
                return buf;
            }
        }
    }
    return l->below_expect ? "below-exp" : "ok";
}

static void print_ranks(const perf_check_job_t *j, FILE *out)
{
    const perf_check_graph_t *g = &j->intra;
    char a[32], b[32], c[32], d[32], e[32];

    fprintf(out, "#\n# ranks: each rank's %s of %zu B (%s, median %.3f GB/s)%s\n",
            j->o->cuda ? "device-to-device copy" : "memcpy (its median iteration over 50 ms)",
            PERF_CHECK_COPY_SIZE(j->plan.size),
            j->o->cuda ? "every rank at once" : "the ranks of a machine in turn", g->ref_copy,
            g->nl > 0 ? "; its best pair inside its node" : "");
    fprintf(out, "#%6s %5s %6s  %-16s %9s %8s %9s %9s %8s  %s\n", "rank", "node", "local", "host",
            "copy", "%median", "retest", "best pair", "%median", "verdict");
    fprintf(out, "#%6s %5s %6s  %-16s %9s %8s %9s %9s %8s\n", "", "", "", "", "(GB/s)", "",
            "(GB/s)", "(GB/s)", "");
    for (int r = 0; r < g->nm; r++) {
        const perf_check_member_t *m = &g->m[r];
        const char *v = member_verdict(m, PERF_CHECK_BY_COPY);

        if (m->nlinks > 0 && strcmp(member_verdict(m, PERF_CHECK_BY_LINKS), "ok") != 0) {
            v = member_verdict(m, PERF_CHECK_BY_LINKS);
        }
        if ((m->named & PERF_CHECK_BY_COPY) != 0) {
            v = "SLOW";
        }
        fprintf(out, " %6d %5d %6d  %-16s %9s %8s %9s %9s %8s  %s\n", r, j->node_of[r],
                j->lrank_of[r], j->host[j->node_of[r]], fig(a, sizeof(a), m->copy, "%.3f"),
                pct(b, sizeof(b), m->copy, g->ref_copy), fig(c, sizeof(c), m->copy_retest, "%.3f"),
                fig(d, sizeof(d), m->nlinks ? m->best : -1, "%.3f"),
                pct(e, sizeof(e), m->nlinks ? m->best : -1, g->ref), v);
    }
}

/* A link's figures after the columns that name it: busbw, %median, expected, %expect, re-test
 * and the verdict (a slow member that explains it named by @p what, "node" or "rank"). */
static void link_figures(const perf_check_graph_t *g, const perf_check_link_t *l, const char *what,
                         char *buf, size_t len)
{
    char a[32], b[32], c[32], d[32], e[32], f[32];

    perf_snprintf(buf, len, "%9s %8s %9s %8s %9s  %s", fig(a, sizeof(a), l->gbps, "%.3f"),
                  pct(b, sizeof(b), l->gbps, g->ref), fig(c, sizeof(c), l->expect, "%.3f"),
                  pct(d, sizeof(d), l->eff, l->expect), fig(e, sizeof(e), l->retest, "%.3f"),
                  link_verdict(g, l, what, f, sizeof(f)));
}

static void print_intra(const perf_check_job_t *j, FILE *out)
{
    const perf_check_graph_t *g = &j->intra;
    char figs[256];

    if (g->nl == 0) {
        fprintf(out, "#\n# intra-node pairs: none (one rank a node)\n");
        return;
    }
    fprintf(out,
            "#\n# intra-node pairs: %d round(s), every node's pairs of a round at once; the job's "
            "median %.3f GB/s%s\n",
            j->intra_rounds, g->ref, j->o->cuda ? "" : "; expected: the node's median copy");
    fprintf(out, "#%6s %5s %5s %5s  %-16s %9s %8s %9s %8s %9s  %s\n", "round", "rank", "rank",
            "node", "host", "busbw", "%median", "expected", "%expect", "retest", "verdict");
    fprintf(out, "#%6s %5s %5s %5s  %-16s %9s %8s %9s %8s %9s\n", "", "", "", "", "", "(GB/s)", "",
            "(GB/s)", "", "(GB/s)");
    for (int k = 0; k < g->nl; k++) {
        const perf_check_link_t *l = &g->l[k];

        link_figures(g, l, "rank", figs, sizeof(figs));
        fprintf(out, " %6d %5d %5d %5d  %-16s %s\n", j->intra_round[k], l->a, l->b,
                j->node_of[l->a], j->host[j->node_of[l->a]], figs);
    }
}

static void print_inter(const perf_check_job_t *j, FILE *out)
{
    const perf_check_graph_t *g = &j->inter;
    char figs[256];

    fprintf(out,
            "#\n# inter-node pairs: %d round(s) of a round-robin tournament, all pairs of a round "
            "at once, local rank i with local rank i (%d rail%s)\n",
            j->inter_rounds, j->rails, j->rails > 1 ? "s" : "");
    fprintf(out, "#%6s %5s  %-16s %5s  %-16s %9s %8s %9s %8s %9s  %s\n", "round", "node", "host",
            "node", "host", "busbw", "%median", "expected", "%expect", "retest", "verdict");
    fprintf(out, "#%6s %5s  %-16s %5s  %-16s %9s %8s %9s %8s %9s\n", "", "", "", "", "", "(GB/s)",
            "", "(GB/s)", "", "(GB/s)");
    for (int k = 0; k < g->nl; k++) {
        const perf_check_link_t *l = &g->l[k];

        link_figures(g, l, "node", figs, sizeof(figs));
        fprintf(out, " %6d %5d  %-16s %5d  %-16s %s\n", j->inter_round[k], l->a, j->host[l->a],
                l->b, j->host[l->b], figs);
    }
}

static void print_ring(const perf_check_job_t *j, FILE *out)
{
    char a[32], b[32];
    int slow = 0;

    if (j->ring_gbps < 0) {
        fprintf(out, "#\n# ring: none (2 nodes: the pair is the ring)\n");
        return;
    }
    fprintf(out, "#\n# ring: each node sends to the next, all at once; the hop into each node\n");
    fprintf(out, "#%6s  %-16s %5s  %-16s %9s %8s\n", "node", "host", "from", "host", "busbw",
            "%median");
    for (int n = 0; n < j->nnodes; n++) {
        int from = (n - 1 + j->nnodes) % j->nnodes;
        fprintf(out, " %6d  %-16s %5d  %-16s %9s %8s\n", n, j->host[n], from, j->host[from],
                fig(a, sizeof(a), j->ring_hop[n], "%.3f"),
                pct(b, sizeof(b), j->ring_hop[n], j->inter.ref));
        slow = j->ring_hop[n] < j->ring_hop[slow] ? n : slow;
    }
    fprintf(out, "# ring: %.3f GB/s, the slowest hop %s -> %s\n", j->ring_gbps,
            j->host[(slow - 1 + j->nnodes) % j->nnodes], j->host[slow]);
}

static void print_nodes(const perf_check_job_t *j, FILE *out)
{
    const perf_check_graph_t *g = &j->inter;
    char a[32], b[32], c[32], d[32], e[32], f[32];

    fprintf(out,
            "#\n# nodes: a node's figure is its best link (a node whose every link is slow is "
            "slow itself); the job's median %.3f GB/s, threshold %.0f%%\n",
            g->ref, 100 * g->threshold);
    fprintf(out, "#%6s  %-16s %6s %9s %9s %8s %9s %8s %9s  %-8s %s\n", "node", "host", "ranks",
            "best", "first", "%median", "expected", "%expect", "ring in", "verdict",
            "expected from");
    fprintf(out, "#%6s  %-16s %6s %9s %9s %8s %9s %8s %9s\n", "", "", "", "(GB/s)", "(GB/s)", "",
            "(GB/s)", "", "(GB/s)");
    for (int n = 0; n < g->nm; n++) {
        const perf_check_member_t *m = &g->m[n];
        fprintf(out, " %6d  %-16s %6d %9s %9s %8s %9s %8s %9s  %-8s %s\n", n, j->host[n],
                j->count[n], fig(a, sizeof(a), m->best, "%.3f"),
                fig(b, sizeof(b), m->best0, "%.3f"), pct(c, sizeof(c), m->best, g->ref),
                fig(d, sizeof(d), m->expect, "%.3f"), pct(e, sizeof(e), m->best, m->expect),
                fig(f, sizeof(f), j->ring_gbps >= 0 ? j->ring_hop[n] : -1, "%.3f"),
                member_verdict(m, PERF_CHECK_BY_LINKS), j->expect[n].why);
    }
}

/* "rank 3" or "ranks 3, 7, 11" of node n (at most 8 named). */
static void node_ranks(const perf_check_job_t *j, int n, char *buf, size_t len)
{
    size_t u = (size_t)perf_snprintf(buf, len, "rank%s ", j->count[n] > 1 ? "s" : "");

    for (int i = 0; i < j->count[n] && i < 8 && u < len; i++) {
        u += (size_t)perf_snprintf(buf + u, len - u, "%s%d", i ? ", " : "",
                                   j->by_node[j->first[n] + i]);
    }
    if (j->count[n] > 8 && u < len) {
        perf_snprintf(buf + u, len - u, ", ...");
    }
}

/* The links of member i of g: "node0 0.012, node1 0.011" (names from name()). */
static void member_links(const perf_check_job_t *j, const perf_check_graph_t *g, int i, int nodes,
                         char *buf, size_t len)
{
    size_t u = 0;

    buf[0] = '\0';
    for (int k = 0; k < g->nl && u < len; k++) {
        const perf_check_link_t *l = &g->l[k];
        int other = l->a == i ? l->b : l->b == i ? l->a : -1;
        if (other < 0 || l->eff < 0) {
            continue;
        }
        if (nodes) {
            u +=
                (size_t)perf_snprintf(buf + u, len - u, "%s%s %.3f%s", u ? ", " : "",
                                      j->host[other], l->eff, l->retest >= 0 ? " (re-tested)" : "");
        } else {
            u += (size_t)perf_snprintf(buf + u, len - u, "%srank %d %.3f%s", u ? ", " : "", other,
                                       l->eff, l->retest >= 0 ? " (re-tested)" : "");
        }
    }
}

/* "X GB/s, P% of the job's median M GB/s; re-tested: Y GB/s, Q% of the re-test's median R
 * GB/s", and for a suspect the re-test cleared, that it is not named. */
static void evidence(char *buf, size_t len, double first, double retest, double ref, double ref2,
                     int named)
{
    size_t u = (size_t)perf_snprintf(buf, len, "%.3f GB/s, %.0f%% of the job's median %.3f GB/s",
                                     first, 100 * first / ref, ref);

    if (u < len && retest >= 0) {
        u += (size_t)perf_snprintf(buf + u, len - u,
                                   "; re-tested: %.3f GB/s, %.0f%% of the re-test's median %.3f "
                                   "GB/s",
                                   retest, 100 * retest / ref2, ref2);
    } else if (u < len) {
        u += (size_t)perf_snprintf(buf + u, len - u, "; not re-tested");
    }
    if (u < len && !named) {
        perf_snprintf(buf + u, len - u, ": not named (one slow sample accuses nothing)");
    }
}

static int print_findings(const perf_check_job_t *j, FILE *out)
{
    const perf_check_graph_t *gi = &j->inter, *ga = &j->intra;
    char ranks[128], links[1024], ev[256];
    int lines = 0, below = 0;

    for (int n = 0; n < gi->nm; n++) {
        const perf_check_member_t *m = &gi->m[n];
        int named = (m->named & PERF_CHECK_BY_LINKS) != 0;

        if (!(m->suspect & PERF_CHECK_BY_LINKS)) {
            continue;
        }
        node_ranks(j, n, ranks, sizeof(ranks));
        member_links(j, gi, n, 1, links, sizeof(links));
        /* best: the better of each re-tested link's two samples */
        evidence(ev, sizeof(ev), m->best0, m->best_retest, gi->ref, gi->ref_retest, named);
        fprintf(out, "%s node %d (%s, %s): even its best link is slow: %s; its links (GB/s): %s\n",
                named ? "SLOW" : "noisy:", n, j->host[n], ranks, ev, links);
        lines++;
    }
    for (int k = 0; k < gi->nl; k++) {
        const perf_check_link_t *l = &gi->l[k];
        if (!l->suspect) {
            continue;
        }
        evidence(ev, sizeof(ev), l->gbps, l->retest, gi->ref, gi->ref_retest, l->named);
        fprintf(out,
                "%s link %s (node %d) <-> %s (node %d): %s; both nodes' other links are fine\n",
                l->named ? "SLOW" : "noisy:", j->host[l->a], l->a, j->host[l->b], l->b, ev);
        lines++;
    }
    for (int r = 0; r < ga->nm; r++) {
        const perf_check_member_t *m = &ga->m[r];
        int named_copy = (m->named & PERF_CHECK_BY_COPY) != 0;
        int named_links = (m->named & PERF_CHECK_BY_LINKS) != 0;

        if (m->suspect & PERF_CHECK_BY_COPY) {
            evidence(ev, sizeof(ev), m->copy, m->copy_retest, ga->ref_copy, ga->ref_copy_retest,
                     named_copy);
            fprintf(out, "%s rank %d (%s, local rank %d): its copy ran at %s\n",
                    named_copy ? "SLOW" : "noisy:", r, j->host[j->node_of[r]], j->lrank_of[r], ev);
            lines++;
        }
        if (m->suspect & PERF_CHECK_BY_LINKS) {
            member_links(j, ga, r, 0, links, sizeof(links));
            evidence(ev, sizeof(ev), m->best0, m->best_retest, ga->ref, ga->ref_retest,
                     named_links);
            fprintf(out,
                    "%s rank %d (%s, local rank %d): even its best pair inside the node is slow: "
                    "%s; its pairs (GB/s): %s%s\n",
                    named_links ? "SLOW" : "noisy:", r, j->host[j->node_of[r]], j->lrank_of[r], ev,
                    links,
                    j->count[j->node_of[r]] == 2
                        ? "; with two ranks on the node, the pair cannot say which rank is slow"
                        : "");
            lines++;
        }
    }
    for (int k = 0; k < ga->nl; k++) {
        const perf_check_link_t *l = &ga->l[k];
        if (l->suspect) {
            evidence(ev, sizeof(ev), l->gbps, l->retest, ga->ref, ga->ref_retest, l->named);
            fprintf(out, "%s pair rank %d <-> rank %d (%s): %s\n",
                    l->named ? "SLOW" : "noisy:", l->a, l->b, j->host[j->node_of[l->a]], ev);
            lines++;
        }
    }
    for (int n = 0; n < gi->nm; n++) {
        const perf_check_member_t *m = &gi->m[n];
        if (m->below_expect) {
            fprintf(out,
                    "WARN node %d (%s): %.3f GB/s is %.1f%% of the expected %.3f GB/s (%s), "
                    "below %.0f%%\n",
                    n, j->host[n], m->best, 100 * m->best / m->expect, m->expect, j->expect[n].why,
                    100 * gi->expect_frac);
            below++;
        }
    }
    if (below == 2 && gi->nm == 2) {
        fprintf(out,
                "WARN the link between the two nodes is below %.0f%% of its expected "
                "figure; with two nodes, which end is slow cannot be told\n",
                100 * gi->expect_frac);
    } else if (below > 1 && below == gi->nm) {
        fprintf(out,
                "WARN every node is below %.0f%% of its expected figure: a cause the whole job "
                "shares (the transport: TCP, host buffers; the settings: sharc-topo doctor), not "
                "one node\n",
                100 * gi->expect_frac);
    }
    return lines;
}

void perf_check_print(const perf_check_job_t *j, FILE *out)
{
    int nlinks = j->inter.nl + j->intra.nl;

    fprintf(out,
            "# sharc-perf check: %d ranks on %d nodes (%d to %d a node; %d rail%s), %s buffers; "
            "exchanges of %zu B, %d timed (+1) a round; budget %.0f s (planned %.1f s of "
            "exchanges; took %.1f s)\n",
            j->nranks, j->nnodes, j->rails, j->maxlocal, j->rails, j->rails > 1 ? "s" : "",
            j->o->cuda ? "device" : "host", j->plan.size, j->plan.iters, j->o->budget_s,
            j->plan.est_s, j->elapsed_s);
    fprintf(out,
            "# busbw: the bytes a rank sends its peer per second while the peer sends back (a "
            "2-rank all-gather's busbw), summed over the rails; the median over the iterations "
            "of the slowest rank; an outlier is below %.0f%% of the job's median, re-tested\n",
            100 * j->inter.threshold);
    print_ranks(j, out);
    print_intra(j, out);
    print_inter(j, out);
    print_ring(j, out);
    print_nodes(j, out);
    fprintf(out, "#\n# verdict\n");
    if (print_findings(j, out) == 0 || j->named == 0) {
        fprintf(out, "OK: no slow node, link or rank (%d nodes, %d links, %d ranks)\n", j->nnodes,
                nlinks, j->nranks);
    }
    fprintf(out, "# sharc-perf check: %d named (exit status %d)\n", j->named, j->named > 0 ? 1 : 0);
    fflush(out);
}

/* ---- the heat map ------------------------------------------------------------------------ */

void perf_check_plot(const perf_check_job_t *j, const char *png)
{
    const perf_check_graph_t *g = &j->inter;
    int n = j->nnodes, px = 360 + 48 * n;
    double *m = malloc(sizeof(double) * (size_t)(n * n)), top = g->ref, bar;
    char slow[256] = "";
    FILE *gp;

    for (int i = 0; i < n * n; i++) {
        m[i] = NAN;
    }
    for (int k = 0; k < g->nl; k++) {
        m[g->l[k].a * n + g->l[k].b] = m[g->l[k].b * n + g->l[k].a] = g->l[k].eff;
        top = g->l[k].eff > top ? g->l[k].eff : top;
    }
    for (int i = 0, u = 0; i < n && u < (int)sizeof(slow); i++) {
        if (g->m[i].named & PERF_CHECK_BY_LINKS) {
            u += perf_snprintf(slow + u, sizeof(slow) - (size_t)u, "%s%s",
                               u ? ", " : "; SLOW: ", j->host[i]);
        }
    }
    /* red up to the threshold, pale at it, blue at the top */
    bar = top > 0 ? g->threshold * g->ref / top : 0.5;
    bar = bar > 0.01 && bar < 0.99 ? bar : 0.5;
    gp = popen("gnuplot 2>/dev/null", "w");
    if (gp == NULL) {
        fprintf(stderr, "sharc-perf check: no heat map (gnuplot cannot run)\n");
        free(m);
        return;
    }
    px = px > 2400 ? 2400 : px;
    fprintf(gp, "set terminal pngcairo size %d,%d noenhanced\nset output '%s'\n", px + 240, px,
            png);
    fprintf(gp,
            "set title \"sharc-perf check: busbw between nodes (GB/s), %zu B exchanges\\n"
            "the job's median %.3g GB/s, threshold %.0f%%%s\"\n"
            "unset key\nset size ratio -1\nset datafile missing 'NaN'\n"
            "set cblabel 'GB/s'\nset cbrange [0:%g]\n"
            "set palette defined (0 '#b2182b', %g '#fddbc7', 1 '#2166ac')\n"
            "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n",
            j->plan.size, g->ref, 100 * g->threshold, slow, top, bar, n - 1, n - 1);
    for (int axis = 0; axis < 2; axis++) {
        fprintf(gp, "set %ctics (", axis ? 'y' : 'x');
        for (int i = 0; i < n; i++) {
            fprintf(gp, "%s\"%s%s\" %d", i ? ", " : "", j->host[i],
                    (g->m[i].named & PERF_CHECK_BY_LINKS) ? " (SLOW)" : "", i);
        }
        fprintf(gp, ")%s\n", axis ? "" : " rotate by 45 right");
    }
    fprintf(gp, "$m << EOD\n");
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            if (isnan(m[a * n + b])) {
                fprintf(gp, "%sNaN", b ? " " : "");
            } else {
                fprintf(gp, "%s%.6g", b ? " " : "", m[a * n + b]);
            }
        }
        fprintf(gp, "\n");
    }
    fprintf(gp, "EOD\nplot $m matrix with image%s\n",
            n <= 24 ? ", $m matrix using 1:2:($3 == $3 ? sprintf('%.3g', $3) : '') with labels"
                    : "");
    free(m);
    if (pclose(gp) != 0) {
        fprintf(stderr, "sharc-perf check: no heat map (gnuplot missing or failed)\n");
    }
}
