/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kern_ref.h: an independent reference for rounding f32 to a 16-bit float type, used by the
 * kernel tests: positive 16-bit codes are ordered like their values, so the nearest code is
 * found by binary search in double precision, ties going to the even code, and infinity
 * standing at the next power of two (where IEEE rounding sends the values past the midpoint).
 */
#ifndef SHARC_TEST_KERN_REF_H
#define SHARC_TEST_KERN_REF_H

#include <math.h>
#include <stdint.h>

#include "../kernels/kernels.h"

typedef float (*ref_to_f32_fn)(uint16_t);

static inline double ref_value(uint16_t code, ref_to_f32_fn to_f32, uint16_t inf_code,
                               double inf_value)
{
    return code == inf_code ? inf_value : (double)to_f32(code);
}

/* The code nearest to x (finite or infinite); NaN handled by the caller. */
static inline uint16_t ref_round16(float x, ref_to_f32_fn to_f32, uint16_t inf_code,
                                   double inf_value)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0, lo = 0, hi = inf_code;
    double a = fabs((double)x);

    if (isinf(x)) {
        return sign | inf_code;
    }
    if (a >= inf_value) {
        return sign | inf_code;
    }
    /* largest code with value <= a */
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (ref_value(mid, to_f32, inf_code, inf_value) <= a) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    double dlo = a - ref_value(lo, to_f32, inf_code, inf_value);
    double dhi = ref_value(hi, to_f32, inf_code, inf_value) - a;
    if (dlo < dhi || (dlo == dhi && (lo & 1) == 0) || dlo == 0) {
        return sign | lo;
    }
    return sign | hi;
}

static inline uint16_t ref_f32_to_f16(float x)
{
    return ref_round16(x, sharc_kern_f16_to_f32, 0x7c00, 65536.0);
}

static inline uint16_t ref_f32_to_bf16(float x)
{
    return ref_round16(x, sharc_kern_bf16_to_f32, 0x7f80, ldexp(1.0, 128));
}

/* Deterministic random f32 bit patterns over every class (xorshift64). */
static uint64_t ref_rng = 0x9e3779b97f4a7c15ull;

static inline uint32_t ref_rand32(void)
{
    ref_rng ^= ref_rng << 13;
    ref_rng ^= ref_rng >> 7;
    ref_rng ^= ref_rng << 17;
    return (uint32_t)(ref_rng >> 16);
}

/* Mostly values near the 16-bit types' range, some anywhere, some special. */
static inline float ref_rand_f32(void)
{
    uint32_t r = ref_rand32(), kind = r % 8;

    if (kind < 5) { /* exponent within [-30, 20]: f16's range and edges */
        uint32_t e = 127 - 30 + (ref_rand32() % 51);
        return sharc_kern_bits_f32((ref_rand32() & 0x807fffffu) | (e << 23));
    }
    if (kind < 7) {
        return sharc_kern_bits_f32(ref_rand32());
    }
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0x00000001u,
        0x477fe000u, 0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u, 0x7f7fffffu, 0x387fe000u};
    return sharc_kern_bits_f32(special[ref_rand32() % (sizeof(special) / sizeof(special[0]))]);
}

#endif
