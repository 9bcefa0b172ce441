/*
 * test_kern_cpu.c: f32 <-> f16 / bf16 conversions against an independent reference
 * (tests/kern_ref.h): every 16-bit code exhaustively, two million random f32 values with the
 * edges of both types, and the CPU cast table at lengths that are not multiples of a vector.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "../kernels/kernels.h"
#include "check.h"
#include "kern_ref.h"

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

int main(void)
{
    test_exhaustive();
    test_random();
    test_table();
    return check_result("test_kern_cpu");
}
