/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/step.c: one micro-batch of the Llama model through the shard engine, read top to
 * bottom like llm.c: the embedding, each block's forward, the head and its loss, then the
 * backward in reverse, each block's backward beside its forward. Every unit is gathered by
 * the engine before its compute (prefetched along the recorded schedule) and its gradients
 * are reduce-scattered right after its backward, while the next block's backward computes.
 * All of it is queued through the ops table; on CUDA nothing here waits for the device: the
 * loss stays in the ops' memory until llama_model_loss reads it, once the step's optimizer is
 * queued behind it.
 * Shapes: B batch, T sequence, C dim, H/KV heads, hd head dim, F ffn dim, V vocab, N = B*T.
 */
#include "model_int.h"
#include "../util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- one block ---------------------------------------------------------------------------- */

/* out (N,C) = block(x (N,C)) with weights w[LLAMA_W_*]; activations into a */
static void block_forward(llama_model_t *m, float *const *w, const float *x, float *out,
                          llama_acts_t *a)
{
    const llama_ops_t *op = m->ops;
    const llama_config_t *c = &m->cfg;
    llama_prof_t *pf = m->prof; /* each site marked where it begins (NULL: no profile) */
    int B = m->run.batch, T = m->run.seq, N = B * T, C = c->dim, F = c->hidden_dim;
    int H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;

    a->x = x;
    llama_prof_at(pf, LLAMA_SITE_NORM_FWD);
    op->rmsnorm_fwd(a->ln1, a->rstd1, x, w[LLAMA_W_LN1], N, C, (float)c->norm_eps); /* (N,C) */
    llama_prof_at(pf, LLAMA_SITE_QKV_FWD);
    op->matmul_fwd(a->q, a->ln1, w[LLAMA_W_Q], N, C, H * hd);  /* (N,H*hd) */
    op->matmul_fwd(a->k, a->ln1, w[LLAMA_W_K], N, C, KV * hd); /* (N,KV*hd) */
    op->matmul_fwd(a->v, a->ln1, w[LLAMA_W_V], N, C, KV * hd);
    llama_prof_at(pf, LLAMA_SITE_ROPE_FWD);
    op->rope_fwd(a->q, m->rope_cos, m->rope_sin, B, T, H, hd);
    op->rope_fwd(a->k, m->rope_cos, m->rope_sin, B, T, KV, hd);
    llama_prof_at(pf, LLAMA_SITE_ATTN_FWD);
    op->attention_fwd(a->atty, a->probs, a->q, a->k, a->v, B, T, H, KV, hd); /* (N,H*hd) */
    llama_prof_at(pf, LLAMA_SITE_ATTN_OUT_FWD);
    op->matmul_fwd(m->tmp, a->atty, w[LLAMA_W_O], N, H * hd, C); /* (N,C) */
    llama_prof_at(pf, LLAMA_SITE_ADD);
    op->add(a->x2, x, m->tmp, (size_t)N * C);
    llama_prof_at(pf, LLAMA_SITE_NORM_FWD);
    op->rmsnorm_fwd(a->ln2, a->rstd2, a->x2, w[LLAMA_W_LN2], N, C, (float)c->norm_eps);
    llama_prof_at(pf, LLAMA_SITE_GATE_UP_FWD);
    op->matmul_fwd(a->g, a->ln2, w[LLAMA_W_G], N, C, F); /* (N,F) */
    op->matmul_fwd(a->u, a->ln2, w[LLAMA_W_U], N, C, F);
    llama_prof_at(pf, LLAMA_SITE_SWIGLU_FWD);
    op->swiglu_fwd(a->h, a->g, a->u, (size_t)N * F);
    llama_prof_at(pf, LLAMA_SITE_DOWN_FWD);
    op->matmul_fwd(m->tmp, a->h, w[LLAMA_W_D], N, F, C); /* (N,C) */
    llama_prof_at(pf, LLAMA_SITE_ADD);
    op->add(out, a->x2, m->tmp, (size_t)N * C);
    llama_prof_end(pf);
}

