/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu/quant.c: block quantization for narrow wires (sharc_wire_t, sharc/types.h): f32, f16
 * or bf16 values to int8 or float8 e4m3 codes with one f32 scale per block, back, and back
 * summed over segments (the last step of a quantized reduce-scatter). One pass over memory
 * each way: a block's absmax and its codes are computed while it is in cache. The reference
 * the CUDA kernels (cuda/quant.cu) are checked against: they give the same bits.
 */
#include "config.h"

#include <string.h>

#include "cpu.h"

/* Adding and subtracting it rounds an f32 below 2^22 to an integer, to nearest even (the
 * library is built without FMA contraction here: Makefile.am's kernel flags) */
#define SHARC_Q_RINT 0x1.8p23f

#define SHARC_Q_LOAD_F32(_v)   (_v)
#define SHARC_Q_LOAD_BF16(_v)  sharc_kern_bf16_to_f32(_v)
#define SHARC_Q_LOAD_F16(_v)   sharc_kern_f16_to_f32(_v)
#define SHARC_Q_STORE_F32(_v)  (_v)
#define SHARC_Q_STORE_BF16(_v) sharc_kern_f32_to_bf16(_v)
#define SHARC_Q_STORE_F16(_v)  sharc_kern_f32_to_f16(_v)

/*
 * Per source type: the bits of a block's largest magnitude (as unsigned integers the bits of
 * non-negative floats order like their values, with infinities and NaN above every finite
 * value, so one integer maximum finds both), and the block's codes given 1 / scale.
 */
#define SHARC_Q_SRC(_sfx, _T, _LOAD)                                                               \
    SHARC_KERN_CLONES static uint32_t sharc_q_absmax_##_sfx(const void *src, size_t n)             \
    {                                                                                              \
        const _T *x = src;                                                                         \
        uint32_t m = 0;                                                                            \
                                                                                                   \
        for (size_t i = 0; i < n; i++) {                                                           \
            uint32_t b = sharc_kern_f32_bits(_LOAD(x[i])) & 0x7fffffffu;                           \
            m = b > m ? b : m;                                                                     \
        }                                                                                          \
        return m;                                                                                  \
    }                                                                                              \
    SHARC_KERN_CLONES static void sharc_q_int8_##_sfx(uint8_t *q, const void *src, size_t n,       \
                                                      float inv)                                   \
    {                                                                                              \
        const _T *x = src;                                                                         \
                                                                                                   \
        for (size_t i = 0; i < n; i++) { /* (clamped as integers: that loop vectorizes) */         \
            int32_t k = (int32_t)((_LOAD(x[i]) * inv + SHARC_Q_RINT) - SHARC_Q_RINT);              \
                                                                                                   \
            k = k > 127 ? 127 : (k < -127 ? -127 : k);                                             \
            q[i] = (uint8_t)k;                                                                     \
        }                                                                                          \
    }                                                                                              \
    SHARC_KERN_CLONES static void sharc_q_fp8_##_sfx(uint8_t *q, const void *src, size_t n,        \
                                                     float inv)                                    \
    {                                                                                              \
        const _T *x = src;                                                                         \
                                                                                                   \
        for (size_t i = 0; i < n; i++) {                                                           \
            q[i] = sharc_kern_f32_to_e4m3(_LOAD(x[i]) * inv);                                      \
        }                                                                                          \
    }

SHARC_Q_SRC(f32, float, SHARC_Q_LOAD_F32)
SHARC_Q_SRC(bf16, uint16_t, SHARC_Q_LOAD_BF16)
SHARC_Q_SRC(f16, uint16_t, SHARC_Q_LOAD_F16)

