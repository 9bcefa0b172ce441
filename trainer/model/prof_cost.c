/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/prof_cost.c: what each op site of a step must do at least, from the model's
 * shapes: FLOPs of the products and of attention, bytes read and written by everything else
 * (each buffer once, as a fused pass would: the floor's lower bound, not what a kernel
 * moves). The profile divides them by the measured GEMM and copy rates (cli/profile.c).
 * Shapes: B batch, T sequence, C dim, H/KV heads, hd head dim, F ffn dim, V vocab, L layers,
 * N = B*T; a bytes of an activation element (the act dtype), p of a gathered parameter.
 */
#include "model_int.h"

#include <string.h>

/* Per micro-batch: the forward's sites (run twice per block with recomputation), then the
 * backward's. */
static void step_costs(const llama_model_t *m, double *fl, double *by)
{
    const llama_config_t *c = &m->cfg;
    double B = m->run.batch, T = m->run.seq, N = B * T, C = c->dim, F = c->hidden_dim;
    double H = c->n_heads, hd = c->head_dim, V = c->vocab, L = c->n_layers;
    double QD = H * hd, KD = (double)c->n_kv_heads * hd, QKV = QD + 2 * KD;
    double a = (double)m->act_size, R = m->run.recompute ? 2 : 1;

    by[LLAMA_SITE_EMBED_FWD] = 2 * N * C * a;                            /* rows read, x written */
    by[LLAMA_SITE_NORM_FWD] = (2 * L * R + 1) * (2 * N * C * a + 4 * N); /* x, out, rstd */
    fl[LLAMA_SITE_QKV_FWD] = L * R * 2 * N * C * QKV;
    by[LLAMA_SITE_QKV_FWD] = L * R * (N * C + QKV * C + N * QKV) * a;
    by[LLAMA_SITE_ROPE_FWD] = L * R * 2 * N * (QD + KD) * a; /* q, k in place */
    /* causal: half the T x T square (the MFU formula, llama_config_flops_per_token, counts
     * the whole square); QK^T and PV each 2 T^2 hd per head over the full square */
    fl[LLAMA_SITE_ATTN_FWD] = L * R * 2 * B * H * T * T * hd;
    by[LLAMA_SITE_ATTN_FWD] = L * R * N * (2 * QD + 2 * KD) * a; /* q, k, v, out */
    fl[LLAMA_SITE_ATTN_OUT_FWD] = L * R * 2 * N * QD * C;
    by[LLAMA_SITE_ATTN_OUT_FWD] = L * R * (N * QD + C * QD + N * C) * a;
    by[LLAMA_SITE_ADD] = 2 * L * R * 3 * N * C * a;
    fl[LLAMA_SITE_GATE_UP_FWD] = L * R * 2 * N * C * 2 * F;
    by[LLAMA_SITE_GATE_UP_FWD] = L * R * (N * C + 2 * F * C + 2 * N * F) * a;
    by[LLAMA_SITE_SWIGLU_FWD] = L * R * 3 * N * F * a;
    fl[LLAMA_SITE_DOWN_FWD] = L * R * 2 * N * F * C;
    by[LLAMA_SITE_DOWN_FWD] = L * R * (N * F + C * F + N * C) * a;
    fl[LLAMA_SITE_HEAD_FWD] = 2 * N * C * V;
    by[LLAMA_SITE_HEAD_FWD] = (N * C + V * C + N * V) * a;
    by[LLAMA_SITE_XENT] = 2 * N * V * a; /* logits read, their gradient written */

    /* backward: the input's gradient and the weight's (f32, read and written) */
    fl[LLAMA_SITE_HEAD_BWD] = 4 * N * C * V;
    by[LLAMA_SITE_HEAD_BWD] = (N * V + 2 * N * C + V * C) * a + 8 * V * C;
    fl[LLAMA_SITE_DOWN_BWD] = L * 4 * N * F * C;
    by[LLAMA_SITE_DOWN_BWD] = L * ((N * C + 2 * N * F + C * F) * a + 8 * C * F);
    by[LLAMA_SITE_SWIGLU_BWD] = L * 5 * N * F * a; /* dh, g, u read; dg, du written */
    fl[LLAMA_SITE_GATE_UP_BWD] = L * 4 * N * C * 2 * F;
    by[LLAMA_SITE_GATE_UP_BWD] = L * ((2 * N * F + 2 * N * C + 2 * F * C) * a + 16 * F * C);
    by[LLAMA_SITE_NORM_BWD] = (2 * L + 1) * (4 * N * C * a + 4 * N); /* dout, x; dx += */
    fl[LLAMA_SITE_ATTN_OUT_BWD] = L * 4 * N * QD * C;
    by[LLAMA_SITE_ATTN_OUT_BWD] = L * ((N * C + 2 * N * QD + C * QD) * a + 8 * C * QD);
    /* dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q: 4 products, causal halves */
    fl[LLAMA_SITE_ATTN_BWD] = L * 4 * B * H * T * T * hd;
    by[LLAMA_SITE_ATTN_BWD] = L * N * (4 * QD + 4 * KD) * a; /* q, out, dout, dq; k, v, dk, dv */
    by[LLAMA_SITE_ROPE_BWD] = L * 2 * N * (QD + KD) * a;
    fl[LLAMA_SITE_QKV_BWD] = L * 4 * N * C * QKV;
    by[LLAMA_SITE_QKV_BWD] = L * ((N * QKV + 2 * N * C + QKV * C) * a + 8 * QKV * C);
    by[LLAMA_SITE_EMBED_BWD] = N * C * a + 8 * N * C; /* dx read; the rows' f32 += */
}

