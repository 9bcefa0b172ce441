/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_coll_v.c: one rank of the test of the rooted collectives (reduce, gather, scatter) and
 * the uneven ones (allgatherv, reduce_scatterv, alltoallv), public API only: every dtype (the
 * reductions every op it has), every root, in place and out of place, counts 0, 1, 7, 4097
 * and one large (CMA and rendezvous paths), blocks of different sizes with empty ones, packed
 * and with gaps in reverse order, against results computed here (small integers: every sum
 * exact; AVG as the library rounds it), guard bytes around every output, several in flight at
 * once; and bad arguments refused on the calling rank before any communication.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../check.h"
#include "../elem.h"

#define GUARD      64
#define GUARD_BYTE 0x5a
#define LARGE      100003

static int n, me;
static sharc_comm_h comm;
static const size_t counts[] = {0, 1, 7, 4097, LARGE};

static int is_float(sharc_dtype_t dt)
{
    return dt == SHARC_DTYPE_F32 || dt == SHARC_DTYPE_F64 || dt == SHARC_DTYPE_F16 ||
           dt == SHARC_DTYPE_BF16;
}

/* Rank r's element i of collective k: small integers (1 or 2 for products). */
static double value(int r, size_t i, int k, sharc_op_t op)
{
    if (op == SHARC_OP_PROD) {
        return 1.0 + (double)((r + i) % 2);
    }
    return 1.0 + (double)(((size_t)r * 3 + i * 7 + (size_t)k) % 8);
}

/* op over every rank's element i, rounded as the library rounds AVG (once, in f32 below f64) */
static double reduced(sharc_dtype_t dt, sharc_op_t op, size_t i, int k)
{
    double acc = value(0, i, k, op);

    for (int r = 1; r < n; r++) {
        double v = value(r, i, k, op);
        acc = op == SHARC_OP_PROD  ? acc * v
              : op == SHARC_OP_MIN ? (v < acc ? v : acc)
              : op == SHARC_OP_MAX ? (v > acc ? v : acc)
                                   : acc + v;
    }
    if (op == SHARC_OP_AVG) {
        acc = dt == SHARC_DTYPE_F64 ? acc * (1.0 / n) : (double)((float)acc * (float)(1.0 / n));
    }
    return dt == SHARC_DTYPE_U8 ? (double)((uint64_t)acc & 0xff) : acc;
}

static char *alloc_guarded(size_t bytes)
{
    char *p = malloc(bytes + 2 * GUARD);

    memset(p, GUARD_BYTE, bytes + 2 * GUARD);
    return p + GUARD;
}

static int guards_ok(const char *p, size_t bytes)
{
    for (size_t i = 0; i < GUARD; i++) {
        if ((unsigned char)p[-1 - (long)i] != GUARD_BYTE ||
            (unsigned char)p[bytes + i] != GUARD_BYTE) {
            return 0;
        }
    }
    return 1;
}

static void fill(void *buf, sharc_dtype_t dt, size_t off, size_t count, int r, int k,
                 sharc_op_t op)
{
    for (size_t i = 0; i < count; i++) {
        elem_put(buf, dt, off + i, value(r, i, k, op));
    }
}

/* Elements of @p buf (from @p off) that are not rank r's values of collective k. */
static size_t wrong_values(const void *buf, sharc_dtype_t dt, size_t off, size_t count, int r,
                           int k)
{
    size_t bad = 0;
    char want[8];

    for (size_t i = 0; i < count; i++) {
        elem_put(want, dt, 0, value(r, i, k, SHARC_OP_SUM));
        bad += memcmp((const char *)buf + (off + i) * sharc_dtype_size(dt), want,
                      sharc_dtype_size(dt)) != 0;
    }
    return bad;
}

/* ---- rooted --------------------------------------------------------------------------------- */

