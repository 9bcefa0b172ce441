/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kern_cpu.c: the host kernels against scalar references. Conversions f32 <-> f16 / bf16
 * against an independent rounding reference (tests/kern_ref.h): every 16-bit code, two
 * million random f32 values with the edges of both types. Reductions for every dtype and op
 * and scaling, on random data (NaN and infinities included) at lengths that are not
 * multiples of any vector width, in place and aliased. The bulk copy at sizes around its
 * streaming threshold, from and to every alignment, with guard bytes. AdamW bit for bit
 * against the scalar formula, the sum of squares. --bandwidth: AdamW's and the sum's speed on
 * one thread against memcpy's.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../kernels/kernels.h"
#include "../check.h"
#include "../kern_ref.h"

static int is_nan16(uint16_t h, uint16_t inf_code)
{
    return (h & 0x7fffu) > inf_code;
}

static void test_exhaustive(void)
{
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t h = (uint16_t)c;
        float f16 = sharc_kern_f16_to_f32(h), bf = sharc_kern_bf16_to_f32(h);
        uint16_t back16 = sharc_kern_f32_to_f16(f16), backbf = sharc_kern_f32_to_bf16(bf);

        if (is_nan16(h, 0x7c00)) { /* NaN: stays NaN, quieted, same sign */
            CHECK_MSG(isnan(f16) && is_nan16(back16, 0x7c00) && (back16 & 0x200) &&
                          (back16 & 0x8000) == (h & 0x8000),
                      "f16 NaN %#x -> %#x", c, back16);
        } else {
            CHECK_MSG(back16 == h, "f16 %#x -> %g -> %#x", c, f16, back16);
#ifdef __FLT16_MAX__
            _Float16 ref;
            memcpy(&ref, &h, 2);
            CHECK_MSG((float)ref == f16 || (isnan(f16) && isnan((float)ref)), "f16 %#x", c);
#endif
        }
        if (is_nan16(h, 0x7f80)) {
            CHECK_MSG(isnan(bf) && is_nan16(backbf, 0x7f80) && (backbf & 0x40), "bf16 NaN %#x", c);
        } else {
            CHECK_MSG(backbf == h, "bf16 %#x -> %g -> %#x", c, bf, backbf);
        }
    }
}

