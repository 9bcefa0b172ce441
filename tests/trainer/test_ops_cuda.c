/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ops_cuda: every op of sharc-llama's CUDA tables against the CPU table (which
 * test_llama_hf checks against transformers), on random inputs, forward and backward, with
 * odd sizes (rows, columns and sequence lengths that are no multiple of a warp or a tile),
 * grouped-query heads, accumulation into existing gradients and in-place cross-entropy.
 *
 * Tolerances, as max |gpu - cpu| / max |cpu| over each output:
 *   f32 table:  1e-5 (products: other summation orders; element-wise ops: the same formula,
 *               2e-6 expected), the optimizer 1e-6, casts and bf16 accumulation bit-exact;
 *   bf16 tables: the inputs are rounded to bf16 for both tables, so the difference is the
 *               GPU's rounding of outputs (2^-9 relative) and of the intermediates it stores in
 *               bf16: 1e-2 for element-wise ops, norms and products, 3e-2 for attention
 *               (bf16 scores and probabilities materialized, or bf16 probabilities and score
 *               gradients inside the tiled kernel), 1e-3 for the loss.
 * The bf16 table runs three times: with the tiled (flash) attention, for head sizes 32, 64 and
 * 128 (the others fall back), with the probabilities materialized, and with cuDNN's fused
 * attention where the build has it (head sizes 64 and 128; the others take the tiled path).
 * The GPU's reductions run in a fixed order: a second run must give the same bits.
 * Exits 77 (SKIP) without CUDA or without a GPU.
 *
 * Built as test_ops_cuda_emu (LLAMA_TEST_SMALL, linked with ops_cuda_emu.cc), the same checks
 * run here on the host emulation of the CUDA table (tests/trainer/cuda_emu.h), on smaller
 * sizes of the same kinds: the kernels and the cuBLAS arguments, but not the GPU's arithmetic.
 */
#include "check.h"
#include "ops/ops_cuda.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sizes: the GPU's, or the host emulation's (slower by far) */
#ifdef LLAMA_TEST_SMALL
#define SIZE(_gpu, _emu) (_emu)
#else
#define SIZE(_gpu, _emu) (_gpu)
#endif

static const llama_ops_t *cpu = &llama_ops_cpu, *gpu;
static int bf16; /* the table under test computes in bf16 */
static uint64_t rng = 88172645463325252ull;

/* uniform in [-scale, scale), rounded to bf16 for a bf16 table */
static float *rnd(size_t n, float scale)
{
    float *x = malloc(n * sizeof(float));

    for (size_t i = 0; i < n; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        float v = scale * (2.0f * (float)((rng >> 11) * 0x1.0p-53) - 1.0f);
        x[i] = bf16 ? llama_bf16_to_f32(llama_f32_to_bf16(v)) : v;
    }
    return x;
}

/* a copy of host f32 values in the GPU table's memory: act dtype, or f32 with @p f32 */
static float *put_as(const float *h, size_t n, int f32)
{
    size_t es = f32 ? sizeof(float) : sharc_dtype_size(gpu->act_dtype);
    float *tmp = gpu->alloc(n * sizeof(float)), *d = gpu->alloc(n * es);

    gpu->to_device(tmp, h, n * sizeof(float));
    gpu->cast(d, f32 ? SHARC_DTYPE_F32 : gpu->act_dtype, tmp, SHARC_DTYPE_F32, n);
    gpu->free(tmp);
    return d;
}

static float *put(const float *h, size_t n)
{
    return put_as(h, n, 0);
}

static float *put32(const float *h, size_t n)
{
    return put_as(h, n, 1);
}

/* the GPU buffer as host f32 (a new array) */
static float *get_as(const float *d, size_t n, int f32)
{
    float *h = malloc(n * sizeof(float)), *tmp = gpu->alloc(n * sizeof(float));

    gpu->cast(tmp, SHARC_DTYPE_F32, d, f32 ? SHARC_DTYPE_F32 : gpu->act_dtype, n);
    CHECK(gpu->to_host(h, tmp, n * sizeof(float)) == SHARC_OK);
    gpu->free(tmp);
    return h;
}

