/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/attn_pick.h: which attention a CUDA table computes with (--attention), and
 * what cuDNN's fused attention is given: the head sizes it takes here, the [B, heads, T, hd]
 * views of the ops' row-major buffers, the key its built plans are kept under. Plain C, so
 * the host compiler and tests/trainer/test_attn_pick.c check it without a GPU or cuDNN.
 */
#ifndef SHARC_LLAMA_CUDA_ATTN_PICK_H
#define SHARC_LLAMA_CUDA_ATTN_PICK_H

#include <stdint.h>

#include "../ops_cuda.h"

/*
 * NULL where cuDNN's fused attention takes head size @p hd computing in bf16 (@p bf16 nonzero)
 * or f32, else why not (a phrase). Its kernels take other head sizes (multiples of 8 up to
 * 256); these two are the ones sharc checks against the other attentions (tests/trainer/
 * test_attention_cuda.c); other sizes take the tiled kernel's path.
 */
static inline const char *llama_cudnn_shape_why(int bf16, int hd)
{
    if (!bf16) {
        return "cuDNN's attention computes in bf16 (--compute-dtype bf16)";
    }
    if (hd != 64 && hd != 128) {
        return "cuDNN's attention takes head sizes 64 and 128";
    }
    return 0;
}

/*
 * The attention a CUDA table computing in bf16 (@p bf16 nonzero) or f32 takes for @p requested:
 * AUTO takes cuDNN's where it runs (@p cudnn_why NULL: it runs the model's shape here), else
 * the tiled kernel in bf16, else gemm; GEMM always runs; FLASH needs bf16; CUDNN needs
 * @p cudnn_why NULL. Returns the attention taken (never AUTO), or AUTO where @p requested
 * cannot run, with *why_p saying why.
 */
static inline llama_cuda_attention_t llama_cuda_attention_pick(llama_cuda_attention_t requested,
                                                               int bf16, const char *cudnn_why,
                                                               const char **why_p)
{
    switch (requested) {
    case LLAMA_CUDA_ATTENTION_GEMM: return LLAMA_CUDA_ATTENTION_GEMM;
    case LLAMA_CUDA_ATTENTION_FLASH:
        if (!bf16) {
            *why_p = "the tiled (flash) attention computes in bf16 (--compute-dtype bf16)";
            return LLAMA_CUDA_ATTENTION_AUTO;
        }
        return LLAMA_CUDA_ATTENTION_FLASH;
    case LLAMA_CUDA_ATTENTION_CUDNN:
        if (cudnn_why != 0) {
            *why_p = cudnn_why;
            return LLAMA_CUDA_ATTENTION_AUTO;
        }
        return LLAMA_CUDA_ATTENTION_CUDNN;
    default:
        if (!bf16) {
            return LLAMA_CUDA_ATTENTION_GEMM;
        }
        return cudnn_why == 0 ? LLAMA_CUDA_ATTENTION_CUDNN : LLAMA_CUDA_ATTENTION_FLASH;
    }
}

/*
 * The [B, heads, T, hd] view cuDNN's graph takes of a row-major (B, T, heads, hd) buffer (q,
 * out and their gradients with heads = H; k, v and theirs with heads = KV), with no copy:
 * dims and strides in elements. Element (b, h, t, d) is at b T heads hd + t heads hd + h hd + d.
 */
static inline void llama_cudnn_view(int B, int T, int heads, int hd, int64_t dim[4],
                                    int64_t stride[4])
{
    dim[0] = B;
    dim[1] = heads;
    dim[2] = T;
    dim[3] = hd;
    stride[0] = (int64_t)T * heads * hd;
    stride[1] = hd;
    stride[2] = (int64_t)heads * hd;
    stride[3] = 1;
}

/* The softmax statistics, one float per query row (the log-sum-exp of its scaled scores),
 * (B, H, T) row-major, as cuDNN's [B, H, T, 1]. */
static inline void llama_cudnn_stats_view(int B, int T, int H, int64_t dim[4], int64_t stride[4])
{
    dim[0] = B;
    dim[1] = H;
    dim[2] = T;
    dim[3] = 1;
    stride[0] = (int64_t)H * T;
    stride[1] = T;
    stride[2] = 1;
    stride[3] = 1;
}

/* What a built cuDNN plan is kept under: the shape and the direction. */
typedef struct {
    int B, T, H, KV, hd;
    int bwd; /* 0: forward (out and the stats from q, k, v); 1: backward (dq, dk, dv) */
} llama_cudnn_key_t;

static inline llama_cudnn_key_t llama_cudnn_key(int B, int T, int H, int KV, int hd, int bwd)
{
    llama_cudnn_key_t k;

    k.B = B;
    k.T = T;
    k.H = H;
    k.KV = KV;
    k.hd = hd;
    k.bwd = bwd != 0;
    return k;
}

static inline int llama_cudnn_key_eq(const llama_cudnn_key_t *a, const llama_cudnn_key_t *b)
{
    return a->B == b->B && a->T == b->T && a->H == b->H && a->KV == b->KV && a->hd == b->hd &&
           a->bwd == b->bwd;
}

#endif
