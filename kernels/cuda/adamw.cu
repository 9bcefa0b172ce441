/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/adamw.cu: the optimizer's kernels on device memory, for units a sharding engine keeps
 * on the GPU: AdamW element by element with every operation rounded as the host kernel's
 * (explicit _rn intrinsics: nvcc would fuse multiply-adds), and the f64 sum of squares in a
 * fixed order (per-block partials, then one thread adds them). Both on the caller's stream.
 * Floor: 28 bytes an element for AdamW, 4 for the sum: the device's memory bandwidth.
 */
#include "config.h"

#include "elem.cuh"

extern "C" {
#include "cuda.h"
}

using namespace sharc_cuda;

namespace
{

__global__ void sharc_adamw_kernel(sharc_kern_adamw_t a, float *p, const float *g, float *m,
                                   float *v, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    float one_b1 = __fsub_rn(1.0f, a.beta1), one_b2 = __fsub_rn(1.0f, a.beta2);

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float gi = __fmul_rn(g[i], a.clip);
        float mi = __fadd_rn(__fmul_rn(a.beta1, m[i]), __fmul_rn(one_b1, gi));
        float vi = __fadd_rn(__fmul_rn(a.beta2, v[i]), __fmul_rn(__fmul_rn(one_b2, gi), gi));
        float pi = __fmul_rn(p[i], a.keep);
        float den = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), a.bc2_sqrt), a.eps);

        pi = __fsub_rn(pi, __fdiv_rn(__fmul_rn(a.step_size, mi), den));
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
    }
}

/* partial[blockIdx.x] = the block's elements' squares, summed in a fixed tree order */
__global__ void sharc_sumsq_kernel(double *partial, const float *x, size_t n)
{
    __shared__ double s[kThreads];
    size_t stride = (size_t)gridDim.x * blockDim.x;
    double t = 0.0;

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        t += (double)x[i] * (double)x[i];
    }
    s[threadIdx.x] = t;
    __syncthreads();
    for (unsigned w = kThreads / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            s[threadIdx.x] += s[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s[0];
    }
}

__global__ void sharc_sumsq_total_kernel(double *acc, unsigned nblocks)
{
    double t = 0.0;

    for (unsigned b = 0; b < nblocks; b++) {
        t += acc[1 + b];
    }
    acc[0] += t;
}

} // namespace

sharc_status_t sharc_kern_cuda_adamw(const sharc_kern_adamw_t *a, float *p, const float *g,
                                     float *m, float *v, size_t count, void *stream)
{
    if (count == 0) {
        return SHARC_OK;
    }
    sharc_adamw_kernel<<<blocks_for(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        *a, p, g, m, v, count);
    return check(cudaGetLastError(), "adamw");
}

sharc_status_t sharc_kern_cuda_sumsq(double *acc, const float *x, size_t count, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    unsigned blocks = blocks_for(count);

    if (count == 0) {
        return SHARC_OK;
    }
    blocks = blocks > SHARC_KERN_SUMSQ_SCRATCH ? SHARC_KERN_SUMSQ_SCRATCH : blocks;
    sharc_sumsq_kernel<<<blocks, kThreads, 0, s>>>(acc + 1, x, count);
    sharc_sumsq_total_kernel<<<1, 1, 0, s>>>(acc, blocks);
    return check(cudaGetLastError(), "sum of squares");
}
