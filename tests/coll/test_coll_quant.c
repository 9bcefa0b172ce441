/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_coll_quant.c: one rank of the multi-rank test of the collectives over a quantized
 * wire (sharc_allgather_ex, sharc_reduce_scatter_ex; public API, with the host kernels as a
 * reference). For int8 and fp8, f32 / bf16 / f16, several block sizes, odd counts, in place
 * and out of place: the all-gather equals, bit for bit, every block quantized and
 * dequantized by the kernels, is the same on every rank, and is within sharc_wire_t's bound
 * of the inputs; the flat reduce-scatter equals the kernels' own block plus the others'
 * quantized blocks summed in rank order; the hierarchical one (on the launcher's pretended
 * nodes) is within the bound of one quantization per other node, and on one node equals the
 * full-precision reduce-scatter, bit for bit. Guard bytes around every output; bad arguments
 * refused.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../../kernels/kernels.h"
#include "../check.h"
#include "../elem.h"

#define GUARD 64

static int nranks, me, nnodes;
static const sharc_kern_ops_t *K = &sharc_kern_cpu_ops;

/* Rank r's input element i, stored in dt: magnitudes that change from block to block. */
static double input(int r, size_t i)
{
    double v = sin(0.37 * (double)i + 1.3 * r) * ldexp(1.0, (int)(i / 300 % 8) - 4);

    return (i % 1001 == 17) ? 0.0 : v;
}

static char *alloc_guarded(size_t bytes)
{
    char *p = malloc(bytes + 2 * GUARD);

    memset(p, 0xa5, bytes + 2 * GUARD);
    return p + GUARD;
}

static int guards_ok(const char *p, size_t bytes)
{
    for (size_t i = 0; i < GUARD; i++) {
        if ((unsigned char)p[-1 - (long)i] != 0xa5 || (unsigned char)p[bytes + i] != 0xa5) {
            return 0;
        }
    }
    return 1;
}

/* @p n values of rank r from element @p first, in dt. */
static void fill(void *buf, sharc_dtype_t dt, int r, size_t first, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        elem_put(buf, dt, i, input(r, first + i));
    }
}

/* amax[b] = the largest magnitude of block b of the n values v. */
static void block_absmax(const double *v, size_t n, size_t block, double *amax)
{
    for (size_t i = 0; i < n; i++) {
        amax[i / block] = (i % block == 0) ? fabs(v[i]) : fmax(amax[i / block], fabs(v[i]));
    }
}

/* Half an ulp of the dtype at v (the result's rounding). */
static double half_ulp(sharc_dtype_t dt, double v)
{
    int bits = dt == SHARC_DTYPE_F32 ? 24 : (dt == SHARC_DTYPE_BF16 ? 8 : 11);

    return v == 0 ? 0 : ldexp(fabs(v), -bits) * 1.01 + (dt == SHARC_DTYPE_F16 ? 0x1p-24 : 0);
}

/* The bound of one quantization of a value in a block of largest magnitude amax. */
static double quant_bound(sharc_wire_t wire, double amax, double v)
{
    return wire == SHARC_WIRE_INT8 ? amax / 254.0 * 1.001 : fmax(fabs(v) / 16, amax * 0x1p-18);
}

