/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_attention_cuda: sharc-llama's bf16 attentions on a GPU at the lengths training uses,
 * forward and backward: cuDNN's fused attention (where the build has it), the tiled kernel
 * (flash.cu) and the probabilities materialized (attn.cu, "gemm"), each against the f32
 * table's materialized attention on the same bf16-rounded inputs, and cuDNN's against the
 * tiled kernel's: at T 2048, head sizes 64 and 128, grouped-query and multi-query heads.
 * out, dq, dk, dv within 3e-2 as max |x - ref| / max |ref| (test_ops_cuda's bf16 attention
 * tolerance: bf16 outputs, bf16 probabilities or score gradients inside each attention).
 * A build with cuDNN must run it at these shapes: its open with the shape fails otherwise.
 *
 * --bench: times each attention at B 4, T 2048, 32 query heads on 8 kv heads of 64, causal:
 * the best of 5 batches of 20 calls (the stream waited for after each batch), after warming
 * up, one line each:
 *   attention NAME: fwd MS ms, TF TFLOP/s; bwd MS ms, TF TFLOP/s; fwd+bwd TF TFLOP/s (...)
 * FLOPs counted as FlashAttention's benchmarks count them: forward 4 B H T^2 hd / 2 (the
 * products q k^T and p v, 2 T^2 hd each, halved by the causal mask), backward 2.5 times the
 * forward (five such products instead of two). Speed is the benchmark's, never a failure.
 * Exits 77 (SKIP) without CUDA or a GPU.
 */
#include "check.h"
#include "ops/ops_cuda.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 3e-2

typedef struct {
    int B, T, H, KV, hd;
    float *q, *k, *v, *dout; /* host, bf16-rounded: (B,T,H,hd), (B,T,KV,hd) x 2, (B,T,H,hd) */
} problem_t;

/* what an attention computed, on the host as f32 */
typedef struct {
    float *out, *dq, *dk, *dv;
} result_t;

static const struct {
    const char *name;
    llama_cuda_attention_t attention;
} variants[] = {
    {"cudnn", LLAMA_CUDA_ATTENTION_CUDNN},
    {"flash", LLAMA_CUDA_ATTENTION_FLASH},
    {"gemm", LLAMA_CUDA_ATTENTION_GEMM},
};
#define NVARIANTS (int)(sizeof(variants) / sizeof(variants[0]))

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* uniform in [-1, 1), rounded to bf16 (both tables see the same inputs) */
static float *rnd(size_t n)
{
    float *x = malloc(n * sizeof(float));

    for (size_t i = 0; i < n; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        float v = 2.0f * (float)((rng >> 11) * 0x1.0p-53) - 1.0f;
        x[i] = llama_bf16_to_f32(llama_f32_to_bf16(v));
    }
    return x;
}

/* host f32 into table @p t's memory in its act dtype */
static float *put(const llama_ops_t *t, const float *h, size_t n)
{
    float *tmp = t->alloc(n * sizeof(float));
    float *d = t->alloc(n * sharc_dtype_size(t->act_dtype));

    t->to_device(tmp, h, n * sizeof(float));
    t->cast(d, t->act_dtype, tmp, SHARC_DTYPE_F32, n);
    t->free(tmp);
    return d;
}

static float *get(const llama_ops_t *t, const float *d, size_t n)
{
    float *h = malloc(n * sizeof(float)), *tmp = t->alloc(n * sizeof(float));

    t->cast(tmp, SHARC_DTYPE_F32, d, t->act_dtype, n);
    CHECK(t->to_host(h, tmp, n * sizeof(float)) == SHARC_OK);
    t->free(tmp);
    return h;
}

/* the device buffers of one attention's forward and backward in table @p t */
typedef struct {
    float *q, *k, *v, *dout, *out, *state, *dq, *dk, *dv, *scratch;
} bufs_t;

static void bufs_alloc(const llama_ops_t *t, const problem_t *p, bufs_t *b)
{
    size_t qn = (size_t)p->B * p->T * p->H * p->hd, kn = (size_t)p->B * p->T * p->KV * p->hd;
    size_t es = sharc_dtype_size(t->act_dtype);
    size_t state = (size_t)p->B * p->H * p->T * p->T * es;
    size_t scratch = (size_t)p->B * p->KV * p->T * p->T * es;

    if (t->attention_bytes != NULL) { /* a memory-efficient attention keeps less */
        t->attention_bytes(p->B, p->T, p->H, p->KV, p->hd, &state, &scratch);
    }
    b->q = put(t, p->q, qn);
    b->k = put(t, p->k, kn);
    b->v = put(t, p->v, kn);
    b->dout = put(t, p->dout, qn);
    b->out = t->alloc(qn * es);
    b->dq = t->alloc(qn * es);
    b->dk = t->alloc(kn * es);
    b->dv = t->alloc(kn * es);
    b->state = t->alloc(state);
    b->scratch = t->alloc(scratch);
}