static void test_random(void)
{
    int bad16 = 0, badbf = 0;

    for (int i = 0; i < 2000000; i++) {
        float x = ref_rand_f32();
        uint16_t h = sharc_kern_f32_to_f16(x), b = sharc_kern_f32_to_bf16(x);

        if (isnan(x)) {
            bad16 += !is_nan16(h, 0x7c00);
            badbf += !is_nan16(b, 0x7f80);
            continue;
        }
        if (h != ref_f32_to_f16(x) && bad16++ < 5) {
            fprintf(stderr, "f32 %a (%#x) -> f16 %#x, reference %#x\n", x, sharc_kern_f32_bits(x),
                    h, ref_f32_to_f16(x));
        }
        if (b != ref_f32_to_bf16(x) && badbf++ < 5) {
            fprintf(stderr, "f32 %a (%#x) -> bf16 %#x, reference %#x\n", x, sharc_kern_f32_bits(x),
                    b, ref_f32_to_bf16(x));
        }
    }
    CHECK(bad16 == 0);
    CHECK(badbf == 0);
    /* edges, by value */
    CHECK(sharc_kern_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(sharc_kern_f32_to_f16(65519.99f) == 0x7bff);
    CHECK(sharc_kern_f32_to_f16(65520.0f) == 0x7c00);
    CHECK(sharc_kern_f32_to_f16(-1e30f) == 0xfc00);
    CHECK(sharc_kern_f32_to_f16(ldexpf(1.0f, -24)) == 0x0001);
    CHECK(sharc_kern_f32_to_f16(ldexpf(1.0f, -25)) == 0x0000); /* tie to even: zero */
    CHECK(sharc_kern_f32_to_f16(ldexpf(1.5f, -25)) == 0x0001);
    CHECK(sharc_kern_f32_to_f16(ldexpf(3.0f, -25)) == 0x0002); /* 1.5 ulp: tie to even 2 */
    CHECK(sharc_kern_f32_to_f16(-0.0f) == 0x8000);
    CHECK(sharc_kern_f32_to_bf16(1.00390625f) == 0x3f80);   /* 1 + 2^-8: tie, even */
    CHECK(sharc_kern_f32_to_bf16(1.01171875f) == 0x3f82);   /* 1 + 3*2^-8: tie, up */
    CHECK(sharc_kern_f32_to_bf16(3.4028235e38f) == 0x7f80); /* FLT_MAX rounds to inf */
}

static void test_table(void)
{
    static const size_t lengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 4099};
    const sharc_kern_ops_t *ops = &sharc_kern_cpu_ops;
    size_t max = 4099;
    float *f = malloc(max * 4), *g = malloc(max * 4);
    uint16_t *h = malloc(max * 2), *b = malloc(max * 2), *hb = malloc(max * 2);
    int32_t dummy[1];

    for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
        size_t n = lengths[l];
        int bad = 0;

        for (size_t i = 0; i < n; i++) {
            f[i] = ref_rand_f32();
        }
        CHECK(ops->cast(h, SHARC_DTYPE_F16, f, SHARC_DTYPE_F32, n, NULL) == SHARC_OK);
        CHECK(ops->cast(b, SHARC_DTYPE_BF16, f, SHARC_DTYPE_F32, n, NULL) == SHARC_OK);
        CHECK(ops->cast(hb, SHARC_DTYPE_BF16, h, SHARC_DTYPE_F16, n, NULL) == SHARC_OK);
        CHECK(ops->cast(g, SHARC_DTYPE_F32, b, SHARC_DTYPE_BF16, n, NULL) == SHARC_OK);
        for (size_t i = 0; i < n; i++) {
            if (isnan(f[i])) {
                bad += !isnan(g[i]);
                continue;
            }
            bad += h[i] != ref_f32_to_f16(f[i]);
            bad += b[i] != ref_f32_to_bf16(f[i]);
            bad += hb[i] != ref_f32_to_bf16(sharc_kern_f16_to_f32(h[i]));
            bad += sharc_kern_f32_bits(g[i]) != (uint32_t)b[i] << 16;
        }
        CHECK_MSG(bad == 0, "length %zu: %d mismatches", n, bad);
    }
    CHECK(ops->cast(g, SHARC_DTYPE_F32, f, SHARC_DTYPE_F32, 17, NULL) == SHARC_OK);
    CHECK(memcmp(g, f, 17 * 4) == 0);
    CHECK(ops->cast(dummy, SHARC_DTYPE_I32, f, SHARC_DTYPE_F32, 1, NULL) == SHARC_ERR_UNSUPPORTED);
    CHECK(ops->cast(f, SHARC_DTYPE_F32, dummy, SHARC_DTYPE_U8, 1, NULL) == SHARC_ERR_UNSUPPORTED);
    free(f);
    free(g);
    free(h);
    free(b);
    free(hb);
}

/* ---- reductions: a scalar reference, one element at a time --------------------------- */

static double ref_load(const void *p, sharc_dtype_t dt, size_t i)
{
    switch (dt) {
    case SHARC_DTYPE_F32: return ((const float *)p)[i];
    case SHARC_DTYPE_F64: return ((const double *)p)[i];
    case SHARC_DTYPE_F16: return sharc_kern_f16_to_f32(((const uint16_t *)p)[i]);
    case SHARC_DTYPE_BF16: return sharc_kern_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return 0;
    }
}

