/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verdict.c: why a communicator's collective is stalled, worked out from every rank's head
 * (flight_dump.c): the same text from the same heads, so every rank that hears them logs
 * the same culprit. In order: ranks that did not answer; ranks that have not posted the
 * stalled collective; ranks that posted a different one in its place (a desync); else the
 * data that is not arriving, blaming a rank only when it is not itself waiting. Pure: no
 * clock, no communication; the live exchange is stall.c's, the offline one why.c's.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "diagnostics.h"

/* How many ranks a list names before it says "and N more". */
#define SHARC_VERDICT_LIST 6

typedef struct {
    char *buf;
    size_t size, len;
} sharc_verdict_out_t;

static void sharc_verdict_put(sharc_verdict_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sharc_verdict_put(sharc_verdict_out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->len >= o->size) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    o->len = (n < 0) ? o->size : SHARC_MIN(o->size, o->len + (size_t)n);
}

/* "rank 3 (host)" for @p r; the host as the rank said it, else the communicator's record. */
static void sharc_verdict_rank(sharc_verdict_out_t *o, const sharc_coll_head_t *heads,
                               const char (*hosts)[SHARC_HOST_MAX], int r)
{
    const char *host = heads[r].answered ? heads[r].host : (hosts ? hosts[r] : "?");

    sharc_verdict_put(o, "rank %d (%s)", r, host[0] ? host : "?");
}

/* "<op> of <count> <dtype>" */
static void sharc_verdict_op(sharc_verdict_out_t *o, int type, uint64_t count, int dtype)
{
    const char *dt = sharc_dtype_name((sharc_dtype_t)dtype);

    sharc_verdict_put(o, "%s of %llu %s", sharc_coll_name((sharc_coll_type_t)type),
                      (unsigned long long)count, dt ? dt : "?");
}

/* The ranks @p in[r] marks, as a list: "ranks 1, 4 and 6". */
static void sharc_verdict_ranks(sharc_verdict_out_t *o, const sharc_coll_head_t *heads,
                                const char (*hosts)[SHARC_HOST_MAX], const char *in, int n)
{
    int shown = 0, total = 0;

    for (int r = 0; r < n; r++) {
        total += in[r] != 0;
    }
    for (int r = 0; r < n && shown < SHARC_VERDICT_LIST; r++) {
        if (in[r]) {
            sharc_verdict_put(o, "%s", shown == 0 ? "" : (shown + 1 == total ? " and " : ", "));
            sharc_verdict_rank(o, heads, hosts, r);
            shown++;
        }
    }
    if (total > shown) {
        sharc_verdict_put(o, " and %d more", total - shown);
    }
}

/* Whether heads @p a and @p b stalled on the same call (op, dtype, count, lane). */
static int sharc_verdict_same(const sharc_coll_head_t *a, const sharc_coll_head_t *b)
{
    return a->st_type == b->st_type && a->st_dtype == b->st_dtype && a->st_count == b->st_count &&
           a->st_lane == b->st_lane &&
           (a->st_type != SHARC_COLL_ALLREDUCE && a->st_type != SHARC_COLL_REDUCE_SCATTER
                ? 1
                : a->st_op == b->st_op);
}

/* What rank @p r last did: "its last collective was #5, allreduce of 256 f32, complete 61 s
 * ago" (or that it posted none). */
static void sharc_verdict_last(sharc_verdict_out_t *o, const sharc_coll_head_t *h)
{
    if (h->posted == 0) {
        sharc_verdict_put(o, "it has posted no collective on this communicator");
        return;
    }
    sharc_verdict_put(o, "its last collective was #%llu, ", (unsigned long long)h->posted - 1);
    sharc_verdict_op(o, h->last_type, h->last_count, h->last_dtype);
    sharc_verdict_put(o, ", posted %.0f s ago", h->last_age);
    if (h->last_done_age >= 0) {
        sharc_verdict_put(o, " and %s %.0f s ago",
                          sharc_coll_state_name(h->last_state, h->last_status), h->last_done_age);
    } else {
        sharc_verdict_put(o, " and still %s", sharc_coll_state_name(h->last_state, SHARC_OK));
    }
}

/* The stalled ordinal: the oldest collective an answering rank has not completed. */
static int sharc_verdict_stalled(const sharc_coll_head_t *heads, int n, uint64_t *s_p)
{
    int ref = -1;

    for (int r = 0; r < n; r++) {
        if (heads[r].answered && heads[r].stalled < heads[r].posted &&
            (ref < 0 || heads[r].stalled < heads[ref].stalled)) {
            ref = r;
        }
    }
    if (ref >= 0) {
        *s_p = heads[ref].stalled;
    }
    return ref;
}

/* All answered, all posted S alike: whose data is not arriving, from the waits. The first
 * rank blamed, or -1 when none is (a ring of waits). */
