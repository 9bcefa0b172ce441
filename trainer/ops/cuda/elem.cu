/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/elem.cu: the CUDA kernels of a Llama block outside the products and
 * attention: casts, RMSNorm, rotary embeddings, SwiGLU, the embedding, cross-entropy, the
 * residual add. Each computes in f32 from elements of the act dtype (f32 or bf16) and rounds
 * once when it stores; each is the formula of the CPU op beside it (ops/cpu/cpu.c), and every
 * sum over many elements runs in a fixed order, so a run repeats bit for bit.
 */
#include "cuda.cuh"

#include <stdlib.h>

extern "C" {
#include "../../util.h"
}

namespace llama_cuda
{

#define FOR_EACH(_i, _n)                                                                           \
    for (size_t _i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; _i < (_n);                     \
         _i += (size_t)gridDim.x * blockDim.x)

static unsigned blocks(size_t n)
{
    return llama_geom_blocks(n, LLAMA_GEOM_THREADS, LLAMA_GEOM_MAX_BLOCKS);
}

/* ---- casts ----------------------------------------------------------------------------------- */

template <typename D, typename S> __global__ void cast_kernel(D *dst, const S *src, size_t n)
{
    FOR_EACH(i, n)
    {
        st(dst, i, ld(src, i));
    }
}

void cast(void *dst, sharc_dtype_t dst_dtype, const void *src, sharc_dtype_t src_dtype, size_t n)
{
    if (n == 0) {
        return;
    }
    if (dst_dtype == src_dtype) {
        ok(cudaMemcpyAsync(dst, src, n * sharc_dtype_size(dst_dtype), cudaMemcpyDeviceToDevice,
                           g.stream),
           "device copy");
    } else if (dst_dtype == SHARC_DTYPE_F32) {
        LLAMA_LAUNCH(cast_kernel, blocks(n), LLAMA_GEOM_THREADS, 0, static_cast<float *>(dst),
                     static_cast<const bf16 *>(src), n);
        launched("cast bf16 -> f32");
    } else {
        LLAMA_LAUNCH(cast_kernel, blocks(n), LLAMA_GEOM_THREADS, 0, static_cast<bf16 *>(dst),
                     static_cast<const float *>(src), n);
        launched("cast f32 -> bf16");
    }
}

template <typename D> __global__ void acc_kernel(D *dst, const float *src, size_t n)
{
    FOR_EACH(i, n)
    {
        st(dst, i, ld(dst, i) + src[i]);
    }
}

void acc(void *dst, sharc_dtype_t dst_dtype, const float *src, size_t n)
{
    if (n == 0) {
        return;
    }
    if (dst_dtype == SHARC_DTYPE_F32) {
        LLAMA_LAUNCH(acc_kernel, blocks(n), LLAMA_GEOM_THREADS, 0, static_cast<float *>(dst), src,
                     n);
    } else {
        LLAMA_LAUNCH(acc_kernel, blocks(n), LLAMA_GEOM_THREADS, 0, static_cast<bf16 *>(dst), src,
                     n);
    }
    launched("gradient accumulation");
}

/* ---- RMSNorm: a warp per row ----------------------------------------------------------------- */

/*
 * out = x * r * w, r = 1 / sqrt(mean(x^2) + eps), stored in the act dtype the products read
 * (so no cast pass follows: with bf16 the norm's output is the GEMM's bf16 input).
 * Floor: 2 N C elements (x read, out written) and 4 N bytes of rstd, at the copy rate.
 */
template <typename T>
__global__ void rmsnorm_fwd_kernel(T *out, float *rstd, const T *x, const T *w, int N, int C,
                                   float eps)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;

    if (row >= N) {
        return; /* the whole warp: no block-wide synchronization follows */
    }
    const T *xr = x + (size_t)row * C;
    T *orow = out + (size_t)row * C;
    float ss = 0.0f;

    for (int c = lane; c < C; c += 32) {
        float v = ld(xr, c);
        ss += v * v;
    }
    ss = warp_sum(ss);
    float r = 1.0f / sqrtf(ss / (float)C + eps);
    for (int c = lane; c < C; c += 32) {
        st(orow, c, ld(xr, c) * r * ld(w, c));
    }
    if (lane == 0) {
        rstd[row] = r;
    }
}

