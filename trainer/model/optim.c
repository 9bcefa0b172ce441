/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/optim.c: AdamW over the local shards, as torch.optim.AdamW computes it (decoupled
 * weight decay, bias-corrected moments), with clipping by the norm of the whole model's
 * gradient, which every rank learns from one all-reduce of its shards' squared sums. The
 * loops are the ops table's (ops/cpu/cpu.c, or kernels on the GPU's stream for CUDA shards).
 */
#include "optim.h"
#include "model_int.h"
#include "../util.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    size_t start, count; /* elements of the shard that get weight decay */
} decay_range_t;

_Static_assert(LLAMA_MAX_UNIT_PARAMS <= LLAMA_ADAMW_MAX_RANGES,
               "a unit's matrices fit the AdamW's ranges");

struct llama_optim {
    llama_model_t *m;
    llama_optim_cfg_t cfg;
    int exp_avg, exp_avg_sq; /* state indices */
    decay_range_t *ranges;   /* per unit, at most LLAMA_MAX_UNIT_PARAMS */
    int *nranges;
    int replicas;      /* HSDP replicas: each holds the same gradient shards */
    double *sums;      /* (2) the ops' memory: the sum of squares, this rank's and all-reduced */
    int engine;        /* offload: the shard engine's AdamW runs the updates */
    float engine_norm; /* the engine's norm of the last step */
};

/* The engine's AdamW on the group's shards, decay on 2-D parameters as below. */
static sharc_status_t engine_create(llama_optim_t *o)
{
    llama_model_t *m = o->m;
    unsigned char *decay = calloc((size_t)m->nparams, 1);
    sharc_status_t status;

    if (decay == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < m->nparams; i++) {
        sharc_shard_param_info_t pi;
        sharc_shard_param_info(m->group, i, &pi);
        decay[i] = pi.ndim >= 2;
    }
    status = sharc_shard_adamw_create(m->group, decay);
    free(decay);
    o->engine = status == SHARC_OK;
    return status;
}

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
    if (m->run.offload != SHARC_SHARD_OFFLOAD_NONE) {
        status = engine_create(o);
        if (status != SHARC_OK) {
            free(o);
            return status;
        }
        *optim_p = o;
        return SHARC_OK;
    }
    o->replicas = m->run.shard_size > 0 ? m->world / m->run.shard_size : 1;
    o->ranges = calloc((size_t)m->nunits * LLAMA_MAX_UNIT_PARAMS, sizeof(*o->ranges));
    o->nranges = calloc((size_t)m->nunits, sizeof(*o->nranges));
    o->sums = m->ops->alloc(2 * sizeof(double));
    if (o->ranges == NULL || o->nranges == NULL || o->sums == NULL) {
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
            size_t lo, hi;
            llama_shard_slice(&ui, &pi, &lo, &hi);
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
    if (o->sums != NULL) {
        o->m->ops->free(o->sums);
    }
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

sharc_status_t llama_optim_begin(llama_optim_t *o, int step)
{
    const llama_optim_cfg_t *c = &o->cfg;
    sharc_shard_adamw_t hp = {.lr = llama_optim_lr(c, step),
                              .beta1 = c->beta1,
                              .beta2 = c->beta2,
                              .eps = c->eps,
                              .weight_decay = c->weight_decay,
                              .max_norm = c->grad_clip,
                              .step = step + 1};

    return o->engine ? sharc_shard_adamw_step(o->m->group, &hp) : SHARC_OK;
}

sharc_status_t llama_optim_step(llama_optim_t *o, int step, float *grad_norm_p, float *lr_p)
{
    llama_model_t *m = o->m;
    const llama_ops_t *op = m->ops;
    const llama_optim_cfg_t *c = &o->cfg;
    double *sums = o->sums; /* [0] this rank's sum of squares, [1] everyone's */
    sharc_request_h req;
    sharc_status_t status;

    if (o->engine) {
        *lr_p = llama_optim_lr(c, step);
        llama_prof_at(m->prof, LLAMA_SITE_ADAMW); /* (the engine's update, waited for) */
        status = sharc_shard_adamw_norm(m->group, &o->engine_norm);
        llama_prof_end(m->prof);
        if (status == SHARC_OK && grad_norm_p != NULL) {
            *grad_norm_p = o->engine_norm;
        }
        return status;
    }
    /* the norm's sum and the update stay in the ops' memory (on CUDA nothing here waits for
     * the device) until the norm is read back for the log (llama_optim_norm) */
    llama_prof_at(m->prof, LLAMA_SITE_ZERO);
    op->zero(sums, 2 * sizeof(double));
    llama_prof_at(m->prof, LLAMA_SITE_SUMSQ);
    for (int u = 0; u < m->nunits; u++) {
        float *grad;
        size_t n;
        sharc_shard_local(m->group, u, NULL, &grad, &n);
        op->sumsq(&sums[0], grad, n);
    }
    llama_prof_at(m->prof, LLAMA_SITE_ALLREDUCE);
    status = sharc_allreduce(&sums[0], &sums[1], 1, SHARC_DTYPE_F64, SHARC_OP_SUM, m->comm, &req);
    if (status == SHARC_OK) {
        status = op->wait(req);
    }
    llama_prof_end(m->prof);
    if (status != SHARC_OK) {
        return status;
    }
    float lr = llama_optim_lr(c, step);
    llama_adamw_t a = {.beta1 = c->beta1,
                       .beta2 = c->beta2,
                       .eps = c->eps,
                       .keep = 1.0f - lr * c->weight_decay,
                       .step_size = lr / (1.0f - powf(c->beta1, (float)(step + 1))),
                       .bc2_sqrt = sqrtf(1.0f - powf(c->beta2, (float)(step + 1))),
                       .grad_clip = c->grad_clip,
                       .replicas = o->replicas};

    llama_prof_at(m->prof, LLAMA_SITE_ADAMW);
    for (int u = 0; u < m->nunits; u++) {
        float *p, *g, *mo, *v;
        size_t n;
        sharc_shard_local(m->group, u, &p, &g, &n);
        sharc_shard_state_ptr(m->group, o->exp_avg, u, &mo);
        sharc_shard_state_ptr(m->group, o->exp_avg_sq, u, &v);
        a.nranges = o->nranges[u];
        for (int r = 0; r < a.nranges; r++) {
            a.start[r] = o->ranges[u * LLAMA_MAX_UNIT_PARAMS + r].start;
            a.count[r] = o->ranges[u * LLAMA_MAX_UNIT_PARAMS + r].count;
        }
        op->adamw(&a, p, g, mo, v, n, &sums[1]);
    }
    llama_prof_end(m->prof);
    *lr_p = lr;
    return grad_norm_p != NULL ? llama_optim_norm(o, grad_norm_p) : SHARC_OK;
}

sharc_status_t llama_optim_norm(llama_optim_t *o, float *grad_norm_p)
{
    llama_model_t *m = o->m;
    double total = 0.0;
    sharc_status_t status;

    if (o->engine) {
        *grad_norm_p = o->engine_norm;
        return SHARC_OK;
    }
    llama_prof_at(m->prof, LLAMA_SITE_READBACK);
    status = m->ops->to_host(&total, &o->sums[1], sizeof(total));
    llama_prof_end(m->prof);
    if (status != SHARC_OK) {
        return status;
    }
    *grad_norm_p = (float)sqrt(total / o->replicas);
    return SHARC_OK;
}
