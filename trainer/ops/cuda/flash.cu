/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/flash.cu: memory-efficient causal attention in bf16 on tensor cores
 * (FlashAttention-2's algorithm, WMMA 16x16x16 tiles with f32 accumulation): the T x T
 * scores never reach device memory. The forward keeps one float per query row, the
 * log-sum-exp of its scores; the backward recomputes the probabilities tile by tile from it.
 *
 * Tiles: 64 query rows x 64 keys per block of 4 warps, each warp 16 rows of the tile.
 *   forward   block (query tile, b*H + h): for each key tile up to the diagonal, S = q k^T on
 *             tensor cores into shared memory, an online softmax per row (running max and
 *             sum in registers), O = O * alpha + P v with O in shared memory (f32).
 *   backward  D = rowsum(dO * O) per row first; then two kernels, each recomputing P:
 *             block (key tile, b*KV + kh) accumulates dK and dV in registers over the group's
 *             query heads and the query tiles at or after it; block (query tile, b*H + h)
 *             accumulates dQ over the key tiles up to the diagonal. No atomics: the result
 *             repeats bit for bit.
 * Shapes as the CPU op's (ops.h): q (B,T,H,hd), k, v (B,T,KV,hd); state: lse (B,H,T) f32;
 * scratch: D (B,H,T) f32. hd must be 32, 64 or 128, with tiles that fit the device's shared
 * memory (flash_ok); other shapes take the materialized path (attn.cu).
 * tests/trainer/test_ops_cuda_emu runs these kernels on the host, through the emulation of
 * tests/trainer/cuda_emu.h.
 */
#include "cuda.cuh"

#ifndef LLAMA_CUDA_EMU
#include <mma.h>
#endif

namespace llama_cuda
{

using namespace nvcuda;

#define FLASH_TILE  64  /* query rows and keys of a tile */
#define FLASH_WARPS 4   /* each FLASH_TILE / FLASH_WARPS = 16 rows */
#define FLASH_WSCR  128 /* floats per row of a warp's f32 scratch (two 64-wide, or hd) */

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_bt; /* B^T */
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/*
 * Rows t0 .. t0 + 63 of one head into dst (64 x HD, row-major), 16 bytes at a time; rows at
 * or past T are zeros. src: the head's row 0; stride: elements between rows.
 */
template <int HD>
__device__ void load_tile(bf16 *dst, const bf16 *src, int t0, int T, size_t stride)
{
    const int per_row = HD / 8;

    for (int i = threadIdx.x; i < FLASH_TILE * per_row; i += blockDim.x) {
        int r = i / per_row, c = (i % per_row) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (t0 + r < T) {
            v = *reinterpret_cast<const uint4 *>(src + (size_t)(t0 + r) * stride + c);
        }
        *reinterpret_cast<uint4 *>(dst + r * HD + c) = v;
    }
}

/* 64 floats of a (B,H,T) row vector from t0 into dst; @p pad past T */
__device__ void load_rows(float *dst, const float *src, int t0, int T, float pad)
{
    for (int i = threadIdx.x; i < FLASH_TILE; i += blockDim.x) {
        dst[i] = t0 + i < T ? src[t0 + i] : pad;
    }
}

/* acc (16 x 64, into a warp's f32 scratch, ld 64) = A (16 rows x HD) . B (64 rows x HD)^T */
template <int HD> __device__ void rows_times_rows_t(float *acc, const bf16 *a, const bf16 *b)
{
    frag_a fa[HD / 16];
    frag_bt fb;
    frag_c fc;

    for (int k = 0; k < HD / 16; k++) {
        wmma::load_matrix_sync(fa[k], a + k * 16, HD);
    }
    for (int n = 0; n < FLASH_TILE / 16; n++) {
        wmma::fill_fragment(fc, 0.0f);
        for (int k = 0; k < HD / 16; k++) {
            wmma::load_matrix_sync(fb, b + n * 16 * HD + k * 16, HD);
            wmma::mma_sync(fc, fa[k], fb, fc);
        }
        wmma::store_matrix_sync(acc + n * 16, fc, FLASH_TILE, wmma::mem_row_major);
    }
}

/* acc[n] (16 x HD as HD/16 fragments) += P (16 x 64, bf16, ld 64) . M (64 rows x HD) */
template <int HD> __device__ void acc_p_times(frag_c *acc, const bf16 *p, const bf16 *m)
{
    frag_a fa;
    frag_b fb;

    for (int k = 0; k < FLASH_TILE / 16; k++) {
        wmma::load_matrix_sync(fa, p + k * 16, FLASH_TILE);
        for (int n = 0; n < HD / 16; n++) {
            wmma::load_matrix_sync(fb, m + k * 16 * HD + n * 16, HD);
            wmma::mma_sync(acc[n], fa, fb, acc[n]);
        }
    }
}

/* a warp's 16 x HD result (fragments, times @p scale) as bf16 rows r0.. of a (.,T,heads,HD)
 * tensor, through the warp's f32 scratch; rows at or past T are not written */
template <int HD>
__device__ void store_rows(bf16 *dst, size_t stride, int r0, int T, frag_c *acc, float scale,
                           float *scr)
{
    int lane = threadIdx.x & 31;

    for (int n = 0; n < HD / 16; n++) {
        for (int i = 0; i < acc[n].num_elements; i++) {
            acc[n].x[i] *= scale;
        }
        wmma::store_matrix_sync(scr + n * 16, acc[n], HD, wmma::mem_row_major);
    }
    __syncwarp();
    for (int r = 0; r < 16; r++) {
        if (r0 + r < T) {
            for (int d = lane; d < HD; d += 32) {
                dst[(size_t)(r0 + r) * stride + d] = __float2bfloat16_rn(scr[r * HD + d]);
            }
        }
    }
}

/* ---- forward -------------------------------------------------------------------------------- */

template <int HD> struct fwd_smem {
    static const size_t q = 0, k = q + FLASH_TILE * HD * 2, v = k + FLASH_TILE * HD * 2;
    static const size_t s = v + FLASH_TILE * HD * 2;               /* f32 [warps][16][64] */
    static const size_t p = s + FLASH_WARPS * 16 * FLASH_TILE * 4; /* bf16 [warps][16][64] */
    static const size_t o = p + FLASH_WARPS * 16 * FLASH_TILE * 2; /* f32 [warps][16][HD] */
    static const size_t bytes = o + FLASH_WARPS * 16 * HD * 4;
};

template <int HD>
__global__ void __launch_bounds__(FLASH_WARPS * 32)
    flash_fwd_kernel(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, int T,
                     int H, int KV, float scale)
{
    typedef fwd_smem<HD> L;
    LLAMA_CUDA_DYN_SMEM(smem);
    bf16 *Qs = (bf16 *)(smem + L::q), *Ks = (bf16 *)(smem + L::k), *Vs = (bf16 *)(smem + L::v);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *Sw = (float *)(smem + L::s) + warp * 16 * FLASH_TILE;
    bf16 *Pw = (bf16 *)(smem + L::p) + warp * 16 * FLASH_TILE;
    float *Ow = (float *)(smem + L::o) + warp * 16 * HD;
    int qt = blockIdx.x, b = blockIdx.y / H, h = blockIdx.y % H, kh = h / (H / KV);
    int q0 = qt * FLASH_TILE, r0 = q0 + warp * 16;
    size_t qs = (size_t)H * HD, ks = (size_t)KV * HD;
    float m[16], l[16]; /* each row's running max and sum, the same in every lane */

    load_tile<HD>(Qs, q + (size_t)b * T * qs + (size_t)h * HD, q0, T, qs);
    for (int i = lane; i < 16 * HD; i += 32) {
        Ow[i] = 0.0f;
    }
#pragma unroll
    for (int r = 0; r < 16; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    int ntiles = llama_geom_causal_tiles(qt, FLASH_TILE, FLASH_TILE, T);
    for (int kt = 0; kt < ntiles; kt++) {
        int k0 = kt * FLASH_TILE;
        __syncthreads(); /* every warp is done with the last tile's K and V */
        load_tile<HD>(Ks, k + (size_t)b * T * ks + (size_t)kh * HD, k0, T, ks);
        load_tile<HD>(Vs, v + (size_t)b * T * ks + (size_t)kh * HD, k0, T, ks);
        __syncthreads();
        rows_times_rows_t<HD>(Sw, Qs + warp * 16 * HD, Ks);
        __syncwarp();
        /* online softmax: row r's new max, its probabilities (bf16 for the product), the
         * factor that rescales what O and the sum hold so far. Key 0 is in every row's first
         * tile, so the max is finite from then on. */
#pragma unroll
        for (int r = 0; r < 16; r++) {
            int qi = r0 + r;
            float s[2], mx = m[r];
            for (int c = 0; c < 2; c++) {
                int j = lane + 32 * c, key = k0 + j;
                s[c] = (key <= qi && key < T) ? Sw[r * FLASH_TILE + j] * scale : -INFINITY;
                mx = fmaxf(mx, s[c]);
            }
            mx = warp_max(mx);
            float alpha = expf(m[r] - mx), sum = 0.0f;
            for (int c = 0; c < 2; c++) {
                float p = s[c] == -INFINITY ? 0.0f : expf(s[c] - mx);
                Pw[r * FLASH_TILE + lane + 32 * c] = __float2bfloat16_rn(p);
                sum += p;
            }
            l[r] = l[r] * alpha + warp_sum(sum);
            m[r] = mx;
            for (int d = lane; d < HD; d += 32) {
                Ow[r * HD + d] *= alpha;
            }
        }
        __syncwarp();
        /* O += P V, O loaded into the accumulators from shared memory and stored back */
        frag_c acc[HD / 16];
        for (int n = 0; n < HD / 16; n++) {
            wmma::load_matrix_sync(acc[n], Ow + n * 16, HD, wmma::mem_row_major);
        }
        acc_p_times<HD>(acc, Pw, Vs);
        for (int n = 0; n < HD / 16; n++) {
            wmma::store_matrix_sync(Ow + n * 16, acc[n], HD, wmma::mem_row_major);
        }
        __syncwarp();
    }
#pragma unroll
    for (int r = 0; r < 16; r++) {
        int qi = r0 + r;
        if (qi >= T) {
            break;
        }
        float inv = 1.0f / l[r];
        bf16 *orow = out + ((size_t)b * T + qi) * qs + (size_t)h * HD;
        for (int d = lane; d < HD; d += 32) {
            orow[d] = __float2bfloat16_rn(Ow[r * HD + d] * inv);
        }
        if (lane == 0) {
            lse[((size_t)b * H + h) * T + qi] = m[r] + logf(l[r]);
        }
    }
}

/* ---- backward -------------------------------------------------------------------------------- */

/* D[b,h,t] = sum_d dO * O over a row, a warp per row (rows in (B,T,H) order) */
template <int HD>
__global__ void flash_bwd_dot_kernel(float *D, const bf16 *dout, const bf16 *out, int T, int H,
                                     size_t rows)
{
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;

    if (row >= rows) {
        return;
    }
    const bf16 *a = dout + row * HD, *o = out + row * HD;
    float s = 0.0f;
    for (int d = lane; d < HD; d += 32) {
        s += __bfloat162float(a[d]) * __bfloat162float(o[d]);
    }
    s = warp_sum(s);
    if (lane == 0) {
        size_t h = row % H, bt = row / H, t = bt % T, b = bt / T;
        D[(b * H + h) * T + t] = s;
    }
}

template <int HD> struct bwd_smem {
    static const size_t a = 0, b = a + FLASH_TILE * HD * 2; /* the block's rows (K,V or Q,dO) */
    static const size_t c = b + FLASH_TILE * HD * 2, d = c + FLASH_TILE * HD * 2; /* the tile's */
    static const size_t lse = d + FLASH_TILE * HD * 2, dd = lse + FLASH_TILE * 4;
    static const size_t w = dd + FLASH_TILE * 4;                   /* f32 [warps][16][128] */
    static const size_t p = w + FLASH_WARPS * 16 * FLASH_WSCR * 4; /* bf16 [warps][16][64] */
    static const size_t bytes = p + FLASH_WARPS * 16 * FLASH_TILE * 2;
};

/*
 * dK, dV of one key tile: the warp's 16 keys against every query tile at or after it, of
 * every query head of the kv group. Transposed products: S^T = K Q^T, P^T, dV += P^T dO,
 * dP^T = V dO^T, dS^T = P^T (dP^T - D), dK += dS^T Q.
 */
template <int HD>
__global__ void __launch_bounds__(FLASH_WARPS * 32)
    flash_bwd_kv_kernel(bf16 *dk, bf16 *dv, const bf16 *q, const bf16 *k, const bf16 *v,
                        const bf16 *dout, const float *lse, const float *D, int T, int H, int KV,
                        float scale)
{
    typedef bwd_smem<HD> L;
    LLAMA_CUDA_DYN_SMEM(smem);
    bf16 *Ks = (bf16 *)(smem + L::a), *Vs = (bf16 *)(smem + L::b);
    bf16 *Qs = (bf16 *)(smem + L::c), *dOs = (bf16 *)(smem + L::d);
    float *lse_s = (float *)(smem + L::lse), *D_s = (float *)(smem + L::dd);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *St = (float *)(smem + L::w) + warp * 16 * FLASH_WSCR, *dPt = St + 16 * FLASH_TILE;
    bf16 *Pt = (bf16 *)(smem + L::p) + warp * 16 * FLASH_TILE;
    int kt = blockIdx.x, b = blockIdx.y / KV, kh = blockIdx.y % KV, group = H / KV;
    int k0 = kt * FLASH_TILE, kr0 = k0 + warp * 16;
    size_t qs = (size_t)H * HD, ks = (size_t)KV * HD;
    frag_c dk_acc[HD / 16], dv_acc[HD / 16];

    for (int n = 0; n < HD / 16; n++) {
        wmma::fill_fragment(dk_acc[n], 0.0f);
        wmma::fill_fragment(dv_acc[n], 0.0f);
    }
    load_tile<HD>(Ks, k + (size_t)b * T * ks + (size_t)kh * HD, k0, T, ks);
    load_tile<HD>(Vs, v + (size_t)b * T * ks + (size_t)kh * HD, k0, T, ks);
    int nqt = llama_geom_tiles(T, FLASH_TILE);
    for (int gi = 0; gi < group; gi++) {
        int h = kh * group + gi;
        const float *lse_h = lse + ((size_t)b * H + h) * T, *D_h = D + ((size_t)b * H + h) * T;
        for (int qt = kt; qt < nqt; qt++) { /* earlier query tiles see none of these keys */
            int q0 = qt * FLASH_TILE;
            __syncthreads();
            load_tile<HD>(Qs, q + (size_t)b * T * qs + (size_t)h * HD, q0, T, qs);
            load_tile<HD>(dOs, dout + (size_t)b * T * qs + (size_t)h * HD, q0, T, qs);
            load_rows(lse_s, lse_h, q0, T, INFINITY);
            load_rows(D_s, D_h, q0, T, 0.0f);
            __syncthreads();
            rows_times_rows_t<HD>(St, Ks + warp * 16 * HD, Qs); /* S^T (16 keys x 64 q) */
            rows_times_rows_t<HD>(dPt, Vs + warp * 16 * HD, dOs);
            __syncwarp();
            for (int r = 0; r < 16; r++) {
                int key = kr0 + r;
                for (int c = 0; c < 2; c++) {
                    int j = lane + 32 * c, qi = q0 + j, e = r * FLASH_TILE + j;
                    bool ok = key <= qi && qi < T && key < T;
                    float p = ok ? expf(St[e] * scale - lse_s[j]) : 0.0f;
                    St[e] = p; /* f32 P^T, for dS^T below */
                    Pt[e] = __float2bfloat16_rn(p);
                }
            }
            __syncwarp();
            acc_p_times<HD>(dv_acc, Pt, dOs);
            __syncwarp(); /* every lane has read P^T: it becomes dS^T */
            for (int r = 0; r < 16; r++) {
                for (int c = 0; c < 2; c++) {
                    int j = lane + 32 * c, e = r * FLASH_TILE + j;
                    Pt[e] = __float2bfloat16_rn(St[e] * (dPt[e] - D_s[j]));
                }
            }
            __syncwarp();
            acc_p_times<HD>(dk_acc, Pt, Qs);
        }
    }
    __syncwarp();
    store_rows<HD>(dv + (size_t)b * T * ks + (size_t)kh * HD, ks, kr0, T, dv_acc, 1.0f, St);
    __syncwarp();
    store_rows<HD>(dk + (size_t)b * T * ks + (size_t)kh * HD, ks, kr0, T, dk_acc, scale, St);
}

/* dQ of one query tile: S = Q K^T, dP = dO V^T, dS = P (dP - D), dQ += dS K over the key
 * tiles up to the diagonal */
template <int HD>
__global__ void __launch_bounds__(FLASH_WARPS * 32)
    flash_bwd_q_kernel(bf16 *dq, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *dout,
                       const float *lse, const float *D, int T, int H, int KV, float scale)
{
    typedef bwd_smem<HD> L;
    LLAMA_CUDA_DYN_SMEM(smem);
    bf16 *Qs = (bf16 *)(smem + L::a), *dOs = (bf16 *)(smem + L::b);
    bf16 *Ks = (bf16 *)(smem + L::c), *Vs = (bf16 *)(smem + L::d);
    float *lse_s = (float *)(smem + L::lse), *D_s = (float *)(smem + L::dd);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *Sw = (float *)(smem + L::w) + warp * 16 * FLASH_WSCR, *dPw = Sw + 16 * FLASH_TILE;
    bf16 *Pw = (bf16 *)(smem + L::p) + warp * 16 * FLASH_TILE;
    int qt = blockIdx.x, b = blockIdx.y / H, h = blockIdx.y % H, kh = h / (H / KV);
    int q0 = qt * FLASH_TILE, r0 = q0 + warp * 16;
    size_t qs = (size_t)H * HD, ks = (size_t)KV * HD;
    frag_c dq_acc[HD / 16];

    for (int n = 0; n < HD / 16; n++) {
        wmma::fill_fragment(dq_acc[n], 0.0f);
    }
    load_tile<HD>(Qs, q + (size_t)b * T * qs + (size_t)h * HD, q0, T, qs);
    load_tile<HD>(dOs, dout + (size_t)b * T * qs + (size_t)h * HD, q0, T, qs);
    load_rows(lse_s, lse + ((size_t)b * H + h) * T, q0, T, INFINITY);
    load_rows(D_s, D + ((size_t)b * H + h) * T, q0, T, 0.0f);
    int ntiles = llama_geom_causal_tiles(qt, FLASH_TILE, FLASH_TILE, T);
    for (int kt = 0; kt < ntiles; kt++) {
        int k0 = kt * FLASH_TILE;
        __syncthreads();
        load_tile<HD>(Ks, k + (size_t)b * T * ks + (size_t)kh * HD, k0, T, ks);
        load_tile<HD>(Vs, v + (size_t)b * T * ks + (size_t)kh * HD, k0, T, ks);
        __syncthreads();
        rows_times_rows_t<HD>(Sw, Qs + warp * 16 * HD, Ks);
        rows_times_rows_t<HD>(dPw, dOs + warp * 16 * HD, Vs);
        __syncwarp();
        for (int r = 0; r < 16; r++) {
            int qi = r0 + r, i = warp * 16 + r;
            for (int c = 0; c < 2; c++) {
                int j = lane + 32 * c, key = k0 + j, e = r * FLASH_TILE + j;
                bool ok = key <= qi && key < T && qi < T;
                float p = ok ? expf(Sw[e] * scale - lse_s[i]) : 0.0f;
                Pw[e] = __float2bfloat16_rn(p * (dPw[e] - D_s[i]));
            }
        }
        __syncwarp();
        acc_p_times<HD>(dq_acc, Pw, Ks);
    }
    __syncwarp();
    store_rows<HD>(dq + (size_t)b * T * qs + (size_t)h * HD, qs, r0, T, dq_acc, scale, Sw);
}

/* a head size the kernels have, whose tiles fit the device's shared memory (an H100 or A100
 * takes all three; GPUs with 100 KiB a block, such as the L40S, not 128) */
template <int HD> static size_t smem_bytes()
{
    size_t f = fwd_smem<HD>::bytes, b = bwd_smem<HD>::bytes;

    return f > b ? f : b;
}

bool flash_ok(int hd)
{
    size_t need;

    switch (hd) {
    case 32: need = smem_bytes<32>(); break;
    case 64: need = smem_bytes<64>(); break;
    case 128: need = smem_bytes<128>(); break;
    default: return false;
    }
    return need <= (size_t)g.max_smem;
}

/* ---- launches ------------------------------------------------------------------------------ */

/* shared memory beyond 48 KiB is asked for once per kernel */
template <typename K> static bool smem_opt_in(K kernel, size_t bytes, bool *done)
{
    if (!*done) {
        if (!ok(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)bytes),
                "flash attention: shared memory")) {
            return false;
        }
        *done = true;
    }
    return true;
}

template <int HD>
static void fwd(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, int B, int T,
                int H, int KV)
{
    static bool opted;
    size_t bytes = fwd_smem<HD>::bytes;
    dim3 grid(llama_geom_tiles(T, FLASH_TILE), B * H);

    if (smem_opt_in(flash_fwd_kernel<HD>, bytes, &opted)) {
        LLAMA_LAUNCH(flash_fwd_kernel<HD>, grid, FLASH_WARPS * 32, bytes, out, lse, q, k, v, T, H,
                     KV, 1.0f / sqrtf((float)HD));
        launched("flash attention forward");
    }
}

template <int HD>
static void bwd(bf16 *dq, bf16 *dk, bf16 *dv, float *D, const bf16 *dout, const bf16 *q,
                const bf16 *k, const bf16 *v, const bf16 *out, const float *lse, int B, int T,
                int H, int KV)
{
    static bool opted_kv, opted_q;
    size_t bytes = bwd_smem<HD>::bytes, rows = (size_t)B * T * H;
    float scale = 1.0f / sqrtf((float)HD);

    LLAMA_LAUNCH(flash_bwd_dot_kernel<HD>, llama_geom_row_blocks(rows, LLAMA_GEOM_THREADS),
                 LLAMA_GEOM_THREADS, 0, D, dout, out, T, H, rows);
    launched("flash attention backward (rowsum)");
    if (smem_opt_in(flash_bwd_kv_kernel<HD>, bytes, &opted_kv)) {
        LLAMA_LAUNCH(flash_bwd_kv_kernel<HD>, dim3(llama_geom_tiles(T, FLASH_TILE), B * KV),
                     FLASH_WARPS * 32, bytes, dk, dv, q, k, v, dout, lse, D, T, H, KV, scale);
        launched("flash attention backward (dK, dV)");
    }
    if (smem_opt_in(flash_bwd_q_kernel<HD>, bytes, &opted_q)) {
        LLAMA_LAUNCH(flash_bwd_q_kernel<HD>, dim3(llama_geom_tiles(T, FLASH_TILE), B * H),
                     FLASH_WARPS * 32, bytes, dq, q, k, v, dout, lse, D, T, H, KV, scale);
        launched("flash attention backward (dQ)");
    }
}

void flash_fwd(float *out, float *state, const float *q, const float *k, const float *v, int B,
               int T, int H, int KV, int hd)
{
    bf16 *o = (bf16 *)out;
    const bf16 *qq = (const bf16 *)q, *kk = (const bf16 *)k, *vv = (const bf16 *)v;

    switch (hd) {
    case 32: fwd<32>(o, state, qq, kk, vv, B, T, H, KV); break;
    case 64: fwd<64>(o, state, qq, kk, vv, B, T, H, KV); break;
    default: fwd<128>(o, state, qq, kk, vv, B, T, H, KV); break;
    }
}

void flash_bwd(float *dq, float *dk, float *dv, float *scratch, const float *dout, const float *q,
               const float *k, const float *v, const float *out, const float *state, int B, int T,
               int H, int KV, int hd)
{
    bf16 *a = (bf16 *)dq, *b = (bf16 *)dk, *c = (bf16 *)dv;
    const bf16 *d = (const bf16 *)dout, *qq = (const bf16 *)q, *kk = (const bf16 *)k;
    const bf16 *vv = (const bf16 *)v, *o = (const bf16 *)out;

    switch (hd) {
    case 32: bwd<32>(a, b, c, scratch, d, qq, kk, vv, o, state, B, T, H, KV); break;
    case 64: bwd<64>(a, b, c, scratch, d, qq, kk, vv, o, state, B, T, H, KV); break;
    default: bwd<128>(a, b, c, scratch, d, qq, kk, vv, o, state, B, T, H, KV); break;
    }
}

} // namespace llama_cuda
