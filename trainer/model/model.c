/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/model.c: the Llama model as sharc shard units. Unit 0 is the token embedding,
 * units 1..L the transformer blocks, unit L+1 the final norm with the output head; parameters
 * carry Hugging Face's names and shapes. Here: the parameter list, the shard group and the ops
 * table a model is created with, and the pointers into a gathered unit. Its initial values and
 * export are in weights.c, its buffers in acts.c, the forward and backward in step.c.
 */
#include "model_int.h"
#include "../ops/ops_cuda.h"
#include "../util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const block_names[LLAMA_W_BLOCK] = {
    "input_layernorm.weight",  "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",    "mlp.up_proj.weight",      "mlp.down_proj.weight",
};

static void set_shape(sharc_shard_param_t *p, size_t d0, size_t d1)
{
    p->ndim = d1 ? 2 : 1;
    p->shape[0] = d0;
    p->shape[1] = d1;
    p->count = d1 ? d0 * d1 : d0;
}

/* The parameter list in unit order; names are allocated into m->names. */
static sharc_status_t build_params(llama_model_t *m, sharc_shard_param_t *p)
{
    const llama_config_t *c = &m->cfg;
    size_t C = (size_t)c->dim, F = (size_t)c->hidden_dim, V = (size_t)c->vocab;
    size_t HD = (size_t)c->n_heads * c->head_dim, KVD = (size_t)c->n_kv_heads * c->head_dim;
    char name[128];
    int i = 0;

    m->first[0] = 0;
    p[i].unit = 0;
    set_shape(&p[i], V, C);
    m->names[i++] = strdup("model.embed_tokens.weight");
    for (int l = 0; l < c->n_layers; l++) {
        size_t shapes[LLAMA_W_BLOCK][2] = {{C, 0}, {HD, C}, {KVD, C}, {KVD, C}, {C, HD},
                                           {C, 0}, {F, C},  {F, C},   {C, F}};
        m->first[1 + l] = i;
        for (int j = 0; j < LLAMA_W_BLOCK; j++) {
            snprintf(name, sizeof(name), "model.layers.%d.%s", l, block_names[j]);
            p[i].unit = 1 + l;
            set_shape(&p[i], shapes[j][0], shapes[j][1]);
            m->names[i++] = strdup(name);
        }
    }
    m->first[c->n_layers + 1] = i;
    p[i].unit = c->n_layers + 1;
    set_shape(&p[i], C, 0);
    m->names[i++] = strdup("model.norm.weight");
    p[i].unit = c->n_layers + 1;
    set_shape(&p[i], V, C);
    m->names[i++] = strdup("lm_head.weight");
    for (int k = 0; k < i; k++) {
        if (m->names[k] == NULL) {
            return SHARC_ERR_NOMEM;
        }
        p[k].name = m->names[k];
    }
    return SHARC_OK;
}

/* ---- unit buffers ------------------------------------------------------------------------ */

/* ptrs[j]: parameter j of @p unit in a buffer of the unit's elements of @p size bytes at @p base */
static void point_params(const llama_model_t *m, int unit, void *base, size_t size, float **ptrs)
{
    int first = m->first[unit], n = m->first[unit + 1] - first;

    for (int j = 0; j < n; j++) {
        ptrs[j] = (float *)((char *)base + (m->offsets[first + j] - m->offsets[first]) * size);
    }
}

sharc_status_t llama_unit_weights(llama_model_t *m, int unit, float **w)
{
    void *base;
    sharc_status_t status = sharc_shard_param_ptr(m->group, m->first[unit], &base);

    if (status != SHARC_OK) {
        return status;
    }
    if (m->run.param_dtype != m->ops->act_dtype) {
        /* cast the gathered unit once into the dtype the products read (bf16 gathers for
         * f32 compute: up; f32 gathers for bf16 compute: down) */
        sharc_shard_unit_info_t ui;
        sharc_shard_unit_info(m->group, unit, &ui);
        llama_prof_at(m->prof, LLAMA_SITE_CAST_PARAMS);
        m->ops->cast(m->wbuf, m->ops->act_dtype, base, m->run.param_dtype, ui.count);
        llama_prof_end(m->prof);
        base = m->wbuf;
    }
    point_params(m, unit, base, m->act_size, w);
    return SHARC_OK;
}

