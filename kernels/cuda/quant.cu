/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/quant.cu: block quantization on device memory (sharc_wire_t): one warp per block of
 * values finds its absmax (an integer maximum of the magnitudes' bits, NaN and infinities
 * above every finite value) and writes its scale and codes in the same pass; dequantizing
 * and the dequantizing sum are one thread per value. Every product and sum is rounded
 * explicitly (__fmul_rn, __fadd_rn: never contracted into an FMA), so the codes and values
 * are bit for bit those of kernels/cpu/quant.c, which tests/kernels/test_kern_quant_cuda
 * checks. Launched on the caller's stream, no synchronization.
 */
#include "config.h"

#include "elem.cuh"

extern "C" {
#include "cuda.h"
}

using namespace sharc_cuda;

namespace
{

constexpr unsigned kWarp = 32;

__device__ __forceinline__ float code_value(const uint8_t *codes, size_t i, bool fp8)
{
    return fp8 ? sharc_kern_e4m3_to_f32(codes[i]) : (float)(int8_t)codes[i];
}

/* Where segment s's scales and codes are. */
struct layout {
    size_t count, block, nb, bytes; /* values, values per scale, scales, bytes per segment */

    __device__ const float *scales(const uint8_t *seg, size_t s) const
    {
        return reinterpret_cast<const float *>(seg + s * bytes);
    }
    __device__ const uint8_t *codes(const uint8_t *seg, size_t s) const
    {
        return seg + s * bytes + nb * sizeof(float);
    }
};

/* One warp per block of values, over every block of every segment. */
template <typename T>
__global__ void quantize_kernel(uint8_t *seg, const T *src, layout l, size_t nseg, bool fp8)
{
    size_t warps = (size_t)gridDim.x * blockDim.x / kWarp;
    size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
    unsigned lane = threadIdx.x % kWarp;
    float qmax = fp8 ? SHARC_KERN_E4M3_MAX : SHARC_KERN_INT8_MAX;

    for (size_t g = warp; g < nseg * l.nb; g += warps) {
        size_t s = g / l.nb, b = g % l.nb, off = b * l.block;
        size_t n = l.count - off < l.block ? l.count - off : l.block;
        const T *x = src + s * l.count + off;
        float *scales = reinterpret_cast<float *>(seg + s * l.bytes);
        uint8_t *codes = seg + s * l.bytes + l.nb * sizeof(float) + off;
        uint32_t m = 0;

        for (size_t i = lane; i < n; i += kWarp) {
            m = max(m, __float_as_uint(load(x, i)) & 0x7fffffffu);
        }
        for (unsigned o = kWarp / 2; o > 0; o /= 2) {
            m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
        }
        float amax = __uint_as_float(m), inv = 0.0f;
        bool zero = m >= 0x7f800000u || amax < SHARC_KERN_QUANT_TINY;

        if (!zero) {
            inv = __fdiv_rn(qmax, amax);
        }
        if (lane == 0) {
            scales[b] = m >= 0x7f800000u ? __uint_as_float(0x7fc00000u)
                                         : (zero ? 0.0f : __fdiv_rn(amax, qmax));
        }
        for (size_t i = lane; i < n; i += kWarp) {
            float v = __fmul_rn(load(x, i), inv);

            if (zero) {
                codes[i] = 0;
            } else if (fp8) {
                codes[i] = sharc_kern_f32_to_e4m3(v);
            } else {
                codes[i] = (uint8_t)(int8_t)max(-127, min(127, __float2int_rn(v)));
            }
        }
        if (b == l.nb - 1) { /* the segment's padding */
            for (size_t i = l.nb * sizeof(float) + l.count + lane; i < l.bytes; i += kWarp) {
                seg[s * l.bytes + i] = 0;
            }
        }
    }
}

template <typename T>
__global__ void dequantize_kernel(T *dst, const uint8_t *seg, layout l, size_t nseg, bool fp8)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nseg * l.count;
         i += stride) {
        size_t s = i / l.count, j = i % l.count;

        store(dst, i,
              __fmul_rn(code_value(l.codes(seg, s), j, fp8), l.scales(seg, s)[j / l.block]));
    }
}

template <typename T>
__global__ void dequantize_sum_kernel(T *dst, const float *base, const uint8_t *seg, layout l,
                                      size_t nseg, long skip, float factor, bool fp8)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < l.count; j += stride) {
        float acc = base != nullptr ? base[j] : 0.0f;

        for (size_t s = 0; s < nseg; s++) {
            if ((long)s != skip) {
                float v =
                    __fmul_rn(code_value(l.codes(seg, s), j, fp8), l.scales(seg, s)[j / l.block]);
                acc = __fadd_rn(acc, v);
            }
        }
        store(dst, j, __fmul_rn(acc, factor));
    }
}

layout layout_of(sharc_kern_wire_t w, size_t count, sharc_dtype_t dtype)
{
    return layout{count, w.block, count / w.block + (count % w.block != 0),
                  sharc_wire_size(w.format, count, w.block, dtype)};
}