static float *get(const float *d, size_t n)
{
    return get_as(d, n, 0);
}

static float *get32(const float *d, size_t n)
{
    return get_as(d, n, 1);
}

/* a GPU buffer (act dtype) of random values: outputs start as garbage, so an op that fails to
 * write one is caught */
static float *garbage(size_t n)
{
    float *h = rnd(n, 9.0f), *d = put(h, n);

    free(h);
    return d;
}

static float *garbage32(size_t n)
{
    float *h = rnd(n, 9.0f), *d = put32(h, n);

    free(h);
    return d;
}

static float *dup(const float *x, size_t n)
{
    float *y = malloc(n * sizeof(float));
    memcpy(y, x, n * sizeof(float));
    return y;
}

/* compare the GPU's result (freed here) against the CPU's */
static void expect(const char *what, float *got, const float *want, size_t n, double f32_tol,
                   double bf16_tol)
{
    double e = check_rel_err(got, want, n), tol = bf16 ? bf16_tol : f32_tol;

    CHECK_MSG(e <= tol, "%s %s: relative error %.3g > %.3g", gpu->name, what, e, tol);
    printf("  %-28s %.2e (limit %.0e)\n", what, e, tol);
    free(got);
}

/* ---- the ops --------------------------------------------------------------------------------- */

static void test_matmul(int N, int Cin, int Cout)
{
    float *in = rnd((size_t)N * Cin, 1.0f), *w = rnd((size_t)Cout * Cin, 0.5f);
    float *dout = rnd((size_t)N * Cout, 1.0f), *din0 = rnd((size_t)N * Cin, 1.0f);
    float *dw0 = rnd((size_t)Cout * Cin, 1.0f);
    float *out = malloc((size_t)N * Cout * sizeof(float)), *din = dup(din0, (size_t)N * Cin);
    float *dw = dup(dw0, (size_t)Cout * Cin);
    float *g_in = put(in, (size_t)N * Cin), *g_w = put(w, (size_t)Cout * Cin);
    float *g_out = garbage((size_t)N * Cout), *g_dout = put(dout, (size_t)N * Cout);
    float *g_din = put(din0, (size_t)N * Cin), *g_dw = put32(dw0, (size_t)Cout * Cin);
    char what[64];

    cpu->matmul_fwd(out, in, w, N, Cin, Cout);
    gpu->matmul_fwd(g_out, g_in, g_w, N, Cin, Cout);
    snprintf(what, sizeof(what), "matmul fwd %dx%dx%d", N, Cin, Cout);
    expect(what, get(g_out, (size_t)N * Cout), out, (size_t)N * Cout, 1e-5, 1e-2);
    for (int add = 0; add <= 1; add++) {
        cpu->matmul_bwd(din, dw, dout, in, w, N, Cin, Cout, add);
        gpu->matmul_bwd(g_din, g_dw, g_dout, g_in, g_w, N, Cin, Cout, add);
        snprintf(what, sizeof(what), "matmul bwd din%s", add ? " +=" : "");
        expect(what, get(g_din, (size_t)N * Cin), din, (size_t)N * Cin, 1e-5, 1e-2);
        snprintf(what, sizeof(what), "matmul bwd dw += (x%d)", add + 1);
        expect(what, get32(g_dw, (size_t)Cout * Cin), dw, (size_t)Cout * Cin, 1e-5, 1e-2);
    }
    void *bufs[] = {in, w, dout, din0, dw0, out, din, dw};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
        free(bufs[i]);
    }
    float *gbufs[] = {g_in, g_w, g_out, g_dout, g_din, g_dw};
    for (size_t i = 0; i < sizeof(gbufs) / sizeof(gbufs[0]); i++) {
        gpu->free(gbufs[i]);
    }
}