/*
 * dx += r * (w*dy) - x * r^3 / C * sum(w*dy*x), a warp per row.
 * Floor of the backward: dy, x and dx read, dx written (4 N C elements); the weight's column
 * sums below read dy and x a second time (2 N C more), which one kernel doing both could save
 * with a cross-block reduction of dw; not done.
 */
template <typename T>
__global__ void rmsnorm_bwd_dx_kernel(T *dx, const T *dy, const T *x, const T *w, const float *rstd,
                                      int N, int C)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;

    if (row >= N) {
        return;
    }
    const T *xr = x + (size_t)row * C, *dr = dy + (size_t)row * C;
    T *dxr = dx + (size_t)row * C;
    float r = rstd[row], dot = 0.0f;

    for (int c = lane; c < C; c += 32) {
        dot += ld(w, c) * ld(dr, c) * ld(xr, c);
    }
    dot = warp_sum(dot);
    float k = dot * r * r * r / (float)C;
    for (int c = lane; c < C; c += 32) {
        st(dxr, c, ld(dxr, c) + (r * ld(w, c) * ld(dr, c) - k * ld(xr, c)));
    }
}

/* dw partials: thread (x, c) of chunk y sums dy * x * r down its rows of column x*256+c */
template <typename T>
__global__ void rmsnorm_bwd_dw_kernel(float *partial, const T *dy, const T *x, const float *rstd,
                                      int N, int C, int rows_per_chunk)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int lo = blockIdx.y * rows_per_chunk, hi = lo + rows_per_chunk < N ? lo + rows_per_chunk : N;

    if (c >= C) {
        return;
    }
    float s = 0.0f;
    for (int n = lo; n < hi; n++) {
        size_t i = (size_t)n * C + c;
        s += ld(dy, i) * ld(x, i) * rstd[n];
    }
    partial[(size_t)blockIdx.y * C + c] = s;
}

/* dw[c] += the chunks' partials, in chunk order */
__global__ void colsum_add_kernel(float *dw, const float *partial, int C, int chunks)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;

    if (c >= C) {
        return;
    }
    float s = 0.0f;
    for (int y = 0; y < chunks; y++) {
        s += partial[(size_t)y * C + c];
    }
    dw[c] += s;
}

template <typename T>
void rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int N, int C, float eps)
{
    LLAMA_LAUNCH(rmsnorm_fwd_kernel<T>, llama_geom_row_blocks(N, LLAMA_GEOM_THREADS),
                 LLAMA_GEOM_THREADS, 0, (T *)out, rstd, (const T *)x, (const T *)w, N, C, eps);
    launched("rmsnorm forward");
}

template <typename T>
void rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                 const float *rstd, int N, int C)
{
    llama_geom_colsum_t cs = llama_geom_colsum(N, C, LLAMA_GEOM_THREADS, LLAMA_GEOM_COLSUM_BLOCKS);
    float *partial = (float *)scratch(SCRATCH_COLSUM, (size_t)cs.chunks * C * sizeof(float));

    LLAMA_LAUNCH(rmsnorm_bwd_dx_kernel<T>, llama_geom_row_blocks(N, LLAMA_GEOM_THREADS),
                 LLAMA_GEOM_THREADS, 0, (T *)dx, (const T *)dout, (const T *)x, (const T *)w, rstd,
                 N, C);
    launched("rmsnorm backward (input)");
    if (partial == NULL) {
        return;
    }
    LLAMA_LAUNCH(rmsnorm_bwd_dw_kernel<T>, dim3(cs.col_blocks, cs.chunks), LLAMA_GEOM_THREADS, 0,
                 partial, (const T *)dout, (const T *)x, rstd, N, C, cs.rows_per_chunk);
    launched("rmsnorm backward (weight)");
    LLAMA_LAUNCH(colsum_add_kernel, cs.col_blocks, LLAMA_GEOM_THREADS, 0, dw, partial, C,
                 (int)cs.chunks);
    launched("rmsnorm backward (weight sum)");
}

/* ---- rotary embeddings: a thread per rotated pair -------------------------------------------- */