sharc_status_t check_args(sharc_kern_wire_t w, sharc_dtype_t dtype, int nseg)
{
    if (w.block == 0 || w.block > SHARC_WIRE_BLOCK_MAX || nseg < 0) {
        return SHARC_ERR_INVALID;
    }
    return sharc_kern_wire_valid(w, dtype) ? SHARC_OK : SHARC_ERR_UNSUPPORTED;
}

/* Blocks of kThreads threads for @p warps warps' work. */
unsigned warp_blocks(size_t warps)
{
    return blocks_for(warps * kWarp);
}

template <typename T>
cudaError_t quantize_launch(void *seg, sharc_kern_wire_t w, const void *src, size_t count, int nseg,
                            cudaStream_t s)
{
    layout l = layout_of(w, count, SHARC_DTYPE_F32);

    quantize_kernel<T><<<warp_blocks(l.nb * nseg), kThreads, 0, s>>>(
        static_cast<uint8_t *>(seg), static_cast<const T *>(src), l, (size_t)nseg,
        w.format == SHARC_WIRE_FP8);
    return cudaGetLastError();
}

template <typename T>
cudaError_t dequantize_launch(void *dst, const void *seg, sharc_kern_wire_t w, size_t count,
                              int nseg, cudaStream_t s)
{
    layout l = layout_of(w, count, SHARC_DTYPE_F32);

    dequantize_kernel<T><<<blocks_for(count * nseg), kThreads, 0, s>>>(
        static_cast<T *>(dst), static_cast<const uint8_t *>(seg), l, (size_t)nseg,
        w.format == SHARC_WIRE_FP8);
    return cudaGetLastError();
}

template <typename T>
cudaError_t dequantize_sum_launch(void *dst, const float *base, const void *seg,
                                  sharc_kern_wire_t w, size_t count, int nseg, int skip,
                                  double factor, cudaStream_t s)
{
    layout l = layout_of(w, count, SHARC_DTYPE_F32);

    dequantize_sum_kernel<T><<<blocks_for(count), kThreads, 0, s>>>(
        static_cast<T *>(dst), base, static_cast<const uint8_t *>(seg), l, (size_t)nseg, (long)skip,
        (float)factor, w.format == SHARC_WIRE_FP8);
    return cudaGetLastError();
}

} // namespace

sharc_status_t sharc_kern_cuda_quantize(void *seg, sharc_kern_wire_t w, const void *src,
                                        sharc_dtype_t src_dtype, size_t count, int nseg,
                                        void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    sharc_status_t status = check_args(w, src_dtype, nseg);

    if (status != SHARC_OK || count == 0 || nseg == 0) {
        return status;
    }
    switch (src_dtype) {
    case SHARC_DTYPE_F32:
        return check(quantize_launch<float>(seg, w, src, count, nseg, s), "quantize");
    case SHARC_DTYPE_F16:
        return check(quantize_launch<__half>(seg, w, src, count, nseg, s), "quantize");
    default: return check(quantize_launch<__nv_bfloat16>(seg, w, src, count, nseg, s), "quantize");
    }
}

sharc_status_t sharc_kern_cuda_dequantize(void *dst, sharc_dtype_t dst_dtype, const void *seg,
                                          sharc_kern_wire_t w, size_t count, int nseg, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    sharc_status_t status = check_args(w, dst_dtype, nseg);

    if (status != SHARC_OK || count == 0 || nseg == 0) {
        return status;
    }
    switch (dst_dtype) {
    case SHARC_DTYPE_F32:
        return check(dequantize_launch<float>(dst, seg, w, count, nseg, s), "dequantize");
    case SHARC_DTYPE_F16:
        return check(dequantize_launch<__half>(dst, seg, w, count, nseg, s), "dequantize");
    default:
        return check(dequantize_launch<__nv_bfloat16>(dst, seg, w, count, nseg, s), "dequantize");
    }
}

sharc_status_t sharc_kern_cuda_dequantize_sum(void *dst, sharc_dtype_t dst_dtype, const float *base,
                                              const void *seg, sharc_kern_wire_t w, size_t count,
                                              int nseg, int skip, double factor, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    sharc_status_t status = check_args(w, dst_dtype, nseg);

    if (status != SHARC_OK || count == 0) {
        return status;
    }
    switch (dst_dtype) {
    case SHARC_DTYPE_F32:
        return check(dequantize_sum_launch<float>(dst, base, seg, w, count, nseg, skip, factor, s),
                     "dequantize_sum");
    case SHARC_DTYPE_F16:
        return check(dequantize_sum_launch<__half>(dst, base, seg, w, count, nseg, skip, factor, s),
                     "dequantize_sum");
    default:
        return check(
            dequantize_sum_launch<__nv_bfloat16>(dst, base, seg, w, count, nseg, skip, factor, s),
            "dequantize_sum");
    }
}
