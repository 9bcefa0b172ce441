/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernels.h: sharc's compute kernels behind one ops table per memory type (kernels/cpu
 * always, kernels/cuda when built with CUDA), and the scalar conversions between f32 and the
 * 16-bit float types that every kernel and test shares. Internal; no layer below this one.
 */
#ifndef SHARC_KERNELS_H
#define SHARC_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sharc/types.h>

#include "../base/def_int.h"

/* One tensor of a bucket: @p count elements at @p ptr, at element @p offset of the bucket. */
typedef struct {
    void *ptr;
    size_t offset, count;
} sharc_kern_piece_t;

/* The scalar conversions below serve the host kernels and, compiled by nvcc, the CUDA ones. */
#ifdef __CUDACC__
#define SHARC_KERN_HD __host__ __device__
#else
#define SHARC_KERN_HD
#endif

/* Pieces a CUDA pack or unpack takes in one launch (more take several). */
#define SHARC_KERN_MAX_PIECES 64

/*
 * One AdamW update of a range of f32 elements, as torch.optim.AdamW computes it (decoupled
 * weight decay, bias-corrected moments), element by element:
 *     p *= keep;  g' = g * clip;  m = beta1 m + (1 - beta1) g';  v = beta2 v + (1 - beta2) g'^2;
 *     p -= step_size * m / (sqrt(v) / bc2_sqrt + eps)
 */
typedef struct {
    float beta1, beta2, eps;
    float keep;      /* 1 - lr * weight_decay where the range decays, else 1 */
    float step_size; /* lr / (1 - beta1^t) */
    float bc2_sqrt;  /* sqrt(1 - beta2^t) */
    float clip;      /* the gradient's factor from global-norm clipping; 1 without */
} sharc_kern_adamw_t;

/* f64 partial sums a CUDA sum of squares keeps after its result (acc[1 ..]). */
#define SHARC_KERN_SUMSQ_SCRATCH 256
/* A quantized wire format (sharc/types.h's sharc_wire_t) and its values per scale. */
typedef struct {
    sharc_wire_t format; /* SHARC_WIRE_INT8 or SHARC_WIRE_FP8 */
    size_t block;        /* 1 .. SHARC_WIRE_BLOCK_MAX */
} sharc_kern_wire_t;

