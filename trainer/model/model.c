/*
 * trainer/model/model.c: the Llama model as sharc shard units. Unit 0 is the token embedding, units
 * 1..L the transformer blocks, unit L+1 the final norm with the output head; parameters carry
 * Hugging Face's names and shapes. Each rank sets only its own shard of every unit, from a
 * counter-based random initialisation or from a safetensors checkpoint, and the f32 masters
 * can be exported back to one. The forward and backward are in step.c. On CUDA the shards are
 * device memory: initial values are put together on the host and copied over.
 */
#include "model_int.h"
#include "../ops/ops_cuda.h"
#include "../io/safetensors.h"
#include "../util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* ---- initial values: each rank fills only the slices of its own shards ------------------ */

typedef sharc_status_t (*fill_fn_t)(llama_model_t *m, int param, size_t start, size_t n, float *dst,
                                    void *arg);

static sharc_status_t fill_owned(llama_model_t *m, fill_fn_t fill, void *arg)
{
    int host = m->ops->memtype == SHARC_MEMTYPE_HOST;

    for (int u = 0; u < m->nunits; u++) {
        sharc_shard_unit_info_t ui;
        float *shard, *master = NULL;
        sharc_status_t status = sharc_shard_unit_info(m->group, u, &ui);
        if (status == SHARC_OK) {
            status = sharc_shard_local(m->group, u, &shard, NULL, NULL);
        }
        if (status == SHARC_OK) {
            /* device shards: this unit's is put together here (padding zero) and copied */
            master = host ? shard : calloc(ui.shard_count ? ui.shard_count : 1, sizeof(float));
            status = master != NULL ? SHARC_OK : SHARC_ERR_NOMEM;
        }
        if (status != SHARC_OK) {
            return status;
        }
        for (int i = ui.first_param; i < ui.first_param + ui.nparams; i++) {
            sharc_shard_param_info_t pi;
            sharc_shard_param_info(m->group, i, &pi);
            size_t lo = pi.offset > ui.shard_offset ? pi.offset : ui.shard_offset;
            size_t hi = pi.offset + pi.count;
            if (hi > ui.shard_offset + ui.shard_count) {
                hi = ui.shard_offset + ui.shard_count;
            }
            if (lo >= hi) {
                continue;
            }
            status = fill(m, i, lo - pi.offset, hi - lo, master + (lo - ui.shard_offset), arg);
            if (status != SHARC_OK) {
                break;
            }
        }
        if (!host) {
            if (status == SHARC_OK) {
                m->ops->to_device(shard, master, ui.shard_count * sizeof(float));
            }
            free(master);
        }
        if (status != SHARC_OK) {
            return status;
        }
    }
    return SHARC_OK;
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

/*
 * normal(0, std) from a counter-based generator keyed by (seed, parameter name, element): the
 * same values whatever the world size, so a 1-rank and an N-rank run start identical.
 */
static sharc_status_t fill_random(llama_model_t *m, int param, size_t start, size_t n, float *dst,
                                  void *arg)
{
    const char *name = m->names[param];
    uint64_t key = splitmix64(*(const uint64_t *)arg ^ hash_name(name));
    double std = 0.02;

    if (strstr(name, "norm") != NULL) {
        for (size_t i = 0; i < n; i++) {
            dst[i] = 1.0f;
        }
        return SHARC_OK;
    }
    if (strstr(name, "o_proj") != NULL || strstr(name, "down_proj") != NULL) {
        std /= sqrt(2.0 * m->cfg.n_layers); /* GPT-2's residual-projection scaling */
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t e = start + i;
        double u1 = ((double)(splitmix64(key + 2 * e) >> 11) + 0.5) * 0x1.0p-53;
        double u2 = (double)(splitmix64(key + 2 * e + 1) >> 11) * 0x1.0p-53;
        dst[i] = (float)(std * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
    }
    return SHARC_OK;
}

static sharc_status_t fill_hf(llama_model_t *m, int param, size_t start, size_t n, float *dst,
                              void *arg)
{
    llama_st_t *st = arg;
    const llama_st_tensor_t *t = llama_st_find(st, m->names[param]);
    sharc_shard_param_info_t pi;

    sharc_shard_param_info(m->group, param, &pi);
    if (t == NULL) {
        llama_err("checkpoint has no tensor %s", m->names[param]);
        return SHARC_ERR_INVALID;
    }
    int same = t->ndim == pi.ndim;
    for (int d = 0; same && d < pi.ndim; d++) {
        same = t->shape[d] == pi.shape[d];
    }
    if (!same) {
        llama_err("checkpoint tensor %s has shape [%zu%s%s] and %zu elements; the config needs "
                  "[%zu, %zu] (%zu)",
                  m->names[param], t->shape[0], t->ndim > 1 ? ", " : "", t->ndim > 1 ? "..." : "",
                  t->count, pi.shape[0], pi.ndim > 1 ? pi.shape[1] : 1, pi.count);
        return SHARC_ERR_INVALID;
    }
    return llama_st_read_f32(st, t, start, n, dst);
}

/* ---- unit buffers ------------------------------------------------------------------------ */

sharc_status_t llama_unit_weights(llama_model_t *m, int unit, float **w)
{
    int first = m->first[unit], n = m->first[unit + 1] - first;
    void *base;
    sharc_status_t status = sharc_shard_param_ptr(m->group, first, &base);

    if (status != SHARC_OK) {
        return status;
    }
    if (m->run.param_dtype != m->ops->act_dtype) {
        /* cast the gathered unit once into the dtype the products read (bf16 gathers for
         * f32 compute: up; f32 gathers for bf16 compute: down) */
        sharc_shard_unit_info_t ui;
        sharc_shard_unit_info(m->group, unit, &ui);
        m->ops->cast(m->wbuf, m->ops->act_dtype, base, m->run.param_dtype, ui.count);
        base = m->wbuf;
    }
    for (int j = 0; j < n; j++) {
        w[j] = (float *)((char *)base + (m->offsets[first + j] - m->offsets[first]) * m->act_size);
    }
    return SHARC_OK;
}

sharc_status_t llama_unit_grads(llama_model_t *m, int unit, float **g)
{
    int first = m->first[unit], n = m->first[unit + 1] - first;
    void *base;
    sharc_status_t status = sharc_shard_grad_ptr(m->group, first, &base);

    if (status != SHARC_OK) {
        return status;
    }
    if (m->run.reduce_dtype == SHARC_DTYPE_BF16) {
        sharc_shard_unit_info_t ui;
        sharc_shard_unit_info(m->group, unit, &ui);
        m->ops->zero(m->gbuf, ui.count * sizeof(float));
        base = m->gbuf;
    }
    for (int j = 0; j < n; j++) {
        g[j] = (float *)base + (m->offsets[first + j] - m->offsets[first]);
    }
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
        m->ops->acc(b, SHARC_DTYPE_BF16, m->gbuf, ui.count);
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
    if (run->attention == LLAMA_ATTENTION_FLASH &&
        (run->device != LLAMA_DEVICE_CUDA || run->compute_dtype != SHARC_DTYPE_BF16)) {
        llama_err("the flash attention runs on CUDA in bf16 (--device cuda --compute-dtype bf16)");
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
        int tiled =
            m->run.attention != LLAMA_ATTENTION_GEMM && m->run.compute_dtype == SHARC_DTYPE_BF16;
        sharc_status_t status =
            llama_cuda_open(comm, m->run.compute_dtype, tiled, &m->ops, stream_p);
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

sharc_status_t llama_model_create(sharc_comm_h comm, const llama_config_t *cfg,
                                  const llama_run_t *run, llama_init_t init, const char *hf_path,
                                  uint64_t seed, llama_model_t **model_p)
{
    llama_model_t *m;
    sharc_shard_param_t *params = NULL;
    sharc_shard_params_t sp = {0};
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
    m->nunits = cfg->n_layers + 2;
    m->nparams = 1 + LLAMA_W_BLOCK * cfg->n_layers + LLAMA_W_HEAD;
    m->names = calloc((size_t)m->nparams, sizeof(*m->names));
    m->offsets = calloc((size_t)m->nparams, sizeof(*m->offsets));
    m->first = calloc((size_t)m->nunits + 1, sizeof(*m->first));
    params = calloc((size_t)m->nparams, sizeof(*params));
    if (m->names == NULL || m->offsets == NULL || m->first == NULL || params == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_free;
    }
    status = build_params(m, params);
    if (status != SHARC_OK) {
        goto err_free;
    }
    m->first[m->nunits] = m->nparams;
    status = open_ops(m, comm, &stream);
    if (status != SHARC_OK) {
        goto err_free;
    }

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
    if (m->ops->memtype == SHARC_MEMTYPE_CUDA) {
        /* shards, states and gathers on the GPU, ordered with the compute by its stream */
        sp.field_mask |= SHARC_SHARD_PARAM_MEMTYPE | SHARC_SHARD_PARAM_STREAM;
        sp.memtype = SHARC_MEMTYPE_CUDA;
        sp.stream = stream;
    }
    status = sharc_shard_create(comm, params, m->nparams, &sp, &m->group);
    if (status != SHARC_OK) {
        llama_err("cannot create the shard group: %s", sharc_status_string(status));
        goto err_close_ops;
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
    if (run->shard_size > 0 && run->shard_size < world) {
        status = sharc_comm_split(comm, m->rank / run->shard_size, m->rank, &m->shard_comm);
        if (status != SHARC_OK) {
            goto err_destroy_group;
        }
    }

    if (init == LLAMA_INIT_HF) {
        llama_st_t *st;
        status = llama_st_open(hf_path, &st);
        if (status == SHARC_OK) {
            status = fill_owned(m, fill_hf, st);
            llama_st_close(st);
        }
    } else {
        status = fill_owned(m, fill_random, &seed);
    }
    /* every rank must agree that initialisation worked before anyone trains */
    int ok = status == SHARC_OK, all_ok = 0;
    if (sharc_allreduce(&ok, &all_ok, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, comm, NULL) != SHARC_OK ||
        !all_ok) {
        if (status == SHARC_OK) {
            llama_err("initialisation failed on another rank");
            status = SHARC_ERR_REMOTE;
        }
        goto err_split;
    }

    status = llama_acts_create(m);
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
    for (int i = 0; m->names != NULL && i < m->nparams; i++) {
        free(m->names[i]);
    }
    free(m->names);
    free(m->offsets);
    free(m->first);
    free(params);
    free(m);
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
    for (int i = 0; i < m->nparams; i++) {
        free(m->names[i]);
    }
    free(m->names);
    free(m->offsets);
    free(m->first);
    free(m);
}

sharc_shard_group_h llama_model_group(llama_model_t *m)
{
    return m->group;
}

const llama_config_t *llama_model_config(const llama_model_t *m)
{
    return &m->cfg;
}

const llama_ops_t *llama_model_ops(const llama_model_t *m)
{
    return m->ops;
}

const char *llama_model_param_name(const llama_model_t *m, int index)
{
    return index >= 0 && index < m->nparams ? m->names[index] : NULL;
}

/* ---- export ------------------------------------------------------------------------------ */

/*
 * Every unit's f32 masters are all-gathered over the shard group (the replicas hold the same
 * values), and rank 0 streams them into model.safetensors. Device shards are copied to the
 * host first: the gather is a host one.
 */
sharc_status_t llama_model_export(llama_model_t *m, sharc_comm_h comm, const char *dir,
                                  sharc_dtype_t dtype)
{
    llama_st_out_t *outs = calloc((size_t)m->nparams, sizeof(*outs));
    llama_st_writer_t *w = NULL;
    float *full = malloc(m->max_padded * sizeof(float)), *mine = NULL;
    char path[4096];
    sharc_status_t status = SHARC_OK;
    int writer = m->rank == 0;

    if (m->ops->memtype != SHARC_MEMTYPE_HOST) {
        mine = malloc(m->max_padded * sizeof(float));
    }
    if (outs == NULL || full == NULL || (m->ops->memtype != SHARC_MEMTYPE_HOST && mine == NULL)) {
        free(outs);
        free(full);
        free(mine);
        return SHARC_ERR_NOMEM;
    }
    if (writer) {
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            llama_err("cannot create %s: %s", dir, strerror(errno));
            status = SHARC_ERR_IO;
        }
        for (int i = 0; i < m->nparams && status == SHARC_OK; i++) {
            sharc_shard_param_info_t pi;
            sharc_shard_param_info(m->group, i, &pi);
            outs[i].name = m->names[i];
            outs[i].dtype = dtype;
            outs[i].ndim = pi.ndim;
            memcpy(outs[i].shape, pi.shape, sizeof(size_t) * (size_t)pi.ndim);
        }
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        const char *meta[] = {"format", "pt", "producer", "sharc-llama", NULL};
        if (status == SHARC_OK) {
            status = llama_st_writer_open(path, outs, m->nparams, meta, &w);
        }
    }
    for (int u = 0; u < m->nunits; u++) {
        sharc_shard_unit_info_t ui;
        float *master;
        sharc_shard_unit_info(m->group, u, &ui);
        sharc_shard_local(m->group, u, &master, NULL, NULL);
        if (mine != NULL) {
            /* a failed copy still takes part in the gather, so no peer waits for this rank */
            sharc_status_t hs = m->ops->to_host(mine, master, ui.shard_count * sizeof(float));
            status = status == SHARC_OK ? hs : status;
            master = mine;
        }
        sharc_status_t cs =
            sharc_allgather(master, full, ui.shard_count, SHARC_DTYPE_F32, m->shard_comm, NULL);
        if (cs != SHARC_OK) {
            status = cs;
            break;
        }
        for (int i = ui.first_param;
             writer && status == SHARC_OK && i < ui.first_param + ui.nparams; i++) {
            sharc_shard_param_info_t pi;
            sharc_shard_param_info(m->group, i, &pi);
            status = llama_st_writer_put(w, full + pi.offset, pi.count);
        }
    }
    if (writer && w != NULL) {
        sharc_status_t cs = llama_st_writer_close(w, status == SHARC_OK);
        status = status == SHARC_OK ? cs : status;
    }
    if (writer && status == SHARC_OK) {
        snprintf(path, sizeof(path), "%s/config.json", dir);
        status = llama_config_save_hf(&m->cfg, path);
    }
    free(outs);
    free(full);
    free(mine);
    /* rank 0's outcome is everyone's */
    int ok = status == SHARC_OK, all_ok = 0;
    if (sharc_allreduce(&ok, &all_ok, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, comm, NULL) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    return all_ok ? SHARC_OK : (status != SHARC_OK ? status : SHARC_ERR_REMOTE);
}