static void test_rmsnorm(int N, int C)
{
    size_t n = (size_t)N * C;
    float *x = rnd(n, 2.0f), *w = rnd((size_t)C, 1.0f), *dy = rnd(n, 1.0f), *dx0 = rnd(n, 0.5f);
    float *dw0 = rnd((size_t)C, 0.5f), *out = malloc(n * sizeof(float));
    float *rstd = malloc((size_t)N * sizeof(float)), *dx = dup(dx0, n), *dw = dup(dw0, (size_t)C);
    float *g_x = put(x, n), *g_w = put(w, (size_t)C), *g_dy = put(dy, n), *g_dx = put(dx0, n);
    float *g_dw = put32(dw0, (size_t)C), *g_out = garbage(n), *g_rstd = garbage32((size_t)N);

    cpu->rmsnorm_fwd(out, rstd, x, w, N, C, 1e-5f);
    gpu->rmsnorm_fwd(g_out, g_rstd, g_x, g_w, N, C, 1e-5f);
    expect("rmsnorm fwd", get(g_out, n), out, n, 1e-5, 1e-2);
    expect("rmsnorm fwd rstd", get32(g_rstd, (size_t)N), rstd, (size_t)N, 1e-5, 1e-5);
    cpu->rmsnorm_bwd(dx, dw, dy, x, w, rstd, N, C);
    gpu->rmsnorm_bwd(g_dx, g_dw, g_dy, g_x, g_w, g_rstd, N, C);
    expect("rmsnorm bwd dx +=", get(g_dx, n), dx, n, 1e-5, 1e-2);
    float *first = get32(g_dw, (size_t)C);
    expect("rmsnorm bwd dw +=", dup(first, (size_t)C), dw, (size_t)C, 1e-5, 1e-2);
    /* the column sums in a fixed order: the same bits again */
    gpu->to_device(g_dw, dw0, (size_t)C * sizeof(float));
    gpu->rmsnorm_bwd(g_dx, g_dw, g_dy, g_x, g_w, g_rstd, N, C);
    float *again = get32(g_dw, (size_t)C);
    CHECK_MSG(memcmp(first, again, (size_t)C * sizeof(float)) == 0,
              "%s rmsnorm bwd: dw differs between two runs", gpu->name);
    free(first);
    free(again);
    void *bufs[] = {x, w, dy, dx0, dw0, out, rstd, dx, dw};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
        free(bufs[i]);
    }
    float *gbufs[] = {g_x, g_w, g_dy, g_dx, g_dw, g_out, g_rstd};
    for (size_t i = 0; i < sizeof(gbufs) / sizeof(gbufs[0]); i++) {
        gpu->free(gbufs[i]);
    }
}

static void test_rope(int B, int T, int nh, int hd)
{
    size_t n = (size_t)B * T * nh * hd, half = (size_t)T * hd / 2;
    float *x = rnd(n, 1.0f), *cs = malloc(2 * half * sizeof(float)), *y = dup(x, n);

    /* the tables of a real rotary embedding: angles t * theta^(-2i/hd) */
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < hd / 2; i++) {
            float a = (float)t * powf(10000.0f, -2.0f * i / hd);
            cs[(size_t)t * hd / 2 + i] = cosf(a);
            cs[half + (size_t)t * hd / 2 + i] = sinf(a);
        }
    }
    float *g_x = put(x, n), *g_c = put32(cs, half), *g_s = put32(cs + half, half);
    cpu->rope_fwd(y, cs, cs + half, B, T, nh, hd);
    gpu->rope_fwd(g_x, g_c, g_s, B, T, nh, hd);
    expect("rope fwd", get(g_x, n), y, n, 1e-5, 1e-2);
    cpu->rope_bwd(y, cs, cs + half, B, T, nh, hd);
    gpu->rope_bwd(g_x, g_c, g_s, B, T, nh, hd);
    expect("rope bwd", get(g_x, n), y, n, 1e-5, 1e-2);
    free(x);
    free(cs);
    free(y);
    gpu->free(g_x);
    gpu->free(g_c);
    gpu->free(g_s);
}

