/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cpu/cpu.c: llama_ops_t on the CPU in f32. The compute threads are OpenMP's: matrix
 * products are split over them in slices, each a single-threaded BLAS call (cblas_sgemm);
 * attention runs its (batch, head) pairs on them at once, each as small products; the row and
 * element loops are split over the same threads. Built without OpenMP, BLAS threads the
 * products itself and the loops run on one thread. Shapes are in ops.h; every buffer is f32
 * host memory, and the optimizer's loops are here too (model/optim.c drives them).
 */
#include "../ops.h"
#include "../../util.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int cpu_threads = 1;

static void cpu_set_threads(int n)
{
    cpu_threads = n > 0 ? n : 1;
#ifdef _OPENMP
    /* the threads are OpenMP's; BLAS runs single threaded inside them */
    openblas_set_num_threads(1);
#else
    openblas_set_num_threads(cpu_threads);
#endif
}

/* element loops shorter than this stay on one thread */
#define PAR_MIN 32768

static void *cpu_alloc(size_t bytes)
{
    void *ptr = NULL;

    /* 64-byte rows for the vector units; calloc semantics */
    if (posix_memalign(&ptr, 64, bytes ? bytes : 64) != 0) {
        return NULL;
    }
    memset(ptr, 0, bytes);
    return ptr;
}

static void cpu_free(void *ptr)
{
    free(ptr);
}

static void cpu_zero(void *x, size_t bytes)
{
    memset(x, 0, bytes);
}

static void cpu_to_device(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

static sharc_status_t cpu_to_host(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return SHARC_OK;
}

/* f32 and bf16 only (ops.h); the CPU computes in f32, so it casts weights up, gradients down */
static void cpu_cast(void *dst, sharc_dtype_t dst_dtype, const void *src, sharc_dtype_t src_dtype,
                     size_t n)
{
    if (dst_dtype == src_dtype) {
        memcpy(dst, src, n * sharc_dtype_size(dst_dtype));
    } else if (dst_dtype == SHARC_DTYPE_F32) {
        const uint16_t *s = src;
        float *d = dst;
        for (size_t i = 0; i < n; i++) {
            d[i] = llama_bf16_to_f32(s[i]);
        }
    } else {
        const float *s = src;
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) {
            d[i] = llama_f32_to_bf16(s[i]);
        }
    }
}

static void cpu_acc(void *dst, sharc_dtype_t dst_dtype, const float *src, size_t n)
{
    if (dst_dtype == SHARC_DTYPE_F32) {
        float *d = dst;
        for (size_t i = 0; i < n; i++) {
            d[i] += src[i];
        }
    } else {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) {
            d[i] = llama_f32_to_bf16(llama_bf16_to_f32(d[i]) + src[i]);
        }
    }
}

static sharc_status_t cpu_wait(sharc_request_h req)
{
    sharc_status_t status = sharc_request_wait(req);

    sharc_request_free(req);
    return status;
}

/*
 * With several threads each product is split over the OpenMP threads by hand, one
 * single-threaded BLAS call per slice: rows of the output for out and din, rows of dw (its
 * output channels) for dw. Every element is still one dot product in one call: the result
 * matches the unsplit product to rounding, and BLAS starts no workers of its own that would
 * spin while the element loops run.
 */
static void slice(int n, int parts, int i, int *lo, int *len)
{
    int base = n / parts, extra = n % parts;

    *lo = i * base + (i < extra ? i : extra);
    *len = base + (i < extra ? 1 : 0);
}

static void cpu_matmul_fwd(float *out, const float *in, const float *w, int N, int Cin, int Cout)
{
#pragma omp parallel num_threads(cpu_threads) if (cpu_threads > 1)
    {
        int lo = 0, len = N;
#ifdef _OPENMP
        slice(N, omp_get_num_threads(), omp_get_thread_num(), &lo, &len);
#endif
        if (len > 0) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, Cout, Cin, 1.0f,
                        in + (size_t)lo * Cin, Cin, w, Cin, 0.0f, out + (size_t)lo * Cout, Cout);
        }
    }
}