/* The expected element i of dst op src. */
static void ref_reduce_one(void *out, const void *d, const void *s, sharc_dtype_t dt, sharc_op_t op,
                           size_t i)
{
    if (dt == SHARC_DTYPE_I32 || dt == SHARC_DTYPE_I64 || dt == SHARC_DTYPE_U8) {
        uint64_t a, b, r,
            mask = dt == SHARC_DTYPE_U8    ? 0xff
                   : dt == SHARC_DTYPE_I32 ? 0xffffffffu
                                           : ~0ull;
        int64_t sa, sb;

        a = dt == SHARC_DTYPE_U8    ? ((const uint8_t *)d)[i]
            : dt == SHARC_DTYPE_I32 ? (uint32_t)((const int32_t *)d)[i]
                                    : (uint64_t)((const int64_t *)d)[i];
        b = dt == SHARC_DTYPE_U8    ? ((const uint8_t *)s)[i]
            : dt == SHARC_DTYPE_I32 ? (uint32_t)((const int32_t *)s)[i]
                                    : (uint64_t)((const int64_t *)s)[i];
        sa = dt == SHARC_DTYPE_U8 ? (int64_t)a : dt == SHARC_DTYPE_I32 ? (int32_t)a : (int64_t)a;
        sb = dt == SHARC_DTYPE_U8 ? (int64_t)b : dt == SHARC_DTYPE_I32 ? (int32_t)b : (int64_t)b;
        switch (op) {
        case SHARC_OP_SUM: r = a + b; break;
        case SHARC_OP_PROD: r = a * b; break;
        case SHARC_OP_MIN: r = sa < sb ? a : b; break;
        default: r = sa > sb ? a : b; break;
        }
        r &= mask;
        memcpy(out, &r, sharc_dtype_size(dt)); /* little endian */
        return;
    }
    double a = ref_load(d, dt, i), b = ref_load(s, dt, i), r;
    if (dt != SHARC_DTYPE_F64) { /* f32 arithmetic for f32, f16, bf16 */
        float fa = (float)a, fb = (float)b, fr;
        switch (op) {
        case SHARC_OP_PROD: fr = fa * fb; break;
        case SHARC_OP_MIN: fr = isnan(fa) || isnan(fb) ? NAN : (fb < fa ? fb : fa); break;
        case SHARC_OP_MAX: fr = isnan(fa) || isnan(fb) ? NAN : (fb > fa ? fb : fa); break;
        default: fr = fa + fb; break;
        }
        if (dt == SHARC_DTYPE_F32) {
            memcpy(out, &fr, 4);
        } else {
            uint16_t h = isnan(fr)               ? 0x7e00
                         : dt == SHARC_DTYPE_F16 ? ref_f32_to_f16(fr)
                                                 : ref_f32_to_bf16(fr);
            if (isnan(fr) && dt == SHARC_DTYPE_BF16) {
                h = 0x7fc0;
            }
            memcpy(out, &h, 2);
        }
        return;
    }
    switch (op) {
    case SHARC_OP_PROD: r = a * b; break;
    case SHARC_OP_MIN: r = isnan(a) || isnan(b) ? NAN : (b < a ? b : a); break;
    case SHARC_OP_MAX: r = isnan(a) || isnan(b) ? NAN : (b > a ? b : a); break;
    default: r = a + b; break;
    }
    memcpy(out, &r, 8);
}

static int ref_is_nan(const void *p, sharc_dtype_t dt, size_t i)
{
    return (dt == SHARC_DTYPE_F32 || dt == SHARC_DTYPE_F64 || dt == SHARC_DTYPE_F16 ||
            dt == SHARC_DTYPE_BF16) &&
           isnan(ref_load(p, dt, i));
}

static void fill_random(void *p, sharc_dtype_t dt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float f = ref_rand_f32();
        uint32_t r = ref_rand32();
        switch (dt) {
        case SHARC_DTYPE_F32: ((float *)p)[i] = f; break;
        case SHARC_DTYPE_F64: ((double *)p)[i] = (double)f * (1.0 + r * 1e-12); break;
        case SHARC_DTYPE_F16: ((uint16_t *)p)[i] = sharc_kern_f32_to_f16(f); break;
        case SHARC_DTYPE_BF16: ((uint16_t *)p)[i] = sharc_kern_f32_to_bf16(f); break;
        case SHARC_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)r; break;
        case SHARC_DTYPE_I64:
            ((int64_t *)p)[i] = (int64_t)(((uint64_t)r << 32) | ref_rand32());
            break;
        default: ((uint8_t *)p)[i] = (uint8_t)r; break;
        }
    }
}

