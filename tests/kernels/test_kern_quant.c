/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kern_quant.c: the host quantizers (kernels/cpu/quant.c) against a scalar reference
 * written here from sharc_wire_t's definition (sharc/types.h): int8 codes by libm's
 * nearbyintf, e4m3 codes by searching every code for the nearest value (ties to the even
 * code), decoding by ldexp. Every block size from 1 to 300 and larger ones, odd tails, f32 /
 * f16 / bf16, several segments; the wire bytes must equal the reference's exactly, and so
 * must the values back and the sums. All-zero, tiny, NaN and infinite blocks; the stated
 * error bounds on random data; bad arguments. The throughput is printed, not asserted.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../kernels/kernels.h"
#include "../check.h"
#include "../kern_ref.h"

static const sharc_kern_ops_t *K = &sharc_kern_cpu_ops;
static const sharc_dtype_t dtypes[] = {SHARC_DTYPE_F32, SHARC_DTYPE_BF16, SHARC_DTYPE_F16};

/* ---- the reference --------------------------------------------------------------------- */

static double ref_e4m3_value(unsigned c)
{
    unsigned e = (c >> 3) & 15, m = c & 7;
    double v = e ? ldexp(1.0 + m / 8.0, (int)e - 7) : ldexp((double)m, -9);

    return (c & 0x80) ? -v : v;
}

/* The nearest e4m3 code to a finite v, ties to the even code, saturating at 448. */
static uint8_t ref_e4m3(float v)
{
    double a = fabs((double)v);
    unsigned best = 0;

    for (unsigned c = 1; c <= 0x7e; c++) {
        double d = fabs(ref_e4m3_value(c) - a), db = fabs(ref_e4m3_value(best) - a);

        if (d < db || (d == db && (c & 1) == 0)) {
            best = c;
        }
    }
    return (uint8_t)(best | (signbit(v) ? 0x80 : 0));
}