static void run_reduce(sharc_dtype_t dt, sharc_op_t op, size_t count, int root, int in_place)
{
    size_t es = sharc_dtype_size(dt), bad = 0;
    char *send = alloc_guarded(count * es), *recv = (me == root) ? alloc_guarded(count * es) : NULL;
    char want[8];
    int k = (int)count + root;

    fill(in_place && me == root ? recv : send, dt, 0, count, me, k, op);
    CHECK_MSG(sharc_reduce(in_place && me == root ? recv : send, recv, count, dt, op, root, comm,
                           NULL) == SHARC_OK,
              "reduce %s %s of %zu to %d", sharc_dtype_name(dt), sharc_op_name(op), count, root);
    for (size_t i = 0; me == root && i < count; i++) {
        elem_put(want, dt, 0, reduced(dt, op, i, k));
        bad += memcmp(recv + i * es, want, es) != 0;
    }
    CHECK_MSG(bad == 0 && (recv == NULL || guards_ok(recv, count * es)),
              "reduce %s %s of %zu to root %d%s: %zu wrong", sharc_dtype_name(dt),
              sharc_op_name(op), count, root, in_place ? " in place" : "", bad);
    free(send - GUARD);
    free(recv ? recv - GUARD : NULL);
}

static void run_gather_scatter(sharc_dtype_t dt, size_t count, int root, int in_place)
{
    size_t es = sharc_dtype_size(dt), bad = 0, all = (size_t)n * count;
    char *big = (me == root) ? alloc_guarded(all * es) : NULL, *mine = alloc_guarded(count * es);
    char *own = (in_place && me == root) ? big + (size_t)root * count * es : mine;
    int k = (int)count + 3 * root;

    /* gather: rank r's values land in block r of the root's buffer */
    fill(own, dt, 0, count, me, k, SHARC_OP_SUM);
    CHECK(sharc_gather(own, big, count, dt, root, comm, NULL) == SHARC_OK);
    for (int r = 0; me == root && r < n; r++) {
        bad += wrong_values(big, dt, (size_t)r * count, count, r, k);
    }
    CHECK_MSG(bad == 0 && (big == NULL || guards_ok(big, all * es)),
              "gather %s of %zu to root %d%s: %zu wrong", sharc_dtype_name(dt), count, root,
              in_place ? " in place" : "", bad);
    /* scatter it back, to the block's owner */
    memset(mine, 0, count * es);
    CHECK(sharc_scatter(big, own, count, dt, root, comm, NULL) == SHARC_OK);
    bad = wrong_values(own, dt, 0, count, me, k);
    CHECK_MSG(bad == 0 && guards_ok(mine, count * es),
              "scatter %s of %zu from root %d%s: %zu wrong", sharc_dtype_name(dt), count, root,
              in_place ? " in place" : "", bad);
    free(big ? big - GUARD : NULL);
    free(mine - GUARD);
}

/* ---- uneven --------------------------------------------------------------------------------- */

/* Blocks of rank r, of size base * ((r * 5 + k) % 4): some empty; with @p gaps, in reverse
 * rank order with one element between blocks, else packed (displs NULL). */
typedef struct {
    size_t c[64], d[64], extent;
} layout_t;

static void layout(layout_t *l, size_t base, int k, int gaps)
{
    size_t at = 0;

    for (int r = 0; r < n; r++) {
        l->c[r] = base * (size_t)((r * 5 + k) % 4);
    }
    for (int r = gaps ? n - 1 : 0; gaps ? r >= 0 : r < n; r += gaps ? -1 : 1) {
        l->d[r] = at;
        at += l->c[r] + (gaps ? 1 : 0);
    }
    l->extent = at;
}

static void run_allgatherv(sharc_dtype_t dt, size_t base, int gaps, int in_place)
{
    size_t es = sharc_dtype_size(dt), bad = 0;
    layout_t l;
    int k = (int)base + gaps;
    char *recv, *send;

    layout(&l, base, k, gaps);
    recv = alloc_guarded(l.extent * es);
    send = in_place ? recv + l.d[me] * es : alloc_guarded(l.c[me] * es);
    fill(send, dt, 0, l.c[me], me, k, SHARC_OP_SUM);
    CHECK(sharc_allgatherv(send, recv, l.c, gaps ? l.d : NULL, dt, comm, NULL) == SHARC_OK);
    for (int r = 0; r < n; r++) {
        bad += wrong_values(recv, dt, l.d[r], l.c[r], r, k);
    }
    CHECK_MSG(bad == 0 && guards_ok(recv, l.extent * es),
              "allgatherv %s of blocks of %zu x (0..3)%s%s: %zu wrong", sharc_dtype_name(dt), base,
              gaps ? ", gaps" : "", in_place ? ", in place" : "", bad);
    if (!in_place) {
        free(send - GUARD);
    }
    free(recv - GUARD);
}

