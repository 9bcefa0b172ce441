/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/acts.c: the buffers one step computes in: the rotary tables, each block's input
 * and the activations its backward needs (one set per block, or one shared set when blocks
 * are recomputed), and the head's. Allocated once with the model (model.c), used by step.c,
 * in the ops table's memory and act dtype (model_int.h says which buffers are f32 always).
 * Shapes: B batch, T sequence, C dim, H/KV heads, hd head dim, F ffn dim, V vocab, N = B*T.
 */
#include "model_int.h"
#include "../util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffers ----------------------------------------------------------------------------- */

/*
 * Rotary tables (T, hd/2) as Hugging Face computes them: inv_freq = theta^(-2i/hd), and for
 * Llama 3 scaling low frequencies divided by factor, high ones kept, the band between
 * interpolated smoothly.
 */
static void rope_tables(const llama_config_t *c, int T, float *cos_t, float *sin_t)
{
    int half = c->head_dim / 2;

    for (int i = 0; i < half; i++) {
        float inv = (float)(1.0 / pow(c->rope_theta, (double)(2 * i) / c->head_dim));
        if (c->rope_factor != 0) {
            double lo_wl = c->rope_orig_max / c->rope_low_freq;
            double hi_wl = c->rope_orig_max / c->rope_high_freq;
            double wl = 2.0 * M_PI / inv;
            if (wl > lo_wl) {
                inv = (float)(inv / c->rope_factor);
            } else if (wl >= hi_wl) {
                double s = (c->rope_orig_max / wl - c->rope_low_freq) /
                           (c->rope_high_freq - c->rope_low_freq);
                inv = (float)((1.0 - s) * inv / c->rope_factor + s * inv);
            }
        }
        for (int t = 0; t < T; t++) {
            float a = (float)t * inv; /* f32 like the reference, so the angles match */
            cos_t[(size_t)t * half + i] = cosf(a);
            sin_t[(size_t)t * half + i] = sinf(a);
        }
    }
}

/* one allocation of count elements of @p size bytes, remembered in m->bufs so destroy frees
 * them all */
static void *buf_of(llama_model_t *m, size_t count, size_t size, int *failed)
{
    void *p;

    if (*failed) {
        return NULL;
    }
    if (m->nbufs == m->cap_bufs) {
        int cap = m->cap_bufs ? 2 * m->cap_bufs : 64;
        void **more = realloc(m->bufs, (size_t)cap * sizeof(*more));
        if (more == NULL) {
            *failed = 1;
            return NULL;
        }
        m->bufs = more;
        m->cap_bufs = cap;
    }
    p = m->ops->alloc(count * size);
    if (p == NULL) {
        *failed = 1;
        return NULL;
    }
    m->bufs[m->nbufs++] = p;
    return p;
}

/* activations: act dtype */
static float *buf(llama_model_t *m, size_t count, int *failed)
{
    return buf_of(m, count, m->act_size, failed);
}

/* f32 whatever the act dtype */
static float *buf32(llama_model_t *m, size_t count, int *failed)
{
    return buf_of(m, count, sizeof(float), failed);
}