static void test_reduce(void)
{
    static const size_t lengths[] = {0,  1,  3,  7,  15,   16,   17,   31,
                                     33, 63, 64, 65, 1000, 1023, 1025, 4099};
    const sharc_kern_ops_t *ops = &sharc_kern_cpu_ops;
    size_t max = 4099;
    char *d = malloc(max * 8), *s = malloc(max * 8), *orig = malloc(max * 8), exp[8];
    char *o = malloc(max * 8); /* a third buffer: dst apart from both inputs */

    for (int dt = 0; dt < SHARC_DTYPE_LAST; dt++) {
        size_t sz = sharc_dtype_size((sharc_dtype_t)dt);
        for (int op = 0; op < SHARC_OP_LAST; op++) {
            int valid = sharc_kern_op_valid((sharc_dtype_t)dt, (sharc_op_t)op);
            for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
                size_t n = lengths[l], bad = 0;

                fill_random(orig, (sharc_dtype_t)dt, n);
                fill_random(s, (sharc_dtype_t)dt, n);
                memcpy(d, orig, n * sz);
                if (!valid) {
                    CHECK(ops->reduce(d, d, s, n, (sharc_dtype_t)dt, (sharc_op_t)op, NULL) ==
                          SHARC_ERR_INVALID);
                    break;
                }
                CHECK(ops->reduce(o, orig, s, n, (sharc_dtype_t)dt, (sharc_op_t)op, NULL) ==
                      SHARC_OK);
                CHECK(ops->reduce(d, d, s, n, (sharc_dtype_t)dt, (sharc_op_t)op, NULL) == SHARC_OK);
                CHECK_MSG(memcmp(o, d, n * sz) == 0, "%s %s, %zu elements: dst apart differs",
                          sharc_dtype_name(dt), sharc_op_name(op), n);
                for (size_t i = 0; i < n; i++) {
                    ref_reduce_one(exp, orig, s, (sharc_dtype_t)dt, (sharc_op_t)op, i);
                    if (ref_is_nan(exp, (sharc_dtype_t)dt, 0)) {
                        bad += !ref_is_nan(d, (sharc_dtype_t)dt, i);
                    } else {
                        bad += memcmp(d + i * sz, exp, sz) != 0;
                    }
                }
                CHECK_MSG(bad == 0, "%s %s, %zu elements: %zu wrong", sharc_dtype_name(dt),
                          sharc_op_name(op), n, bad);
            }
        }
        /* dst == src: x op x */
        if (dt == SHARC_DTYPE_I32) {
            int32_t x[5] = {1, -2, 3, 40000, -7};
            CHECK(ops->reduce(x, x, x, 5, SHARC_DTYPE_I32, SHARC_OP_SUM, NULL) == SHARC_OK);
            CHECK(x[0] == 2 && x[1] == -4 && x[3] == 80000 && x[4] == -14);
        }
    }
    CHECK(ops->reduce(d, d, s, 1, SHARC_DTYPE_LAST, SHARC_OP_SUM, NULL) == SHARC_ERR_INVALID);
    CHECK(ops->reduce(d, d, s, 1, SHARC_DTYPE_F32, SHARC_OP_LAST, NULL) == SHARC_ERR_INVALID);
    free(d);
    free(s);
    free(o);
    free(orig);
}

/* Sums from SHARC_KERN_STREAM_MIN bytes up (streaming stores): equal to the reference
 * element by element, at every alignment of dst, apart from the inputs and in place. */