static void test_attention(int B, int T, int H, int KV, int hd)
{
    size_t qn = (size_t)B * T * H * hd, kn = (size_t)B * T * KV * hd;
    size_t pn = (size_t)B * H * T * T, sn = (size_t)B * KV * T * T;
    float *q = rnd(qn, 1.0f), *k = rnd(kn, 1.0f), *v = rnd(kn, 1.0f), *dout = rnd(qn, 1.0f);
    float *out = malloc(qn * sizeof(float)), *probs = malloc(pn * sizeof(float));
    float *dq = malloc(qn * sizeof(float)), *dk = malloc(kn * sizeof(float));
    float *dv = malloc(kn * sizeof(float)), *scr = malloc(sn * sizeof(float));
    float *g_q = put(q, qn), *g_k = put(k, kn), *g_v = put(v, kn), *g_do = put(dout, qn);
    size_t es = sharc_dtype_size(gpu->act_dtype), state = pn * es, scratch = sn * es;
    if (gpu->attention_bytes != NULL) { /* tiled or cuDNN's: less than the probabilities */
        gpu->attention_bytes(B, T, H, KV, hd, &state, &scratch);
    }
    int materialized = state == pn * es;
    float *g_out = garbage(qn), *g_p = garbage(state / es), *g_dq = garbage(qn);
    float *g_dk = garbage(kn), *g_dv = garbage(kn), *g_s = garbage(scratch / es);
    char what[64];

    cpu->attention_fwd(out, probs, q, k, v, B, T, H, KV, hd);
    gpu->attention_fwd(g_out, g_p, g_q, g_k, g_v, B, T, H, KV, hd);
    snprintf(what, sizeof(what), "attention fwd T%d H%d/%d hd%d%s", T, H, KV, hd,
             materialized ? "" : " tiled");
    expect(what, get(g_out, qn), out, qn, 1e-5, 3e-2);
    if (materialized) {
        expect("attention fwd probs", get(g_p, pn), probs, pn, 1e-5, 1e-2);
    }
    cpu->attention_bwd(dq, dk, dv, scr, dout, q, k, v, out, probs, B, T, H, KV, hd);
    gpu->attention_bwd(g_dq, g_dk, g_dv, g_s, g_do, g_q, g_k, g_v, g_out, g_p, B, T, H, KV, hd);
    expect("attention bwd dq", get(g_dq, qn), dq, qn, 1e-5, 3e-2);
    expect("attention bwd dk", get(g_dk, kn), dk, kn, 1e-5, 3e-2);
    expect("attention bwd dv", get(g_dv, kn), dv, kn, 1e-5, 3e-2);
    void *bufs[] = {q, k, v, dout, out, probs, dq, dk, dv, scr};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
        free(bufs[i]);
    }
    float *gbufs[] = {g_q, g_k, g_v, g_do, g_out, g_p, g_dq, g_dk, g_dv, g_s};
    for (size_t i = 0; i < sizeof(gbufs) / sizeof(gbufs[0]); i++) {
        gpu->free(gbufs[i]);
    }
}

static void test_swiglu_add(size_t n)
{
    float *gt = rnd(n, 6.0f), *u = rnd(n, 2.0f), *dh = rnd(n, 1.0f), *h = malloc(n * sizeof(float));
    float *dg = malloc(n * sizeof(float)), *du = malloc(n * sizeof(float));
    float *g_g = put(gt, n), *g_u = put(u, n), *g_dh = put(dh, n), *g_h = garbage(n);
    float *g_dg = garbage(n), *g_du = garbage(n);
    cpu->swiglu_fwd(h, gt, u, n);
    gpu->swiglu_fwd(g_h, g_g, g_u, n);
    expect("swiglu fwd", get(g_h, n), h, n, 1e-5, 1e-2);
    cpu->swiglu_bwd(dg, du, dh, gt, u, n);
    gpu->swiglu_bwd(g_dg, g_du, g_dh, g_g, g_u, n);
    expect("swiglu bwd dg", get(g_dg, n), dg, n, 1e-5, 1e-2);
    expect("swiglu bwd du", get(g_du, n), du, n, 1e-5, 1e-2);
    cpu->add(h, gt, u, n);
    gpu->add(g_h, g_g, g_u, n);
    expect("add", get(g_h, n), h, n, 1e-6, 1e-2);
    gpu->add(g_g, g_g, g_u, n); /* in place */
    expect("add in place", get(g_g, n), h, n, 1e-6, 1e-2);
    void *bufs[] = {gt, u, dh, h, dg, du};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
        free(bufs[i]);
    }
    float *gbufs[] = {g_g, g_u, g_dh, g_h, g_dg, g_du};
    for (size_t i = 0; i < sizeof(gbufs) / sizeof(gbufs[0]); i++) {
        gpu->free(gbufs[i]);
    }
}

