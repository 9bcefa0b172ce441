/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/cuda.cuh: what the CUDA ops files share: the process's GPU state (device,
 * stream, cuBLAS, scratch, page-locked staging), the first-error rule, element loads and
 * stores that compute in f32 whatever is stored, and the kernels' entry points by family
 * (elem.cu, attn.cu, flash.cu, optim.cu, events.cu). Device code and C++.
 */
#ifndef SHARC_LLAMA_OPS_CUDA_CUH
#define SHARC_LLAMA_OPS_CUDA_CUH

/*
 * LLAMA_CUDA_EMU: the host emulation of tests/trainer/cuda_emu.h compiles these files as C++
 * (threads, warps, shared memory, the runtime and cuBLAS of its own); otherwise CUDA's.
 */
#ifndef LLAMA_CUDA_EMU
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif
#include <math.h>
#include <stdint.h>

#include "geom.h"
#include "../ops_cuda.h"

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

/* Device scratch the ops keep between calls, grown on demand (stream-ordered). */
enum {
    SCRATCH_COLSUM,   /* RMSNorm's dw partials: chunks x C f32 */
    SCRATCH_ROWLOSS,  /* cross-entropy: N f64 */
    SCRATCH_PARTIALS, /* sum of squares: LLAMA_GEOM_MAX_PARTIALS f64 */
    SCRATCH_LAST
};

/* Uploads of host arrays in flight at once (token ids: three per micro-batch). */
#define LLAMA_CUDA_STAGE_SLOTS 8

typedef struct {
    void *host, *dev; /* page-locked and device, cap bytes each */
    size_t cap;
    cudaEvent_t done; /* the copy out of host is over: host may be rewritten */
} stage_slot_t;

/* The one GPU of this process. */
typedef struct {
    int refs;
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    int async_alloc; /* the device has stream-ordered allocation (cudaMallocAsync) */
    int max_smem;    /* bytes of shared memory a block may opt in to (the tiled attention) */
    int failed;      /* an error was logged; to_host reports it */
    void *scratch[SCRATCH_LAST];
    size_t scratch_cap[SCRATCH_LAST];
    stage_slot_t stage[LLAMA_CUDA_STAGE_SLOTS];
    int next_stage;
    int64_t *sort_keys; /* host: the embedding backward's (token, position) pairs */
    int32_t *buckets;   /* host: their grouping, staged for the kernel */
    size_t sort_cap;
    char name[256];
} state_t;

extern state_t g;

/* ---- errors: the first one is logged and kept; to_host reports it ---------------------------- */

/* true when @p err is cudaSuccess; else logs "what: error" once and keeps the failure */
bool ok(cudaError_t err, const char *what);
bool ok_blas(cublasStatus_t st, const char *what);
/* the launch just made */
static inline bool launched(const char *what)
{
    return ok(cudaGetLastError(), what);
}

/* Device scratch @p slot of at least @p bytes (contents undefined), or NULL (logged). */
void *scratch(int slot, size_t bytes);
/* A device copy of @p bytes of host memory, queued on the stream; valid for work queued
 * after it until LLAMA_CUDA_STAGE_SLOTS more uploads. NULL (logged) on failure. */
const void *stage(const void *host, size_t bytes);

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

/* cuda.cu: cuBLAS */
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

/* attn.cu: the probabilities materialized, and the choice of the tiled kernels */
template <typename T>
void attention_fwd(float *out, float *probs, const float *q, const float *k, const float *v, int B,
                   int T_, int H, int KV, int hd);
template <typename T>
void attention_bwd(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                   const float *q, const float *k, const float *v, const float *out,
                   const float *probs, int B, int T_, int H, int KV, int hd);
void attention_fwd_flash(float *out, float *state, const float *q, const float *k, const float *v,
                         int B, int T_, int H, int KV, int hd);
void attention_bwd_flash(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                         const float *q, const float *k, const float *v, const float *out,
                         const float *state, int B, int T_, int H, int KV, int hd);
void attention_bytes_flash(int B, int T_, int H, int KV, int hd, size_t *state_p,
                           size_t *scratch_p);

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