/* m->dres (N,C): in, the gradient at the block's output; out, the one at its input */
static void block_backward(llama_model_t *m, float *const *w, float *const *g,
                           const llama_acts_t *a)
{
    const llama_ops_t *op = m->ops;
    const llama_config_t *c = &m->cfg;
    llama_prof_t *pf = m->prof;
    int B = m->run.batch, T = m->run.seq, N = B * T, C = c->dim, F = c->hidden_dim;
    int H = c->n_heads, KV = c->n_kv_heads, hd = c->head_dim;
    float *dres = m->dres;

    /* MLP: out = x2 + (silu(ln2 Wg^T) * ln2 Wu^T) Wd^T */
    llama_prof_at(pf, LLAMA_SITE_DOWN_BWD);
    op->matmul_bwd(m->dh, g[LLAMA_W_D], dres, a->h, w[LLAMA_W_D], N, F, C, 0); /* (N,F) */
    llama_prof_at(pf, LLAMA_SITE_SWIGLU_BWD);
    op->swiglu_bwd(m->dg, m->du, m->dh, a->g, a->u, (size_t)N * F);
    llama_prof_at(pf, LLAMA_SITE_GATE_UP_BWD);
    op->matmul_bwd(m->dln, g[LLAMA_W_G], m->dg, a->ln2, w[LLAMA_W_G], N, C, F, 0); /* (N,C) */
    op->matmul_bwd(m->dln, g[LLAMA_W_U], m->du, a->ln2, w[LLAMA_W_U], N, C, F, 1);
    llama_prof_at(pf, LLAMA_SITE_NORM_BWD);
    op->rmsnorm_bwd(dres, g[LLAMA_W_LN2], m->dln, a->x2, w[LLAMA_W_LN2], a->rstd2, N, C);
    /* attention: x2 = x + attn(rope(ln1 Wq^T), rope(ln1 Wk^T), ln1 Wv^T) Wo^T */
    llama_prof_at(pf, LLAMA_SITE_ATTN_OUT_BWD);
    op->matmul_bwd(m->datty, g[LLAMA_W_O], dres, a->atty, w[LLAMA_W_O], N, H * hd, C, 0);
    llama_prof_at(pf, LLAMA_SITE_ATTN_BWD);
    op->attention_bwd(m->dq, m->dk, m->dv, m->dscores, m->datty, a->q, a->k, a->v, a->atty,
                      a->probs, B, T, H, KV, hd);
    llama_prof_at(pf, LLAMA_SITE_ROPE_BWD);
    op->rope_bwd(m->dq, m->rope_cos, m->rope_sin, B, T, H, hd);
    op->rope_bwd(m->dk, m->rope_cos, m->rope_sin, B, T, KV, hd);
    llama_prof_at(pf, LLAMA_SITE_QKV_BWD);
    op->matmul_bwd(m->dln, g[LLAMA_W_Q], m->dq, a->ln1, w[LLAMA_W_Q], N, C, H * hd, 0);
    op->matmul_bwd(m->dln, g[LLAMA_W_K], m->dk, a->ln1, w[LLAMA_W_K], N, C, KV * hd, 1);
    op->matmul_bwd(m->dln, g[LLAMA_W_V], m->dv, a->ln1, w[LLAMA_W_V], N, C, KV * hd, 1);
    llama_prof_at(pf, LLAMA_SITE_NORM_BWD);
    op->rmsnorm_bwd(dres, g[LLAMA_W_LN1], m->dln, a->x, w[LLAMA_W_LN1], a->rstd1, N, C);
    llama_prof_end(pf);
}

/* ---- the head: final norm, output projection, cross-entropy ------------------------------- */

/*
 * The logits are never whole: the output projection, the cross-entropy and (training) the
 * projection's backward run over chunks of llama_head_rows rows, each chunk's (rows,V) logits
 * turned into their gradient in place and consumed before the next chunk's are made. The
 * head then holds rows x V elements of the act dtype instead of N x V (for the 1b shape at
 * batch 8 x 2048, 1 GiB of bf16 logits become 256 MiB); the products keep M = rows, large
 * enough for the GEMMs' rate, and dW sums the chunks' products in f32.
 */

