/*
 * cuda/cast.cu: conversions between f32, f16 and bf16 on device memory, one grid-stride
 * kernel per type pair, launched on the caller's stream (no synchronization). Rounding is
 * CUDA's round-to-nearest-even (__float2half_rn, __float2bfloat16_rn), the same rule as
 * kernels/cpu/cast.c, against which tests/test_kern_cuda checks every result.
 */
#include "config.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "../kernels.h"
}

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_KERN
extern "C" {
#include "../../src/log.h"
}

namespace {

__device__ __forceinline__ float sharc_load(const float *p, size_t i)
{
    return p[i];
}
__device__ __forceinline__ float sharc_load(const __half *p, size_t i)
{
    return __half2float(p[i]);
}
__device__ __forceinline__ float sharc_load(const __nv_bfloat16 *p, size_t i)
{
    return __bfloat162float(p[i]);
}
__device__ __forceinline__ void sharc_store(float *p, size_t i, float v)
{
    p[i] = v;
}
__device__ __forceinline__ void sharc_store(__half *p, size_t i, float v)
{
    p[i] = __float2half_rn(v);
}
__device__ __forceinline__ void sharc_store(__nv_bfloat16 *p, size_t i, float v)
{
    p[i] = __float2bfloat16_rn(v);
}

template <typename D, typename S>
__global__ void sharc_cast_kernel(D *dst, const S *src, size_t count)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        sharc_store(dst, i, sharc_load(src, i));
    }
}

template <typename D, typename S>
cudaError_t sharc_cast_launch(void *dst, const void *src, size_t count, cudaStream_t stream)
{
    const unsigned threads = 256;
    /* enough blocks to fill a large GPU several times over; the loop covers the rest */
    size_t blocks = (count + threads - 1) / threads;

    if (blocks > 65536) {
        blocks = 65536;
    }
    sharc_cast_kernel<D, S><<<(unsigned)blocks, threads, 0, stream>>>(
        static_cast<D *>(dst), static_cast<const S *>(src), count);
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

bool sharc_cast_dtype_ok(sharc_dtype_t dt)
{
    return dt == SHARC_DTYPE_F32 || dt == SHARC_DTYPE_F16 || dt == SHARC_DTYPE_BF16;
}

sharc_status_t sharc_kern_cuda_cast(void *dst, sharc_dtype_t dst_dtype, const void *src,
                                    sharc_dtype_t src_dtype, size_t count, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    cudaError_t err;

    if (!sharc_cast_dtype_ok(dst_dtype) || !sharc_cast_dtype_ok(src_dtype)) {
        return SHARC_ERR_UNSUPPORTED;
    }
    if (count == 0) {
        return SHARC_OK;
    }
    if (dst_dtype == src_dtype) {
        err = cudaMemcpyAsync(dst, src, count * sharc_dtype_size(dst_dtype),
                              cudaMemcpyDeviceToDevice, s);
    } else if (dst_dtype == SHARC_DTYPE_F32) {
        err = sharc_cast_from<float>(dst, src, src_dtype, count, s);
    } else if (dst_dtype == SHARC_DTYPE_F16) {
        err = sharc_cast_from<__half>(dst, src, src_dtype, count, s);
    } else {
        err = sharc_cast_from<__nv_bfloat16>(dst, src, src_dtype, count, s);
    }
    if (err != cudaSuccess) {
        sharc_error("cuda: cast %s -> %s of %zu elements failed: %s", sharc_dtype_name(src_dtype),
                    sharc_dtype_name(dst_dtype), count, cudaGetErrorString(err));
        return SHARC_ERR_BACKEND;
    }
    return SHARC_OK;
}

} // namespace

/* reduce and scale on device memory are not written yet: NULL, so callers can tell. */
extern "C" const sharc_kern_ops_t sharc_kern_cuda_ops = {
    "cuda",
    sharc_kern_cuda_cast,
    NULL,
    NULL,
};