typedef struct {
    const char *name; /* "cpu", "cuda" */
    /**
     * dst[i] = src[i] converted from src_dtype to dst_dtype, for f32, f16 and bf16 (any
     * pair; equal types copy). dst and src must not overlap unless the types are equal.
     * Rounding is to nearest, ties to even; NaN stays NaN and
     * infinities stay infinite; values beyond the target's range become infinities.
     * @p stream: a cudaStream_t for the CUDA table (the call returns once it is queued),
     * ignored by the CPU table. SHARC_ERR_UNSUPPORTED for other dtypes.
     */
    sharc_status_t (*cast)(void *dst, sharc_dtype_t dst_dtype, const void *src,
                           sharc_dtype_t src_dtype, size_t count, void *stream);
    /**
     * dst[i] = a[i] op b[i] for every dtype and op (dst may equal a or b). Integers wrap
     * around on overflow; min and max propagate NaN, and on ties (+0 and -0) keep a's value;
     * f16 and bf16 are computed in f32 and rounded once. AVG accumulates like SUM: finish it
     * with scale(1 / nranks). SHARC_ERR_INVALID for AVG on integers or an unknown dtype or
     * op.
     */
    sharc_status_t (*reduce)(void *dst, const void *a, const void *b, size_t count,
                             sharc_dtype_t dtype, sharc_op_t op, void *stream);
    /** buf[i] *= factor, for the floating-point dtypes (f16 and bf16 through f32). */
    sharc_status_t (*scale)(void *buf, size_t count, sharc_dtype_t dtype, double factor,
                            void *stream);
    /**
     * Copy @p n tensors into one bucket (FSDP's copy-in):
     * bucket[piece.offset + j] = piece.ptr[j], converted from piece_dtype to bucket_dtype as
     * cast converts (f32, f16, bf16; equal types of any dtype are copied). Pieces must not
     * overlap in the bucket. CUDA: one launch per SHARC_KERN_MAX_PIECES pieces.
     * SHARC_ERR_UNSUPPORTED for other dtype pairs, SHARC_ERR_INVALID for n < 0.
     */
    sharc_status_t (*pack)(void *bucket, sharc_dtype_t bucket_dtype,
                           const sharc_kern_piece_t *pieces, int n, sharc_dtype_t piece_dtype,
                           void *stream);
    /** The reverse (copy-out): piece.ptr[j] = bucket[piece.offset + j], converted. */
    sharc_status_t (*unpack)(const void *bucket, sharc_dtype_t bucket_dtype,
                             const sharc_kern_piece_t *pieces, int n, sharc_dtype_t piece_dtype,
                             void *stream);
    /**
     * AdamW (sharc_kern_adamw_t's arithmetic) on @p count elements of parameters @p p, their
     * moments @p m and @p v and gradient @p g, all f32, none overlapping. Every path (the
     * CPU's vector widths, the GPU) rounds each operation as the scalar formula does, with
     * no fused multiply-add, so a range updates to the same bits wherever it runs.
     */
    sharc_status_t (*adamw)(const sharc_kern_adamw_t *a, float *p, const float *g, float *m,
                            float *v, size_t count, void *stream);
    /**
     * acc[0] += the sum of x[i]^2 over @p count f32 elements, in f64, in an order fixed by
     * @p count alone (the same input gives the same bits). CUDA: @p acc is device memory with
     * SHARC_KERN_SUMSQ_SCRATCH doubles of scratch after acc[0].
     */
    sharc_status_t (*sumsq)(double *acc, const float *x, size_t count, void *stream);
    /**
     * Quantize @p nseg segments of @p count values each (src: nseg * count values of
     * src_dtype: f32, f16 or bf16) into wire format @p w, one pass over src: segment s goes to
     * seg + s * sharc_wire_size(w.format, count, w.block, src_dtype) bytes as that function
     * lays it out (the scales, f32, one per block, the last block of a segment possibly
     * short; then one code per value; then zeros). Codes, scales and non-finite values as
     * sharc_wire_t states (sharc/types.h); the host and CUDA kernels give the same bits.
     * SHARC_ERR_UNSUPPORTED for another dtype or format, SHARC_ERR_INVALID for a block out
     * of range or nseg < 0.
     */
    sharc_status_t (*quantize)(void *seg, sharc_kern_wire_t w, const void *src,
                               sharc_dtype_t src_dtype, size_t count, int nseg, void *stream);
    /** The reverse: dst (nseg * count values of dst_dtype) = code * scale, rounded once. */
    sharc_status_t (*dequantize)(void *dst, sharc_dtype_t dst_dtype, const void *seg,
                                 sharc_kern_wire_t w, size_t count, int nseg, void *stream);
    /**
     * Dequantize and reduce, one pass: dst[i] = factor * (base[i] + the sum over segments
     * s != skip of segment s's value i), for i < count; in f32, segments in order, rounded
     * once into dst_dtype (f32, f16, bf16). @p base: count f32, or NULL for zeros; it may be
     * dst when dst is f32. @p skip: a segment left out, or -1.
     */
    sharc_status_t (*dequantize_sum)(void *dst, sharc_dtype_t dst_dtype, const float *base,
                                     const void *seg, sharc_kern_wire_t w, size_t count, int nseg,
                                     int skip, double factor, void *stream);
} sharc_kern_ops_t;

/* Copies of at least this many bytes stream past the cache (kernels/cpu/copy.c). */
#define SHARC_KERN_STREAM_MIN (256u << 10)

/**
 * Copy @p bytes of host memory (no overlap), for message data: large copies use streaming
 * stores and bypass the cache, small ones are memcpy.
 */
SHARC_HIDDEN void sharc_kern_copy(void *dst, const void *src, size_t bytes);

/* Blocks whose largest magnitude is below this travel as zeros (sharc_wire_t). */
#define SHARC_KERN_QUANT_TINY 0x1p-100f

/* The largest code of each quantized format: int8's 127, e4m3's 448. */
#define SHARC_KERN_INT8_MAX 127.0f
#define SHARC_KERN_E4M3_MAX 448.0f

/* Whether @p w is a quantized format with a block in range, and @p dtype one it quantizes. */
static inline int sharc_kern_wire_valid(sharc_kern_wire_t w, sharc_dtype_t dtype)
{
    return (w.format == SHARC_WIRE_INT8 || w.format == SHARC_WIRE_FP8) && w.block >= 1 &&
           w.block <= SHARC_WIRE_BLOCK_MAX &&
           (dtype == SHARC_DTYPE_F32 || dtype == SHARC_DTYPE_F16 || dtype == SHARC_DTYPE_BF16);
}

/**
 * The host's dequantize of part of one segment (kernels/cpu/quant.c): values [@p first,
 * @p last) of a segment of @p count values into dst[0 .. last - first) (f32, f16, bf16), as
 * sharc_kern_ops_t.dequantize computes them: for a collective that dequantizes what has
 * arrived while the rest is on its way. Arguments as dequantize checks them.
 */
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_dequantize_range(void *dst, sharc_dtype_t dst_dtype,
                                                            const void *seg, sharc_kern_wire_t w,
                                                            size_t count, size_t first,
                                                            size_t last);