static void run_reduce_scatterv(sharc_dtype_t dt, sharc_op_t op, size_t base, int in_place)
{
    size_t es = sharc_dtype_size(dt), bad = 0, total = 0;
    layout_t l;
    int k = (int)base + 7;
    char *send, *recv, want[8];

    layout(&l, base, k, 0);
    total = l.extent;
    send = alloc_guarded(total * es);
    for (int r = 0; r < n; r++) { /* block r: values of index within the block */
        for (size_t i = 0; i < l.c[r]; i++) {
            elem_put(send, dt, l.d[r] + i, value(me, i, k + r, op));
        }
    }
    recv = in_place ? send + l.d[me] * es : alloc_guarded(l.c[me] * es);
    CHECK(sharc_reduce_scatterv(send, recv, l.c, dt, op, comm, NULL) == SHARC_OK);
    for (size_t i = 0; i < l.c[me]; i++) {
        elem_put(want, dt, 0, reduced(dt, op, i, k + me));
        bad += memcmp(recv + i * es, want, es) != 0;
    }
    CHECK_MSG(bad == 0 && (in_place || guards_ok(recv, l.c[me] * es)),
              "reduce_scatterv %s %s of blocks of %zu x (0..3)%s: %zu wrong", sharc_dtype_name(dt),
              sharc_op_name(op), base, in_place ? ", in place" : "", bad);
    if (!in_place) {
        free(recv - GUARD);
    }
    free(send - GUARD);
}

/* Rank i sends rank j base * ((i + 2j + k) % 3) elements: some empty. */
static size_t a2a_count(int i, int j, size_t base, int k)
{
    return base * (size_t)((i + 2 * j + k) % 3);
}

static void run_alltoallv(sharc_dtype_t dt, size_t base, int gaps)
{
    size_t es = sharc_dtype_size(dt), sc[64], sd[64], rc[64], rd[64], sat = 0, rat = 0, bad = 0;
    int k = (int)base % 5;
    char *send, *recv;

    for (int j = 0; j < n; j++) {
        sc[j] = a2a_count(me, j, base, k);
        rc[j] = a2a_count(j, me, base, k);
    }
    for (int j = gaps ? n - 1 : 0; gaps ? j >= 0 : j < n; j += gaps ? -1 : 1) { /* gaps: reversed */
        sd[j] = sat, rd[j] = rat;
        sat += sc[j] + (gaps ? 2 : 0);
        rat += rc[j] + (gaps ? 3 : 0);
    }
    send = alloc_guarded(sat * es);
    recv = alloc_guarded(rat * es);
    for (int j = 0; j < n; j++) { /* what rank me sends rank j: marked with k + j */
        for (size_t i = 0; i < sc[j]; i++) {
            elem_put(send, dt, sd[j] + i, value(me, i, k + j, SHARC_OP_SUM));
        }
    }
    CHECK(sharc_alltoallv(send, sc, gaps ? sd : NULL, recv, rc, gaps ? rd : NULL, dt, comm,
                          NULL) == SHARC_OK);
    for (int j = 0; j < n; j++) {
        bad += wrong_values(recv, dt, rd[j], rc[j], j, k + me);
    }
    CHECK_MSG(bad == 0 && guards_ok(recv, rat * es),
              "alltoallv %s of blocks of %zu x (0..2)%s: %zu wrong", sharc_dtype_name(dt), base,
              gaps ? ", gaps" : "", bad);
    free(send - GUARD);
    free(recv - GUARD);
}

