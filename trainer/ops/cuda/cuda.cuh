/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/cuda.cuh: what the CUDA ops files share: host.h (the process's GPU state,
 * the first-error rule, scratch and staging, the attention families), element loads and
 * stores that compute in f32 whatever is stored, reductions, and the other kernels' entry
 * points by family (gemm.cu, elem.cu, flash.cu's kernels, optim.cu, events.cu). Device code
 * and C++.
 */
#ifndef SHARC_LLAMA_OPS_CUDA_CUH
#define SHARC_LLAMA_OPS_CUDA_CUH

#ifndef LLAMA_CUDA_EMU
#include <cuda_bf16.h>
#endif
#include <math.h>
#include <stdint.h>

#include "geom.h"
#include "host.h"

#ifndef LLAMA_CUDA_EMU
/* a kernel launch on the ops' stream: kernel<<<grid, block, shared bytes, stream>>>(...) */
#define LLAMA_LAUNCH(_kernel, _grid, _block, _smem, ...)                                           \
    _kernel<<<(_grid), (_block), (_smem), llama_cuda::g.stream>>>(__VA_ARGS__)
/* the dynamic shared memory of a kernel */
#define LLAMA_CUDA_DYN_SMEM(_name) extern __shared__ __align__(128) unsigned char _name[]
#endif

namespace llama_cuda
{

typedef __nv_bfloat16 bf16;

/* ---- elements: loads widen to f32, stores round to nearest even ------------------------------ */

__device__ __forceinline__ float ld(const float *p, size_t i)
{
    return p[i];
}
__device__ __forceinline__ float ld(const bf16 *p, size_t i)
{
    return __bfloat162float(p[i]);
}
__device__ __forceinline__ void st(float *p, size_t i, float v)
{
    p[i] = v;
}
__device__ __forceinline__ void st(bf16 *p, size_t i, float v)
{
    p[i] = __float2bfloat16_rn(v);
}

template <typename T> struct dtype_of;
template <> struct dtype_of<float> {
    static const cudaDataType_t cuda = CUDA_R_32F;
};
template <> struct dtype_of<bf16> {
    static const cudaDataType_t cuda = CUDA_R_16BF;
};

/* ---- reductions (full warps; blocks a multiple of 32 threads, at most 1024) ----------------- */

template <typename V> __device__ __forceinline__ V warp_sum(V v)
{
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    return v;
}

/*
 * The block's sum (or max) of every thread's @p v, returned to every thread: each warp
 * reduces by shuffles, warp 0 reduces the warps' results from @p shared (32 slots). The
 * order of the additions depends on the block size only: deterministic. Every thread of the
 * block must call it (it synchronizes).
 */
template <typename V> __device__ V block_sum(V v, V *shared)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;

    v = warp_sum(v);
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? shared[lane] : (V)0;
        v = warp_sum(v);
        if (lane == 0) {
            shared[0] = v;
        }
    }
    __syncthreads();
    return shared[0];
}

/* *acc += the sum of v[0..n), in one block in a fixed order (deterministic): launch with one
 * block of up to 1024 threads. */
template <typename V> __global__ void add_sum_kernel(V *acc, const V *v, int n)
{
    __shared__ V shared[32];
    V s = 0;

    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        s += v[i];
    }
    s = block_sum(s, shared);
    if (threadIdx.x == 0) {
        *acc += s;
    }
}

__device__ __forceinline__ float block_max(float v, float *shared)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;

    v = warp_max(v);
    __syncthreads();
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? shared[lane] : -INFINITY;
        v = warp_max(v);
        if (lane == 0) {
            shared[0] = v;
        }
    }
    __syncthreads();
    return shared[0];
}

/* ---- the ops, by family (each instantiated for float and bf16) ------------------------------- */

/* gemm.cu: cuBLASLt, cublasGemmEx where it has no plan */
template <typename T>
void matmul_fwd(float *out, const float *in, const float *w, int N, int Cin, int Cout);
template <typename T>
void matmul_bwd(float *din, float *dw, const float *dout, const float *in, const float *w, int N,
                int Cin, int Cout, int din_add);

/* elem.cu */
void cast(void *dst, sharc_dtype_t dst_dtype, const void *src, sharc_dtype_t src_dtype, size_t n);
void acc(void *dst, sharc_dtype_t dst_dtype, const float *src, size_t n);
template <typename T>
void rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int N, int C, float eps);
template <typename T>
void rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                 const float *rstd, int N, int C);
template <typename T>
void rope_fwd(float *x, const float *cos, const float *sin, int B, int T_, int nh, int hd);
template <typename T>
void rope_bwd(float *dx, const float *cos, const float *sin, int B, int T_, int nh, int hd);
template <typename T> void swiglu_fwd(float *h, const float *gt, const float *u, size_t n);
template <typename T>
void swiglu_bwd(float *dg, float *du, const float *dh, const float *gt, const float *u, size_t n);
template <typename T>
void embed_fwd(float *x, const int32_t *tokens, const float *table, int N, int C);
template <typename T>
void embed_bwd(float *dtable, const float *dx, const int32_t *tokens, int N, int C);
template <typename T>
void xent(float *dlogits, const float *logits, const int32_t *targets, int N, int V, float dscale,
          double *loss);
template <typename T> void add(float *y, const float *a, const float *b, size_t n);

/* flash.cu (bf16 only) */
bool flash_ok(int hd);
void flash_fwd(float *out, float *state, const float *q, const float *k, const float *v, int B,
               int T_, int H, int KV, int hd);
void flash_bwd(float *dq, float *dk, float *dv, float *scratch, const float *dout, const float *q,
               const float *k, const float *v, const float *out, const float *state, int B, int T_,
               int H, int KV, int hd);

/* optim.cu */
void sumsq(double *acc, const float *x, size_t n);
void adamw(const llama_adamw_t *a, float *p, const float *gr, float *m, float *v, size_t n,
           const double *sumsq);

/* events.cu: the profile's timing marks on the stream */
void *event_create(void);
void event_destroy(void *event);
void event_record(void *event);
double event_elapsed(void *from, void *to);

} // namespace llama_cuda

#endif
