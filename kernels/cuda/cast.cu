/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/cast.cu: conversions between f32, f16 and bf16 on device memory: one grid-stride
 * kernel per type pair, four elements per aligned load and store where both buffers allow,
 * launched on the caller's stream (no synchronization). Rounding is CUDA's
 * round-to-nearest-even (__float2half_rn, __float2bfloat16_rn), the same rule as
 * kernels/cpu/cast.c, against which tests/kernels/test_kern_cuda checks every result.
 */
#include "config.h"

#include "elem.cuh"

extern "C" {
#include "cuda.h"
}

using namespace sharc_cuda;

namespace
{

/* dst = src for count elements; vec: both aligned to four elements. */
template <typename D, typename S>
__global__ void sharc_cast_kernel(D *dst, const S *src, size_t count, bool vec)
{
    size_t stride = (size_t)gridDim.x * blockDim.x,
           tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t head = vec ? count / 4 * 4 : 0;

    for (size_t i4 = tid; i4 < head / 4; i4 += stride) {
        float v[4];
        load4(src, i4, v);
        store4(dst, i4, v);
    }
    for (size_t i = head + tid; i < count; i += stride) {
        store(dst, i, load(src, i));
    }
}

template <typename D, typename S>
cudaError_t sharc_cast_launch(void *dst, const void *src, size_t count, cudaStream_t stream)
{
    bool vec = aligned4(dst, sizeof(D), src, sizeof(S));

    sharc_cast_kernel<D, S><<<blocks_for(vec ? count / 4 + 1 : count), kThreads, 0, stream>>>(
        static_cast<D *>(dst), static_cast<const S *>(src), count, vec);
    return cudaGetLastError();
}

template <typename D>
cudaError_t sharc_cast_from(void *dst, const void *src, sharc_dtype_t src_dtype, size_t count,
                            cudaStream_t stream)
{
    switch (src_dtype) {
    case SHARC_DTYPE_F32: return sharc_cast_launch<D, float>(dst, src, count, stream);
    case SHARC_DTYPE_F16: return sharc_cast_launch<D, __half>(dst, src, count, stream);
    default: return sharc_cast_launch<D, __nv_bfloat16>(dst, src, count, stream);
    }
}

} // namespace

/* One cast on @p stream. */
static cudaError_t sharc_cuda_cast_async(void *dst, sharc_dtype_t dst_dtype, const void *src,
                                         sharc_dtype_t src_dtype, size_t count, cudaStream_t s)
{
    if (dst_dtype == src_dtype) {
        return cudaMemcpyAsync(dst, src, count * sharc_dtype_size(dst_dtype),
                               cudaMemcpyDeviceToDevice, s);
    }
    if (dst_dtype == SHARC_DTYPE_F32) {
        return sharc_cast_from<float>(dst, src, src_dtype, count, s);
    }
    if (dst_dtype == SHARC_DTYPE_F16) {
        return sharc_cast_from<__half>(dst, src, src_dtype, count, s);
    }
    return sharc_cast_from<__nv_bfloat16>(dst, src, src_dtype, count, s);
}

sharc_status_t sharc_kern_cuda_cast(void *dst, sharc_dtype_t dst_dtype, const void *src,
                                    sharc_dtype_t src_dtype, size_t count, void *stream)
{
    if (!is_float16ish(dst_dtype) || !is_float16ish(src_dtype)) {
        return SHARC_ERR_UNSUPPORTED;
    }
    if (count == 0) {
        return SHARC_OK;
    }
    return check(sharc_cuda_cast_async(dst, dst_dtype, src, src_dtype, count,
                                       static_cast<cudaStream_t>(stream)),
                 "cast");
}