/* hn (N,C) = the final norm of the last block's output */
static void head_forward(llama_model_t *m, float *const *w)
{
    const llama_config_t *c = &m->cfg;
    int N = m->run.batch * m->run.seq, C = c->dim;

    llama_prof_at(m->prof, LLAMA_SITE_NORM_FWD);
    m->ops->rmsnorm_fwd(m->hn, m->rstdf, m->xs[c->n_layers], w[LLAMA_W_NORM], N, C,
                        (float)c->norm_eps); /* (N,C) */
    llama_prof_end(m->prof);
}

/*
 * m->loss += the loss sum over N tokens, chunk by chunk. With @p g (training): the output
 * projection's gradients, and dln (N,C) = the gradient at hn, from the logits' gradient
 * scaled by @p dscale. With @p logits_out (evaluation): the (N,V) logits as host f32.
 */
static sharc_status_t head_loss(llama_model_t *m, float *const *w, float *const *g,
                                const int32_t *targets, float dscale, float *logits_out)
{
    const llama_ops_t *op = m->ops;
    int N = m->run.batch * m->run.seq, C = m->cfg.dim, V = m->cfg.vocab;
    int rows = llama_head_rows(m);
    float *f = NULL; /* (rows,V) f32 for the host's copy */
    sharc_status_t status = SHARC_OK;

    if (logits_out != NULL && (f = op->alloc((size_t)rows * V * sizeof(float))) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int r0 = 0; r0 < N && status == SHARC_OK; r0 += rows) {
        int n = N - r0 < rows ? N - r0 : rows;
        const float *hn = (const float *)((const char *)m->hn + (size_t)r0 * C * m->act_size);

        llama_prof_at(m->prof, LLAMA_SITE_HEAD_FWD);
        op->matmul_fwd(m->logits, hn, w[LLAMA_W_OUT], n, C, V); /* (n,V) */
        llama_prof_at(m->prof, LLAMA_SITE_XENT);
        op->xent(g != NULL ? m->logits : NULL, m->logits, targets + r0, n, V, dscale, m->loss);
        if (g != NULL) {
            float *dln = (float *)((char *)m->dln + (size_t)r0 * C * m->act_size);
            llama_prof_at(m->prof, LLAMA_SITE_HEAD_BWD);
            op->matmul_bwd(dln, g[LLAMA_W_OUT], m->logits, hn, w[LLAMA_W_OUT], n, C, V, 0);
        }
        if (f != NULL) {
            /* f32 on the host whatever the act dtype: cast in the ops' memory, then copied */
            op->cast(f, SHARC_DTYPE_F32, m->logits, op->act_dtype, (size_t)n * V);
            status = op->to_host(logits_out + (size_t)r0 * V, f, (size_t)n * V * sizeof(float));
        }
    }
    llama_prof_end(m->prof);
    if (f != NULL) {
        op->free(f);
    }
    return status;
}

/* m->dres (N,C) = the gradient at the last block's output, from dln (N,C) at hn */
static void head_backward(llama_model_t *m, float *const *w, float *const *g)
{
    const llama_config_t *c = &m->cfg;
    int N = m->run.batch * m->run.seq, C = c->dim;

    llama_prof_at(m->prof, LLAMA_SITE_ZERO);
    m->ops->zero(m->dres, (size_t)N * C * m->act_size);
    llama_prof_at(m->prof, LLAMA_SITE_NORM_BWD);
    m->ops->rmsnorm_bwd(m->dres, g[LLAMA_W_NORM], m->dln, m->xs[c->n_layers], w[LLAMA_W_NORM],
                        m->rstdf, N, C);
    llama_prof_end(m->prof);
}

/* ---- the micro-batch ----------------------------------------------------------------------- */

