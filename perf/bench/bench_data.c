/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_data.c: what -c of the collective benchmarks checks against: rank r's known inputs
 * (small integers, exact in every dtype), stored and read back by dtype (also for --wire's
 * inputs), and the result each element must have. Not the timing (bench_sweep.c) nor the
 * collectives' calls (bench_coll.c).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "bench.h"

double perf_input(int r, size_t i, sharc_op_t op)
{
    return op == SHARC_OP_PROD ? 1.0 + (double)((r + i) % 2) : 1.0 + (double)((r + i) % 4);
}

/* f32 -> f16 for the small integers perf_input makes (exact, so no rounding is needed). */
static uint16_t perf_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (f == 0.0f) {
        return (uint16_t)((u >> 16) & 0x8000);
    }
    int e = (int)((u >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(((u >> 16) & 0x8000) | ((uint32_t)e << 10) | ((u >> 13) & 0x3ff));
}

void perf_put(void *buf, sharc_dtype_t dt, size_t i, double v)
{
    float f = (float)v;
    uint32_t u;

    switch (dt) {
    case SHARC_DTYPE_F32: ((float *)buf)[i] = f; break;
    case SHARC_DTYPE_F64: ((double *)buf)[i] = v; break;
    case SHARC_DTYPE_F16: ((uint16_t *)buf)[i] = perf_f16(f); break;
    case SHARC_DTYPE_BF16:
        memcpy(&u, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
        break;
    case SHARC_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case SHARC_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    default: ((uint8_t *)buf)[i] = (uint8_t)((uint64_t)v & 0xff); break;
    }
}

void perf_fill(void *buf, sharc_dtype_t dt, size_t count, int r, size_t base, sharc_op_t op)
{
    for (size_t i = 0; i < count; i++) {
        perf_put(buf, dt, i, perf_input(r, base + i, op));
    }
}

static double perf_expected(size_t i, int root, int n, sharc_op_t op, sharc_dtype_t dt)
{
    double acc;

    if (root >= 0) {
        return perf_input(root, i, op);
    }
    acc = perf_input(0, i, op);
    for (int r = 1; r < n; r++) {
        double v = perf_input(r, i, op);
        switch (op) {
        case SHARC_OP_PROD: acc *= v; break;
        case SHARC_OP_MIN: acc = fmin(acc, v); break;
        case SHARC_OP_MAX: acc = fmax(acc, v); break;
        default: acc += v; break;
        }
    }
    return op == SHARC_OP_AVG ? acc / n : acc;
}

double perf_get(const void *buf, sharc_dtype_t dt, size_t i)
{
    uint16_t h;
    uint32_t u;
    float f;

    switch (dt) {
    case SHARC_DTYPE_F32: return ((const float *)buf)[i];
    case SHARC_DTYPE_F64: return ((const double *)buf)[i];
    case SHARC_DTYPE_BF16:
        u = (uint32_t)((const uint16_t *)buf)[i] << 16;
        memcpy(&f, &u, 4);
        return f;
    case SHARC_DTYPE_F16: {
        int e;
        h = ((const uint16_t *)buf)[i];
        e = (h >> 10) & 0x1f;
        f = (e == 0)    ? ldexpf((float)(h & 0x3ff), -24)
            : (e == 31) ? ((h & 0x3ff) ? NAN : INFINITY)
                        : ldexpf((float)((h & 0x3ff) | 0x400), e - 25);
        return (h & 0x8000) ? -f : f;
    }
    case SHARC_DTYPE_I32: return ((const int32_t *)buf)[i];
    case SHARC_DTYPE_I64: return (double)((const int64_t *)buf)[i];
    default: return ((const uint8_t *)buf)[i];
    }
}

/* Relative tolerance per dtype: a few units in the last place, as nccl-tests allows. */
static double perf_tolerance(sharc_dtype_t dt)
{
    switch (dt) {
    case SHARC_DTYPE_F64: return 1e-12;
    case SHARC_DTYPE_F32: return 1e-6;
    case SHARC_DTYPE_F16: return 2e-3;
    case SHARC_DTYPE_BF16: return 1.6e-2;
    default: return 0;
    }
}

size_t perf_wrong(const void *buf, sharc_dtype_t dt, size_t count, size_t base, int root, int n,
                  sharc_op_t op)
{
    double tol = perf_tolerance(dt);
    size_t wrong = 0;

    for (size_t i = 0; i < count; i++) {
        double want = perf_expected(base + i, root, n, op, dt), got = perf_get(buf, dt, i);

        if (dt == SHARC_DTYPE_U8) {
            want = (double)((uint64_t)want & 0xff);
        }
        wrong += !(fabs(got - want) <= tol * fmax(1.0, fabs(want)));
    }
    return wrong;
}