static float ref_load(const void *p, sharc_dtype_t dt, size_t i)
{
    switch (dt) {
    case SHARC_DTYPE_BF16: return sharc_kern_bf16_to_f32(((const uint16_t *)p)[i]);
    case SHARC_DTYPE_F16: return sharc_kern_f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* One segment as the definition says; returns its size. */
static size_t ref_quantize(uint8_t *seg, sharc_kern_wire_t w, const void *src, sharc_dtype_t dt,
                           size_t first, size_t count)
{
    size_t nb = (count + w.block - 1) / w.block;
    size_t bytes = sharc_wire_size(w.format, count, w.block, dt);
    float qmax = w.format == SHARC_WIRE_FP8 ? 448.0f : 127.0f, *scales = (float *)(void *)seg;
    uint8_t *codes = seg + 4 * nb;

    memset(seg, 0, bytes);
    for (size_t b = 0; b < nb; b++) {
        size_t n = (b + 1) * w.block > count ? count - b * w.block : w.block;
        float amax = 0.0f;
        int finite = 1;

        for (size_t i = 0; i < n; i++) {
            float x = ref_load(src, dt, first + b * w.block + i);

            finite &= isfinite(x) != 0;
            amax = fmaxf(amax, fabsf(x));
        }
        if (!finite) {
            scales[b] = NAN;
            continue;
        }
        if (amax < 0x1p-100f) {
            scales[b] = 0.0f;
            continue;
        }
        scales[b] = amax / qmax;
        for (size_t i = 0; i < n; i++) {
            float v = ref_load(src, dt, first + b * w.block + i) * (qmax / amax);

            if (w.format == SHARC_WIRE_FP8) {
                codes[b * w.block + i] = ref_e4m3(v);
            } else {
                v = fminf(fmaxf(nearbyintf(v), -127.0f), 127.0f);
                codes[b * w.block + i] = (uint8_t)(int8_t)v;
            }
        }
    }
    return bytes;
}

static float ref_qvalue(const uint8_t *seg, sharc_kern_wire_t w, size_t count, size_t i)
{
    size_t nb = (count + w.block - 1) / w.block;
    float scale, code;

    memcpy(&scale, seg + 4 * (i / w.block), 4);
    code = w.format == SHARC_WIRE_FP8 ? (float)ref_e4m3_value(seg[4 * nb + i])
                                      : (float)(int8_t)seg[4 * nb + i];
    return code * scale;
}

static void ref_store(void *p, sharc_dtype_t dt, size_t i, float v)
{
    if (isnan(v) && dt != SHARC_DTYPE_F32) { /* (kern_ref.h's rounding leaves NaN to us) */
        ((uint16_t *)p)[i] = dt == SHARC_DTYPE_F16 ? 0x7e00 : 0x7fc0;
        return;
    }
    switch (dt) {
    case SHARC_DTYPE_BF16: ((uint16_t *)p)[i] = ref_f32_to_bf16(v); break;
    case SHARC_DTYPE_F16: ((uint16_t *)p)[i] = ref_f32_to_f16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* Equal bits, or both NaN. */
static int same(const void *a, const void *b, sharc_dtype_t dt, size_t i)
{
    size_t sz = sharc_dtype_size(dt);

    return memcmp((const char *)a + i * sz, (const char *)b + i * sz, sz) == 0 ||
           (isnan(ref_load(a, dt, i)) && isnan(ref_load(b, dt, i)));
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_e4m3_codes(void)
{
    for (unsigned c = 0; c < 256; c++) {
        float v = sharc_kern_e4m3_to_f32((uint8_t)c);

        if ((c & 0x7f) == 0x7f) {
            CHECK_MSG(isnan(v), "e4m3 %#x is NaN", c);
            continue;
        }
        CHECK_MSG((double)v == ref_e4m3_value(c), "e4m3 %#x -> %g", c, v);
        CHECK_MSG(sharc_kern_f32_to_e4m3(v) == c, "e4m3 %#x round trip", c);
    }
    /* random values over the range and past it, and every midpoint between neighbours */
    for (int i = 0; i < 200000; i++) {
        float v = ((float)ref_rand32() / 4294967296.0f - 0.5f) * 900.0f;

        if (i % 4 == 1) {
            v = ldexpf(v, -(int)(ref_rand32() % 24));
        }
        CHECK_MSG(sharc_kern_f32_to_e4m3(v) == ref_e4m3(v), "e4m3(%a) = %#x, not %#x", v,
                  sharc_kern_f32_to_e4m3(v), ref_e4m3(v));
    }
    for (unsigned c = 0; c < 0x7e; c++) {
        float mid = (float)((ref_e4m3_value(c) + ref_e4m3_value(c + 1)) / 2);

        CHECK_MSG(sharc_kern_f32_to_e4m3(mid) == ref_e4m3(mid), "tie %a", mid);
        CHECK_MSG(sharc_kern_f32_to_e4m3(-mid) == ref_e4m3(-mid), "tie %a", -mid);
    }
}

/* Random values of one block scale, some blocks special. */
static void fill(void *p, sharc_dtype_t dt, size_t n, int special)
{
    for (size_t i = 0; i < n; i++) {
        float v = ((float)ref_rand32() / 4294967296.0f - 0.5f) * ldexpf(1.0f, (int)(i / 97 % 9));

        if (special && ref_rand32() % 64 == 0) {
            v = ref_rand_f32(); /* NaN, infinities, subnormals, huge values among them */
        }
        ref_store(p, dt, i, v);
    }
}

/* One case: quantize, compare to the reference, then values and sums. */
static void test_case(sharc_kern_wire_t w, sharc_dtype_t dt, size_t count, int nseg, int special)
{
    size_t esize = sharc_dtype_size(dt), bytes = sharc_wire_size(w.format, count, w.block, dt);
    char *src = malloc(count * nseg * esize + 1), *got = malloc(bytes * nseg + 1);
    char *want = malloc(bytes * nseg + 1), *out = malloc(count * nseg * esize + 1);
    char *ref = malloc(count * nseg * esize + 1);
    float *base = malloc(count * sizeof(float) + 1), *sum = malloc(count * sizeof(float) + 1);
    int skip = nseg > 1 ? 1 : -1;
    double factor = nseg > 2 ? 0.25 : 1.0;

    fill(src, dt, count * nseg, special);
    memset(got, 0xa5, bytes * nseg); /* the padding must be written */
    CHECK(K->quantize(got, w, src, dt, count, nseg, NULL) == SHARC_OK);
    for (int s = 0; s < nseg; s++) {
        ref_quantize((uint8_t *)want + s * bytes, w, src, dt, (size_t)s * count, count);
    }
    /* NaN scales: equal as NaN (the bits are the kernels' quiet NaN either way) */
    CHECK_MSG(memcmp(got, want, bytes * nseg) == 0, "%s block %zu %s count %zu nseg %d: wire",
              sharc_wire_name(w.format), w.block, sharc_dtype_name(dt), count, nseg);
    CHECK(K->dequantize(out, dt, got, w, count, nseg, NULL) == SHARC_OK);
    for (int s = 0; s < nseg; s++) {
        for (size_t i = 0; i < count; i++) {
            ref_store(ref, dt, s * count + i, ref_qvalue((uint8_t *)want + s * bytes, w, count, i));
        }
    }
    for (size_t i = 0, bad = 0; i < count * nseg && bad < 3; i++) {
        if (!same(out, ref, dt, i)) {
            CHECK_MSG(0, "%s block %zu %s: value %zu %g, not %g", sharc_wire_name(w.format),
                      w.block, sharc_dtype_name(dt), i, ref_load(out, dt, i), ref_load(ref, dt, i));
            bad++;
        }
    }
    /* the sum over the segments but one, onto a base, scaled */
    for (size_t i = 0; i < count; i++) {
        base[i] = (float)(i % 7) - 3.0f;
        float acc = base[i];
        for (int s = 0; s < nseg; s++) {
            acc += s == skip ? 0.0f : ref_qvalue((uint8_t *)want + s * bytes, w, count, i);
        }
        ref_store(ref, dt, i, acc * (float)factor);
    }
    CHECK(K->dequantize_sum(out, dt, base, got, w, count, nseg, skip, factor, NULL) == SHARC_OK);
    for (size_t i = 0, bad = 0; i < count && bad < 3; i++) {
        if (!same(out, ref, dt, i)) {
            CHECK_MSG(0, "%s block %zu %s: sum %zu %g, not %g", sharc_wire_name(w.format), w.block,
                      sharc_dtype_name(dt), i, ref_load(out, dt, i), ref_load(ref, dt, i));
            bad++;
        }
    }
    /* in place onto an f32 base */
    if (dt == SHARC_DTYPE_F32) {
        memcpy(sum, base, count * sizeof(float));
        CHECK(K->dequantize_sum(sum, dt, sum, got, w, count, nseg, skip, factor, NULL) == SHARC_OK);
        for (size_t i = 0; i < count; i++) {
            CHECK_MSG(same(sum, ref, dt, i), "in-place sum %zu", i);
        }
    }
    free(src), free(got), free(want), free(out), free(ref), free(base), free(sum);
}

static void test_blocks(void)
{
    static const size_t counts[] = {0, 1, 5, 255, 256, 257, 1023, 5000};
    static const size_t big[] = {511, 512, 1000, 4096, 65536};

    for (int f = SHARC_WIRE_INT8; f <= SHARC_WIRE_FP8; f++) {
        /* every block size from 1 to 300 on one odd length */
        for (size_t b = 1; b <= 300; b++) {
            test_case((sharc_kern_wire_t){(sharc_wire_t)f, b}, SHARC_DTYPE_F32, 1237, 2, 1);
        }
        for (size_t k = 0; k < sizeof(big) / sizeof(big[0]); k++) {
            test_case((sharc_kern_wire_t){(sharc_wire_t)f, big[k]}, SHARC_DTYPE_F32, 70001, 1, 0);
        }
        for (size_t d = 0; d < 3; d++) {
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                for (int nseg = 1; nseg <= 4; nseg += 3) {
                    test_case((sharc_kern_wire_t){(sharc_wire_t)f, 256}, dtypes[d], counts[c], nseg,
                              1);
                    test_case((sharc_kern_wire_t){(sharc_wire_t)f, 7}, dtypes[d], counts[c], nseg,
                              0);
                }
            }
        }
    }
}

/* All-zero, tiny, NaN and infinite blocks among ordinary ones: only those blocks change. */
static void test_special_blocks(void)
{
    enum { B = 16, NB = 6, N = B * NB };
    float x[N], back[N];
    uint8_t seg[1024];
    sharc_kern_wire_t w = {SHARC_WIRE_INT8, B};

    for (int f = SHARC_WIRE_INT8; f <= SHARC_WIRE_FP8; f++) {
        w.format = (sharc_wire_t)f;
        for (int i = 0; i < N; i++) {
            x[i] = (float)(i % B) - 7.5f;
        }
        for (int i = 0; i < B; i++) {
            x[B + i] = 0.0f;           /* block 1: all zero */
            x[2 * B + i] *= 1e-32f;    /* block 2: tiny, below 2^-100 */
            x[5 * B + i] *= 0x1p-126f; /* block 5: subnormal f32 (also tiny) */
        }
        x[3 * B + 4] = NAN;       /* block 3: a NaN */
        x[4 * B + 9] = -INFINITY; /* block 4: an infinity */
        CHECK(K->quantize(seg, w, x, SHARC_DTYPE_F32, N, 1, NULL) == SHARC_OK);
        CHECK(K->dequantize(back, SHARC_DTYPE_F32, seg, w, N, 1, NULL) == SHARC_OK);
        for (int i = 0; i < N; i++) {
            int blk = i / B;

            if (blk == 1 || blk == 2 || blk == 5) {
                CHECK_MSG(back[i] == 0.0f, "%s: zero/tiny block value %d = %g",
                          sharc_wire_name(w.format), i, back[i]);
            } else if (blk == 3 || blk == 4) {
                CHECK_MSG(isnan(back[i]), "%s: non-finite block value %d = %g",
                          sharc_wire_name(w.format), i, back[i]);
            } else {
                CHECK_MSG(fabsf(back[i] - x[i]) <= 7.5f / 15.0f, "%s: value %d = %g, not ~%g",
                          sharc_wire_name(w.format), i, back[i], x[i]);
            }
        }
    }
}

/* The bounds sharc_wire_t states, on values of every magnitude within a block. */
static void test_bounds(void)
{
    enum { N = 1 << 16 };
    float *x = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    uint8_t *seg = malloc(sharc_wire_size(SHARC_WIRE_INT8, N, 256, SHARC_DTYPE_F32));

    for (int i = 0; i < N; i++) {
        x[i] = ((float)ref_rand32() / 4294967296.0f - 0.5f) * ldexpf(1.0f, -(int)(i % 20));
    }
    for (int f = SHARC_WIRE_INT8; f <= SHARC_WIRE_FP8; f++) {
        sharc_kern_wire_t w = {(sharc_wire_t)f, 256};

        K->quantize(seg, w, x, SHARC_DTYPE_F32, N, 1, NULL);
        K->dequantize(back, SHARC_DTYPE_F32, seg, w, N, 1, NULL);
        for (int b = 0; b < N / 256; b++) {
            float amax = 0.0f;

            for (int i = b * 256; i < (b + 1) * 256; i++) {
                amax = fmaxf(amax, fabsf(x[i]));
            }
            for (int i = b * 256; i < (b + 1) * 256; i++) {
                double err = fabs((double)back[i] - x[i]);
                double bound = f == SHARC_WIRE_INT8
                                   ? amax / 254.0 * (1 + 1e-5)
                                   : fmax(fabs(x[i]) * 0x1p-4, amax * 0x1p-18) * (1 + 1e-5);

                CHECK_MSG(err <= bound, "%s: |%g - %g| > %g", sharc_wire_name(w.format), back[i],
                          x[i], bound);
            }
        }
    }
    free(x), free(back), free(seg);
}

static void test_errors(void)
{
    float x[4] = {1, 2, 3, 4}, y[4];
    uint8_t seg[64];

    CHECK(K->quantize(seg, (sharc_kern_wire_t){SHARC_WIRE_INT8, 0}, x, SHARC_DTYPE_F32, 4, 1,
                      NULL) == SHARC_ERR_INVALID);
    CHECK(K->quantize(seg, (sharc_kern_wire_t){SHARC_WIRE_INT8, SHARC_WIRE_BLOCK_MAX + 1}, x,
                      SHARC_DTYPE_F32, 4, 1, NULL) == SHARC_ERR_INVALID);
    CHECK(K->quantize(seg, (sharc_kern_wire_t){SHARC_WIRE_INT8, 4}, x, SHARC_DTYPE_F32, 4, -1,
                      NULL) == SHARC_ERR_INVALID);
    CHECK(K->quantize(seg, (sharc_kern_wire_t){SHARC_WIRE_FULL, 4}, x, SHARC_DTYPE_F32, 4, 1,
                      NULL) == SHARC_ERR_UNSUPPORTED);
    CHECK(K->quantize(seg, (sharc_kern_wire_t){SHARC_WIRE_INT8, 4}, x, SHARC_DTYPE_I32, 4, 1,
                      NULL) == SHARC_ERR_UNSUPPORTED);
    CHECK(K->dequantize(y, SHARC_DTYPE_F64, seg, (sharc_kern_wire_t){SHARC_WIRE_FP8, 4}, 4, 1,
                        NULL) == SHARC_ERR_UNSUPPORTED);
    CHECK(K->dequantize_sum(y, SHARC_DTYPE_F32, NULL, seg, (sharc_kern_wire_t){SHARC_WIRE_FP8, 0},
                            4, 1, -1, 1.0, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_wire_size(SHARC_WIRE_INT8, 1000, 256, SHARC_DTYPE_F32) == 1024);
    CHECK(sharc_wire_size(SHARC_WIRE_FP8, 1, 256, SHARC_DTYPE_BF16) == 16);
    CHECK(sharc_wire_size(SHARC_WIRE_FULL, 10, 256, SHARC_DTYPE_BF16) == 20);
    CHECK(sharc_wire_size(SHARC_WIRE_INT8, 10, 0, SHARC_DTYPE_F32) == 0);
    CHECK(sharc_wire_size(SHARC_WIRE_INT8, 0, 256, SHARC_DTYPE_F32) == 0);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Throughput of each pass beside memcpy (medians of 7), printed: speed is for benchmarks. */
static void print_speed(void)
{
    enum { N = 8 << 20, REPS = 7 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    uint8_t *seg = malloc(sharc_wire_size(SHARC_WIRE_INT8, N, 256, SHARC_DTYPE_F32));
    sharc_kern_wire_t w = {SHARC_WIRE_INT8, 256};
    double t[3][REPS];

    fill(x, SHARC_DTYPE_F32, N, 0);
    memcpy(y, x, N * sizeof(float));
    K->quantize(seg, w, x, SHARC_DTYPE_F32, N, 1, NULL); /* every page touched once */
    for (int f = SHARC_WIRE_INT8; f <= SHARC_WIRE_FP8; f++) {
        w.format = (sharc_wire_t)f;
        for (int r = 0; r < REPS; r++) {
            double t0 = now(), t1, t2;

            memcpy(y, x, N * sizeof(float));
            t1 = now();
            K->quantize(seg, w, x, SHARC_DTYPE_F32, N, 1, NULL);
            t2 = now();
            K->dequantize(y, SHARC_DTYPE_F32, seg, w, N, 1, NULL);
            t[0][r] = t1 - t0, t[1][r] = t2 - t1, t[2][r] = now() - t2;
        }
        for (int k = 0; k < 3; k++) {
            qsort(t[k], REPS, sizeof(double), cmp_double);
        }
        printf("%s, 32 MiB of f32, median of %d: memcpy %.2f GB/s, quantize %.2f GB/s, "
               "dequantize %.2f GB/s (f32 bytes per second)\n",
               sharc_wire_name(w.format), REPS, N * 4 / t[0][REPS / 2] / 1e9,
               N * 4 / t[1][REPS / 2] / 1e9, N * 4 / t[2][REPS / 2] / 1e9);
    }
    free(x), free(y), free(seg);
}

int main(void)
{
    test_e4m3_codes();
    test_blocks();
    test_special_blocks();
    test_bounds();
    test_errors();
    print_speed();
    return check_result("test_kern_quant");
}