static sharc_status_t check_tokens(const llama_model_t *m, const int32_t *tokens,
                                   const int32_t *targets)
{
    size_t N = (size_t)m->run.batch * m->run.seq;

    for (size_t i = 0; i < N; i++) {
        if (tokens[i] < 0 || tokens[i] >= m->cfg.vocab || targets[i] < 0 ||
            targets[i] >= m->cfg.vocab) {
            llama_err("token %zu of the batch (%d -> %d) is outside the vocabulary [0, %d)", i,
                      tokens[i], targets[i], m->cfg.vocab);
            return SHARC_ERR_INVALID;
        }
    }
    return SHARC_OK;
}

/* a call of the shard engine on @p unit: its time is the step's wait on the engine (@p site) */
static sharc_status_t shard_call(llama_model_t *m, llama_site_t site,
                                 sharc_status_t (*call)(sharc_shard_group_h, int), int unit)
{
    sharc_status_t status;

    llama_prof_at(m->prof, site);
    status = call(m->group, unit);
    llama_prof_end(m->prof);
    return status;
}

#define STEP_CHECK(_call)                                                                          \
    do {                                                                                           \
        status = (_call);                                                                          \
        if (status != SHARC_OK) {                                                                  \
            return status;                                                                         \
        }                                                                                          \
    } while (0)

sharc_status_t llama_model_step(llama_model_t *m, const int32_t *tokens, const int32_t *targets,
                                float grad_scale, int sync, float *loss_p)
{
    sharc_shard_group_h sg = m->group;
    const llama_config_t *c = &m->cfg;
    int N = m->run.batch * m->run.seq, L = c->n_layers, head = L + 1;
    float *w[LLAMA_MAX_UNIT_PARAMS], *g[LLAMA_MAX_UNIT_PARAMS];
    llama_prof_t *pf = m->prof;
    sharc_status_t status;

    STEP_CHECK(check_tokens(m, tokens, targets));
    STEP_CHECK(sharc_shard_set_sync(sg, sync));
    if (m->loss_batches == 0) {
        llama_prof_at(pf, LLAMA_SITE_ZERO);
        m->ops->zero(m->loss, sizeof(double));
        llama_prof_end(pf);
    }
    m->loss_batches++;

    /* forward */
    llama_prof_anchor_here(pf);
    STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_forward_begin, 0));
    STEP_CHECK(llama_unit_weights(m, 0, w));
    llama_prof_at(pf, LLAMA_SITE_EMBED_FWD);
    m->ops->embed_fwd(m->xs[0], tokens, w[0], N, c->dim); /* (N,C) */
    STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_forward_end, 0));
    for (int l = 0; l < L; l++) {
        STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_forward_begin, 1 + l));
        STEP_CHECK(llama_unit_weights(m, 1 + l, w));
        block_forward(m, w, m->xs[l], m->xs[l + 1], &m->acts[m->run.recompute ? 0 : l]);
        STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_forward_end, 1 + l));
    }
    STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_forward_begin, head));
    STEP_CHECK(llama_unit_weights(m, head, w));
    head_forward(m, w);
    STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_forward_end, head));

    /* backward: the head's logits, loss and gradient chunk by chunk, then the final norm's */
    STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_backward_begin, head));
    STEP_CHECK(llama_unit_weights(m, head, w));
    STEP_CHECK(llama_unit_grads(m, head, g));
    STEP_CHECK(head_loss(m, w, g, targets, grad_scale / (float)N, NULL));
    head_backward(m, w, g);
    STEP_CHECK(llama_unit_grads_done(m, head));
    STEP_CHECK(shard_call(m, LLAMA_SITE_REDUCE, sharc_shard_backward_end, head));
    for (int l = L - 1; l >= 0; l--) {
        llama_acts_t *a = &m->acts[m->run.recompute ? 0 : l];
        STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_backward_begin, 1 + l));
        STEP_CHECK(llama_unit_weights(m, 1 + l, w));
        if (m->run.recompute) {
            /* the block's output is not needed again: write it to scratch */
            block_forward(m, w, m->xs[l], m->tmp, a);
        }
        STEP_CHECK(llama_unit_grads(m, 1 + l, g));
        block_backward(m, w, g, a);
        STEP_CHECK(llama_unit_grads_done(m, 1 + l));
        STEP_CHECK(shard_call(m, LLAMA_SITE_REDUCE, sharc_shard_backward_end, 1 + l));
    }
    STEP_CHECK(shard_call(m, LLAMA_SITE_GATHER, sharc_shard_backward_begin, 0));
    STEP_CHECK(llama_unit_grads(m, 0, g));
    llama_prof_at(pf, LLAMA_SITE_EMBED_BWD);
    m->ops->embed_bwd(g[0], m->dres, tokens, N, c->dim);
    llama_prof_end(pf);
    STEP_CHECK(llama_unit_grads_done(m, 0));
    STEP_CHECK(shard_call(m, LLAMA_SITE_REDUCE, sharc_shard_backward_end, 0));

    return loss_p != NULL ? llama_model_loss(m, loss_p) : SHARC_OK;
}