static void run_allgather(sharc_comm_h comm, sharc_wire_t wire, sharc_dtype_t dt, size_t count,
                          size_t block, int inplace)
{
    size_t esize = sharc_dtype_size(dt), total = count * nranks;
    sharc_kern_wire_t w = {wire, block};
    sharc_coll_opts_t o = {SHARC_COLL_OPT_WIRE | SHARC_COLL_OPT_BLOCK, wire, block, 0};
    char *recv = alloc_guarded(total * esize),
         *send = inplace ? recv + me * count * esize : alloc_guarded(count * esize);
    char *want = malloc(total * esize + 1), *in = malloc(count * esize + 1);
    uint8_t *seg = malloc(sharc_wire_size(wire, count, block, dt) + 16);
    uint64_t sum = 0, *sums = malloc(sizeof(uint64_t) * nranks);
    double *x = malloc(sizeof(double) * (count + 1)), *amax = malloc(sizeof(double) * (count + 1));
    size_t wrong = 0, far = 0;

    fill(send, dt, me, 0, count);
    CHECK(sharc_allgather_ex(send, recv, count, dt, &o, comm, NULL) == SHARC_OK);
    for (int r = 0; r < nranks; r++) { /* each block through the kernels, here */
        fill(in, dt, r, 0, count);
        K->quantize(seg, w, in, dt, count, 1, NULL);
        K->dequantize(want + r * count * esize, dt, seg, w, count, 1, NULL);
        for (size_t i = 0; i < count; i++) {
            x[i] = elem_get(in, dt, i);
        }
        block_absmax(x, count, block, amax);
        for (size_t i = 0; i < count; i++) {
            double got = elem_get(recv, dt, r * count + i);

            far += fabs(got - x[i]) > quant_bound(wire, amax[i / block], x[i]) + half_ulp(dt, got);
        }
    }
    wrong = memcmp(recv, want, total * esize) != 0;
    CHECK_MSG(!wrong && far == 0, "allgather %s block %zu %s count %zu%s: %s, %zu beyond the bound",
              sharc_wire_name(wire), block, sharc_dtype_name(dt), count, inplace ? " in place" : "",
              wrong ? "differs from the kernels" : "as the kernels", far);
    CHECK_MSG(guards_ok(recv, total * esize), "allgather: guard bytes overwritten");
    /* the same bits on every rank */
    for (size_t i = 0; i < total * esize; i++) {
        sum = sum * 1099511628211ull + (unsigned char)recv[i];
    }
    CHECK(sharc_allgather(&sum, sums, 1, SHARC_DTYPE_I64, comm, NULL) == SHARC_OK);
    for (int r = 0; r < nranks; r++) {
        CHECK_MSG(sums[r] == sum, "allgather: rank %d holds other values than rank %d", r, me);
    }
    if (!inplace) {
        free(send - GUARD);
    }
    free(recv - GUARD), free(want), free(in), free(seg), free(sums), free(x), free(amax);
}

/* The flat reduce-scatter's result as the kernels compute it: own block + the others'. */
static void flat_want(void *want, sharc_kern_wire_t w, sharc_dtype_t dt, size_t count,
                      sharc_op_t op)
{
    size_t esize = sharc_dtype_size(dt), bytes = sharc_wire_size(w.format, count, w.block, dt);
    char *in = malloc(count * esize + 1);
    uint8_t *segs = malloc(bytes * nranks + 16);
    float *base = malloc(count * sizeof(float) + 1);

    for (int r = 0; r < nranks; r++) { /* rank r's block for this rank */
        fill(in, dt, r, (size_t)me * count, count);
        K->quantize(segs + r * bytes, w, in, dt, count, 1, NULL);
        if (r == me) {
            K->cast(base, SHARC_DTYPE_F32, in, dt, count, NULL);
        }
    }
    K->dequantize_sum(want, dt, base, segs, w, count, nranks, me,
                      op == SHARC_OP_AVG ? 1.0 / nranks : 1.0, NULL);
    free(in), free(segs), free(base);
}

/* How the reduce-scatter quantizes: every hop, between nodes only, or not at all (one node). */
typedef enum { RS_FLAT, RS_HIER, RS_EXACT } rs_mode_t;

static rs_mode_t rs_mode(int flat)
{
    int per = nranks / nnodes;

    if (flat || nranks % nnodes != 0 || per == 1) {
        return RS_FLAT;
    }
    return nnodes > 1 ? RS_HIER : RS_EXACT;
}

/*
 * The elements of the reduce-scatter beyond its bound: one quantization of each other
 * rank's block (flat) or each other node's partial sum (hierarchical), against the exact
 * sum of the inputs as stored in dt.
 */