sharc_status_t llama_acts_create(llama_model_t *m)
{
    const llama_config_t *c = &m->cfg;
    size_t B = (size_t)m->run.batch, T = (size_t)m->run.seq, N = B * T, C = (size_t)c->dim;
    size_t F = (size_t)c->hidden_dim, V = (size_t)c->vocab;
    size_t HD = (size_t)c->n_heads * c->head_dim, KVD = (size_t)c->n_kv_heads * c->head_dim;
    int nacts = m->run.recompute ? 1 : c->n_layers, failed = 0;
    size_t attn_state = B * (size_t)c->n_heads * T * T * m->act_size;
    size_t attn_scratch = B * (size_t)c->n_kv_heads * T * T * m->act_size;

    if (m->ops->attention_bytes != NULL) { /* a memory-efficient attention keeps less */
        m->ops->attention_bytes((int)B, (int)T, c->n_heads, c->n_kv_heads, c->head_dim, &attn_state,
                                &attn_scratch);
    }

    m->acts = calloc((size_t)nacts, sizeof(*m->acts));
    m->xs = calloc((size_t)c->n_layers + 1, sizeof(*m->xs));
    if (m->acts == NULL || m->xs == NULL) {
        free(m->acts);
        free(m->xs);
        m->acts = NULL;
        m->xs = NULL;
        return SHARC_ERR_NOMEM;
    }
    m->rope_cos = buf32(m, T * (size_t)c->head_dim / 2, &failed);
    m->rope_sin = buf32(m, T * (size_t)c->head_dim / 2, &failed);
    m->loss = buf_of(m, 1, sizeof(double), &failed);
    for (int l = 0; l <= c->n_layers; l++) {
        m->xs[l] = buf(m, N * C, &failed);
    }
    for (int a = 0; a < nacts; a++) {
        llama_acts_t *ac = &m->acts[a];
        ac->ln1 = buf(m, N * C, &failed);
        ac->rstd1 = buf32(m, N, &failed);
        ac->q = buf(m, N * HD, &failed);
        ac->k = buf(m, N * KVD, &failed);
        ac->v = buf(m, N * KVD, &failed);
        ac->probs = buf_of(m, attn_state, 1, &failed);
        ac->atty = buf(m, N * HD, &failed);
        ac->x2 = buf(m, N * C, &failed);
        ac->ln2 = buf(m, N * C, &failed);
        ac->rstd2 = buf32(m, N, &failed);
        ac->g = buf(m, N * F, &failed);
        ac->u = buf(m, N * F, &failed);
        ac->h = buf(m, N * F, &failed);
    }
    m->hn = buf(m, N * C, &failed);
    m->rstdf = buf32(m, N, &failed);
    m->logits = buf(m, (size_t)llama_head_rows(m) * V, &failed);
    m->dres = buf(m, N * C, &failed);
    m->dln = buf(m, N * C, &failed);
    m->tmp = buf(m, N * C, &failed);
    m->dh = buf(m, N * F, &failed);
    m->dg = buf(m, N * F, &failed);
    m->du = buf(m, N * F, &failed);
    m->datty = buf(m, N * HD, &failed);
    m->dq = buf(m, N * HD, &failed);
    m->dk = buf(m, N * KVD, &failed);
    m->dv = buf(m, N * KVD, &failed);
    m->dscores = buf_of(m, attn_scratch, 1, &failed);
    if (m->run.param_dtype != m->ops->act_dtype) {
        m->wbuf = buf(m, m->max_unit, &failed);
    }
    if (m->run.reduce_dtype != SHARC_DTYPE_F32) {
        m->gbuf = buf32(m, m->max_unit, &failed);
    }
    /* the tables are computed on the host and copied into the ops' memory */
    size_t half = T * (size_t)c->head_dim / 2;
    float *cos_t = failed ? NULL : malloc(2 * half * sizeof(float));
    if (failed || cos_t == NULL) {
        llama_err("out of %s memory for the activations of batch %zu x %zu (%s)",
                  m->ops->memtype == SHARC_MEMTYPE_HOST ? "host" : "device", B, T,
                  m->run.recompute ? "with --recompute already"
                                   : "try --recompute, or a smaller batch");
        free(cos_t);
        llama_acts_destroy(m);
        return SHARC_ERR_NOMEM;
    }
    rope_tables(c, (int)T, cos_t, cos_t + half);
    m->ops->to_device(m->rope_cos, cos_t, half * sizeof(float));
    m->ops->to_device(m->rope_sin, cos_t + half, half * sizeof(float));
    free(cos_t);
    return SHARC_OK;
}

void llama_acts_destroy(llama_model_t *m)
{
    for (int i = 0; i < m->nbufs; i++) {
        m->ops->free(m->bufs[i]);
    }
    free(m->bufs);
    m->bufs = NULL;
    m->nbufs = m->cap_bufs = 0;
    free(m->acts);
    free(m->xs);
    m->acts = NULL;
    m->xs = NULL;
}
