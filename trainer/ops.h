/*
 * trainer/ops.h: the arithmetic of a Llama block, forward and backward side by side, as a
 * table of functions over f32 buffers (row-major; N = B*T tokens). ops_cpu.c implements it
 * with BLAS; a CUDA table can sit beside it with the same shapes. Backward functions add into
 * parameter gradients (dw +=) and, where noted, into input gradients, so gradient
 * accumulation and residual branches need no extra passes.
 */
#ifndef SHARC_LLAMA_OPS_H
#define SHARC_LLAMA_OPS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    void *(*alloc)(size_t bytes); /**< zero-filled; NULL on failure */
    void (*free)(void *ptr);
    void (*zero)(float *x, size_t n);
    /** Threads the compute may use (BLAS and the loops); 1 by default. */
    void (*set_threads)(int n);

    /** out (N,Cout) = in (N,Cin) @ w^T, w (Cout,Cin) as torch.nn.Linear stores it. */
    void (*matmul_fwd)(float *out, const float *in, const float *w, int N, int Cin, int Cout);
    /** din (N,Cin) = (or += with din_add) dout (N,Cout) @ w;  dw (Cout,Cin) += dout^T @ in. */
    void (*matmul_bwd)(float *din, float *dw, const float *dout, const float *in, const float *w,
                       int N, int Cin, int Cout, int din_add);

    /** out (N,C) = x / rms(x) * w; rstd (N) = 1 / sqrt(mean(x^2) + eps). */
    void (*rmsnorm_fwd)(float *out, float *rstd, const float *x, const float *w, int N, int C,
                        float eps);
    /** dx (N,C) += d/dx;  dw (C) += d/dw. */
    void (*rmsnorm_bwd)(float *dx, float *dw, const float *dout, const float *x, const float *w,
                        const float *rstd, int N, int C);

    /**
     * Rotary embedding in place on x (B,T,nh,hd), Hugging Face's half-split convention: the
     * pair (i, i + hd/2) rotates by the angle whose cos/sin are tables (T, hd/2). bwd rotates
     * the gradient back (the transpose).
     */
    void (*rope_fwd)(float *x, const float *cos, const float *sin, int B, int T, int nh, int hd);
    void (*rope_bwd)(float *dx, const float *cos, const float *sin, int B, int T, int nh, int hd);

    /**
     * Causal attention with grouped-query heads: q (B,T,H,hd), k and v (B,T,KV,hd), query
     * head h reading kv head h / (H/KV). out (B,T,H,hd); probs (B,H,T,T) kept for backward.
     */
    void (*attention_fwd)(float *out, float *probs, const float *q, const float *k, const float *v,
                          int B, int T, int H, int KV, int hd);
    /** dq = ..., dk, dv = ... (overwritten); scratch holds B*KV*T*T floats. */
    void (*attention_bwd)(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                          const float *q, const float *k, const float *v, const float *probs, int B,
                          int T, int H, int KV, int hd);

    /** h = silu(g) * u over n elements; bwd overwrites dg, du. */
    void (*swiglu_fwd)(float *h, const float *g, const float *u, size_t n);
    void (*swiglu_bwd)(float *dg, float *du, const float *dh, const float *g, const float *u,
                       size_t n);

    /** x (N,C) = rows tokens of table (V,C); bwd: dtable rows += dx. */
    void (*embed_fwd)(float *x, const int32_t *tokens, const float *table, int N, int C);
    void (*embed_bwd)(float *dtable, const float *dx, const int32_t *tokens, int N, int C);

    /**
     * Cross-entropy of logits (N,V) against targets (N): returns the sum of the N losses;
     * with dlogits non-NULL writes (softmax - onehot) * dscale there (may be logits itself).
     */
    double (*xent)(float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                   float dscale);

    /** y = a + b over n elements (y may be a or b). */
    void (*add)(float *y, const float *a, const float *b, size_t n);
} llama_ops_t;

/** The CPU table: BLAS for the products, plain loops for the rest. */
extern const llama_ops_t llama_ops_cpu;

#endif
