/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/reduce.cu: dst = a op b and in-place scaling on device memory, for every dtype and op
 * the host kernels take, with their rules: integers wrap (computed unsigned), min and max
 * propagate NaN and keep a's value on ties, f16 and bf16 go through f32 and round once. One
 * grid-stride kernel per (type, op), on the caller's stream.
 */
#include "config.h"

#include <stdint.h>

#include "elem.cuh"

extern "C" {
#include "cuda.h"
}

using namespace sharc_cuda;

namespace
{

/* The ops on the compute type C (f32 for the 16-bit floats). */
template <typename C> struct op_sum {
    __device__ C operator()(C a, C b) const
    {
        return a + b;
    }
};
template <typename C> struct op_prod {
    __device__ C operator()(C a, C b) const
    {
        return a * b;
    }
};
template <typename C> struct op_min {
    __device__ C operator()(C a, C b) const
    {
        return (b < a || b != b) ? b : a;
    }
};
template <typename C> struct op_max {
    __device__ C operator()(C a, C b) const
    {
        return (b > a || b != b) ? b : a;
    }
};
/* integers: sums and products wrap around, as on the host */
template <typename T, typename U> struct op_wsum {
    __device__ T operator()(T a, T b) const
    {
        return (T)((U)a + (U)b);
    }
};
template <typename T, typename U> struct op_wprod {
    __device__ T operator()(T a, T b) const
    {
        return (T)((U)a * (U)b);
    }
};
template <typename T> struct op_imin {
    __device__ T operator()(T a, T b) const
    {
        return b < a ? b : a;
    }
};
template <typename T> struct op_imax {
    __device__ T operator()(T a, T b) const
    {
        return b > a ? b : a;
    }
};

/* Types computed as they are stored. */
template <typename T, typename Op>
__global__ void sharc_reduce_kernel(T *d, const T *x, const T *y, size_t n, Op op)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        d[i] = op(x[i], y[i]);
    }
}

/* f16 and bf16: through f32, rounded once. */
template <typename T, typename Op>
__global__ void sharc_reduce16_kernel(T *d, const T *x, const T *y, size_t n, Op op)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        store(d, i, op(load(x, i), load(y, i)));
    }
}

template <typename T, typename Op>
cudaError_t launch(void *d, const void *x, const void *y, size_t n, Op op, cudaStream_t s)
{
    sharc_reduce_kernel<T, Op><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<T *>(d), static_cast<const T *>(x), static_cast<const T *>(y), n, op);
    return cudaGetLastError();
}

template <typename T, typename Op>
cudaError_t launch16(void *d, const void *x, const void *y, size_t n, Op op, cudaStream_t s)
{
    sharc_reduce16_kernel<T, Op><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<T *>(d), static_cast<const T *>(x), static_cast<const T *>(y), n, op);
    return cudaGetLastError();
}

template <typename T>
cudaError_t float_op(void *d, const void *x, const void *y, size_t n, sharc_op_t op, cudaStream_t s)
{
    switch (op) {
    case SHARC_OP_PROD: return launch<T>(d, x, y, n, op_prod<T>(), s);
    case SHARC_OP_MIN: return launch<T>(d, x, y, n, op_min<T>(), s);
    case SHARC_OP_MAX: return launch<T>(d, x, y, n, op_max<T>(), s);
    default: return launch<T>(d, x, y, n, op_sum<T>(), s); /* SUM, AVG */
    }
}

template <typename T>
cudaError_t half_op(void *d, const void *x, const void *y, size_t n, sharc_op_t op, cudaStream_t s)
{
    switch (op) {
    case SHARC_OP_PROD: return launch16<T>(d, x, y, n, op_prod<float>(), s);
    case SHARC_OP_MIN: return launch16<T>(d, x, y, n, op_min<float>(), s);
    case SHARC_OP_MAX: return launch16<T>(d, x, y, n, op_max<float>(), s);
    default: return launch16<T>(d, x, y, n, op_sum<float>(), s);
    }
}

template <typename T, typename U>
cudaError_t int_op(void *d, const void *x, const void *y, size_t n, sharc_op_t op, cudaStream_t s)
{
    switch (op) {
    case SHARC_OP_PROD: return launch<T>(d, x, y, n, op_wprod<T, U>(), s);
    case SHARC_OP_MIN: return launch<T>(d, x, y, n, op_imin<T>(), s);
    case SHARC_OP_MAX: return launch<T>(d, x, y, n, op_imax<T>(), s);
    default: return launch<T>(d, x, y, n, op_wsum<T, U>(), s);
    }
}

template <typename T> __global__ void sharc_scale_kernel(T *d, size_t n, float f)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        store(d, i, load(d, i) * f);
    }
}

__global__ void sharc_scale_f64_kernel(double *d, size_t n, double f)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        d[i] *= f;
    }
}

} // namespace

sharc_status_t sharc_kern_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
                                      sharc_dtype_t dtype, sharc_op_t op, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    cudaError_t err;

    if (!sharc_kern_op_valid(dtype, op)) {
        return SHARC_ERR_INVALID;
    }
    if (count == 0) {
        return SHARC_OK;
    }
    switch (dtype) {
    case SHARC_DTYPE_F32: err = float_op<float>(dst, a, b, count, op, s); break;
    case SHARC_DTYPE_F64: err = float_op<double>(dst, a, b, count, op, s); break;
    case SHARC_DTYPE_F16: err = half_op<__half>(dst, a, b, count, op, s); break;
    case SHARC_DTYPE_BF16: err = half_op<__nv_bfloat16>(dst, a, b, count, op, s); break;
    case SHARC_DTYPE_I32: err = int_op<int32_t, uint32_t>(dst, a, b, count, op, s); break;
    case SHARC_DTYPE_I64: err = int_op<int64_t, uint64_t>(dst, a, b, count, op, s); break;
    default: err = int_op<uint8_t, unsigned>(dst, a, b, count, op, s); break;
    }
    return check(err, "reduce");
}

sharc_status_t sharc_kern_cuda_scale(void *buf, size_t count, sharc_dtype_t dtype, double factor,
                                     void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    unsigned blocks = blocks_for(count);

    if (count == 0) {
        return (dtype == SHARC_DTYPE_F32 || dtype == SHARC_DTYPE_F64 || dtype == SHARC_DTYPE_F16 ||
                dtype == SHARC_DTYPE_BF16)
                   ? SHARC_OK
                   : SHARC_ERR_INVALID;
    }
    switch (dtype) {
    case SHARC_DTYPE_F32:
        sharc_scale_kernel<<<blocks, kThreads, 0, s>>>(static_cast<float *>(buf), count,
                                                       (float)factor);
        break;
    case SHARC_DTYPE_F64:
        sharc_scale_f64_kernel<<<blocks, kThreads, 0, s>>>(static_cast<double *>(buf), count,
                                                           factor);
        break;
    case SHARC_DTYPE_F16:
        sharc_scale_kernel<<<blocks, kThreads, 0, s>>>(static_cast<__half *>(buf), count,
                                                       (float)factor);
        break;
    case SHARC_DTYPE_BF16:
        sharc_scale_kernel<<<blocks, kThreads, 0, s>>>(static_cast<__nv_bfloat16 *>(buf), count,
                                                       (float)factor);
        break;
    default: return SHARC_ERR_INVALID;
    }
    return check(cudaGetLastError(), "scale");
}