/* The shard engine's side of a micro-batch: the casts the model adds around it. */
static void shard_costs(const llama_model_t *m, double *by)
{
    double P = (double)llama_config_params(&m->cfg), VC = (double)m->cfg.vocab * m->cfg.dim;

    if (m->run.param_dtype != m->ops->act_dtype) {
        /* every unit cast after its gather in the forward, all but the embedding again in the
         * backward: read in the param dtype, written in the act dtype */
        double size = (double)sharc_dtype_size(m->run.param_dtype) + (double)m->act_size;
        by[LLAMA_SITE_CAST_PARAMS] = (2 * P - VC) * size;
    }
    if (m->run.reduce_dtype != SHARC_DTYPE_F32) {
        /* each unit's f32 gradients zeroed, then read and added into the bf16 buffer */
        by[LLAMA_SITE_CAST_GRADS] = P * (4 + 4 + 2 * 2);
    }
}

void llama_model_site_costs(const llama_model_t *m, int accum, double *flops, double *bytes)
{
    double shard = 0.0; /* f32 elements of this rank's shards */

    memset(flops, 0, LLAMA_SITE_LAST * sizeof(*flops));
    memset(bytes, 0, LLAMA_SITE_LAST * sizeof(*bytes));
    step_costs(m, flops, bytes);
    shard_costs(m, bytes);
    for (int s = 0; s < LLAMA_SITE_SUMSQ; s++) {
        flops[s] *= accum;
        bytes[s] *= accum;
    }
    /* once a step, on this rank's shards: the sum of squares reads the gradient; AdamW reads
     * parameter, gradient and moments and writes all but the gradient. The engine's AdamW
     * (offload) runs on the host, off the table: no floor. */
    for (int u = 0; u < m->nunits; u++) {
        sharc_shard_unit_info_t ui;
        sharc_shard_unit_info(m->group, u, &ui);
        shard += (double)ui.shard_count;
    }
    if (m->run.offload == SHARC_SHARD_OFFLOAD_NONE) {
        bytes[LLAMA_SITE_SUMSQ] = 4 * shard;
        bytes[LLAMA_SITE_ADAMW] = 7 * 4 * shard;
    }
}