/* Per destination type: codes times the scale, stored (rounded once). */
#define SHARC_Q_DST(_sfx, _T, _STORE)                                                              \
    SHARC_KERN_CLONES static void sharc_dq_int8_##_sfx(void *dst, const uint8_t *q, size_t n,      \
                                                       float scale)                                \
    {                                                                                              \
        _T *d = dst;                                                                               \
                                                                                                   \
        for (size_t i = 0; i < n; i++) {                                                           \
            d[i] = _STORE((float)(int8_t)q[i] * scale);                                            \
        }                                                                                          \
    }                                                                                              \
    SHARC_KERN_CLONES static void sharc_dq_fp8_##_sfx(void *dst, const uint8_t *q, size_t n,       \
                                                      float scale)                                 \
    {                                                                                              \
        _T *d = dst;                                                                               \
                                                                                                   \
        for (size_t i = 0; i < n; i++) {                                                           \
            d[i] = _STORE(sharc_kern_e4m3_to_f32(q[i]) * scale);                                   \
        }                                                                                          \
    }                                                                                              \
    SHARC_KERN_CLONES static void sharc_dq_out_##_sfx(void *dst, const float *acc, size_t n,       \
                                                      float factor)                                \
    {                                                                                              \
        _T *d = dst;                                                                               \
                                                                                                   \
        for (size_t i = 0; i < n; i++) {                                                           \
            d[i] = _STORE(acc[i] * factor);                                                        \
        }                                                                                          \
    }

SHARC_Q_DST(f32, float, SHARC_Q_STORE_F32)
SHARC_Q_DST(bf16, uint16_t, SHARC_Q_STORE_BF16)
SHARC_Q_DST(f16, uint16_t, SHARC_Q_STORE_F16)

/* Summing: acc[i] += code * scale, in f32. */
SHARC_KERN_CLONES static void sharc_dqs_int8(float *acc, const uint8_t *q, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) {
        acc[i] += (float)(int8_t)q[i] * scale;
    }
}

SHARC_KERN_CLONES static void sharc_dqs_fp8(float *acc, const uint8_t *q, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) {
        acc[i] += sharc_kern_e4m3_to_f32(q[i]) * scale;
    }
}

#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>

/*
 * Large int8 -> f32 outputs (SHARC_KERN_STREAM_MIN bytes and up: an all-gather's unit) are
 * written with streaming stores, as the bulk copy does (copy.c): the output's lines are not
 * read before they are written, a third less memory traffic. The same products as the loops
 * above (an int8 is exact in f32, one rounding each), so the same bits.
 */
static void sharc_dq_int8_f32_stream(void *dst, const uint8_t *q, size_t n, float scale)
{
    float *d = dst;
    __m128 s = _mm_set1_ps(scale);
    size_t i = 0;

    for (; i < n && ((uintptr_t)(d + i) & 15) != 0; i++) {
        d[i] = (float)(int8_t)q[i] * scale;
    }
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(q + i));
        /* sign-extended: each byte doubled into a 16-bit lane and shifted back, twice */
        __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8);
        __m128i hi = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
        __m128i w[4] = {_mm_srai_epi32(_mm_unpacklo_epi16(lo, lo), 16),
                        _mm_srai_epi32(_mm_unpackhi_epi16(lo, lo), 16),
                        _mm_srai_epi32(_mm_unpacklo_epi16(hi, hi), 16),
                        _mm_srai_epi32(_mm_unpackhi_epi16(hi, hi), 16)};

        for (int k = 0; k < 4; k++) {
            _mm_stream_ps(d + i + 4 * k, _mm_mul_ps(_mm_cvtepi32_ps(w[k]), s));
        }
    }
    for (; i < n; i++) {
        d[i] = (float)(int8_t)q[i] * scale;
    }
}

static void sharc_dq_fence(void)
{
    _mm_sfence(); /* weakly ordered stores: done before anyone reads the result */
}
#else
#define sharc_dq_int8_f32_stream sharc_dq_int8_f32
static void sharc_dq_fence(void)
{
}
#endif

typedef uint32_t (*sharc_q_absmax_fn_t)(const void *src, size_t n);
typedef void (*sharc_q_code_fn_t)(uint8_t *q, const void *src, size_t n, float inv);
typedef void (*sharc_dq_fn_t)(void *dst, const uint8_t *q, size_t n, float scale);
typedef void (*sharc_dq_out_fn_t)(void *dst, const float *acc, size_t n, float factor);

/* One dtype's loops; codes and values by format: [0] int8, [1] fp8. */
typedef struct {
    sharc_q_absmax_fn_t absmax;
    sharc_q_code_fn_t code[2];
    sharc_dq_fn_t value[2];
    sharc_dq_out_fn_t out;
} sharc_q_fns_t;

