/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/elem.cuh: element access shared by the CUDA kernels: loads that widen f16 and bf16
 * to f32, stores that round to nearest even (the CPU reference's rule), the launch shape of
 * the grid-stride loops, and error translation. Device code and C++ only.
 */
#ifndef SHARC_KERN_CUDA_ELEM_CUH
#define SHARC_KERN_CUDA_ELEM_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "../kernels.h"
}

namespace sharc_cuda
{

__device__ __forceinline__ float load(const float *p, size_t i)
{
    return p[i];
}
__device__ __forceinline__ float load(const __half *p, size_t i)
{
    return __half2float(p[i]);
}
__device__ __forceinline__ float load(const __nv_bfloat16 *p, size_t i)
{
    return __bfloat162float(p[i]);
}
__device__ __forceinline__ void store(float *p, size_t i, float v)
{
    p[i] = v;
}
__device__ __forceinline__ void store(__half *p, size_t i, float v)
{
    p[i] = __float2half_rn(v);
}
__device__ __forceinline__ void store(__nv_bfloat16 *p, size_t i, float v)
{
    p[i] = __float2bfloat16_rn(v);
}

/* Four consecutive elements as one aligned load or store: 16 bytes of f32, 8 of f16/bf16. */
template <typename T> struct vec4_of;
template <> struct vec4_of<float> {
    typedef float4 type;
};
template <> struct vec4_of<__half> {
    typedef uint2 type;
};
template <> struct vec4_of<__nv_bfloat16> {
    typedef uint2 type;
};

template <typename T> __device__ __forceinline__ void load4(const T *p, size_t i4, float v[4])
{
    typename vec4_of<T>::type raw = reinterpret_cast<const typename vec4_of<T>::type *>(p)[i4];
    const T *e = reinterpret_cast<const T *>(&raw);

    for (int k = 0; k < 4; k++) {
        v[k] = load(e, k);
    }
}

template <typename T> __device__ __forceinline__ void store4(T *p, size_t i4, const float v[4])
{
    typename vec4_of<T>::type raw;
    T *e = reinterpret_cast<T *>(&raw);

    for (int k = 0; k < 4; k++) {
        store(e, k, v[k]);
    }
    reinterpret_cast<typename vec4_of<T>::type *>(p)[i4] = raw;
}

/* Can both be read four at a time (aligned to four elements)? */
inline bool aligned4(const void *a, size_t asize, const void *b, size_t bsize)
{
    return ((uintptr_t)a % (4 * asize)) == 0 && ((uintptr_t)b % (4 * bsize)) == 0;
}

/* Threads per block, and blocks for @p count elements: enough to fill a large GPU several
 * times over; the grid-stride loops cover the rest. */
constexpr unsigned kThreads = 256;

inline unsigned blocks_for(size_t count)
{
    size_t blocks = (count + kThreads - 1) / kThreads;

    return (unsigned)(blocks > 65536 ? 65536 : (blocks == 0 ? 1 : blocks));
}

inline bool is_float16ish(sharc_dtype_t dt)
{
    return dt == SHARC_DTYPE_F32 || dt == SHARC_DTYPE_F16 || dt == SHARC_DTYPE_BF16;
}

/* The launch that just happened (or the call that returned @p err): SHARC_OK, or logged as
 * @p what and SHARC_ERR_BACKEND. */
sharc_status_t check(cudaError_t err, const char *what);

} // namespace sharc_cuda

#endif