static void test_embed(int N, int C, int V)
{
    size_t n = (size_t)N * C, tn = (size_t)V * C;
    float *table = rnd(tn, 1.0f), *dx = rnd(n, 1.0f), *dt0 = rnd(tn, 1.0f);
    float *x = malloc(n * sizeof(float)), *dt = dup(dt0, tn);
    int32_t *tok = malloc((size_t)N * sizeof(int32_t));

    /* few distinct tokens, so rows repeat (and some of the table is never read) */
    for (int i = 0; i < N; i++) {
        tok[i] = (int32_t)((i * 7 + i / 3) % (V / 2 + 1));
    }
    float *g_t = put(table, tn), *g_x = garbage(n), *g_dx = put(dx, n), *g_dt = put32(dt0, tn);
    cpu->embed_fwd(x, tok, table, N, C);
    gpu->embed_fwd(g_x, tok, g_t, N, C);
    expect("embedding fwd", get(g_x, n), x, n, 0.0, 0.0);
    cpu->embed_bwd(dt, dx, tok, N, C);
    gpu->embed_bwd(g_dt, g_dx, tok, N, C);
    float *first = get32(g_dt, tn);
    expect("embedding bwd dtable +=", dup(first, tn), dt, tn, 1e-6, 1e-6);
    gpu->to_device(g_dt, dt0, tn * sizeof(float));
    gpu->embed_bwd(g_dt, g_dx, tok, N, C);
    float *again = get32(g_dt, tn);
    CHECK_MSG(memcmp(first, again, tn * sizeof(float)) == 0,
              "%s embedding bwd: differs between two runs", gpu->name);
    free(first);
    free(again);
    free(table);
    free(dx);
    free(dt0);
    free(x);
    free(dt);
    free(tok);
    gpu->free(g_t);
    gpu->free(g_x);
    gpu->free(g_dx);
    gpu->free(g_dt);
}

static void test_xent(int N, int V)
{
    size_t n = (size_t)N * V;
    float *logits = rnd(n, 8.0f), *d = malloc(n * sizeof(float));
    int32_t *tgt = malloc((size_t)N * sizeof(int32_t));
    double loss = 0.5, gloss = 0.0, start = 0.5; /* the ops add to what is there */

    for (int i = 0; i < N; i++) {
        tgt[i] = (int32_t)((i * 131 + 7) % V);
    }
    float *g_l = put(logits, n), *g_d = garbage(n);
    double *g_loss = gpu->alloc(sizeof(double));
    gpu->to_device(g_loss, &start, sizeof(double));
    cpu->xent(d, logits, tgt, N, V, 0.25f, &loss);
    gpu->xent(g_d, g_l, tgt, N, V, 0.25f, g_loss);
    CHECK(gpu->to_host(&gloss, g_loss, sizeof(double)) == SHARC_OK);
    double el = fabs(gloss - loss) / fabs(loss);
    CHECK_MSG(el <= (bf16 ? 1e-3 : 1e-6), "%s cross-entropy: loss %.9g vs %.9g", gpu->name, gloss,
              loss);
    printf("  %-28s %.2e\n", "cross-entropy loss", el);
    expect("cross-entropy dlogits", get(g_d, n), d, n, 1e-5, 1e-2);
    /* in place, as the model calls it, and without a gradient */
    gpu->to_device(g_loss, &start, sizeof(double));
    gpu->xent(g_l, g_l, tgt, N, V, 0.25f, g_loss);
    expect("cross-entropy in place", get(g_l, n), d, n, 1e-5, 1e-2);
    gpu->free(g_l);
    g_l = put(logits, n);
    gpu->to_device(g_loss, &start, sizeof(double));
    gpu->xent(NULL, g_l, tgt, N, V, 1.0f, g_loss);
    CHECK(gpu->to_host(&gloss, g_loss, sizeof(double)) == SHARC_OK);
    CHECK_MSG(fabs(gloss - loss) / fabs(loss) <= (bf16 ? 1e-3 : 1e-6),
              "%s cross-entropy without a gradient: loss %.9g vs %.9g", gpu->name, gloss, loss);
    free(logits);
    free(d);
    free(tgt);
    gpu->free(g_l);
    gpu->free(g_d);
    gpu->free(g_loss);
}