/*
 * sign +1: v[i], v[i + hd/2] rotate by the angle of (t, i); -1: back (the transpose).
 * Floor: in place, each of q's and k's elements read and written once: 2 N (H + KV) hd
 * elements. Rotating on the attention's loads would save the pass, but cuDNN's attention
 * takes its inputs rotated.
 */
template <typename T>
__global__ void rope_kernel(T *x, const float *cos_t, const float *sin_t, int T_, int nh, int hd,
                            size_t pairs, float sign)
{
    int half = hd / 2;

    FOR_EACH(p, pairs)
    {
        int i = (int)(p % half);
        size_t head = p / half; /* (b * T + t) * nh + h */
        int t = (int)((head / nh) % T_);
        T *v = x + head * hd;
        float c = cos_t[(size_t)t * half + i], s = sin_t[(size_t)t * half + i];
        float a = ld(v, i), z = ld(v, i + half);
        st(v, i, a * c - sign * z * s);
        st(v, i + half, z * c + sign * a * s);
    }
}

template <typename T>
void rope_fwd(float *x, const float *cos, const float *sin, int B, int T_, int nh, int hd)
{
    size_t pairs = (size_t)B * T_ * nh * (hd / 2);

    LLAMA_LAUNCH(rope_kernel<T>, blocks(pairs), LLAMA_GEOM_THREADS, 0, (T *)x, cos, sin, T_, nh, hd,
                 pairs, 1.0f);
    launched("rope forward");
}

template <typename T>
void rope_bwd(float *dx, const float *cos, const float *sin, int B, int T_, int nh, int hd)
{
    size_t pairs = (size_t)B * T_ * nh * (hd / 2);

    LLAMA_LAUNCH(rope_kernel<T>, blocks(pairs), LLAMA_GEOM_THREADS, 0, (T *)dx, cos, sin, T_, nh,
                 hd, pairs, -1.0f);
    launched("rope backward");
}

/* ---- SwiGLU ---------------------------------------------------------------------------------- */

/* Floor: g and u read, h written, 3 N F elements; backward: dh, g, u read, dg, du written,
 * 5 N F elements (each one pass). */
template <typename T> __global__ void swiglu_fwd_kernel(T *h, const T *gt, const T *u, size_t n)
{
    FOR_EACH(i, n)
    {
        float gv = ld(gt, i), s = 1.0f / (1.0f + expf(-gv));
        st(h, i, gv * s * ld(u, i));
    }
}

/* silu(g) = g s, s = sigmoid(g); silu'(g) = s (1 + g (1 - s)) */
template <typename T>
__global__ void swiglu_bwd_kernel(T *dg, T *du, const T *dh, const T *gt, const T *u, size_t n)
{
    FOR_EACH(i, n)
    {
        float gv = ld(gt, i), uv = ld(u, i), d = ld(dh, i);
        float s = 1.0f / (1.0f + expf(-gv));
        st(du, i, d * gv * s);
        st(dg, i, d * uv * s * (1.0f + gv * (1.0f - s)));
    }
}

template <typename T> void swiglu_fwd(float *h, const float *gt, const float *u, size_t n)
{
    LLAMA_LAUNCH(swiglu_fwd_kernel<T>, blocks(n), LLAMA_GEOM_THREADS, 0, (T *)h, (const T *)gt,
                 (const T *)u, n);
    launched("swiglu forward");
}

template <typename T>
void swiglu_bwd(float *dg, float *du, const float *dh, const float *gt, const float *u, size_t n)
{
    LLAMA_LAUNCH(swiglu_bwd_kernel<T>, blocks(n), LLAMA_GEOM_THREADS, 0, (T *)dg, (T *)du,
                 (const T *)dh, (const T *)gt, (const T *)u, n);
    launched("swiglu backward");
}

/* ---- the embedding --------------------------------------------------------------------------- */

template <typename T>
__global__ void embed_fwd_kernel(T *x, const int32_t *tokens, const T *table, int C, size_t n)
{
    FOR_EACH(i, n)
    {
        size_t row = i / C;
        x[i] = table[(size_t)tokens[row] * C + i % C];
    }
}