static void test_reduce_stream(void)
{
    static const sharc_dtype_t dts[] = {SHARC_DTYPE_F32, SHARC_DTYPE_F64};
    const sharc_kern_ops_t *ops = &sharc_kern_cpu_ops;

    for (size_t t = 0; t < 2; t++) {
        sharc_dtype_t dt = dts[t];
        size_t sz = sharc_dtype_size(dt), base = SHARC_KERN_STREAM_MIN / sz;
        size_t lengths[] = {base - 1, base, base + 13};
        size_t max = (base + 13 + 8) * sz;
        char *x = malloc(max), *y = malloc(max), *d = malloc(max + 16), exp[8];

        for (size_t l = 0; l < 3; l++) {
            size_t n = lengths[l];

            fill_random(x, dt, n);
            fill_random(y, dt, n);
            for (size_t off = 0; off < 16; off += sz) { /* dst alignment */
                for (int inplace = 0; inplace < 2; inplace++) {
                    char *dst = d + off;
                    const char *a = x;
                    size_t bad = 0;

                    memset(d, 0x5a, max + 16);
                    if (inplace) {
                        memcpy(dst, x, n * sz);
                        a = dst;
                    }
                    CHECK(ops->reduce(dst, a, y, n, dt, SHARC_OP_SUM, NULL) == SHARC_OK);
                    for (size_t i = 0; i < n; i++) {
                        ref_reduce_one(exp, x, y, dt, SHARC_OP_SUM, i);
                        if (ref_is_nan(exp, dt, 0)) {
                            bad += !ref_is_nan(dst, dt, i);
                        } else {
                            bad += memcmp(dst + i * sz, exp, sz) != 0;
                        }
                    }
                    bad += (unsigned char)dst[n * sz] != 0x5a; /* nothing written past it */
                    CHECK_MSG(bad == 0,
                              "streaming sum %s, %zu elements, dst offset %zu%s: %zu wrong",
                              sharc_dtype_name(dt), n, off, inplace ? ", in place" : "", bad);
                }
            }
        }
        free(x);
        free(y);
        free(d);
    }
}

static void test_scale(void)
{
    const sharc_kern_ops_t *ops = &sharc_kern_cpu_ops;
    float f[17];
    double g[17];
    uint16_t h[17], b[17];
    int32_t i[1] = {4};

    for (int k = 0; k < 17; k++) {
        f[k] = (float)(3 * k);
        g[k] = 3.0 * k;
        h[k] = sharc_kern_f32_to_f16((float)(3 * k));
        b[k] = sharc_kern_f32_to_bf16((float)(3 * k));
    }
    CHECK(ops->scale(f, 17, SHARC_DTYPE_F32, 1.0 / 3, NULL) == SHARC_OK);
    CHECK(ops->scale(g, 17, SHARC_DTYPE_F64, 1.0 / 3, NULL) == SHARC_OK);
    CHECK(ops->scale(h, 17, SHARC_DTYPE_F16, 1.0 / 3, NULL) == SHARC_OK);
    CHECK(ops->scale(b, 17, SHARC_DTYPE_BF16, 1.0 / 3, NULL) == SHARC_OK);
    for (int k = 0; k < 17; k++) {
        CHECK_MSG(f[k] == (float)k && g[k] == (double)k, "k=%d: %g %g", k, f[k], g[k]);
        CHECK(sharc_kern_f16_to_f32(h[k]) == (float)k && sharc_kern_bf16_to_f32(b[k]) == (float)k);
    }
    CHECK(ops->scale(i, 1, SHARC_DTYPE_I32, 0.5, NULL) == SHARC_ERR_INVALID);
}

static void test_copy(void)
{
    static const size_t sizes[] = {0,
                                   1,
                                   15,
                                   16,
                                   63,
                                   64,
                                   65,
                                   SHARC_KERN_STREAM_MIN - 1,
                                   SHARC_KERN_STREAM_MIN,
                                   SHARC_KERN_STREAM_MIN + 13,
                                   (1u << 20) + 7};
    size_t max = (1u << 20) + 7 + 64;
    unsigned char *src = malloc(max), *dst = malloc(max);

    for (size_t i = 0; i < max; i++) {
        src[i] = (unsigned char)(i * 131 + 7);
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (size_t so = 0; so < 16; so += 5) {
            for (size_t d = 1; d < 33; d += 7) { /* dst offset >= 1: a guard byte before */
                size_t bad = 0;

                memset(dst, 0xee, max);
                sharc_kern_copy(dst + d, src + so, sizes[s]);
                bad += memcmp(dst + d, src + so, sizes[s]) != 0;
                bad += dst[d - 1] != 0xee || dst[d + sizes[s]] != 0xee;
                CHECK_MSG(bad == 0, "copy of %zu bytes from offset %zu to offset %zu", sizes[s], so,
                          d);
            }
        }
    }
    free(src);
    free(dst);
}