static int sharc_verdict_data(sharc_verdict_out_t *o, const sharc_coll_head_t *heads,
                              const char (*hosts)[SHARC_HOST_MAX], int n, uint64_t s)
{
    int blamed = 0, first = -1;

    for (int r = 0; r < n; r++) {
        if (heads[r].stalled != s || heads[r].stalled >= heads[r].posted) {
            continue;
        }
        for (int i = 0; i < heads[r].npending; i++) {
            int p = heads[r].pending[i];

            /* p finished its part of S (or never waits in it): the data it sent to r is
             * what does not arrive */
            if (p >= 0 && p < n && (heads[p].stalled != s || heads[p].stalled == heads[p].posted)) {
                first = blamed++ ? first : p;
                sharc_verdict_put(o, "%sdata from ", blamed > 1 ? "; " : ": ");
                sharc_verdict_rank(o, heads, hosts, p);
                sharc_verdict_put(o, " is not arriving at ");
                sharc_verdict_rank(o, heads, hosts, r);
                sharc_verdict_put(o,
                                  ", though rank %d finished its part (a link between "
                                  "their hosts, or rank %d's transport)",
                                  p, p);
            }
        }
    }
    if (blamed > 0) {
        return first;
    }
    sharc_verdict_put(o, ": every rank posted it and waits, each for another (");
    for (int r = 0, shown = 0; r < n && shown < SHARC_VERDICT_LIST; r++) {
        if (heads[r].stalled == s && heads[r].npending > 0) {
            sharc_verdict_put(o, "%srank %d for rank %d", shown++ ? ", " : "", r,
                              heads[r].pending[0]);
        }
    }
    sharc_verdict_put(o, "): no rank is the cause on its own; a link among them does not "
                         "deliver");
    return -1;
}

int sharc_coll_verdict(const sharc_coll_head_t *heads, int n, const char (*hosts)[SHARC_HOST_MAX],
                       const char *comm, int live, char *buf, size_t size)
{
    sharc_verdict_out_t o = {buf, size, 0};
    char missing[n], behind[n], other[n], waiting[n];
    int ref, nmissing = 0, nbehind = 0, nother = 0, culprit = -1;
    uint64_t s = 0;
    const sharc_coll_head_t *h;

    buf[0] = '\0';
    ref = sharc_verdict_stalled(heads, n, &s);
    for (int r = 0; r < n; r++) {
        missing[r] = !heads[r].answered;
        behind[r] = heads[r].answered && ref >= 0 && heads[r].posted <= s;
        waiting[r] = heads[r].answered && ref >= 0 && heads[r].stalled == s &&
                     heads[r].stalled < heads[r].posted;
        other[r] = waiting[r] && !sharc_verdict_same(&heads[r], &heads[ref]);
        waiting[r] = waiting[r] && !other[r];
        nmissing += missing[r];
        nbehind += behind[r];
        nother += other[r];
    }
    if (ref < 0) {
        sharc_verdict_put(&o, "communicator %s: no collective is stalled now", comm);
        if (nmissing > 0) {
            sharc_verdict_put(&o, live ? "; no answer from " : "; no dump from ");
            sharc_verdict_ranks(&o, heads, hosts, missing, n);
        }
        return -1;
    }
    h = &heads[ref];
    sharc_verdict_put(&o, "communicator %s: collective #%llu (", comm, (unsigned long long)s);
    sharc_verdict_op(&o, h->st_type, h->st_count, h->st_dtype);
    sharc_verdict_put(&o, ", lane %d) has waited %.0f s on ", h->st_lane, h->st_age);
    sharc_verdict_ranks(&o, heads, hosts, waiting, n);
    if (nmissing > 0) {
        sharc_verdict_put(&o, live ? "; no answer from " : "; no dump from ");
        sharc_verdict_ranks(&o, heads, hosts, missing, n);
        sharc_verdict_put(&o, live ? " (gone, or cut off: its node, or a link to the store's)"
                                   : " (it ended without one, or its dump is elsewhere)");
    }
    for (int r = 0, shown = 0; r < n && shown < SHARC_VERDICT_LIST; r++) {
        if (behind[r]) {
            sharc_verdict_put(&o, "; ");
            sharc_verdict_rank(&o, heads, hosts, r);
            sharc_verdict_put(&o, " has not posted it: ");
            sharc_verdict_last(&o, &heads[r]);
            shown++;
        }
    }
    for (int r = 0, shown = 0; r < n && shown < SHARC_VERDICT_LIST; r++) {
        if (other[r]) {
            sharc_verdict_put(&o, "; ");
            sharc_verdict_rank(&o, heads, hosts, r);
            sharc_verdict_put(&o, " posted another collective as #%llu: ", (unsigned long long)s);
            sharc_verdict_op(&o, heads[r].st_type, heads[r].st_count, heads[r].st_dtype);
            sharc_verdict_put(&o, " (the ranks call collectives in different orders)");
            shown++;
        }
    }
    if (nmissing == 0 && nbehind == 0 && nother == 0) {
        culprit = sharc_verdict_data(&o, heads, hosts, n, s);
    }
    /* the culprit, in the order the text blames: silent, behind, out of order */
    for (int r = n - 1; r >= 0; r--) {
        culprit = (missing[r] || (nmissing == 0 && behind[r]) ||
                   (nmissing == 0 && nbehind == 0 && other[r]))
                      ? r
                      : culprit;
    }
    return culprit;
}
