/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/ops.h: the arithmetic of a Llama block, forward and backward side by side, as a
 * table of functions over row-major buffers (N = B*T tokens). cpu/cpu.c implements it in f32
 * with BLAS; cuda/cuda.cu on one GPU in f32 or bf16 (ops_cuda.h). Backward functions add into
 * parameter gradients (dw +=) and, where noted, into input gradients, so gradient
 * accumulation and residual branches need no extra passes.
 *
 * Element types. Activations and the weights the products read hold elements of the
 * table's act_dtype (f32 on the CPU; f32 or bf16 on CUDA): they are typed float * because
 * the f32 tables compute on them directly, but only the table's own functions read them.
 * Always f32, whatever act_dtype: parameter gradients (dw), the rms norms' rstd, the rotary
 * tables, the optimizer's shards. Products and reductions accumulate in f32 (sums of the
 * loss in f64). All buffers are the table's memory (ops->alloc: host memory for the CPU,
 * device memory for CUDA); token ids are host arrays the table may read after the call
 * returns only through its own copy.
 */
#ifndef SHARC_LLAMA_OPS_H
#define SHARC_LLAMA_OPS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <sharc/sharc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Helpers both the host and the CUDA tables compile (nvcc sees them as device code too). */
#ifdef __CUDACC__
#define LLAMA_HOSTDEV __host__ __device__
#else
#define LLAMA_HOSTDEV
#endif

/** Decay ranges of one shard the AdamW step takes at most (one per matrix of a unit). */
#define LLAMA_ADAMW_MAX_RANGES 16

/** One AdamW update of a shard, as torch.optim.AdamW computes it (model/optim.c fills it). */
typedef struct {
    float beta1, beta2, eps;
    float keep;      /**< 1 - lr * weight_decay, applied first on the decay ranges */
    float step_size; /**< lr / (1 - beta1^t) */
    float bc2_sqrt;  /**< sqrt(1 - beta2^t) */
    float grad_clip; /**< clip by the global norm to this; 0: no clipping */
    int replicas; /**< HSDP replicas: the all-reduced sum of squares counts each shard so often */
    int nranges;  /**< elements [start, start + count) of the shard get weight decay */
    size_t start[LLAMA_ADAMW_MAX_RANGES], count[LLAMA_ADAMW_MAX_RANGES];
} llama_adamw_t;

/**
 * The gradient's scale factor from the all-reduced sum of squares: torch.nn.utils.
 * clip_grad_norm_'s rule, max_norm / (norm + 1e-6) when the norm exceeds max_norm.
 */
static inline LLAMA_HOSTDEV float llama_clip_factor(double sumsq, int replicas, float max_norm)
{
    float norm = (float)sqrt(sumsq / replicas);

    return (max_norm > 0 && norm > max_norm) ? max_norm / (norm + 1e-6f) : 1.0f;
}