/* Pack and unpack against element-by-element conversions (and plain copies). */
static void test_pack(void)
{
    float a[100], b[37], back[100 + 37];
    uint16_t bucket[150];
    int32_t ia[5] = {1, 2, 3, 4, 5}, ib[5];
    int32_t ibucket[8] = {0};
    sharc_kern_piece_t p[2] = {{a, 3, 100}, {b, 110, 37}};
    sharc_kern_piece_t q[2] = {{back, 3, 100}, {back + 100, 110, 37}};
    sharc_kern_piece_t ip = {ia, 2, 5}, iq = {ib, 2, 5};
    const sharc_kern_ops_t *ops = &sharc_kern_cpu_ops;
    size_t bad = 0;

    for (int i = 0; i < 100; i++) {
        a[i] = ref_rand_f32();
    }
    for (int i = 0; i < 37; i++) {
        b[i] = ref_rand_f32();
    }
    memset(bucket, 0xff, sizeof(bucket));
    CHECK(ops->pack(bucket, SHARC_DTYPE_BF16, p, 2, SHARC_DTYPE_F32, NULL) == SHARC_OK);
    for (int i = 0; i < 100; i++) {
        bad += bucket[3 + i] != ref_f32_to_bf16(a[i]) && !isnan(a[i]);
    }
    for (int i = 0; i < 37; i++) {
        bad += bucket[110 + i] != ref_f32_to_bf16(b[i]) && !isnan(b[i]);
    }
    CHECK(bucket[0] == 0xffff && bucket[103] == 0xffff && bucket[147] == 0xffff); /* gaps */
    CHECK(ops->unpack(bucket, SHARC_DTYPE_BF16, q, 2, SHARC_DTYPE_F32, NULL) == SHARC_OK);
    for (int i = 0; i < 137; i++) {
        bad += back[i] != sharc_kern_bf16_to_f32(bucket[i < 100 ? 3 + i : 110 + i - 100]) &&
               !isnan(back[i]);
    }
    CHECK_MSG(bad == 0, "pack/unpack: %zu wrong", bad);
    CHECK(ops->pack(ibucket, SHARC_DTYPE_I32, &ip, 1, SHARC_DTYPE_I32, NULL) == SHARC_OK);
    CHECK(ops->unpack(ibucket, SHARC_DTYPE_I32, &iq, 1, SHARC_DTYPE_I32, NULL) == SHARC_OK);
    CHECK(ibucket[1] == 0 && ibucket[2] == 1 && ibucket[6] == 5 && memcmp(ia, ib, sizeof(ia)) == 0);
    CHECK(ops->pack(ibucket, SHARC_DTYPE_I32, &ip, 1, SHARC_DTYPE_F32, NULL) ==
          SHARC_ERR_UNSUPPORTED);
    CHECK(ops->pack(ibucket, SHARC_DTYPE_I32, &ip, -1, SHARC_DTYPE_I32, NULL) == SHARC_ERR_INVALID);
}

/* AdamW against the scalar formula, element by element, bit for bit (the kernel is built
 * without fused multiply-adds; so is this file's loop on baseline x86-64), at lengths around
 * every vector width, with decay and clipping; and the sum of squares against a long double
 * sum, the same bits on a second pass. */