#define SHARC_Q_ROW(_sfx)                                                                          \
    {                                                                                              \
        sharc_q_absmax_##_sfx, {sharc_q_int8_##_sfx, sharc_q_fp8_##_sfx},                          \
            {sharc_dq_int8_##_sfx, sharc_dq_fp8_##_sfx}, sharc_dq_out_##_sfx                       \
    }

static const sharc_q_fns_t sharc_q_fns[SHARC_DTYPE_LAST] = {
    [SHARC_DTYPE_F32] = SHARC_Q_ROW(f32),
    [SHARC_DTYPE_BF16] = SHARC_Q_ROW(bf16),
    [SHARC_DTYPE_F16] = SHARC_Q_ROW(f16),
};

/* The arguments every entry point checks. */
static sharc_status_t sharc_q_check(sharc_kern_wire_t w, sharc_dtype_t dtype, int nseg)
{
    if (w.block == 0 || w.block > SHARC_WIRE_BLOCK_MAX || nseg < 0) {
        return SHARC_ERR_INVALID;
    }
    return sharc_kern_wire_valid(w, dtype) ? SHARC_OK : SHARC_ERR_UNSUPPORTED;
}

static size_t sharc_q_blocks(size_t count, size_t block)
{
    return count / block + (count % block != 0);
}

/* Quantize one segment of @p count values. */
static void sharc_q_segment(uint8_t *seg, sharc_kern_wire_t w, const char *src, size_t esize,
                            size_t count, size_t seg_bytes, const sharc_q_fns_t *fn)
{
    size_t nb = sharc_q_blocks(count, w.block);
    float *scales = (float *)(void *)seg, qmax;
    uint8_t *codes = seg + nb * sizeof(float);
    int f = w.format == SHARC_WIRE_FP8;

    qmax = f ? SHARC_KERN_E4M3_MAX : SHARC_KERN_INT8_MAX;
    for (size_t b = 0; b < nb; b++) {
        size_t off = b * w.block, n = SHARC_MIN(w.block, count - off);
        uint32_t m = fn->absmax(src + off * esize, n);
        float amax = sharc_kern_bits_f32(m);

        if (m >= 0x7f800000u || amax < SHARC_KERN_QUANT_TINY) {
            /* non-finite: NaN throughout; tiny: zeros */
            scales[b] = (m >= 0x7f800000u) ? sharc_kern_bits_f32(0x7fc00000u) : 0.0f;
            memset(codes + off, 0, n);
            continue;
        }
        scales[b] = amax / qmax;
        fn->code[f](codes + off, src + off * esize, n, qmax / amax);
    }
    memset(codes + count, 0, seg_bytes - nb * sizeof(float) - count);
}

sharc_status_t sharc_kern_cpu_quantize(void *seg, sharc_kern_wire_t w, const void *src,
                                       sharc_dtype_t src_dtype, size_t count, int nseg,
                                       void *stream)
{
    size_t esize = sharc_dtype_size(src_dtype);
    size_t bytes = sharc_wire_size(w.format, count, w.block, src_dtype);

    sharc_status_t status = sharc_q_check(w, src_dtype, nseg);

    if (status != SHARC_OK) {
        return status;
    }
    for (int s = 0; s < nseg; s++) {
        sharc_q_segment((uint8_t *)seg + (size_t)s * bytes, w,
                        (const char *)src + (size_t)s * count * esize, esize, count, bytes,
                        &sharc_q_fns[src_dtype]);
    }
    return SHARC_OK;
}

/* Values [first, last) of one segment (the caller checked the arguments). */
static void sharc_q_range(char *dst, sharc_dtype_t dst_dtype, const uint8_t *seg,
                          sharc_kern_wire_t w, size_t count, size_t first, size_t last, int stream)
{
    size_t esize = sharc_dtype_size(dst_dtype), nb = sharc_q_blocks(count, w.block);
    const float *scales = (const void *)seg;
    const uint8_t *codes = seg + nb * sizeof(float);
    sharc_dq_fn_t value = sharc_q_fns[dst_dtype].value[w.format == SHARC_WIRE_FP8];

    if (stream && dst_dtype == SHARC_DTYPE_F32 && w.format == SHARC_WIRE_INT8) {
        value = sharc_dq_int8_f32_stream;
    }
    for (size_t i = first; i < last;) {
        size_t b = i / w.block, end = SHARC_MIN(last, (b + 1) * w.block);

        value(dst + (i - first) * esize, codes + i, end - i, scales[b]);
        i = end;
    }
}

sharc_status_t sharc_kern_cpu_dequantize_range(void *dst, sharc_dtype_t dst_dtype, const void *seg,
                                               sharc_kern_wire_t w, size_t count, size_t first,
                                               size_t last)
{
    sharc_status_t status = sharc_q_check(w, dst_dtype, 1);

    if (status != SHARC_OK || first >= last) {
        return (status == SHARC_OK && first > last) ? SHARC_ERR_INVALID : status;
    }
    if (last > count) {
        return SHARC_ERR_INVALID;
    }
    sharc_q_range(dst, dst_dtype, seg, w, count, first, last,
                  (last - first) * sharc_dtype_size(dst_dtype) >= SHARC_KERN_STREAM_MIN);
    sharc_dq_fence();
    return SHARC_OK;
}

sharc_status_t sharc_kern_cpu_dequantize(void *dst, sharc_dtype_t dst_dtype, const void *seg,
                                         sharc_kern_wire_t w, size_t count, int nseg, void *stream)
{
    size_t esize = sharc_dtype_size(dst_dtype);
    size_t bytes = sharc_wire_size(w.format, count, w.block, dst_dtype);
    sharc_status_t status = sharc_q_check(w, dst_dtype, nseg);

    if (status != SHARC_OK) {
        return status;
    }
    for (int s = 0; s < nseg; s++) {
        sharc_q_range((char *)dst + (size_t)s * count * esize, dst_dtype,
                      (const uint8_t *)seg + (size_t)s * bytes, w, count, 0, count,
                      count * (size_t)nseg * esize >= SHARC_KERN_STREAM_MIN);
    }
    sharc_dq_fence();
    return SHARC_OK;
}

/* Values summed per pass: an f32 accumulator of this many stays in L1. */
#define SHARC_Q_SUM_CHUNK 2048

/* acc[0 .. c1 - c0) += segment @p seg's values c0 .. c1 - 1. */
static void sharc_q_sum_piece(float *acc, const uint8_t *seg, sharc_kern_wire_t w, size_t nb,
                              size_t c0, size_t c1)
{
    const float *scales = (const void *)seg;
    const uint8_t *codes = seg + nb * sizeof(float);

    for (size_t i = c0; i < c1;) {
        size_t b = i / w.block, end = SHARC_MIN(c1, (b + 1) * w.block);

        if (w.format == SHARC_WIRE_FP8) {
            sharc_dqs_fp8(acc + (i - c0), codes + i, end - i, scales[b]);
        } else {
            sharc_dqs_int8(acc + (i - c0), codes + i, end - i, scales[b]);
        }
        i = end;
    }
}

sharc_status_t sharc_kern_cpu_dequantize_sum(void *dst, sharc_dtype_t dst_dtype, const float *base,
                                             const void *seg, sharc_kern_wire_t w, size_t count,
                                             int nseg, int skip, double factor, void *stream)
{
    size_t esize = sharc_dtype_size(dst_dtype), nb;
    size_t bytes = sharc_wire_size(w.format, count, w.block, dst_dtype);
    float acc[SHARC_Q_SUM_CHUNK];

    sharc_status_t status = sharc_q_check(w, dst_dtype, nseg);

    if (status != SHARC_OK) {
        return status;
    }
    nb = sharc_q_blocks(count, w.block);
    for (size_t c0 = 0; c0 < count; c0 += SHARC_Q_SUM_CHUNK) {
        size_t c1 = SHARC_MIN(count, c0 + SHARC_Q_SUM_CHUNK);

        if (base != NULL) {
            memcpy(acc, base + c0, (c1 - c0) * sizeof(float));
        } else {
            memset(acc, 0, (c1 - c0) * sizeof(float));
        }
        for (int s = 0; s < nseg; s++) {
            if (s != skip) {
                sharc_q_sum_piece(acc, (const uint8_t *)seg + (size_t)s * bytes, w, nb, c0, c1);
            }
        }
        sharc_q_fns[dst_dtype].out((char *)dst + c0 * esize, acc, c1 - c0, (float)factor);
    }
    return SHARC_OK;
}