static void cpu_matmul_bwd(float *din, float *dw, const float *dout, const float *in,
                           const float *w, int N, int Cin, int Cout, int din_add)
{
#pragma omp parallel num_threads(cpu_threads) if (cpu_threads > 1)
    {
        int lo = 0, len = N, parts = 1, me = 0;
#ifdef _OPENMP
        parts = omp_get_num_threads();
        me = omp_get_thread_num();
#endif
        slice(N, parts, me, &lo, &len);
        if (din != NULL && len > 0) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, len, Cin, Cout, 1.0f,
                        dout + (size_t)lo * Cout, Cout, w, Cin, din_add ? 1.0f : 0.0f,
                        din + (size_t)lo * Cin, Cin);
        }
        slice(Cout, parts, me, &lo, &len);
        if (len > 0) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, len, Cin, N, 1.0f, dout + lo, Cout,
                        in, Cin, 1.0f, dw + (size_t)lo * Cin, Cin);
        }
    }
}

static void cpu_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int N, int C,
                            float eps)
{
#pragma omp parallel for num_threads(cpu_threads) schedule(static) if ((size_t)N * C >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C;
        float *on = out + (size_t)n * C;
        float ss = 0.0f;

        for (int c = 0; c < C; c++) {
            ss += xn[c] * xn[c];
        }
        float r = 1.0f / sqrtf(ss / (float)C + eps);
        for (int c = 0; c < C; c++) {
            on[c] = xn[c] * r * w[c];
        }
        rstd[n] = r;
    }
}

/*
 * y = w * x * r with r = (mean(x^2) + eps)^-1/2:
 *   dw += dy * x * r;  dx = r * (w*dy) - x * r^3 / C * sum(w*dy * x)
 */
static void cpu_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                            const float *rstd, int N, int C)
{
    /* dx row by row on the threads; dw, a sum over rows, in a second pass by columns so the
     * order of its sum is the same whatever the thread count */
#pragma omp parallel for num_threads(cpu_threads) schedule(static) if ((size_t)N * C >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C;
        const float *dn = dout + (size_t)n * C;
        float *dxn = dx + (size_t)n * C;
        float r = rstd[n];
        float dot = 0.0f;

        for (int c = 0; c < C; c++) {
            dot += w[c] * dn[c] * xn[c];
        }
        float k = dot * r * r * r / (float)C;
        for (int c = 0; c < C; c++) {
            dxn[c] += r * w[c] * dn[c] - k * xn[c];
        }
    }
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C;
        const float *dn = dout + (size_t)n * C;
        float r = rstd[n];

        for (int c = 0; c < C; c++) {
            dw[c] += dn[c] * xn[c] * r;
        }
    }
}

/* sign +1: forward rotation; -1: its transpose (backward) */
static void rope_apply(float *x, const float *cos, const float *sin, int B, int T, int nh, int hd,
                       float sign)
{
    int half = hd / 2;

#pragma omp parallel for collapse(2) num_threads(cpu_threads)                                      \
    schedule(static) if ((size_t)B * T * nh * hd >= PAR_MIN)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *c = cos + (size_t)t * half;
            const float *s = sin + (size_t)t * half;
            for (int h = 0; h < nh; h++) {
                float *v = x + (((size_t)b * T + t) * nh + h) * hd;
                for (int i = 0; i < half; i++) {
                    float a = v[i], z = v[i + half];
                    v[i] = a * c[i] - sign * z * s[i];
                    v[i + half] = z * c[i] + sign * a * s[i];
                }
            }
        }
    }
}

static void cpu_rope_fwd(float *x, const float *cos, const float *sin, int B, int T, int nh, int hd)
{
    rope_apply(x, cos, sin, B, T, nh, hd, 1.0f);
}

static void cpu_rope_bwd(float *dx, const float *cos, const float *sin, int B, int T, int nh,
                         int hd)
{
    rope_apply(dx, cos, sin, B, T, nh, hd, -1.0f);
}