static size_t rs_beyond(const void *recv, sharc_wire_t wire, sharc_dtype_t dt, sharc_op_t op,
                        size_t count, size_t block, int flat)
{
    int per = flat ? 1 : nranks / nnodes, groups = nranks / per;
    double *part = calloc(count + 1, sizeof(double)), *exact = calloc(count + 1, sizeof(double));
    double *bound = calloc(count + 1, sizeof(double)), *amax = calloc(count + 1, sizeof(double));
    double scale = op == SHARC_OP_AVG ? 1.0 / nranks : 1.0;
    size_t far = 0;
    char v[8];

    for (int k = 0; k < groups; k++) { /* a rank's (flat) or a node's partial sums */
        memset(part, 0, sizeof(double) * count);
        for (int r = k * per; r < (k + 1) * per; r++) {
            for (size_t i = 0; i < count; i++) {
                elem_put(v, dt, 0, input(r, (size_t)me * count + i));
                part[i] += elem_get(v, dt, 0);
            }
        }
        block_absmax(part, count, block, amax);
        for (size_t i = 0; i < count; i++) {
            exact[i] += part[i];
            if (k != me / per) {
                bound[i] += quant_bound(wire, amax[i / block], part[i]) + 1e-6 * amax[i / block];
            }
        }
    }
    for (size_t i = 0; i < count; i++) {
        double got = elem_get(recv, dt, i);

        far +=
            fabs(got - exact[i] * scale) > bound[i] * scale + half_ulp(dt, got) + 1e-5 * fabs(got);
    }
    free(part), free(exact), free(bound), free(amax);
    return far;
}

static void run_reduce_scatter(sharc_comm_h comm, sharc_wire_t wire, sharc_dtype_t dt,
                               sharc_op_t op, size_t count, size_t block, int flat, int inplace)
{
    size_t esize = sharc_dtype_size(dt), total = count * nranks;
    sharc_kern_wire_t w = {wire, block};
    sharc_coll_opts_t o = {SHARC_COLL_OPT_WIRE | SHARC_COLL_OPT_BLOCK | SHARC_COLL_OPT_FLAT, wire,
                           block, flat};
    char *send = alloc_guarded(total * esize),
         *recv = inplace ? send + me * count * esize : alloc_guarded(count * esize);
    char *want = malloc(count * esize + 1), *copy = malloc(total * esize + 1);
    rs_mode_t mode = rs_mode(flat);
    size_t far = 0;
    int differs = 0;

    for (int r = 0; r < nranks; r++) {
        fill(send + r * count * esize, dt, me, r * count, count);
    }
    memcpy(copy, send, total * esize);
    CHECK(sharc_reduce_scatter_ex(send, recv, count, dt, op, &o, comm, NULL) == SHARC_OK);
    if (mode == RS_EXACT) { /* the full-precision reduce-scatter's bits */
        CHECK(sharc_reduce_scatter(copy, want, count, dt, op, comm, NULL) == SHARC_OK);
    } else {
        far = rs_beyond(recv, wire, dt, op, count, block, mode == RS_FLAT);
    }
    if (mode == RS_FLAT) {
        flat_want(want, w, dt, count, op);
    }
    differs = mode != RS_HIER && memcmp(recv, want, count * esize) != 0;
    CHECK_MSG(far == 0 && !differs,
              "reduce_scatter %s block %zu %s %s count %zu (%s)%s: %zu beyond the bound%s",
              sharc_wire_name(wire), block, sharc_dtype_name(dt), sharc_op_name(op), count,
              mode == RS_FLAT ? "flat" : (mode == RS_HIER ? "hierarchical" : "one node"),
              inplace ? " in place" : "", far,
              differs ? (mode == RS_FLAT ? ", differs from the kernels"
                                         : ", differs from the full-precision result")
                      : "");
    CHECK_MSG(inplace || guards_ok(recv, count * esize), "reduce_scatter: guards overwritten");
    if (!inplace) {
        free(recv - GUARD);
    }
    free(send - GUARD), free(want), free(copy);
}