/* casts and bf16 accumulation: bit for bit the CPU's rounding */
static void test_cast_acc(size_t n)
{
    float *x = rnd(n, 3.0f), *y = rnd(n, 1.0f), *back = malloc(n * sizeof(float));
    uint16_t *h16 = malloc(n * 2), *g16 = malloc(n * 2);
    void *d32 = gpu->alloc(n * 4), *d16 = gpu->alloc(n * 2), *dy = gpu->alloc(n * 4);

    x[0] = 1.00390625f; /* a tie between two bf16 values: to even */
    cpu->cast(h16, SHARC_DTYPE_BF16, x, SHARC_DTYPE_F32, n);
    gpu->to_device(d32, x, n * 4);
    gpu->cast(d16, SHARC_DTYPE_BF16, d32, SHARC_DTYPE_F32, n);
    CHECK(gpu->to_host(g16, d16, n * 2) == SHARC_OK);
    CHECK_MSG(memcmp(h16, g16, n * 2) == 0, "%s cast f32 -> bf16 differs from the CPU's",
              gpu->name);
    gpu->cast(d32, SHARC_DTYPE_F32, d16, SHARC_DTYPE_BF16, n);
    cpu->cast(back, SHARC_DTYPE_F32, h16, SHARC_DTYPE_BF16, n);
    float *got = malloc(n * 4);
    CHECK(gpu->to_host(got, d32, n * 4) == SHARC_OK);
    CHECK_MSG(memcmp(got, back, n * 4) == 0, "%s cast bf16 -> f32 differs", gpu->name);
    cpu->acc(h16, SHARC_DTYPE_BF16, y, n);
    gpu->to_device(dy, y, n * 4);
    gpu->acc(d16, SHARC_DTYPE_BF16, dy, n);
    CHECK(gpu->to_host(g16, d16, n * 2) == SHARC_OK);
    CHECK_MSG(memcmp(h16, g16, n * 2) == 0, "%s bf16 += f32 differs from the CPU's", gpu->name);
    printf("  %-28s bit-exact\n", "casts, bf16 accumulation");
    free(x);
    free(y);
    free(back);
    free(h16);
    free(g16);
    free(got);
    gpu->free(d32);
    gpu->free(d16);
    gpu->free(dy);
}

/* the optimizer on f32 shards: the sum of squares and one AdamW update with clipping */
static void test_optim(size_t n)
{
    float *p = rnd(n, 1.0f), *gr = rnd(n, 3.0f), *m = rnd(n, 0.1f), *v = rnd(n, 0.1f);
    double sum = 1.5, gsum = 0.0, start = 1.5;

    for (size_t i = 0; i < n; i++) {
        v[i] = fabsf(v[i]);
    }
    float *g_p = put32(p, n), *g_g = put32(gr, n), *g_m = put32(m, n), *g_v = put32(v, n);
    double *g_sum = gpu->alloc(sizeof(double));
    gpu->to_device(g_sum, &start, sizeof(double));
    cpu->sumsq(&sum, gr, n);
    gpu->sumsq(g_sum, g_g, n);
    CHECK(gpu->to_host(&gsum, g_sum, sizeof(double)) == SHARC_OK);
    CHECK_MSG(fabs(gsum - sum) <= 1e-12 * sum, "%s sum of squares %.17g vs %.17g", gpu->name, gsum,
              sum);
    printf("  %-28s %.2e\n", "sum of squares", fabs(gsum - sum) / sum);
    llama_adamw_t a = {.beta1 = 0.9f,
                       .beta2 = 0.95f,
                       .eps = 1e-8f,
                       .keep = 1.0f - 1e-3f * 0.1f,
                       .step_size = 1e-3f / (1.0f - 0.9f * 0.9f * 0.9f),
                       .bc2_sqrt = sqrtf(1.0f - 0.95f * 0.95f * 0.95f),
                       .grad_clip = 1.0f, /* the norm is far above: clipping applies */
                       .replicas = 1,
                       .nranges = 2,
                       .start = {3, n / 2},
                       .count = {n / 4, n / 3}};
    cpu->adamw(&a, p, gr, m, v, n, &sum);
    gpu->adamw(&a, g_p, g_g, g_m, g_v, n, g_sum);
    expect("AdamW params", get32(g_p, n), p, n, 1e-6, 1e-6);
    expect("AdamW exp_avg", get32(g_m, n), m, n, 1e-6, 1e-6);
    expect("AdamW exp_avg_sq", get32(g_v, n), v, n, 1e-6, 1e-6);
    free(p);
    free(gr);
    free(m);
    free(v);
    gpu->free(g_p);
    gpu->free(g_g);
    gpu->free(g_m);
    gpu->free(g_v);
    gpu->free(g_sum);
}

