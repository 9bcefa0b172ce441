/*
 * trainer/optim.c: AdamW over the local shards, as torch.optim.AdamW computes it (decoupled
 * weight decay, bias-corrected moments), with clipping by the norm of the whole model's
 * gradient, which every rank learns from one all-reduce of its shards' squared sums.
 */
#include "optim.h"
#include "model_int.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    size_t start, count; /* elements of the shard that get weight decay */
} decay_range_t;

struct llama_optim {
    llama_model_t *m;
    llama_optim_cfg_t cfg;
    int exp_avg, exp_avg_sq; /* state indices */
    decay_range_t *ranges;   /* per unit, at most LLAMA_MAX_UNIT_PARAMS */
    int *nranges;
    int replicas; /* HSDP replicas: each holds the same gradient shards */
};

sharc_status_t llama_optim_create(llama_model_t *m, const llama_optim_cfg_t *cfg,
                                  llama_optim_t **optim_p)
{
    llama_optim_t *o = calloc(1, sizeof(*o));
    sharc_status_t status;

    if (o == NULL) {
        return SHARC_ERR_NOMEM;
    }
    o->m = m;
    o->cfg = *cfg;
    o->replicas = m->run.shard_size > 0 ? m->world / m->run.shard_size : 1;
    o->ranges = calloc((size_t)m->nunits * LLAMA_MAX_UNIT_PARAMS, sizeof(*o->ranges));
    o->nranges = calloc((size_t)m->nunits, sizeof(*o->nranges));
    if (o->ranges == NULL || o->nranges == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err;
    }
    status = sharc_shard_state_add(m->group, "exp_avg", &o->exp_avg);
    if (status == SHARC_OK) {
        status = sharc_shard_state_add(m->group, "exp_avg_sq", &o->exp_avg_sq);
    }
    if (status != SHARC_OK) {
        goto err;
    }
    /* weight decay on 2-D parameters only (matrices, embedding), as is usual for Llama */
    for (int u = 0; u < m->nunits; u++) {
        sharc_shard_unit_info_t ui;
        sharc_shard_unit_info(m->group, u, &ui);
        for (int i = ui.first_param; i < ui.first_param + ui.nparams; i++) {
            sharc_shard_param_info_t pi;
            sharc_shard_param_info(m->group, i, &pi);
            size_t lo = pi.offset > ui.shard_offset ? pi.offset : ui.shard_offset;
            size_t hi = pi.offset + pi.count;
            hi = hi < ui.shard_offset + ui.shard_count ? hi : ui.shard_offset + ui.shard_count;
            if (pi.ndim >= 2 && lo < hi) {
                decay_range_t *r = &o->ranges[u * LLAMA_MAX_UNIT_PARAMS + o->nranges[u]++];
                r->start = lo - ui.shard_offset;
                r->count = hi - lo;
            }
        }
    }
    *optim_p = o;
    return SHARC_OK;

err:
    llama_optim_destroy(o);
    return status;
}

void llama_optim_destroy(llama_optim_t *o)
{
    if (o == NULL) {
        return;
    }
    free(o->ranges);
    free(o->nranges);
    free(o);
}

float llama_optim_lr(const llama_optim_cfg_t *c, int step)
{
    if (step < c->warmup) {
        return c->lr * (float)(step + 1) / (float)c->warmup;
    }
    if (c->steps <= c->warmup) {
        return c->lr;
    }
    double progress = (double)(step - c->warmup) / (double)(c->steps - c->warmup);
    progress = progress > 1.0 ? 1.0 : progress;
    return c->min_lr + 0.5f * (c->lr - c->min_lr) * (float)(1.0 + cos(M_PI * progress));
}

sharc_status_t llama_optim_step(llama_optim_t *o, int step, float *grad_norm_p, float *lr_p)
{
    llama_model_t *m = o->m;
    const llama_optim_cfg_t *c = &o->cfg;
    double local = 0.0, total = 0.0;
    sharc_status_t status;

    for (int u = 0; u < m->nunits; u++) {
        float *grad;
        size_t n;
        sharc_shard_local(m->group, u, NULL, &grad, &n);
        for (size_t i = 0; i < n; i++) {
            local += (double)grad[i] * grad[i];
        }
    }
    status = sharc_allreduce(&local, &total, 1, SHARC_DTYPE_F64, SHARC_OP_SUM, m->comm, NULL);
    if (status != SHARC_OK) {
        return status;
    }
    float norm = (float)sqrt(total / o->replicas);
    float clip = 1.0f;
    if (c->grad_clip > 0 && norm > c->grad_clip) {
        clip = c->grad_clip / (norm + 1e-6f); /* torch.nn.utils.clip_grad_norm_'s rule */
    }
    float lr = llama_optim_lr(c, step);
    float bc1 = 1.0f - powf(c->beta1, (float)(step + 1));
    float bc2 = 1.0f - powf(c->beta2, (float)(step + 1));
    float step_size = lr / bc1, bc2_sqrt = sqrtf(bc2);

    for (int u = 0; u < m->nunits; u++) {
        float *p, *g, *mo, *v;
        size_t n;
        sharc_shard_local(m->group, u, &p, &g, &n);
        sharc_shard_state_ptr(m->group, o->exp_avg, u, &mo);
        sharc_shard_state_ptr(m->group, o->exp_avg_sq, u, &v);
        for (int r = 0; r < o->nranges[u]; r++) {
            const decay_range_t *dr = &o->ranges[u * LLAMA_MAX_UNIT_PARAMS + r];
            float keep = 1.0f - lr * c->weight_decay;
            for (size_t i = dr->start; i < dr->start + dr->count; i++) {
                p[i] *= keep;
            }
        }
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] * clip;
            mo[i] = c->beta1 * mo[i] + (1.0f - c->beta1) * gi;
            v[i] = c->beta2 * v[i] + (1.0f - c->beta2) * gi * gi;
            p[i] -= step_size * mo[i] / (sqrtf(v[i]) / bc2_sqrt + c->eps);
        }
    }
    *grad_norm_p = norm;
    *lr_p = lr;
    return SHARC_OK;
}
