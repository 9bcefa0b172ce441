/*
 * perf_util.c: known inputs and expected results for sharc-perf -c, medians, the clock and
 * size arguments.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf_util.h"

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

static void perf_put(void *buf, sharc_dtype_t dt, size_t i, double v)
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

/* Read element i as a double; f16 and bf16 decoded exactly. */
static double perf_get(const void *buf, sharc_dtype_t dt, size_t i)
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

static int perf_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double perf_median(double *v, size_t n)
{
    if (n == 0) {
        return 0;
    }
    qsort(v, n, sizeof(*v), perf_cmp);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int perf_parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double mult = 1;

    switch (*end) {
    case 'k':
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        end++;
        break;
    default: break;
    }
    if (end == s || *end != '\0' || v < 0 || !isfinite(v)) {
        return -1;
    }
    *out = (size_t)(v * mult);
    return 0;
}

int perf_snprintf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n;
}