template <typename T>
void embed_fwd(float *x, const int32_t *tokens, const float *table, int N, int C)
{
    const int32_t *dtok = (const int32_t *)stage(tokens, (size_t)N * sizeof(int32_t));
    size_t n = (size_t)N * C;

    if (dtok == NULL) {
        return;
    }
    LLAMA_LAUNCH(embed_fwd_kernel<T>, blocks(n), LLAMA_GEOM_THREADS, 0, (T *)x, dtok,
                 (const T *)table, C, n);
    launched("embedding forward");
}

/*
 * dtable rows += dx rows, deterministically: the host groups the positions by token
 * (buckets: [U, tokens (U), starts (U + 1), positions (N)], positions in order within a
 * token), and block (k, x) sums token k's rows of columns x*256.. in that order, then adds the
 * sum to its row once. No two blocks write the same element.
 */
template <typename T>
__global__ void embed_bwd_kernel(float *dtable, const T *dx, const int32_t *buckets, int C)
{
    int U = buckets[0], k = blockIdx.x, c = blockIdx.y * blockDim.x + threadIdx.x;

    if (k >= U || c >= C) {
        return;
    }
    const int32_t *tok = buckets + 1, *start = tok + U, *pos = start + U + 1;
    float s = 0.0f;
    for (int j = start[k]; j < start[k + 1]; j++) {
        s += ld(dx, (size_t)pos[j] * C + c);
    }
    dtable[(size_t)tok[k] * C + c] += s;
}

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

template <typename T>
void embed_bwd(float *dtable, const float *dx, const int32_t *tokens, int N, int C)
{
    size_t need = (size_t)N;
    int U = 0;

    if (need > g.sort_cap) {
        int64_t *k = (int64_t *)realloc(g.sort_keys, need * sizeof(*k));
        int32_t *b = k != NULL ? (int32_t *)realloc(g.buckets, (3 * need + 2) * sizeof(*b)) : NULL;
        if (k != NULL) {
            g.sort_keys = k;
        }
        if (b == NULL) {
            llama_err("out of host memory for the embedding backward's %zu positions", need);
            g.failed = 1;
            return;
        }
        g.buckets = b;
        g.sort_cap = need;
    }
    /* (token, position) pairs in order: positions ascend within a token */
    for (int n = 0; n < N; n++) {
        g.sort_keys[n] = ((int64_t)tokens[n] << 32) | (uint32_t)n;
    }
    qsort(g.sort_keys, (size_t)N, sizeof(int64_t), cmp_key);
    int32_t *tok = g.buckets + 1;
    for (int n = 0; n < N; n++) {
        U += n == 0 || (g.sort_keys[n] >> 32) != (g.sort_keys[n - 1] >> 32);
    }
    int32_t *start = tok + U, *pos = start + U + 1;
    g.buckets[0] = U;
    for (int n = 0, k = -1; n < N; n++) {
        int32_t t = (int32_t)(g.sort_keys[n] >> 32);
        if (k < 0 || t != tok[k]) {
            tok[++k] = t;
            start[k] = n;
        }
        pos[n] = (int32_t)(g.sort_keys[n] & 0xffffffff);
    }
    start[U] = N;
    const int32_t *dbuckets =
        (const int32_t *)stage(g.buckets, (size_t)(2 + 2 * U + N) * sizeof(int32_t));
    if (dbuckets == NULL || U == 0) {
        return;
    }
    dim3 grid((unsigned)U, llama_geom_blocks((size_t)C, LLAMA_GEOM_THREADS, 65535));
    LLAMA_LAUNCH(embed_bwd_kernel<T>, grid, LLAMA_GEOM_THREADS, 0, dtable, (const T *)dx, dbuckets,
                 C);
    launched("embedding backward");
}

/* ---- cross-entropy: a block per row ------------------------------------------------------- */

#define XENT_THREADS 512

/*
 * loss[n] = max + log(sum exp(l - max)) - l[target]; dlogits (maybe logits itself) =
 * softmax * dscale - dscale at the target. The max and the sum come from one pass (each
 * thread's running sum rescaled when its max grows, the threads' sums rescaled to the row's
 * max), so the row is read twice, not three times. The target's logit is read before the
 * block's first synchronization, so before any thread overwrites the row.
 * Floor: 2 N V elements of the act dtype moved (read once, the gradient written), at the
 * device's copy rate; the loss alone (no gradient): N V read.
 */