/** Whether @p op is defined for @p dtype (AVG is for floating-point types only). */
static inline int sharc_kern_op_valid(sharc_dtype_t dtype, sharc_op_t op)
{
    int is_float = dtype == SHARC_DTYPE_F32 || dtype == SHARC_DTYPE_F64 ||
                   dtype == SHARC_DTYPE_F16 || dtype == SHARC_DTYPE_BF16;

    return (unsigned)dtype < SHARC_DTYPE_LAST && (unsigned)op < SHARC_OP_LAST &&
           (op != SHARC_OP_AVG || is_float);
}

extern SHARC_HIDDEN const sharc_kern_ops_t sharc_kern_cpu_ops;
/* Defined in builds with CUDA only (kernels/cuda/cuda.cu); others ask sharc_kern_cuda(). */
extern SHARC_HIDDEN const sharc_kern_ops_t sharc_kern_cuda_ops;

/** The CUDA kernels, or NULL in a build without CUDA (kernels/cuda_none.c). */
SHARC_HIDDEN const sharc_kern_ops_t *sharc_kern_cuda(void);

static inline SHARC_KERN_HD uint32_t sharc_kern_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline SHARC_KERN_HD float sharc_kern_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* f32 -> bf16, round to nearest even; NaNs are quieted and keep their sign. */
static inline uint16_t sharc_kern_f32_to_bf16(float f)
{
    uint32_t u = sharc_kern_f32_bits(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x0040u;

    /* a select, not a branch, so that loops over it vectorize */
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

static inline float sharc_kern_bf16_to_f32(uint16_t h)
{
    return sharc_kern_bits_f32((uint32_t)h << 16);
}

/* f32 -> IEEE binary16, round to nearest even, subnormals included; NaNs are quieted. */
static inline uint16_t sharc_kern_f32_to_f16(float f)
{
    uint32_t u = sharc_kern_f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    uint32_t q, rem, half, shift, m;

    if (a >= 0x7f800000u) { /* Inf, NaN */
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0));
    }
    if (a >= 0x477ff000u) { /* >= 65520 rounds past 65504 */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (a >= 0x38800000u) { /* normal in f16: rebias the exponent by 127 - 15 */
        a -= 112u << 23;
        q = a >> 13;
        rem = a & 0x1fffu;
        q += rem > 0x1000u || (rem == 0x1000u && (q & 1u));
        return (uint16_t)(sign | q);
    }
    if (a < 0x33000000u) { /* below 2^-25: rounds to zero */
        return (uint16_t)sign;
    }
    /* subnormal in f16: value / 2^-24, with the implicit bit, rounded */
    m = (a & 0x7fffffu) | 0x800000u;
    shift = 126u - (a >> 23);
    q = m >> shift;
    rem = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
    q += rem > half || (rem == half && (q & 1u));
    return (uint16_t)(sign | q);
}

static inline float sharc_kern_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

    if (e == 0x1fu) {
        return sharc_kern_bits_f32(sign | 0x7f800000u | (m << 13));
    }
    if (e == 0) {
        if (m == 0) {
            return sharc_kern_bits_f32(sign);
        }
        e = 113; /* normalize the subnormal */
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        return sharc_kern_bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
    }
    return sharc_kern_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/*
 * f32 -> float8 e4m3 for a finite |v| up to 448 (what a block's scale leaves): round to
 * nearest even, saturating at 448 (e4m3 has no infinity; 0x7f is its NaN). Branch-free so
 * that loops over it vectorize; the CUDA kernels call it too (its product by 512 is exact, so
 * a contraction of it and the rounding add into an FMA changes nothing).
 */
static inline SHARC_KERN_HD uint8_t sharc_kern_f32_to_e4m3(float v)
{
    uint32_t u = sharc_kern_f32_bits(v), sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    /* normal (a >= 2^-6): round the mantissa to 3 bits, rebias the exponent 127 -> 7 */
    uint32_t r = (a + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
    uint32_t nrm = r - (120u << 3);
    /* subnormal: a multiple of 2^-9, rounded to nearest even (0x1.8p23: the rounding add) */
    float s = (sharc_kern_bits_f32(a) * 512.0f + 0x1.8p23f) - 0x1.8p23f;
    uint32_t sub = (uint32_t)s;

    nrm = nrm > 0x7eu ? 0x7eu : nrm;
    return (uint8_t)(sign | (a < 0x3c800000u ? sub : nrm));
}

/* float8 e4m3 -> f32 (0x7f and 0xff are NaN). */
static inline SHARC_KERN_HD float sharc_kern_e4m3_to_f32(uint8_t c)
{
    uint32_t sign = (uint32_t)(c & 0x80u) << 24, e = (c >> 3) & 15u, m = c & 7u;
    float nrm = sharc_kern_bits_f32(sign | ((e + 120u) << 23) | (m << 20));
    float sub = sharc_kern_bits_f32(sign | sharc_kern_f32_bits((float)m * 0x1p-9f));

    return (c & 0x7fu) == 0x7fu ? sharc_kern_bits_f32(0x7fc00000u) : (e != 0 ? nrm : sub);
}

#endif