int main(void)
{
#ifdef LLAMA_TEST_SMALL
    const char *san = getenv("SHARCTEST_SANITIZE");
    if (san != NULL && *san != '\0') {
        printf("SKIP: the CUDA emulation's fibers (swapcontext) and AddressSanitizer do not mix\n");
        return 77;
    }
#endif
    sharc_status_t st = llama_cuda_pick_device();

    if (st == SHARC_ERR_UNSUPPORTED) {
        printf("SKIP: no CUDA table or no GPU here (the message above says which)\n");
        return 77;
    }
    /* f32; bf16 with the tiled attention, the probabilities materialized, cuDNN's */
    static const llama_cuda_attention_t attention[] = {
        LLAMA_CUDA_ATTENTION_GEMM, LLAMA_CUDA_ATTENTION_FLASH, LLAMA_CUDA_ATTENTION_GEMM,
        LLAMA_CUDA_ATTENTION_CUDNN};
    for (int table = 0; table < 4; table++) {
        void *stream;
        bf16 = table > 0;
        if (attention[table] == LLAMA_CUDA_ATTENTION_CUDNN && llama_cuda_cudnn_missing() != NULL) {
            printf("cuDNN's attention: not tested (%s)\n", llama_cuda_cudnn_missing());
            continue;
        }
        CHECK(llama_cuda_open(NULL, bf16 ? SHARC_DTYPE_BF16 : SHARC_DTYPE_F32, attention[table],
                              NULL, &gpu, &stream) == SHARC_OK);
        if (check_failures) {
            break;
        }
        printf("%s against cpu:\n", gpu->name);
        test_matmul(37, 96, 80);
        test_matmul(SIZE(256, 64), 320, SIZE(1000, 200));
#ifdef LLAMA_TEST_SMALL
        /* where cuBLASLt's heuristic offers no algorithm, cublasGemmEx computes the product
         * (new shapes: the ones above keep their plans) */
        setenv("SHARCTEST_EMU_LT_NOALGO", "1", 1);
        test_matmul(29, 48, 40);
        unsetenv("SHARCTEST_EMU_LT_NOALGO");
#endif
        test_rmsnorm(41, 100);
        test_rmsnorm(SIZE(300, 100), SIZE(768, 300));
        test_rope(2, 19, 3, 16);
        test_attention(2, 19, 4, 2, 16);
        test_attention(1, 130, 8, 2, 64);
        test_attention(2, 33, 2, 2, 8);
        test_attention(1, 70, 4, 1, 128);
        test_attention(2, 64, 4, 4, 32);
        test_attention(1, 1, 2, 1, 64);
        test_attention(1, SIZE(200, 131), SIZE(6, 3), SIZE(3, 1), 64);
        test_swiglu_add(SIZE(100003, 10007));
        test_embed(57, 40, 50);
        test_xent(23, 515);
        test_xent(5, SIZE(32000, 8000));
        if (!bf16) {
            test_cast_acc(10007);
            test_optim(SIZE(200003, 20011));
        }
        llama_cuda_close();
    }
    printf("test_ops_cuda: %s\n", check_failures ? "FAILED" : "ok");
    return check_result("test_ops_cuda");
}