/* Several in flight at once: a reduce, a gather and an allgatherv, waited for in reverse. */
static void run_in_flight(void)
{
    float x[5], sum[5] = {0}, *all = malloc((size_t)n * 5 * sizeof(float)), g[64];
    size_t c[64];
    sharc_request_h req[3];

    for (int i = 0; i < 5; i++) {
        x[i] = (float)(me + i);
    }
    for (int r = 0; r < n; r++) {
        c[r] = 1;
    }
    CHECK(sharc_reduce(x, sum, 5, SHARC_DTYPE_F32, SHARC_OP_SUM, 0, comm, &req[0]) == SHARC_OK);
    CHECK(sharc_gather(x, all, 5, SHARC_DTYPE_F32, n - 1, comm, &req[1]) == SHARC_OK);
    CHECK(sharc_allgatherv(&x[0], g, c, NULL, SHARC_DTYPE_F32, comm, &req[2]) == SHARC_OK);
    for (int i = 2; i >= 0; i--) {
        CHECK(sharc_request_wait(req[i]) == SHARC_OK);
        sharc_request_free(req[i]);
    }
    CHECK(me != 0 || sum[4] == (float)(n * (n - 1) / 2 + 4 * n));
    CHECK(me != n - 1 || all[(size_t)(n - 1) * 5] == (float)(n - 1));
    CHECK(g[n - 1] == (float)(n - 1));
    free(all);
}

/* Refused on the calling rank, before any communication. */
static void run_bad(void)
{
    float a[8] = {0}, b[64];
    size_t c[64], d[64];

    for (int r = 0; r < n; r++) {
        c[r] = 1, d[r] = 0; /* every block at 0: they overlap (n > 1) */
    }
    CHECK(sharc_reduce(a, b, 4, SHARC_DTYPE_F32, SHARC_OP_SUM, n, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_gather(a, b, 4, SHARC_DTYPE_F32, -1, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_reduce(a, b, 4, SHARC_DTYPE_U8, SHARC_OP_AVG, 0, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_scatter(NULL, b, 4, SHARC_DTYPE_F32, me, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_allgatherv(a, b, NULL, NULL, SHARC_DTYPE_F32, comm, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_alltoallv(b, c, NULL, b, c, NULL, SHARC_DTYPE_F32, comm, NULL) ==
          SHARC_ERR_INVALID); /* not in place */
    if (n > 1) {
        CHECK(sharc_allgatherv(a, b, c, d, SHARC_DTYPE_F32, comm, NULL) == SHARC_ERR_INVALID);
    }
    CHECK(sharc_barrier(comm, NULL) == SHARC_OK); /* nothing was sent: the group goes on */
}

int main(void)
{
    sharc_context_h ctx;
    const sharc_op_t ops[] = {SHARC_OP_SUM, SHARC_OP_AVG, SHARC_OP_PROD, SHARC_OP_MIN,
                              SHARC_OP_MAX};

    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_coll_v: no communicator\n");
        return 1;
    }
    me = sharc_comm_rank(comm);
    n = sharc_comm_size(comm);
    if (n > 64) {
        fprintf(stderr, "test_coll_v: at most 64 ranks\n");
        return 1;
    }
    for (int dt = 0; dt < SHARC_DTYPE_LAST; dt++) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            size_t count = counts[c];
            int roots[3] = {0, n - 1, n / 2};

            for (int o = 0; o < 5; o++) {
                if ((ops[o] == SHARC_OP_AVG && !is_float(dt)) ||
                    (count == LARGE && ops[o] != SHARC_OP_SUM)) {
                    continue;
                }
                run_reduce(dt, ops[o], count, roots[(o + (int)c) % 3], (o + (int)c) % 2);
                if (count <= 7) {
                    run_reduce_scatterv(dt, ops[o], count, (o + (int)c) % 2);
                }
            }
            for (int r = 0; r < 3 && (count < LARGE || r == 0); r++) {
                run_gather_scatter(dt, count, roots[r], r % 2);
            }
            run_allgatherv(dt, count, (int)c % 2, c >= 2 && c % 2 == 0);
            run_alltoallv(dt, count, (int)(c + (size_t)dt) % 2);
        }
    }
    run_reduce_scatterv(SHARC_DTYPE_F32, SHARC_OP_SUM, LARGE, 1);
    run_in_flight();
    run_bad();
    printf("rank %d of %d: rooted and uneven collectives %s\n", me, n,
           check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_coll_v");
}