sharc_status_t llama_unit_grads(llama_model_t *m, int unit, float **g)
{
    void *base;
    sharc_status_t status = sharc_shard_grad_ptr(m->group, m->first[unit], &base);

    if (status != SHARC_OK) {
        return status;
    }
    if (m->run.reduce_dtype == SHARC_DTYPE_BF16) {
        sharc_shard_unit_info_t ui;
        sharc_shard_unit_info(m->group, unit, &ui);
        llama_prof_at(m->prof, LLAMA_SITE_CAST_GRADS);
        m->ops->zero(m->gbuf, ui.count * sizeof(float));
        llama_prof_end(m->prof);
        base = m->gbuf;
    }
    point_params(m, unit, base, sizeof(float), g);
    return SHARC_OK;
}

sharc_status_t llama_unit_grads_done(llama_model_t *m, int unit)
{
    if (m->run.reduce_dtype == SHARC_DTYPE_BF16) {
        /* the engine's bf16 buffer holds what earlier micro-batches left (zero at first) */
        sharc_shard_unit_info_t ui;
        void *b;
        sharc_status_t status = sharc_shard_grad_ptr(m->group, m->first[unit], &b);
        if (status != SHARC_OK) {
            return status;
        }
        sharc_shard_unit_info(m->group, unit, &ui);
        llama_prof_at(m->prof, LLAMA_SITE_CAST_GRADS);
        m->ops->acc(b, SHARC_DTYPE_BF16, m->gbuf, ui.count);
        llama_prof_end(m->prof);
    }
    return SHARC_OK;
}

/* ---- creation ----------------------------------------------------------------------------- */