static void cpu_attention_fwd(float *out, float *probs, const float *q, const float *k,
                              const float *v, int B, int T, int H, int KV, int hd)
{
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, qs = H * hd, ks = KV * hd;

#pragma omp parallel for collapse(2) num_threads(cpu_threads) schedule(dynamic)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *qb = q + (size_t)b * T * qs + (size_t)h * hd; /* (T,hd), ld qs */
            const float *kb = k + (size_t)b * T * ks + (size_t)(h / group) * hd;
            const float *vb = v + (size_t)b * T * ks + (size_t)(h / group) * hd;
            float *p = probs + ((size_t)b * H + h) * T * T; /* (T,T) */

            /* scores = q k^T * scale; the upper triangle is computed and then masked, which
             * costs less than T small products */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, scale, qb, qs, kb, ks,
                        0.0f, p, T);
            for (int i = 0; i < T; i++) {
                float *row = p + (size_t)i * T;
                float mx = row[0], sum = 0.0f;
                for (int j = 1; j <= i; j++) {
                    mx = row[j] > mx ? row[j] : mx;
                }
                for (int j = 0; j <= i; j++) {
                    row[j] = expf(row[j] - mx);
                    sum += row[j];
                }
                float inv = 1.0f / sum;
                for (int j = 0; j <= i; j++) {
                    row[j] *= inv;
                }
                for (int j = i + 1; j < T; j++) {
                    row[j] = 0.0f;
                }
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, p, T, vb, ks,
                        0.0f, out + (size_t)b * T * qs + (size_t)h * hd, qs);
        }
    }
}

/*
 * o = P v, P = softmax(S), S = q k^T * scale (causal):
 *   dP = do v^T;  dv += P^T do;  dS = P * (dP - rowsum(dP * P));  dq = dS k * scale;
 *   dk += dS^T q * scale.  Several query heads share a kv head, hence the sums into dk, dv.
 */
static void cpu_attention_bwd(float *dq, float *dk, float *dv, float *scratch, const float *dout,
                              const float *q, const float *k, const float *v, const float *out,
                              const float *probs, int B, int T, int H, int KV, int hd)
{
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, qs = H * hd, ks = KV * hd;

    memset(dk, 0, (size_t)B * T * ks * sizeof(float));
    memset(dv, 0, (size_t)B * T * ks * sizeof(float));
    /* one (batch, kv head) per item: its query heads add into its dk, dv in order */
#pragma omp parallel for collapse(2) num_threads(cpu_threads) schedule(dynamic)
    for (int b = 0; b < B; b++) {
        for (int kh = 0; kh < KV; kh++) {
            for (int h = kh * group; h < (kh + 1) * group; h++) {
                size_t qoff = (size_t)b * T * qs + (size_t)h * hd;
                size_t koff = (size_t)b * T * ks + (size_t)kh * hd;
                const float *p = probs + ((size_t)b * H + h) * T * T;
                float *ds = scratch + ((size_t)b * KV + kh) * T * T; /* (T,T): dP, then dS */

                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, 1.0f, dout + qoff,
                            qs, v + koff, ks, 0.0f, ds, T);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, p, T,
                            dout + qoff, qs, 1.0f, dv + koff, ks);
                for (int i = 0; i < T; i++) {
                    const float *pr = p + (size_t)i * T;
                    float *dr = ds + (size_t)i * T;
                    float dot = 0.0f;
                    for (int j = 0; j <= i; j++) {
                        dot += pr[j] * dr[j];
                    }
                    for (int j = 0; j <= i; j++) {
                        dr[j] = pr[j] * (dr[j] - dot);
                    }
                    for (int j = i + 1; j < T; j++) {
                        dr[j] = 0.0f;
                    }
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, scale, ds, T,
                            k + koff, ks, 0.0f, dq + qoff, qs);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, scale, ds, T,
                            q + qoff, qs, 1.0f, dk + koff, ks);
            }
        }
    }
}

static void cpu_swiglu_fwd(float *h, const float *g, const float *u, size_t n)
{
#pragma omp parallel for num_threads(cpu_threads) schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + expf(-g[i]));
        h[i] = g[i] * s * u[i];
    }
}

/* silu(g) = g s, s = sigmoid(g); silu'(g) = s (1 + g (1 - s)) */
static void cpu_swiglu_bwd(float *dg, float *du, const float *dh, const float *g, const float *u,
                           size_t n)
{
#pragma omp parallel for num_threads(cpu_threads) schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + expf(-g[i]));
        du[i] = dh[i] * g[i] * s;
        dg[i] = dh[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
    }
}

static void cpu_embed_fwd(float *x, const int32_t *tokens, const float *table, int N, int C)
{
    for (int n = 0; n < N; n++) {
        memcpy(x + (size_t)n * C, table + (size_t)tokens[n] * C, (size_t)C * sizeof(float));
    }
}