static void test_adamw(void)
{
    static const size_t lens[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 1000, 4099};
    sharc_kern_adamw_t a = {.beta1 = 0.9f,
                            .beta2 = 0.999f,
                            .eps = 1e-8f,
                            .keep = 1.0f - 3e-4f * 0.1f,
                            .step_size = 3e-4f / (1.0f - powf(0.9f, 7.0f)),
                            .bc2_sqrt = sqrtf(1.0f - powf(0.999f, 7.0f)),
                            .clip = 0.37f};

    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t n = lens[li], bad = 0;
        float *p = malloc((n + 1) * 4 * sizeof(float)), *g = p + n + 1, *m = g + n + 1;
        float *v = m + n + 1, rp[4100], rm[4100], rv[4100];
        long double exact = 0;
        double s1 = 0.5, s2 = 0.5;

        for (size_t i = 0; i < n; i++) {
            p[i] = rp[i] = (float)(ref_rand32() % 20001) / 1e4f - 1.0f;
            g[i] = (float)(ref_rand32() % 20001) / 1e3f - 10.0f;
            m[i] = rm[i] = (float)(ref_rand32() % 2001) / 1e4f - 0.1f;
            v[i] = rv[i] = (float)(ref_rand32() % 1001) / 1e5f;
            exact += (long double)g[i] * g[i];
        }
        CHECK(sharc_kern_cpu_ops.adamw(&a, p, g, m, v, n, NULL) == SHARC_OK);
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] * a.clip;
            rm[i] = a.beta1 * rm[i] + (1.0f - a.beta1) * gi;
            rv[i] = a.beta2 * rv[i] + (1.0f - a.beta2) * gi * gi;
            rp[i] = rp[i] * a.keep - a.step_size * rm[i] / (sqrtf(rv[i]) / a.bc2_sqrt + a.eps);
            bad += p[i] != rp[i] || m[i] != rm[i] || v[i] != rv[i];
        }
        CHECK_MSG(bad == 0, "adamw, %zu elements: %zu differ from the scalar formula", n, bad);
        sharc_kern_cpu_ops.sumsq(&s1, g, n, NULL);
        sharc_kern_cpu_ops.sumsq(&s2, g, n, NULL);
        CHECK_MSG(fabsl(s1 - 0.5 - exact) <= 1e-12L * (exact + 1), "sumsq of %zu: %.17g, %.17Lg", n,
                  s1 - 0.5, exact);
        CHECK_MSG(s1 == s2, "sumsq of %zu elements: %.17g, then %.17g", n, s1, s2);
        free(p);
    }
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    return (*(const double *)a > *(const double *)b) - (*(const double *)a < *(const double *)b);
}

/* --bandwidth: AdamW and the sum of squares on one thread (the engine's host worker splits a
 * shard over its threads) against memcpy of the same run; medians of 7, printed, not asserted
 * (speed is for benchmarks: docs/perf.md). */
static void bandwidth(void)
{
    const size_t n = 16u << 20; /* 64 MiB an array */
    float *x = malloc(n * 4 * sizeof(float)), *dst = malloc(n * 2 * sizeof(float));
    sharc_kern_adamw_t a = {.beta1 = 0.9f,
                            .beta2 = 0.95f,
                            .eps = 1e-8f,
                            .keep = 0.9999f,
                            .step_size = 1e-3f,
                            .bc2_sqrt = 1,
                            .clip = 1};
    double t[3][7], sum = 0;

    for (size_t i = 0; i < 4 * n; i++) {
        x[i] = (float)(i % 1000) * 1e-4f;
    }
    memset(dst, 0, n * 2 * sizeof(float));
    for (int r = 0; r < 7; r++) {
        double t0 = now_s();
        memcpy(dst, x, n * 2 * sizeof(float)); /* 2 arrays: 16 bytes an element moved */
        double t1 = now_s();
        sharc_kern_cpu_ops.adamw(&a, x, x + n, x + 2 * n, x + 3 * n, n, NULL);
        double t2 = now_s();
        sharc_kern_cpu_ops.sumsq(&sum, x + n, n, NULL);
        t[0][r] = t1 - t0;
        t[1][r] = t2 - t1;
        t[2][r] = now_s() - t2;
    }
    for (int k = 0; k < 3; k++) {
        qsort(t[k], 7, sizeof(double), cmp_d);
    }
    double copy = 16.0 * n / t[0][3] / 1e9;
    printf("bandwidth (16M f32 elements, one thread, median of 7, GB/s read+written): memcpy "
           "%.1f\n  adamw %.1f (%.0f%% of memcpy; %.2f G elements/s)\n  sumsq %.1f (%.0f%%)\n",
           copy, 28.0 * n / t[1][3] / 1e9, 100 * 28.0 * n / t[1][3] / 1e9 / copy, n / t[1][3] / 1e9,
           4.0 * n / t[2][3] / 1e9, 100 * 4.0 * n / t[2][3] / 1e9 / copy);
    free(x);
    free(dst);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bandwidth") == 0) {
        bandwidth();
        return 0;
    }
    test_adamw();
    test_copy();
    test_pack();
    test_reduce();
    test_reduce_stream();
    test_scale();
    test_exhaustive();
    test_random();
    test_table();
    return check_result("test_kern_cpu");
}
