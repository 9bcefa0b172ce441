/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/attn.cu: causal grouped-query attention on the GPU with the probabilities
 * materialized, as the CPU op does: the score and value products are strided-batched cuBLAS
 * calls (one per batch row and query head of a kv group, batched over the kv heads), the
 * softmax and its backward are warp-per-row kernels. In bf16 the scores and probabilities
 * are stored in bf16 (as PyTorch's math attention does), and computed on in f32. The bf16
 * table's default is the tiled attention of flash.cu, where the head size allows;
 * the entry points here choose.
 * Shapes: q (B,T,H,hd), k, v (B,T,KV,hd), probs (B,H,T,T), scratch (B,KV,T,T); query head
 * h = kh * group + gi reads kv head kh.
 */
#include "cuda.cuh"

namespace llama_cuda
{

/* C (m,n) = alpha op(A) op(B) + beta C, column-major, @p batch times at the given strides */
template <typename T>
static void gemm_batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         float alpha, const T *A, int lda, long long sa, const T *B, int ldb,
                         long long sb, float beta, T *C, int ldc, long long sc, int batch,
                         const char *what)
{
    const cudaDataType_t t = dtype_of<T>::cuda;

    ok_blas(cublasGemmStridedBatchedEx(g.blas, ta, tb, m, n, k, &alpha, A, t, lda, sa, B, t, ldb,
                                       sb, &beta, C, t, ldc, sc, batch, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT),
            what);
}

/* Row i of each (T,T) square: softmax over columns 0..i, zero after (the causal mask). */
template <typename T> __global__ void softmax_causal_kernel(T *p, int T_, size_t rows)
{
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;

    if (row >= rows) {
        return;
    }
    int i = (int)(row % T_);
    T *pr = p + row * T_;
    float mx = -INFINITY, sum = 0.0f;

    for (int j = lane; j <= i; j += 32) {
        mx = fmaxf(mx, ld(pr, j));
    }
    mx = warp_max(mx);
    for (int j = lane; j <= i; j += 32) {
        sum += expf(ld(pr, j) - mx);
    }
    float inv = 1.0f / warp_sum(sum);
    for (int j = lane; j < T_; j += 32) {
        st(pr, j, j <= i ? expf(ld(pr, j) - mx) * inv : 0.0f);
    }
}

/*
 * dS = P * (dP - rowsum(dP * P)) in place of dP, for query head gi of every kv group: row r
 * of the scratch (b, kh, i) pairs with row (b, kh * group + gi, i) of probs.
 */
template <typename T>
__global__ void softmax_bwd_kernel(T *ds, const T *p, int T_, int H, int KV, int group, int gi,
                                   size_t rows)
{
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;

    if (row >= rows) {
        return;
    }
    int i = (int)(row % T_);
    size_t bk = row / T_, b = bk / KV, kh = bk % KV;
    const T *pr = p + ((b * H + kh * group + gi) * T_ + i) * T_;
    T *dr = ds + row * T_;
    float dot = 0.0f;

    for (int j = lane; j <= i; j += 32) {
        dot += ld(pr, j) * ld(dr, j);
    }
    dot = warp_sum(dot);
    for (int j = lane; j < T_; j += 32) {
        st(dr, j, j <= i ? ld(pr, j) * (ld(dr, j) - dot) : 0.0f);
    }
}

template <typename T>
void attention_fwd(float *out_, float *probs_, const float *q_, const float *k_, const float *v_,
                   int B, int T_, int H, int KV, int hd)
{
    T *out = (T *)out_, *probs = (T *)probs_;
    const T *q = (const T *)q_, *k = (const T *)k_, *v = (const T *)v_;
    const int group = H / KV, qs = H * hd, ks = KV * hd;
    const long long TT = (long long)T_ * T_;
    const float scale = 1.0f / sqrtf((float)hd);
    size_t rows = (size_t)B * H * T_;

    for (int b = 0; b < B; b++) {
        for (int gi = 0; gi < group; gi++) {
            const T *qb = q + (size_t)b * T_ * qs + (size_t)gi * hd;
            T *pb = probs + ((size_t)b * H + gi) * TT;
            /* S (Tq,Tk) = scale q k^T: column-major S^T = K (Tk,hd) . Q^T (hd,Tq) */
            gemm_batched<T>(CUBLAS_OP_T, CUBLAS_OP_N, T_, T_, hd, scale, k + (size_t)b * T_ * ks,
                            ks, hd, qb, qs, (long long)group * hd, 0.0f, pb, T_, group * TT, KV,
                            "attention scores");
        }
    }
    LLAMA_LAUNCH(softmax_causal_kernel<T>, llama_geom_row_blocks(rows, LLAMA_GEOM_THREADS),
                 LLAMA_GEOM_THREADS, 0, probs, T_, rows);
    launched("attention softmax");
    for (int b = 0; b < B; b++) {
        for (int gi = 0; gi < group; gi++) {
            /* O (Tq,hd) = P V: O^T (hd,Tq) = V^T (hd,Tk) . P^T (Tk,Tq) */
            gemm_batched<T>(CUBLAS_OP_N, CUBLAS_OP_N, hd, T_, T_, 1.0f, v + (size_t)b * T_ * ks, ks,
                            hd, probs + ((size_t)b * H + gi) * TT, T_, group * TT, 0.0f,
                            out + (size_t)b * T_ * qs + (size_t)gi * hd, qs, (long long)group * hd,
                            KV, "attention values");
        }
    }
}

/*
 * dP = dO v^T;  dv += P^T dO;  dS = P * (dP - rowsum(dP * P));  dq = dS k * scale;
 * dk += dS^T q * scale. One query head of every kv group at a time (gi), so that the scratch
 * holds a (B,KV,T,T) block of dP/dS, and dk, dv gather the group's heads in head order.
 */
template <typename T>
void attention_bwd(float *dq_, float *dk_, float *dv_, float *scratch_, const float *dout_,
                   const float *q_, const float *k_, const float *v_, const float *out_,
                   const float *probs_, int B, int T_, int H, int KV, int hd)
{
    T *dq = (T *)dq_, *dk = (T *)dk_, *dv = (T *)dv_, *ds = (T *)scratch_;
    const T *dout = (const T *)dout_, *q = (const T *)q_, *k = (const T *)k_, *v = (const T *)v_;
    const T *probs = (const T *)probs_;
    const int group = H / KV, qs = H * hd, ks = KV * hd;
    const long long TT = (long long)T_ * T_, qstride = (long long)group * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    size_t rows = (size_t)B * KV * T_;

    for (int gi = 0; gi < group; gi++) {
        float beta = gi == 0 ? 0.0f : 1.0f; /* dk, dv: the group's first head assigns */
        for (int b = 0; b < B; b++) {
            size_t qo = (size_t)b * T_ * qs + (size_t)gi * hd, ko = (size_t)b * T_ * ks;
            const T *pb = probs + ((size_t)b * H + gi) * TT;
            T *dsb = ds + (size_t)b * KV * TT;
            /* dP (Tq,Tk) = dO V^T: dP^T (Tk,Tq) = V (Tk,hd) . dO^T (hd,Tq) */
            gemm_batched<T>(CUBLAS_OP_T, CUBLAS_OP_N, T_, T_, hd, 1.0f, v + ko, ks, hd, dout + qo,
                            qs, qstride, 0.0f, dsb, T_, TT, KV, "attention backward (dP)");
            /* dV (Tk,hd) += P^T dO: dV^T (hd,Tk) = dO^T (hd,Tq) . P (Tq,Tk) */
            gemm_batched<T>(CUBLAS_OP_N, CUBLAS_OP_T, hd, T_, T_, 1.0f, dout + qo, qs, qstride, pb,
                            T_, group * TT, beta, dv + ko, ks, hd, KV, "attention backward (dV)");
        }
        LLAMA_LAUNCH(softmax_bwd_kernel<T>, llama_geom_row_blocks(rows, LLAMA_GEOM_THREADS),
                     LLAMA_GEOM_THREADS, 0, ds, probs, T_, H, KV, group, gi, rows);
        launched("attention softmax backward");
        for (int b = 0; b < B; b++) {
            size_t qo = (size_t)b * T_ * qs + (size_t)gi * hd, ko = (size_t)b * T_ * ks;
            const T *dsb = ds + (size_t)b * KV * TT;
            /* dQ (Tq,hd) = scale dS K: dQ^T (hd,Tq) = K^T (hd,Tk) . dS^T (Tk,Tq) */
            gemm_batched<T>(CUBLAS_OP_N, CUBLAS_OP_N, hd, T_, T_, scale, k + ko, ks, hd, dsb, T_,
                            TT, 0.0f, dq + qo, qs, qstride, KV, "attention backward (dQ)");
            /* dK (Tk,hd) += scale dS^T Q: dK^T (hd,Tk) = Q^T (hd,Tq) . dS (Tq,Tk) */
            gemm_batched<T>(CUBLAS_OP_N, CUBLAS_OP_T, hd, T_, T_, scale, q + qo, qs, qstride, dsb,
                            T_, TT, beta, dk + ko, ks, hd, KV, "attention backward (dK)");
        }
    }
}

template void attention_fwd<float>(float *, float *, const float *, const float *, const float *,
                                   int, int, int, int, int);
template void attention_fwd<bf16>(float *, float *, const float *, const float *, const float *,
                                  int, int, int, int, int);
template void attention_bwd<float>(float *, float *, float *, float *, const float *, const float *,
                                   const float *, const float *, const float *, const float *, int,
                                   int, int, int, int);
template void attention_bwd<bf16>(float *, float *, float *, float *, const float *, const float *,
                                  const float *, const float *, const float *, const float *, int,
                                  int, int, int, int);

/* ---- the tiled attention where the head size allows, this file's otherwise ------------------ */

void attention_fwd_flash(float *out, float *state, const float *q, const float *k, const float *v,
                         int B, int T_, int H, int KV, int hd)
{
    if (flash_ok(hd)) {
        flash_fwd(out, state, q, k, v, B, T_, H, KV, hd);
    } else {
        attention_fwd<bf16>(out, state, q, k, v, B, T_, H, KV, hd);
    }
}

void attention_bwd_flash(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                         const float *q, const float *k, const float *v, const float *out,
                         const float *state, int B, int T_, int H, int KV, int hd)
{
    if (flash_ok(hd)) {
        flash_bwd(dq, dk, dv, scratch, dout, q, k, v, out, state, B, T_, H, KV, hd);
    } else {
        attention_bwd<bf16>(dq, dk, dv, scratch, dout, q, k, v, out, state, B, T_, H, KV, hd);
    }
}

/* the tiled attention keeps a log-sum-exp per query row, and its backward a row sum */
void attention_bytes_flash(int B, int T_, int H, int KV, int hd, size_t *state_p, size_t *scratch_p)
{
    if (flash_ok(hd)) {
        *state_p = (size_t)B * H * T_ * sizeof(float);
        *scratch_p = (size_t)B * H * T_ * sizeof(float);
    } else {
        *state_p = (size_t)B * H * T_ * T_ * sizeof(bf16);
        *scratch_p = (size_t)B * KV * T_ * T_ * sizeof(bf16);
    }
}

} // namespace llama_cuda