template <typename T>
__global__ void xent_kernel(T *dlogits, const T *logits, const int32_t *targets, int V,
                            float dscale, double *row_loss)
{
    __shared__ float fshared[32];
    __shared__ double dshared[32];
    int n = blockIdx.x, tgt = targets[n];
    const T *l = logits + (size_t)n * V;
    float lt = ld(l, tgt), mt = -INFINITY; /* this thread's max, and its sum below it */
    double sumt = 0.0;

    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float v = ld(l, j);
        if (v > mt) {
            sumt = sumt * (double)expf(mt - v) + 1.0; /* (mt -INFINITY at first: 0 * 0 + 1) */
            mt = v;
        } else if (v != -INFINITY) { /* (a NaN is added: it shows in the loss) */
            sumt += (double)expf(v - mt);
        }
    }
    float mx = block_max(mt, fshared);
    double sum = block_sum(mt == -INFINITY ? 0.0 : sumt * (double)expf(mt - mx), dshared);
    if (dlogits != NULL) {
        T *d = dlogits + (size_t)n * V;
        float k = (float)(dscale / sum);
        for (int j = threadIdx.x; j < V; j += blockDim.x) {
            st(d, j, expf(ld(l, j) - mx) * k - (j == tgt ? dscale : 0.0f));
        }
    }
    if (threadIdx.x == 0) {
        row_loss[n] = (double)mx + log(sum) - (double)lt;
    }
}

template <typename T>
void xent(float *dlogits, const float *logits, const int32_t *targets, int N, int V, float dscale,
          double *loss)
{
    const int32_t *dtgt = (const int32_t *)stage(targets, (size_t)N * sizeof(int32_t));
    double *row_loss = (double *)scratch(SCRATCH_ROWLOSS, (size_t)N * sizeof(double));

    if (dtgt == NULL || row_loss == NULL) {
        return;
    }
    LLAMA_LAUNCH(xent_kernel<T>, N, XENT_THREADS, 0, (T *)dlogits, (const T *)logits, dtgt, V,
                 dscale, row_loss);
    launched("cross-entropy");
    LLAMA_LAUNCH(add_sum_kernel<double>, 1, 1024, 0, loss, row_loss, N);
    launched("cross-entropy sum");
}

/* ---- the residual add ------------------------------------------------------------------------ */

template <typename T> __global__ void add_kernel(T *y, const T *a, const T *b, size_t n)
{
    FOR_EACH(i, n)
    {
        st(y, i, ld(a, i) + ld(b, i));
    }
}

template <typename T> void add(float *y, const float *a, const float *b, size_t n)
{
    LLAMA_LAUNCH(add_kernel<T>, blocks(n), LLAMA_GEOM_THREADS, 0, (T *)y, (const T *)a,
                 (const T *)b, n);
    launched("add");
}

/* ---- instances ------------------------------------------------------------------------------- */

#define LLAMA_CUDA_ELEM_INSTANCES(T)                                                               \
    template void rmsnorm_fwd<T>(float *, float *, const float *, const float *, int, int, float); \
    template void rmsnorm_bwd<T>(float *, float *, const float *, const float *, const float *,    \
                                 const float *, int, int);                                         \
    template void rope_fwd<T>(float *, const float *, const float *, int, int, int, int);          \
    template void rope_bwd<T>(float *, const float *, const float *, int, int, int, int);          \
    template void swiglu_fwd<T>(float *, const float *, const float *, size_t);                    \
    template void swiglu_bwd<T>(float *, float *, const float *, const float *, const float *,     \
                                size_t);                                                           \
    template void embed_fwd<T>(float *, const int32_t *, const float *, int, int);                 \
    template void embed_bwd<T>(float *, const float *, const int32_t *, int, int);                 \
    template void xent<T>(float *, const float *, const int32_t *, int, int, float, double *);     \
    template void add<T>(float *, const float *, const float *, size_t);

LLAMA_CUDA_ELEM_INSTANCES(float)
LLAMA_CUDA_ELEM_INSTANCES(bf16)

} // namespace llama_cuda