static void run_bad_args(sharc_comm_h comm)
{
    float x[8 * 16] = {0}, y[8 * 16];
    int32_t ix[8 * 16] = {0}, iy[8 * 16];
    sharc_coll_opts_t o = {SHARC_COLL_OPT_WIRE | SHARC_COLL_OPT_BLOCK, SHARC_WIRE_INT8, 0, 0};

    CHECK(sharc_allgather_ex(x, y, 4, SHARC_DTYPE_F32, &o, comm, NULL) == SHARC_ERR_INVALID);
    o.block = SHARC_WIRE_BLOCK_MAX + 1;
    CHECK(sharc_reduce_scatter_ex(x, y, 4, SHARC_DTYPE_F32, SHARC_OP_SUM, &o, comm, NULL) ==
          SHARC_ERR_INVALID);
    o.block = 16;
    o.wire = (sharc_wire_t)7;
    CHECK(sharc_allgather_ex(x, y, 4, SHARC_DTYPE_F32, &o, comm, NULL) == SHARC_ERR_INVALID);
    o.wire = SHARC_WIRE_FP8;
    CHECK(sharc_allgather_ex(ix, iy, 4, SHARC_DTYPE_I32, &o, comm, NULL) == SHARC_ERR_UNSUPPORTED);
    CHECK(sharc_reduce_scatter_ex(x, y, 4, SHARC_DTYPE_F32, SHARC_OP_MAX, &o, comm, NULL) ==
          SHARC_ERR_UNSUPPORTED);
    /* a full wire and NULL options are the plain collectives */
    o.wire = SHARC_WIRE_FULL;
    for (int i = 0; i < 4; i++) {
        x[i] = (float)(me * 4 + i);
    }
    CHECK(sharc_allgather_ex(x, y, 4, SHARC_DTYPE_F32, &o, comm, NULL) == SHARC_OK);
    CHECK(sharc_allgather_ex(x, y + 4 * nranks, 0, SHARC_DTYPE_F32, NULL, comm, NULL) == SHARC_OK);
    for (int i = 0; i < 4 * nranks; i++) {
        CHECK(y[i] == (float)i);
    }
}

int main(int argc, char **argv)
{
    static const size_t counts[] = {0, 1, 7, 255, 4097};
    static const size_t blocks[] = {1, 7, 256, 1000};
    static const sharc_dtype_t dts[] = {SHARC_DTYPE_F32, SHARC_DTYPE_BF16, SHARC_DTYPE_F16};
    size_t big = (argc > 1) ? strtoul(argv[1], NULL, 10) : 100003;
    const char *nn = getenv("SHARCTEST_NNODES");
    sharc_context_h ctx;
    sharc_comm_h comm;
    int k = 0;

    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    CHECK(sharc_comm_create(ctx, NULL, &comm) == SHARC_OK);
    if (check_failures != 0) {
        return check_result("test_coll_quant");
    }
    nranks = sharc_comm_size(comm);
    me = sharc_comm_rank(comm);
    nnodes = sharc_comm_nnodes(comm);
    CHECK(nn == NULL || atoi(nn) == nnodes);
    for (int wire = SHARC_WIRE_INT8; wire <= SHARC_WIRE_FP8; wire++) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            for (size_t d = 0; d < 3; d++, k++) {
                size_t block = blocks[k % 4];

                run_allgather(comm, wire, dts[d], counts[c], block, k % 2);
                for (int flat = 0; flat < 2; flat++) {
                    run_reduce_scatter(comm, wire, dts[d], k % 3 ? SHARC_OP_SUM : SHARC_OP_AVG,
                                       counts[c], block, flat, (k + flat) % 2);
                }
            }
        }
        run_allgather(comm, wire, SHARC_DTYPE_F32, big, 256, 0);
        run_reduce_scatter(comm, wire, SHARC_DTYPE_F32, SHARC_OP_AVG, big, 256, 0, 1);
        run_reduce_scatter(comm, wire, SHARC_DTYPE_BF16, SHARC_OP_SUM, big, 256, 1, 0);
    }
    run_bad_args(comm);
    printf("rank %d of %d (%d nodes): quantized collectives %s\n", me, nranks, nnodes,
           check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_coll_quant");
}
