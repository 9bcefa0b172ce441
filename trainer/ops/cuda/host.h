/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/host.h: the part of the CUDA ops' shared declarations that a host compiler
 * reads too (cudnn_sdpa.cc is C++ compiled without nvcc): the process's GPU state (device,
 * stream, cuBLAS, scratch, page-locked staging), the first-error rule, and the attention
 * families' entry points. cuda.cuh adds the device code (element loads and stores,
 * reductions) and the other families. No kernels here.
 */
#ifndef SHARC_LLAMA_OPS_CUDA_HOST_H
#define SHARC_LLAMA_OPS_CUDA_HOST_H

/*
 * LLAMA_CUDA_EMU: the host emulation of tests/trainer/cuda_emu.h compiles these files as C++
 * (threads, warps, shared memory, the runtime and cuBLAS of its own); otherwise CUDA's.
 */
#ifndef LLAMA_CUDA_EMU
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif
#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDNN */
#endif
#include <stddef.h>
#include <stdint.h>

#include "../ops_cuda.h"

/* LLAMA_CUDA_CUDNN: cuDNN's fused attention is in the tables (configure found cuDNN and its
 * frontend); never in the host emulation, whose CUDA has no cuDNN */
#if defined(HAVE_CUDNN) && !defined(LLAMA_CUDA_EMU)
#define LLAMA_CUDA_CUDNN 1
#endif

namespace llama_cuda
{

/* Device scratch the ops keep between calls, grown on demand (stream-ordered). */
enum {
    SCRATCH_COLSUM,   /* RMSNorm's dw partials: chunks x C f32 */
    SCRATCH_ROWLOSS,  /* cross-entropy: N f64 */
    SCRATCH_PARTIALS, /* sum of squares: LLAMA_GEOM_MAX_PARTIALS f64 */
    SCRATCH_LAST
};

/* cuBLASLt's workspace for the products (gemm.cu): the most its heuristic may ask for */
#define GEMM_WORKSPACE_BYTES ((size_t)32 << 20)

/* Uploads of host arrays in flight at once (token ids: two per micro-batch and the targets of
 * each of the head's chunks, four for the 1b shape at batch 8): a slot is taken again only
 * once its copy is done, so the count bounds how far the host runs ahead of the device; 32
 * keeps that beyond a micro-batch, where a wait cannot idle the device. Slots are allocated
 * at their first use. */
#define LLAMA_CUDA_STAGE_SLOTS 32

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
    cublasLtHandle_t lt; /* NULL: cuBLASLt did not start (cublasGemmEx for every product) */
    void *lt_ws;         /* its workspace, GEMM_WORKSPACE_BYTES of device memory, or NULL */
    int async_alloc;     /* the device has stream-ordered allocation (cudaMallocAsync) */
    int max_smem;        /* bytes of shared memory a block may opt in to (the tiled attention) */
    int failed;          /* an error was logged; to_host reports it */
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
/* a failed call of library @p lib (what it did, why it failed): logged if it is the first
 * failure, kept for to_host; returns false */
bool failed_call(const char *lib, const char *what, const char *why);
/* the launch just made */
static inline bool launched(const char *what)
{
    return ok(cudaGetLastError(), what);
}

/* Device scratch @p slot of at least @p bytes (contents undefined), or NULL (logged). */
void *scratch(int slot, size_t bytes);
/* gemm.cu: the products' cuBLASLt plans released (at teardown, before the handle) */
void gemm_teardown(void);
/* A device copy of @p bytes of host memory, queued on the stream; valid for work queued
 * after it until LLAMA_CUDA_STAGE_SLOTS more uploads. NULL (logged) on failure. */
const void *stage(const void *host, size_t bytes);

/* ---- attention (q (B,T,H,hd), k, v (B,T,KV,hd); ops.h) --------------------------------------- */

/*
 * attn_pick.cu: the attention a table computing in @p act_dtype takes for @p requested at
 * @p shape (attn_pick.h's rules), or AUTO where that cannot run (logged).
 */
llama_cuda_attention_t attention_pick(sharc_dtype_t act_dtype, llama_cuda_attention_t requested,
                                      const llama_cuda_attn_shape_t *shape);

/* attn.cu: the probabilities materialized (gemm), and the tiled kernel of flash.cu where the
 * head size allows, the materialized path otherwise (bf16) */
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

/*
 * cudnn_sdpa.cc (bf16; builds that found cuDNN, never the emulation): cuDNN's fused attention,
 * the tiled kernel's entry points above for a shape cuDNN does not take here.
 * cudnn_usable: whether cuDNN's attention runs here (the library opens, a handle on the
 * stream) and, with @p shape, builds its forward and backward plans for that shape (kept);
 * false with the reason in @p why. cudnn_teardown: the plans, the workspace and the handle
 * (the stream waited for).
 */
void attention_fwd_cudnn(float *out, float *state, const float *q, const float *k, const float *v,
                         int B, int T_, int H, int KV, int hd);
void attention_bwd_cudnn(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                         const float *q, const float *k, const float *v, const float *out,
                         const float *state, int B, int T_, int H, int KV, int hd);
void attention_bytes_cudnn(int B, int T_, int H, int KV, int hd, size_t *state_p,
                           size_t *scratch_p);
bool cudnn_usable(const llama_cuda_attn_shape_t *shape, char *why, size_t len);
void cudnn_teardown(void);

} // namespace llama_cuda

#endif