static void bufs_free(const llama_ops_t *t, bufs_t *b)
{
    float *all[] = {b->q, b->k, b->v, b->dout, b->out, b->dq, b->dk, b->dv, b->state, b->scratch};

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        t->free(all[i]);
    }
}

static void fwd(const llama_ops_t *t, const problem_t *p, bufs_t *b)
{
    t->attention_fwd(b->out, b->state, b->q, b->k, b->v, p->B, p->T, p->H, p->KV, p->hd);
}

static void bwd(const llama_ops_t *t, const problem_t *p, bufs_t *b)
{
    t->attention_bwd(b->dq, b->dk, b->dv, b->scratch, b->dout, b->q, b->k, b->v, b->out, b->state,
                     p->B, p->T, p->H, p->KV, p->hd);
}

/* the forward and backward of @p p on table @p t, results on the host */
static void compute(const llama_ops_t *t, const problem_t *p, result_t *r)
{
    size_t qn = (size_t)p->B * p->T * p->H * p->hd, kn = (size_t)p->B * p->T * p->KV * p->hd;
    bufs_t b;

    bufs_alloc(t, p, &b);
    fwd(t, p, &b);
    bwd(t, p, &b);
    r->out = get(t, b.out, qn);
    r->dq = get(t, b.dq, qn);
    r->dk = get(t, b.dk, kn);
    r->dv = get(t, b.dv, kn);
    bufs_free(t, &b);
}

static void result_free(result_t *r)
{
    free(r->out);
    free(r->dq);
    free(r->dk);
    free(r->dv);
    memset(r, 0, sizeof(*r));
}

/* @p got against @p want, each output; @p what names the pair */
static void expect(const char *what, const problem_t *p, const result_t *got, const result_t *want)
{
    size_t qn = (size_t)p->B * p->T * p->H * p->hd, kn = (size_t)p->B * p->T * p->KV * p->hd;
    double e[4] = {check_rel_err(got->out, want->out, qn), check_rel_err(got->dq, want->dq, qn),
                   check_rel_err(got->dk, want->dk, kn), check_rel_err(got->dv, want->dv, kn)};
    static const char *const names[] = {"out", "dq", "dk", "dv"};

    printf("  %-34s out %.2e  dq %.2e  dk %.2e  dv %.2e (limit %.0e)\n", what, e[0], e[1], e[2],
           e[3], TOL);
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(e[i] <= TOL, "B %d T %d heads %d/%d of %d: %s %s: relative error %.3g > %.3g",
                  p->B, p->T, p->H, p->KV, p->hd, what, names[i], e[i], TOL);
    }
}

static problem_t problem(int B, int T, int H, int KV, int hd)
{
    problem_t p = {B, T, H, KV, hd, NULL, NULL, NULL, NULL};
    size_t qn = (size_t)B * T * H * hd, kn = (size_t)B * T * KV * hd;

    p.q = rnd(qn);
    p.k = rnd(kn);
    p.v = rnd(kn);
    p.dout = rnd(qn);
    return p;
}

static void problem_free(problem_t *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->dout);
}

/* table of @p attention in bf16 for @p p's shape; NULL where it does not run (a failure,
 * except cuDNN's in a build without it) */
static const llama_ops_t *open_bf16(llama_cuda_attention_t attention, const problem_t *p)
{
    llama_cuda_attn_shape_t shape = {p->B, p->T, p->H, p->KV, p->hd};
    const llama_ops_t *t = NULL;
    void *stream;

    if (attention == LLAMA_CUDA_ATTENTION_CUDNN && llama_cuda_cudnn_missing() != NULL) {
        return NULL;
    }
    CHECK_MSG(llama_cuda_open(NULL, SHARC_DTYPE_BF16, attention, &shape, &t, &stream) == SHARC_OK,
              "attention %d does not run B %d T %d heads %d/%d of %d (the message above says why)",
              (int)attention, p->B, p->T, p->H, p->KV, p->hd);
    return t;
}