static void cpu_embed_bwd(float *dtable, const float *dx, const int32_t *tokens, int N, int C)
{
    for (int n = 0; n < N; n++) {
        float *row = dtable + (size_t)tokens[n] * C;
        const float *d = dx + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            row[c] += d[c];
        }
    }
}

static void cpu_xent(float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                     float dscale, double *loss)
{
    double total = 0.0;

    /* one exp per logit: kept in dlogits (which may be logits: the target's logit and the
     * maximum are read first) and scaled by the row's sum; sums in double */
#pragma omp parallel for num_threads(cpu_threads) schedule(static) reduction(+ : total) \
    if ((size_t)N * V >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        float mx = l[0], lt = l[targets[n]];
        double sum = 0.0;

        for (int j = 1; j < V; j++) {
            mx = l[j] > mx ? l[j] : mx;
        }
        if (dlogits != NULL) {
            float *d = dlogits + (size_t)n * V;
            for (int j = 0; j < V; j++) {
                d[j] = expf(l[j] - mx);
                sum += d[j];
            }
            float k = (float)(dscale / sum);
            for (int j = 0; j < V; j++) {
                d[j] *= k;
            }
            d[targets[n]] -= dscale;
        } else {
            for (int j = 0; j < V; j++) {
                sum += expf(l[j] - mx);
            }
        }
        total += (double)mx + log(sum) - (double)lt;
    }
    *loss += total;
}

static void cpu_add(float *y, const float *a, const float *b, size_t n)
{
#pragma omp parallel for num_threads(cpu_threads) schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        y[i] = a[i] + b[i];
    }
}

/* one pass in f64, in order: the same sum on every run and thread count */
static void cpu_sumsq(double *acc, const float *x, size_t n)
{
    double s = *acc;

    for (size_t i = 0; i < n; i++) {
        s += (double)x[i] * x[i];
    }
    *acc = s;
}

static void cpu_adamw(const llama_adamw_t *a, float *p, const float *g, float *m, float *v,
                      size_t n, const double *sumsq)
{
    float clip = llama_clip_factor(*sumsq, a->replicas, a->grad_clip);

    for (int r = 0; r < a->nranges; r++) {
        for (size_t i = a->start[r]; i < a->start[r] + a->count[r]; i++) {
            p[i] *= a->keep;
        }
    }
#pragma omp parallel for num_threads(cpu_threads) schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * clip;
        m[i] = a->beta1 * m[i] + (1.0f - a->beta1) * gi;
        v[i] = a->beta2 * v[i] + (1.0f - a->beta2) * gi * gi;
        p[i] -= a->step_size * m[i] / (sqrtf(v[i]) / a->bc2_sqrt + a->eps);
    }
}

/* Events are the host's clock: every call above returns with its work done. */
static void *cpu_event_create(void)
{
    return calloc(1, sizeof(double));
}

static void cpu_event_destroy(void *event)
{
    free(event);
}

static void cpu_event_record(void *event)
{
    *(double *)event = llama_now();
}

static double cpu_event_elapsed(void *from, void *to)
{
    return *(const double *)to - *(const double *)from;
}

const llama_ops_t llama_ops_cpu = {
    .name = "cpu",
    .act_dtype = SHARC_DTYPE_F32,
    .memtype = SHARC_MEMTYPE_HOST,
    .set_threads = cpu_set_threads,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .zero = cpu_zero,
    .to_device = cpu_to_device,
    .to_host = cpu_to_host,
    .cast = cpu_cast,
    .acc = cpu_acc,
    .wait = cpu_wait,
    .matmul_fwd = cpu_matmul_fwd,
    .matmul_bwd = cpu_matmul_bwd,
    .rmsnorm_fwd = cpu_rmsnorm_fwd,
    .rmsnorm_bwd = cpu_rmsnorm_bwd,
    .rope_fwd = cpu_rope_fwd,
    .rope_bwd = cpu_rope_bwd,
    .attention_fwd = cpu_attention_fwd,
    .attention_bwd = cpu_attention_bwd,
    .swiglu_fwd = cpu_swiglu_fwd,
    .swiglu_bwd = cpu_swiglu_bwd,
    .embed_fwd = cpu_embed_fwd,
    .embed_bwd = cpu_embed_bwd,
    .xent = cpu_xent,
    .add = cpu_add,
    .sumsq = cpu_sumsq,
    .adamw = cpu_adamw,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_elapsed = cpu_event_elapsed,
};