static sharc_status_t check_run(const llama_config_t *cfg, const llama_run_t *run, int world)
{
    if (run->batch <= 0 || run->seq <= 0) {
        llama_err("batch (%d) and sequence length (%d) must be positive", run->batch, run->seq);
        return SHARC_ERR_INVALID;
    }
    if (run->seq > cfg->max_seq) {
        llama_err("sequence length %d exceeds the model's max_position_embeddings %d", run->seq,
                  cfg->max_seq);
        return SHARC_ERR_INVALID;
    }
    if ((run->param_dtype != SHARC_DTYPE_F32 && run->param_dtype != SHARC_DTYPE_BF16) ||
        (run->reduce_dtype != SHARC_DTYPE_F32 && run->reduce_dtype != SHARC_DTYPE_BF16)) {
        llama_err("param and reduce dtypes must be f32 or bf16");
        return SHARC_ERR_INVALID;
    }
    if (run->shard_size < 0 || (run->shard_size > 0 && world % run->shard_size != 0)) {
        llama_err("HSDP shard group size %d does not divide the world size %d", run->shard_size,
                  world);
        return SHARC_ERR_INVALID;
    }
    if (run->device != LLAMA_DEVICE_CPU && run->device != LLAMA_DEVICE_CUDA) {
        llama_err("unknown device %d", (int)run->device);
        return SHARC_ERR_INVALID;
    }
    if (run->compute_dtype != SHARC_DTYPE_F32 &&
        (run->compute_dtype != SHARC_DTYPE_BF16 || run->device != LLAMA_DEVICE_CUDA)) {
        llama_err("compute dtype %s: the CPU computes in f32, CUDA in f32 or bf16",
                  sharc_dtype_name(run->compute_dtype) ? sharc_dtype_name(run->compute_dtype)
                                                       : "?");
        return SHARC_ERR_INVALID;
    }
    if ((run->attention == LLAMA_ATTENTION_FLASH || run->attention == LLAMA_ATTENTION_CUDNN) &&
        (run->device != LLAMA_DEVICE_CUDA || run->compute_dtype != SHARC_DTYPE_BF16)) {
        llama_err("the %s attention runs on CUDA in bf16 (--device cuda --compute-dtype bf16)",
                  run->attention == LLAMA_ATTENTION_FLASH ? "flash" : "cuDNN");
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

/* The ops table of run->device, and on CUDA the stream the engine is to follow. */
static sharc_status_t open_ops(llama_model_t *m, sharc_comm_h comm, void **stream_p)
{
    *stream_p = NULL;
    if (m->run.device == LLAMA_DEVICE_CPU) {
        m->ops = &llama_ops_cpu;
    } else {
        /* the shape attention runs at, so that the table knows before training whether cuDNN
         * takes it */
        llama_cuda_attn_shape_t shape = {m->run.batch, m->run.seq, m->cfg.n_heads,
                                         m->cfg.n_kv_heads, m->cfg.head_dim};
        llama_cuda_attention_t attention =
            m->run.attention == LLAMA_ATTENTION_GEMM    ? LLAMA_CUDA_ATTENTION_GEMM
            : m->run.attention == LLAMA_ATTENTION_FLASH ? LLAMA_CUDA_ATTENTION_FLASH
            : m->run.attention == LLAMA_ATTENTION_CUDNN ? LLAMA_CUDA_ATTENTION_CUDNN
                                                        : LLAMA_CUDA_ATTENTION_AUTO;
        sharc_status_t status =
            llama_cuda_open(comm, m->run.compute_dtype, attention, &shape, &m->ops, stream_p);
        if (status != SHARC_OK) {
            return status;
        }
    }
    m->act_size = sharc_dtype_size(m->ops->act_dtype);
    return SHARC_OK;
}

static void close_ops(llama_model_t *m)
{
    if (m->run.device == LLAMA_DEVICE_CUDA && m->ops != NULL) {
        llama_cuda_close();
    }
}

/* The model's shape: its units, and its parameter list in unit order (names, shapes) in
 * *params_p, for the shard group. */
static sharc_status_t model_params(llama_model_t *m, sharc_shard_param_t **params_p)
{
    sharc_shard_param_t *params;
    sharc_status_t status;

    m->nunits = m->cfg.n_layers + 2;
    m->nparams = 1 + LLAMA_W_BLOCK * m->cfg.n_layers + LLAMA_W_HEAD;
    m->names = calloc((size_t)m->nparams, sizeof(*m->names));
    m->offsets = calloc((size_t)m->nparams, sizeof(*m->offsets));
    m->first = calloc((size_t)m->nunits + 1, sizeof(*m->first));
    params = calloc((size_t)m->nparams, sizeof(*params));
    if (m->names == NULL || m->offsets == NULL || m->first == NULL || params == NULL) {
        free(params);
        return SHARC_ERR_NOMEM;
    }
    status = build_params(m, params);
    if (status != SHARC_OK) {
        free(params);
        return status;
    }
    m->first[m->nunits] = m->nparams;
    *params_p = params;
    return SHARC_OK;
}

/* The wires and what a unit keeps after its forward, where --param-wire, --reduce-wire,
 * --wire-block and --reshard-after-forward set them (else the engine's knobs decide). */
static void llama_wire_params(const llama_run_t *run, sharc_shard_params_t *sp)
{
    static const int reshard[] = {[LLAMA_RESHARD_YES] = 1,
                                  [LLAMA_RESHARD_NO] = 0,
                                  [LLAMA_RESHARD_NODE] = SHARC_SHARD_RESHARD_NODE};

    if (run->param_wire != SHARC_WIRE_FULL) {
        sp->field_mask |= SHARC_SHARD_PARAM_PARAM_WIRE;
        sp->param_wire = run->param_wire;
    }
    if (run->reduce_wire != SHARC_WIRE_FULL) {
        sp->field_mask |= SHARC_SHARD_PARAM_REDUCE_WIRE;
        sp->reduce_wire = run->reduce_wire;
    }
    if (run->wire_block > 0) {
        sp->field_mask |= SHARC_SHARD_PARAM_WIRE_BLOCK;
        sp->wire_block = (size_t)run->wire_block;
    }
    if (run->reshard != LLAMA_RESHARD_DEFAULT) {
        sp->field_mask |= SHARC_SHARD_PARAM_RESHARD_AFTER_FORWARD;
        sp->reshard_after_forward = reshard[run->reshard];
    }
}

/* The shard group of the units in the ops table's memory (on CUDA ordered by @p stream), and
 * what its layout gives the model: the largest unit, each parameter's offset in its unit. */
static sharc_status_t create_group(llama_model_t *m, const sharc_shard_param_t *params,
                                   void *stream)
{
    const llama_run_t *run = &m->run;
    sharc_shard_params_t sp = {0};
    sharc_status_t status;

    sp.field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PARAM_DTYPE |
                    SHARC_SHARD_PARAM_REDUCE_DTYPE;
    sp.num_units = m->nunits;
    sp.param_dtype = run->param_dtype;
    sp.reduce_dtype = run->reduce_dtype;
    if (run->shard_size > 0) {
        sp.field_mask |= SHARC_SHARD_PARAM_SHARD_SIZE;
        sp.shard_size = run->shard_size;
    }
    if (run->prefetch > 0 || run->prefetch == SHARC_SHARD_PREFETCH_AUTO) {
        sp.field_mask |= SHARC_SHARD_PARAM_PREFETCH;
        sp.prefetch = run->prefetch;
    }
    llama_wire_params(run, &sp);
    if (m->ops->memtype == SHARC_MEMTYPE_CUDA) {
        /* shards, states and gathers on the GPU, ordered with the compute by its stream */
        sp.field_mask |= SHARC_SHARD_PARAM_MEMTYPE | SHARC_SHARD_PARAM_STREAM;
        sp.memtype = SHARC_MEMTYPE_CUDA;
        sp.stream = stream;
        sp.field_mask |= SHARC_SHARD_PARAM_OFFLOAD;
        sp.offload = run->offload;
        if (run->offload_fraction > 0) {
            sp.field_mask |= SHARC_SHARD_PARAM_OFFLOAD_FRACTION;
            sp.offload_fraction = run->offload_fraction;
        }
    }
    status = sharc_shard_create(m->comm, params, m->nparams, &sp, &m->group);
    if (status != SHARC_OK) {
        llama_err("cannot create the shard group: %s", sharc_status_string(status));
        return status;
    }
    for (int u = 0; u < m->nunits; u++) {
        sharc_shard_unit_info_t ui;
        sharc_shard_unit_info(m->group, u, &ui);
        m->max_unit = ui.count > m->max_unit ? ui.count : m->max_unit;
        m->max_padded = ui.padded_count > m->max_padded ? ui.padded_count : m->max_padded;
    }
    for (int i = 0; i < m->nparams; i++) {
        sharc_shard_param_info_t pi;
        sharc_shard_param_info(m->group, i, &pi);
        m->offsets[i] = pi.offset;
    }
    return SHARC_OK;
}

/* What model_params allocated, and the model itself. */
static void model_free(llama_model_t *m)
{
    for (int i = 0; m->names != NULL && i < m->nparams; i++) {
        free(m->names[i]);
    }
    free(m->names);
    free(m->offsets);
    free(m->first);
    free(m);
}

sharc_status_t llama_model_create(sharc_comm_h comm, const llama_config_t *cfg,
                                  const llama_run_t *run, llama_init_t init, const char *hf_path,
                                  uint64_t seed, llama_model_t **model_p)
{
    llama_model_t *m;
    sharc_shard_param_t *params = NULL;
    sharc_status_t status;
    int world = sharc_comm_size(comm);
    void *stream;

    if (llama_config_check(cfg) != SHARC_OK || check_run(cfg, run, world) != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return SHARC_ERR_NOMEM;
    }
    m->cfg = *cfg;
    m->run = *run;
    m->comm = m->shard_comm = comm;
    m->rank = sharc_comm_rank(comm);
    m->world = world;
    status = model_params(m, &params);
    if (status != SHARC_OK) {
        goto err_free;
    }
    status = open_ops(m, comm, &stream);
    if (status != SHARC_OK) {
        goto err_free;
    }
    status = create_group(m, params, stream);
    if (status != SHARC_OK) {
        goto err_close_ops;
    }
    if (run->shard_size > 0 && run->shard_size < world) {
        status = sharc_comm_split(comm, m->rank / run->shard_size, m->rank, &m->shard_comm);
        if (status != SHARC_OK) {
            goto err_destroy_group;
        }
    }
    status = llama_weights_init(m, init, hf_path, seed);
    if (status == SHARC_OK) {
        status = llama_acts_create(m);
    }
    if (status != SHARC_OK) {
        goto err_split;
    }
    free(params);
    *model_p = m;
    return SHARC_OK;

err_split:
    if (m->shard_comm != comm) {
        sharc_comm_destroy(m->shard_comm);
    }
err_destroy_group:
    sharc_shard_destroy(m->group);
err_close_ops:
    close_ops(m);
err_free:
    free(params);
    model_free(m);
    return status;
}

void llama_model_destroy(llama_model_t *m)
{
    if (m == NULL) {
        return;
    }
    llama_acts_destroy(m);
    sharc_shard_destroy(m->group);
    if (m->shard_comm != m->comm) {
        sharc_comm_destroy(m->shard_comm);
    }
    close_ops(m);
    model_free(m);
}

sharc_shard_group_h llama_model_group(llama_model_t *m)
{
    return m->group;
}

const llama_ops_t *llama_model_ops(const llama_model_t *m)
{
    return m->ops;
}

void llama_model_set_prof(llama_model_t *m, llama_prof_t *prof)
{
    m->prof = prof;
}