static void check_shape(const llama_ops_t *ref, int B, int T, int H, int KV, int hd)
{
    problem_t p = problem(B, T, H, KV, hd);
    result_t want, got[NVARIANTS];
    char what[64];

    memset(got, 0, sizeof(got));
    printf("B %d, T %d, heads %d/%d of %d, causal: against f32\n", B, T, H, KV, hd);
    compute(ref, &p, &want);
    for (int i = 0; i < NVARIANTS; i++) {
        const llama_ops_t *t = open_bf16(variants[i].attention, &p);
        if (t == NULL) {
            printf("  %-34s %s\n", variants[i].name,
                   variants[i].attention == LLAMA_CUDA_ATTENTION_CUDNN &&
                           llama_cuda_cudnn_missing() != NULL
                       ? llama_cuda_cudnn_missing()
                       : "did not open");
            continue;
        }
        compute(t, &p, &got[i]);
        snprintf(what, sizeof(what), "%s (%s)", variants[i].name, t->name);
        expect(what, &p, &got[i], &want);
        llama_cuda_close();
    }
    if (got[0].out != NULL && got[1].out != NULL) {
        expect("cudnn vs flash", &p, &got[0], &got[1]);
    }
    result_free(&want);
    for (int i = 0; i < NVARIANTS; i++) {
        if (got[i].out != NULL) {
            result_free(&got[i]);
        }
    }
    problem_free(&p);
}

/* seconds per call of @p step: the best of 5 batches of 20, the stream waited for after each */
static double best_time(const llama_ops_t *t, const problem_t *p, bufs_t *b,
                        void (*step)(const llama_ops_t *, const problem_t *, bufs_t *))
{
    double best = INFINITY;
    float sink;

    for (int batch = 0; batch < 5; batch++) {
        CHECK(t->to_host(&sink, b->out, sizeof(sink)) == SHARC_OK);
        double t0 = llama_now();
        for (int i = 0; i < 20; i++) {
            step(t, p, b);
        }
        CHECK(t->to_host(&sink, b->out, sizeof(sink)) == SHARC_OK);
        double s = (llama_now() - t0) / 20;
        best = s < best ? s : best;
    }
    return best;
}

static void bench(void)
{
    problem_t p = problem(4, 2048, 32, 8, 64);
    /* FlashAttention's count: 4 B H T^2 hd forward, halved by the causal mask */
    double flops = 4.0 * p.B * p.H * (double)p.T * p.T * p.hd / 2;

    for (int i = 0; i < NVARIANTS; i++) {
        const llama_ops_t *t = open_bf16(variants[i].attention, &p);
        bufs_t b;
        if (t == NULL) {
            printf("attention %s: not run (%s)\n", variants[i].name,
                   llama_cuda_cudnn_missing() != NULL ? llama_cuda_cudnn_missing()
                                                      : "did not open");
            continue;
        }
        bufs_alloc(t, &p, &b);
        for (int w = 0; w < 3; w++) { /* clocks, caches, cuDNN's first launches */
            fwd(t, &p, &b);
            bwd(t, &p, &b);
        }
        double f = best_time(t, &p, &b, fwd), g = best_time(t, &p, &b, bwd);
        printf("attention %s: fwd %.3f ms, %.1f TFLOP/s; bwd %.3f ms, %.1f TFLOP/s; fwd+bwd "
               "%.1f TFLOP/s (%s; B %d, T %d, heads %d/%d of %d, causal)\n",
               variants[i].name, f * 1e3, flops / f / 1e12, g * 1e3, 2.5 * flops / g / 1e12,
               3.5 * flops / (f + g) / 1e12, t->name, p.B, p.T, p.H, p.KV, p.hd);
        bufs_free(t, &b);
        llama_cuda_close();
    }
    problem_free(&p);
}

int main(int argc, char **argv)
{
    int timing = argc > 1 && strcmp(argv[1], "--bench") == 0;
    const llama_ops_t *ref = NULL;
    void *stream;

    if (llama_cuda_pick_device() == SHARC_ERR_UNSUPPORTED) {
        printf("SKIP: no CUDA table or no GPU here (the message above says which)\n");
        return 77;
    }
    if (timing) {
        bench();
        return check_result("test_attention_cuda --bench");
    }
    /* the reference: the f32 table's materialized attention, open throughout */
    CHECK(llama_cuda_open(NULL, SHARC_DTYPE_F32, LLAMA_CUDA_ATTENTION_GEMM, NULL, &ref, &stream) ==
          SHARC_OK);
    if (check_failures == 0) {
        check_shape(ref, 1, 2048, 16, 4, 64);
        check_shape(ref, 1, 2048, 8, 2, 128);
        check_shape(ref, 2, 2048, 8, 1, 64); /* one kv head for all */
        llama_cuda_close();
    }
    printf("test_attention_cuda: %s\n", check_failures ? "FAILED" : "ok");
    return check_result("test_attention_cuda");
}
