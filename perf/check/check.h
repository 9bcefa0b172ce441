/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h: `sharc-perf check`, which finds the slow node, rank or link of a job before
 * training starts. The pure decisions live in check_logic.c with their unit tests
 * (tests/perf/test_check.c): the round-robin schedule of the pair tests, the verdict against the
 * job's median with its confirmation by a re-test, and the plan that fits the message size and
 * iterations into the time budget. check_main.c, check_job.c, check_run.c and check_pass.c
 * run the job (public API only), check_out.c prints the tables and the heat map, check_json.c
 * writes JSON and reads sharc-topo's.
 */
#ifndef SHARC_PERF_CHECK_H
#define SHARC_PERF_CHECK_H

#include <stddef.h>
#include <stdio.h>

/* ---- the schedule ------------------------------------------------------------------------ */

typedef struct {
    int a, b; /* members (nodes, or ranks of one node), a < b */
} perf_check_pair_t;

/* Rounds of a round-robin tournament of @p n members: n - 1 when n is even, n when it is odd
 * (one member sits out each round), 0 below 2. */
int perf_check_rr_rounds(int n);

/*
 * The pairs of round @p r (0 <= r < perf_check_rr_rounds(n)) by the circle method: member 0
 * (or, for odd n, the member that sits out) stays in place and the others turn one place a
 * round. Every pair of members meets in exactly one round, and no member is in two pairs of
 * one round. Writes n / 2 pairs (a < b) to @p pairs and returns how many.
 */
int perf_check_rr_round(int n, int r, perf_check_pair_t *pairs);

/*
 * Rounds for an arbitrary list of pairs (the re-test): pair i goes to the first round in which
 * neither of its members is busy (greedy, in list order). @p round_of[i] receives its round;
 * returns the number of rounds. Members are 0 .. nmembers - 1.
 */
int perf_check_greedy_rounds(const perf_check_pair_t *pairs, int npairs, int nmembers,
                             int *round_of);

/* ---- the verdict ------------------------------------------------------------------------- */

enum {
    PERF_CHECK_BY_LINKS = 1u << 0, /* every link of the member is slow */
    PERF_CHECK_BY_COPY = 1u << 1,  /* its own copy bandwidth is slow */
};

typedef struct {
    int a, b;      /* members, a < b */
    double gbps;   /* the first measurement, GB/s; < 0: not measured */
    double retest; /* the re-test's, GB/s; < 0: not re-tested */
    double expect; /* what the topology says it should carry, GB/s; <= 0: unknown */
    /* out */
    double eff;       /* the latest figure: the re-test's, else the first */
    int suspect;      /* slow in the first pass and not explained by a slow member */
    int named;        /* suspect, and slow again in the re-test */
    int below_expect; /* eff < expect_frac * expect */
} perf_check_link_t;

typedef struct {
    int group;   /* links join members of one group only (inter-node: 0; ranks: their node) */
    double copy; /* its own copy bandwidth, GB/s; < 0: none */
    double copy_retest; /* < 0: not re-tested */
    double expect;      /* GB/s, <= 0: unknown */
    /* out */
    int nlinks;         /* measured links */
    double best, best0; /* its best link (after the re-test; in the first pass) */
    double copy_eff;    /* the latest copy figure */
    double best_retest; /* its best re-tested link, < 0 none */
    unsigned suspect;   /* PERF_CHECK_BY_* of the first pass */
    unsigned named;     /* of those, what the re-test confirmed */
    int below_expect;   /* best < expect_frac * expect */
} perf_check_member_t;

typedef struct {
    perf_check_member_t *m;
    int nm;
    perf_check_link_t *l;
    int nl;
    double threshold;   /* an outlier is below threshold * the median (0.75) */
    double expect_frac; /* below expect_frac * expected is reported (0.5) */
    /* out, set by the first pass and kept by the second */
    double ref;      /* the job's median: of the members' best links */
    double ref_copy; /* of the members' copy bandwidths */
    /* out, set by the second pass: the re-test's medians (of its controls, of the copies) */
    double ref_retest, ref_copy_retest;
} perf_check_graph_t;

/*
 * The first pass. A member's figure is its best link: a node is slow when even its best link
 * is slow, since a healthy node has at least one healthy peer; a slow peer drags down only the
 * links it is in. ref is the median of the members' best links; a member is a suspect
 * (PERF_CHECK_BY_LINKS) when its best link is below threshold * ref, and a link is a suspect
 * when it is below threshold * ref and neither of its members is a suspect (the link itself:
 * a cable, a switch port, a route). Copy bandwidths are judged against their own median
 * (PERF_CHECK_BY_COPY). Below is strict: a figure at exactly the threshold is not slow.
 * Resets every retest to -1.
 */
void perf_check_verdict(perf_check_graph_t *g);

/*
 * What to re-test after the first pass, so that one noisy sample accuses nothing: every
 * suspect link, each member suspected by its links against up to @p peers healthy members of
 * its group (those with the best links first), and, when there is anything to re-test, up to
 * @p peers controls: the best links between healthy members, which give the second pass its
 * own median. Writes at most @p max pairs (a < b, each once) and returns how many; *copy_p is
 * set when some member's copy is a suspect (the copy test is then run again on every rank).
 */
int perf_check_retest_pairs(const perf_check_graph_t *g, int peers, perf_check_pair_t *out, int max,
                            int *copy_p);

/* Index of the link (a, b) in either order, or -1. */
int perf_check_find_link(const perf_check_graph_t *g, int a, int b);

/*
 * The second pass, after the re-test figures are in the links (retest) and members
 * (copy_retest). Each sample is judged against the job as it ran at the time: a suspect is
 * named only when its re-test is below threshold times the lower of the first pass's median
 * and the re-test's own (of its controls; of every rank's copy), so neither a noisy first
 * sample nor a job that runs slower during the re-test accuses anything. A member suspected by
 * its links is judged by its best re-tested link. A suspect that was not re-tested is never
 * named. A re-tested figure then stands for its link (eff); members' best follow. Also sets
 * below_expect. Returns the number of named members and links.
 */
int perf_check_confirm(perf_check_graph_t *g);

/* ---- the time budget --------------------------------------------------------------------- */

typedef struct {
    double budget_s;      /* the whole run */
    double spent_s;       /* already spent: start-up, topology, the probe */
    double rounds;        /* rounds of exchanges in the measuring passes (copy, pairs, ring) */
    double retest_rounds; /* kept back for the re-test */
    double round_s;       /* the fixed cost of a round (a split, barriers), from the probe */
    double lat_s;         /* the fixed cost of one exchange, from the probe */
    double gbps;          /* what the probe's slowest pair carried, GB/s */
    size_t min_size, max_size;
    int min_iters, want_iters, max_iters;
} perf_check_budget_t;

typedef struct {
    size_t size;  /* bytes each rank sends per exchange */
    int iters;    /* timed exchanges per round, after one untimed */
    double est_s; /* the passes' estimated seconds; when nothing fits, what the least needs */
} perf_check_plan_t;

/*
 * The largest size (max_size halved, down to min_size) at which want_iters exchanges per
 * round fit in what is left of the budget (with a quarter to spare), then as many iterations
 * as fit up to max_iters; failing that, min_size with as many as fit from min_iters up.
 * Returns 0, or -1 when not even min_size with min_iters fits (est_s: the time that needs).
 */
int perf_check_plan(const perf_check_budget_t *b, perf_check_plan_t *p);

/* The estimated seconds of the passes at one size and iteration count. */
double perf_check_plan_time(const perf_check_budget_t *b, size_t size, int iters);

#endif
