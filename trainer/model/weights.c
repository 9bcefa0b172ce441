/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/weights.c: the model's values in and out. Each rank sets only the slices of
 * its own shards, from a counter-based random initialisation or from a Hugging Face
 * safetensors checkpoint; the f32 masters are exported back to one. On CUDA the shards are
 * device memory: values are put together on the host and copied over. The parameter layout
 * itself is model.c's.
 */
#include "model_int.h"
#include "../io/safetensors.h"
#include "../util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- initial values: each rank fills only the slices of its own shards ------------------ */

typedef sharc_status_t (*fill_fn_t)(llama_model_t *m, int param, size_t start, size_t n, float *dst,
                                    void *arg);

static sharc_status_t fill_owned(llama_model_t *m, fill_fn_t fill, void *arg)
{
    for (int u = 0; u < m->nunits; u++) {
        sharc_shard_unit_info_t ui;
        sharc_memtype_t where = SHARC_MEMTYPE_HOST;
        float *shard, *master = NULL;
        sharc_status_t status = sharc_shard_unit_info(m->group, u, &ui);
        if (status == SHARC_OK) {
            status = sharc_shard_local(m->group, u, &shard, NULL, NULL);
        }
        if (status == SHARC_OK) { /* (offloaded shards are in host memory) */
            status = sharc_shard_unit_memtype(m->group, u, &where);
        }
        int host = where != SHARC_MEMTYPE_CUDA;
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
            size_t lo, hi;
            llama_shard_slice(&ui, &pi, &lo, &hi);
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
    uint64_t key = llama_splitmix64(*(const uint64_t *)arg ^ hash_name(name));
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
        double u1 = ((double)(llama_splitmix64(key + 2 * e) >> 11) + 0.5) * 0x1.0p-53;
        double u2 = (double)(llama_splitmix64(key + 2 * e + 1) >> 11) * 0x1.0p-53;
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

sharc_status_t llama_weights_init(llama_model_t *m, llama_init_t init, const char *hf_path,
                                  uint64_t seed)
{
    sharc_status_t status;

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
    if (sharc_allreduce(&ok, &all_ok, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, m->comm, NULL) !=
            SHARC_OK ||
        !all_ok) {
        if (status == SHARC_OK) {
            llama_err("initialisation failed on another rank");
            status = SHARC_ERR_REMOTE;
        }
    }
    return status;
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
        sharc_memtype_t where = SHARC_MEMTYPE_HOST;
        float *master;
        sharc_shard_unit_info(m->group, u, &ui);
        sharc_shard_local(m->group, u, &master, NULL, NULL);
        sharc_shard_unit_memtype(m->group, u, &where); /* offloaded: in host memory */
        if (mine != NULL && where == SHARC_MEMTYPE_CUDA) {
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