typedef struct {
    const char *name;
    /** dtype of activations and of the weights the products read: f32 or bf16 */
    sharc_dtype_t act_dtype;
    /** SHARC_MEMTYPE_HOST or SHARC_MEMTYPE_CUDA: where alloc puts buffers */
    sharc_memtype_t memtype;
    void *(*alloc)(size_t bytes); /**< zero-filled; NULL on failure (logged) */
    void (*free)(void *ptr);
    void (*zero)(void *x, size_t bytes);
    /** Threads the compute may use (BLAS and the loops); 1 by default. NULL: not used. */
    void (*set_threads)(int n);
    /** Host memory into the table's memory: returns once @p src may be reused. */
    void (*to_device)(void *dst, const void *src, size_t bytes);
    /**
     * The table's memory into host memory, after everything queued before (on CUDA: waits
     * for the stream, the one host synchronization of a step). Also reports the first
     * failure of any earlier call (a kernel launch, cuBLAS, an illegal address):
     * SHARC_ERR_BACKEND, logged once.
     */
    sharc_status_t (*to_host)(void *dst, const void *src, size_t bytes);
    /** dst = src converted (f32 <-> bf16, rounding to nearest even; equal dtypes copy). */
    void (*cast)(void *dst, sharc_dtype_t dst_dtype, const void *src, sharc_dtype_t src_dtype,
                 size_t n);
    /** dst (f32 or bf16) += src (f32) over n elements, computed in f32 and rounded once. */
    void (*acc)(void *dst, sharc_dtype_t dst_dtype, const float *src, size_t n);
    /** Wait for a collective posted on buffers of this memory: the host blocks (CPU) or the
     *  table's stream waits on the device (CUDA); @p req is freed. */
    sharc_status_t (*wait)(sharc_request_h req);

    /** out (N,Cout) = in (N,Cin) @ w^T, w (Cout,Cin) as torch.nn.Linear stores it. */
    void (*matmul_fwd)(float *out, const float *in, const float *w, int N, int Cin, int Cout);
    /** din (N,Cin) = (or += with din_add) dout (N,Cout) @ w;  dw (Cout,Cin, f32) += dout^T @ in. */
    void (*matmul_bwd)(float *din, float *dw, const float *dout, const float *in, const float *w,
                       int N, int Cin, int Cout, int din_add);

    /** out (N,C) = x / rms(x) * w; rstd (N, f32) = 1 / sqrt(mean(x^2) + eps). */
    void (*rmsnorm_fwd)(float *out, float *rstd, const float *x, const float *w, int N, int C,
                        float eps);
    /** dx (N,C) += d/dx;  dw (C, f32) += d/dw. */
    void (*rmsnorm_bwd)(float *dx, float *dw, const float *dout, const float *x, const float *w,
                        const float *rstd, int N, int C);

    /**
     * Rotary embedding in place on x (B,T,nh,hd), Hugging Face's half-split convention: the
     * pair (i, i + hd/2) rotates by the angle whose cos/sin are tables (T, hd/2, f32). bwd
     * rotates the gradient back (the transpose).
     */
    void (*rope_fwd)(float *x, const float *cos, const float *sin, int B, int T, int nh, int hd);
    void (*rope_bwd)(float *dx, const float *cos, const float *sin, int B, int T, int nh, int hd);

    /**
     * Causal attention with grouped-query heads: q (B,T,H,hd), k and v (B,T,KV,hd), query
     * head h reading kv head h / (H/KV). out (B,T,H,hd); probs: what backward needs of the
     * forward besides its inputs and output, attention_bytes' state (by default the
     * probabilities, (B,H,T,T) elements of act_dtype).
     */
    void (*attention_fwd)(float *out, float *probs, const float *q, const float *k, const float *v,
                          int B, int T, int H, int KV, int hd);
    /** dq = ..., dk, dv = ... (overwritten), from dout and the forward's out and probs;
     *  scratch: attention_bytes' scratch (by default B*KV*T*T elements of act_dtype). */
    void (*attention_bwd)(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                          const float *q, const float *k, const float *v, const float *out,
                          const float *probs, int B, int T, int H, int KV, int hd);
    /**
     * Bytes of attention's state (probs above) and of its backward's scratch for these shapes;
     * NULL: the probabilities and their gradient, B*H*T*T and B*KV*T*T elements of act_dtype.
     * A memory-efficient attention keeps a few floats per row instead.
     */
    void (*attention_bytes)(int B, int T, int H, int KV, int hd, size_t *state_p,
                            size_t *scratch_p);

    /** h = silu(g) * u over n elements; bwd overwrites dg, du. */
    void (*swiglu_fwd)(float *h, const float *g, const float *u, size_t n);
    void (*swiglu_bwd)(float *dg, float *du, const float *dh, const float *g, const float *u,
                       size_t n);

    /** x (N,C) = rows tokens of table (V,C); bwd: dtable (f32) rows += dx. Host token ids. */
    void (*embed_fwd)(float *x, const int32_t *tokens, const float *table, int N, int C);
    void (*embed_bwd)(float *dtable, const float *dx, const int32_t *tokens, int N, int C);

    /**
     * Cross-entropy of logits (N,V) against targets (N, host ids): adds the sum of the N
     * losses to *loss (f64, the table's memory); with dlogits non-NULL writes
     * (softmax - onehot) * dscale there (may be logits itself).
     */
    void (*xent)(float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                 float dscale, double *loss);

    /** y = a + b over n elements (y may be a or b). */
    void (*add)(float *y, const float *a, const float *b, size_t n);

    /** The optimizer on f32 shards: *acc (f64, the table's memory) += sum of x^2. */
    void (*sumsq)(double *acc, const float *x, size_t n);
    /**
     * AdamW on a shard of n elements: moments m, v and parameters p from gradient g, scaled
     * by llama_clip_factor(*sumsq, ...) (sumsq: the all-reduced sum of squares, the table's
     * memory).
     */
    void (*adamw)(const llama_adamw_t *a, float *p, const float *g, float *m, float *v, size_t n,
                  const double *sumsq);

    /** Peak FLOP/s for MFU without measuring, and what it is (the device's name); NULL for
     *  a table whose rate is measured (llama_peak_flops). */
    double (*peak_flops)(char *what, size_t len);
    /** Memory the device has in use, in MiB; NULL for host tables (their RSS counts). */
    double (*mem_used_mib)(void);
    /** The most device memory in use so far, in MiB: sampled after each of the table's own
     *  allocations and at each call of either function; NULL for host tables. */
    double (*mem_peak_mib)(void);

    /**
     * Timing marks for the profile (model/prof.c) and the measured floors: an event is a point
     * in the table's order of work. event_record sets it after everything queued before (on
     * CUDA: cudaEventRecord on the table's stream, the host does not wait; on the CPU, whose
     * calls return done: the host's clock); event_elapsed gives the seconds from @p from to
     * @p to, both recorded, waiting for @p to to complete (call it after the step's own wait
     * for the device, and it does not wait). event_create: NULL on failure (logged). All four
     * NULL: the table cannot be profiled.
     */
    void *(*event_create)(void);
    void (*event_destroy)(void *event);
    void (*event_record)(void *event);
    double (*event_elapsed)(void *from, void *to);
} llama_ops_t;

/** The CPU table: BLAS for the products, plain loops for the rest, f32. */
extern const llama_ops_t llama_ops_cpu;

#ifdef __cplusplus
}
#endif

#endif
