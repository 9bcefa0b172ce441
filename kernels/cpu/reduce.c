/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu/reduce.c: elementwise reductions (dst = a op b) and scaling on host memory, for
 * every dtype and op. The loops are plain C that the compiler vectorizes; each is built for
 * AVX-512, AVX2 and baseline x86-64 and picked at load time for the CPU it runs on
 * (function multiversioning), so one binary is fast everywhere. f16 and bf16 go through
 * f32 with one rounding per element.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "cpu.h"

/* One loop per (type, op): d = x op y. No restrict: d may equal x or y. */
#define SHARC_KERN_LOOP(_name, _T, _expr)                                                          \
    SHARC_KERN_CLONES static void _name(_T *d, const _T *x, const _T *y, size_t n)                 \
    {                                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            _T a = x[i], b = y[i];                                                                 \
            d[i] = (_expr);                                                                        \
        }                                                                                          \
    }

/* Floating point: min/max return NaN when either input is NaN. */
#define SHARC_KERN_FLOAT(_sfx, _T)                                                                 \
    SHARC_KERN_LOOP(sharc_sum_##_sfx, _T, a + b)                                                   \
    SHARC_KERN_LOOP(sharc_prod_##_sfx, _T, a *b)                                                   \
    SHARC_KERN_LOOP(sharc_min_##_sfx, _T, (b < a || b != b) ? b : a)                               \
    SHARC_KERN_LOOP(sharc_max_##_sfx, _T, (b > a || b != b) ? b : a)

/* Integers: sums and products wrap around (computed unsigned, where overflow is defined). */
#define SHARC_KERN_INT(_sfx, _T, _U)                                                               \
    SHARC_KERN_LOOP(sharc_sum_##_sfx, _T, (_T)((_U)a + (_U)b))                                     \
    SHARC_KERN_LOOP(sharc_prod_##_sfx, _T, (_T)((_U)a * (_U)b))                                    \
    SHARC_KERN_LOOP(sharc_min_##_sfx, _T, b < a ? b : a)                                           \
    SHARC_KERN_LOOP(sharc_max_##_sfx, _T, b > a ? b : a)

SHARC_KERN_FLOAT(f32, float)
SHARC_KERN_FLOAT(f64, double)
SHARC_KERN_INT(i32, int32_t, uint32_t)
SHARC_KERN_INT(i64, int64_t, uint64_t)
SHARC_KERN_INT(u8, uint8_t, unsigned)

typedef void (*sharc_kern_loop_fn_t)(void *d, const void *x, const void *y, size_t n);

#define SHARC_KERN_ROW(_sfx)                                                                       \
    {                                                                                              \
        (sharc_kern_loop_fn_t) sharc_sum_##_sfx, (sharc_kern_loop_fn_t)sharc_prod_##_sfx,          \
            (sharc_kern_loop_fn_t)sharc_min_##_sfx, (sharc_kern_loop_fn_t)sharc_max_##_sfx,        \
            (sharc_kern_loop_fn_t)sharc_sum_##_sfx                                                 \
    }

/* [dtype][op] for the native types; AVG accumulates as SUM. NULL rows: 16-bit floats. */
static const sharc_kern_loop_fn_t sharc_kern_loops[SHARC_DTYPE_LAST][SHARC_OP_LAST] = {
    [SHARC_DTYPE_F32] = SHARC_KERN_ROW(f32), [SHARC_DTYPE_F64] = SHARC_KERN_ROW(f64),
    [SHARC_DTYPE_I32] = SHARC_KERN_ROW(i32), [SHARC_DTYPE_I64] = SHARC_KERN_ROW(i64),
    [SHARC_DTYPE_U8] = SHARC_KERN_ROW(u8),
};

/* 16-bit floats: widen a block to f32, reduce with the f32 loop, round back. */
#define SHARC_KERN_BLOCK 1024

SHARC_KERN_CLONES static void sharc_kern_reduce16(uint16_t *d, const uint16_t *x, const uint16_t *y,
                                                  size_t n, sharc_dtype_t dtype, sharc_op_t op)
{
    float a[SHARC_KERN_BLOCK], b[SHARC_KERN_BLOCK];
    sharc_kern_loop_fn_t fn = sharc_kern_loops[SHARC_DTYPE_F32][op];

    for (size_t off = 0; off < n; off += SHARC_KERN_BLOCK) {
        size_t m = SHARC_MIN(n - off, (size_t)SHARC_KERN_BLOCK);

        if (dtype == SHARC_DTYPE_BF16) {
            for (size_t i = 0; i < m; i++) {
                a[i] = sharc_kern_bf16_to_f32(x[off + i]);
                b[i] = sharc_kern_bf16_to_f32(y[off + i]);
            }
        } else {
            for (size_t i = 0; i < m; i++) {
                a[i] = sharc_kern_f16_to_f32(x[off + i]);
                b[i] = sharc_kern_f16_to_f32(y[off + i]);
            }
        }
        fn(a, a, b, m);
        /* separate loops: the bf16 one vectorizes, the branchy f16 one would stop it */
        if (dtype == SHARC_DTYPE_BF16) {
            for (size_t i = 0; i < m; i++) {
                d[off + i] = sharc_kern_f32_to_bf16(a[i]);
            }
        } else {
            for (size_t i = 0; i < m; i++) {
                d[off + i] = sharc_kern_f32_to_f16(a[i]);
            }
        }
    }
}

#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>

/*
 * Large f32 and f64 sums (SHARC_KERN_STREAM_MIN bytes and up: a reduce-scatter's chunks)
 * write with streaming stores, as the bulk copy does (copy.c): the destination's lines are
 * not read before they are written, a quarter of an out-of-place sum's memory traffic (1.5x
 * faster on 8 MB of f32 on a 2-core EPYC). The same additions, elementwise: the results are
 * bit-identical to the loops above. d may equal x or y (each block is loaded before it is
 * stored); a d that is not aligned to its element takes the scalar loop throughout.
 */
#define SHARC_KERN_SUM_STREAM(_name, _T, _V, _W, _load, _add, _stream)                             \
    static void _name(_T *d, const _T *x, const _T *y, size_t n)                                   \
    {                                                                                              \
        size_t i = 0;                                                                              \
                                                                                                   \
        for (; i < n && ((uintptr_t)(d + i) & 15) != 0; i++) {                                     \
            d[i] = x[i] + y[i];                                                                    \
        }                                                                                          \
        for (; i + 4 * (_W) <= n; i += 4 * (_W)) {                                                 \
            _V s0 = _add(_load(x + i), _load(y + i));                                              \
            _V s1 = _add(_load(x + i + (_W)), _load(y + i + (_W)));                                \
            _V s2 = _add(_load(x + i + 2 * (_W)), _load(y + i + 2 * (_W)));                        \
            _V s3 = _add(_load(x + i + 3 * (_W)), _load(y + i + 3 * (_W)));                        \
                                                                                                   \
            _stream(d + i, s0);                                                                    \
            _stream(d + i + (_W), s1);                                                             \
            _stream(d + i + 2 * (_W), s2);                                                         \
            _stream(d + i + 3 * (_W), s3);                                                         \
        }                                                                                          \
        _mm_sfence(); /* weakly ordered stores: done before anyone reads the result */             \
        for (; i < n; i++) {                                                                       \
            d[i] = x[i] + y[i];                                                                    \
        }                                                                                          \
    }

SHARC_KERN_SUM_STREAM(sharc_sum_f32_stream, float, __m128, 4, _mm_loadu_ps, _mm_add_ps,
                      _mm_stream_ps)
SHARC_KERN_SUM_STREAM(sharc_sum_f64_stream, double, __m128d, 2, _mm_loadu_pd, _mm_add_pd,
                      _mm_stream_pd)

/* 1 if the sum went the streaming way */
static int sharc_sum_stream(void *dst, const void *a, const void *b, size_t count,
                            sharc_dtype_t dtype, sharc_op_t op)
{
    if ((op != SHARC_OP_SUM && op != SHARC_OP_AVG) ||
        count * sharc_dtype_size(dtype) < SHARC_KERN_STREAM_MIN) {
        return 0;
    }
    if (dtype == SHARC_DTYPE_F32) {
        sharc_sum_f32_stream(dst, a, b, count);
        return 1;
    }
    if (dtype == SHARC_DTYPE_F64) {
        sharc_sum_f64_stream(dst, a, b, count);
        return 1;
    }
    return 0;
}
#else
static int sharc_sum_stream(void *dst, const void *a, const void *b, size_t count,
                            sharc_dtype_t dtype, sharc_op_t op)
{
    return 0;
}
#endif

sharc_status_t sharc_kern_cpu_reduce(void *dst, const void *a, const void *b, size_t count,
                                     sharc_dtype_t dtype, sharc_op_t op, void *stream)
{
    if (!sharc_kern_op_valid(dtype, op)) {
        return SHARC_ERR_INVALID;
    }
    if (sharc_sum_stream(dst, a, b, count, dtype, op)) {
        return SHARC_OK;
    }
    if (dtype == SHARC_DTYPE_F16 || dtype == SHARC_DTYPE_BF16) {
        sharc_kern_reduce16(dst, a, b, count, dtype, op);
    } else {
        sharc_kern_loops[dtype][op](dst, a, b, count);
    }
    return SHARC_OK;
}

SHARC_KERN_CLONES static void sharc_scale_f32(float *d, size_t n, float f)
{
    for (size_t i = 0; i < n; i++) {
        d[i] *= f;
    }
}

SHARC_KERN_CLONES static void sharc_scale_f64(double *d, size_t n, double f)
{
    for (size_t i = 0; i < n; i++) {
        d[i] *= f;
    }
}

sharc_status_t sharc_kern_cpu_scale(void *buf, size_t count, sharc_dtype_t dtype, double factor,
                                    void *stream)
{
    uint16_t *h = buf;

    switch (dtype) {
    case SHARC_DTYPE_F32: sharc_scale_f32(buf, count, (float)factor); return SHARC_OK;
    case SHARC_DTYPE_F64: sharc_scale_f64(buf, count, factor); return SHARC_OK;
    case SHARC_DTYPE_F16:
        for (size_t i = 0; i < count; i++) {
            h[i] = sharc_kern_f32_to_f16(sharc_kern_f16_to_f32(h[i]) * (float)factor);
        }
        return SHARC_OK;
    case SHARC_DTYPE_BF16:
        for (size_t i = 0; i < count; i++) {
            h[i] = sharc_kern_f32_to_bf16(sharc_kern_bf16_to_f32(h[i]) * (float)factor);
        }
        return SHARC_OK;
    default: return SHARC_ERR_INVALID;
    }
}