/* on CUDA this waits for the compute queued so far (not for the reductions, which the
 * engine's streams carry on): the trainer calls it once the step's optimizer is queued */
sharc_status_t llama_model_loss(llama_model_t *m, float *loss_p)
{
    int batches = m->loss_batches, N = m->run.batch * m->run.seq;
    sharc_status_t status;
    double loss = 0.0;

    if (batches == 0) {
        llama_err("llama_model_loss: no micro-batch since the last read");
        return SHARC_ERR_INVALID;
    }
    m->loss_batches = 0;
    llama_prof_at(m->prof, LLAMA_SITE_READBACK);
    status = m->ops->to_host(&loss, m->loss, sizeof(loss));
    llama_prof_end(m->prof);
    if (status == SHARC_OK) {
        *loss_p = (float)(loss / ((double)N * batches));
    }
    return status;
}

/* gather one unit outside the training schedule and point w at it */
static sharc_status_t eval_unit(llama_model_t *m, int unit, float **w)
{
    sharc_status_t status = sharc_shard_unshard(m->group, unit);

    if (status == SHARC_OK) {
        status = sharc_shard_wait(m->group, unit);
    }
    return status == SHARC_OK ? llama_unit_weights(m, unit, w) : status;
}

sharc_status_t llama_model_eval(llama_model_t *m, const int32_t *tokens, const int32_t *targets,
                                float *loss_p, float *logits)
{
    const llama_config_t *c = &m->cfg;
    int N = m->run.batch * m->run.seq, L = c->n_layers, head = L + 1;
    float *w[LLAMA_MAX_UNIT_PARAMS];
    sharc_status_t status;
    double loss;

    STEP_CHECK(check_tokens(m, tokens, targets));
    m->ops->zero(m->loss, sizeof(double));
    m->loss_batches = 0; /* the buffer is eval's now: a training sum not read is dropped */
    STEP_CHECK(eval_unit(m, 0, w));
    m->ops->embed_fwd(m->xs[0], tokens, w[0], N, c->dim);
    STEP_CHECK(sharc_shard_reshard(m->group, 0));
    for (int l = 0; l < L; l++) {
        STEP_CHECK(eval_unit(m, 1 + l, w));
        block_forward(m, w, m->xs[l], m->xs[l + 1], &m->acts[m->run.recompute ? 0 : l]);
        STEP_CHECK(sharc_shard_reshard(m->group, 1 + l));
    }
    STEP_CHECK(eval_unit(m, head, w));
    head_forward(m, w);
    status = head_loss(m, w, NULL, targets, 0.0f, logits);
    sharc_status_t rs = sharc_shard_reshard(m->group, head);
    STEP_CHECK(status != SHARC_OK ? status : rs);
    STEP_CHECK(m->ops->to_host(&loss, m->loss, sizeof(loss)));
    *loss_p = (float)(loss / N);
    return SHARC_OK;
}
