/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_save.c: sharc_shard_save. Each shard rank of the first replica writes its file of a
 * new generation; rank 0 then replaces the metadata by rename, which is the commit; only
 * after it do the previous generation's files go, so a save that dies at any point leaves a
 * loadable checkpoint: the old one or the new one.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "shard/shard_group.h"

#include <json-c/json.h>

#include "shard/checkpoint/ckpt.h"

/* The generation of the checkpoint in @p dir, or 0 when there is none (or it is garbage). */
static uint64_t sharc_ckpt_last_generation(const char *dir)
{
    char *path = sharc_ckpt_path(dir, SHARC_CKPT_META);
    json_object *meta = (path != NULL) ? json_object_from_file(path) : NULL, *gen;
    uint64_t g = 0;

    if (meta != NULL && json_object_object_get_ex(meta, "generation", &gen)) {
        g = json_object_get_uint64(gen);
    }
    json_object_put(meta);
    free(path);
    return g;
}

/* This rank's shard file: header, then every unit's master and states (on CUDA copied to
 * host memory first, each shard on its own). */
static sharc_status_t sharc_ckpt_write_shard(sharc_shard_group_t *g, const char *dir, uint64_t gen,
                                             uint64_t *bytes_p, uint64_t *hash_p)
{
    int nstates = 1 + g->nstates, n = 1 + g->nunits * nstates, k = 0;
    const void **bufs = calloc((size_t)n, sizeof(*bufs));
    void **host = calloc((size_t)n, sizeof(*host)); /* CUDA: the copies */
    size_t *lens = calloc((size_t)n, sizeof(*lens));
    sharc_ckpt_header_t h = {.version = SHARC_CKPT_VERSION,
                             .shard_rank = (uint32_t)g->shard_rank,
                             .shard_size = (uint32_t)g->shard_size,
                             .nunits = (uint32_t)g->nunits,
                             .nstates = (uint32_t)nstates,
                             .generation = gen};
    char name[64];
    sharc_status_t status = (bufs && host && lens) ? SHARC_OK : SHARC_ERR_NOMEM;

    memcpy(h.magic, SHARC_CKPT_MAGIC, sizeof(h.magic));
    if (status == SHARC_OK) {
        status = sharc_shard_quiesce(g); /* CUDA: the optimizer's last writes are done */
    }
    if (status == SHARC_OK) {
        bufs[k] = &h;
        lens[k++] = sizeof(h);
    }
    for (int ui = 0; status == SHARC_OK && ui < g->nunits; ui++) {
        for (int s = 0; status == SHARC_OK && s < nstates; s++) {
            sharc_shard_unit_t *u = &g->units[ui];
            float *src = (s == 0) ? u->master : u->state[s - 1];

            lens[k] = u->shard * sizeof(float);
            bufs[k] = src;
            if (g->cuda) {
                host[k] = malloc(lens[k]);
                status = (host[k] == NULL) ? SHARC_ERR_NOMEM
                                           : sharc_shard_copy(g, host[k], src, lens[k]);
                bufs[k] = host[k];
            }
            h.payload_bytes += lens[k++];
        }
    }
    if (status == SHARC_OK) {
        sharc_ckpt_file_name(name, sizeof(name), gen, g->shard_rank);
        status = sharc_ckpt_write_file(dir, name, bufs, lens, n, hash_p);
        *bytes_p = sizeof(h) + h.payload_bytes;
    }
    for (int i = 0; host != NULL && i < n; i++) {
        free(host[i]);
    }
    free(host);
    free(bufs);
    free(lens);
    return status;
}

static json_object *sharc_ckpt_describe(sharc_shard_group_t *g, uint64_t gen, uint64_t step,
                                        const sharc_shard_vote_t *files)
{
    json_object *meta = json_object_new_object(), *units = json_object_new_array();
    json_object *states = json_object_new_array(), *list = json_object_new_array();
    char name[64], hex[20];

    json_object_object_add(meta, "format", json_object_new_string(SHARC_CKPT_FORMAT));
    json_object_object_add(meta, "version", json_object_new_int(SHARC_CKPT_VERSION));
    json_object_object_add(meta, "generation", json_object_new_uint64(gen));
    json_object_object_add(meta, "step", json_object_new_uint64(step));
    json_object_object_add(meta, "world_size", json_object_new_int(g->size));
    json_object_object_add(meta, "shard_size", json_object_new_int(g->shard_size));
    json_object_object_add(meta, "replicas", json_object_new_int(g->replicas));
    json_object_object_add(meta, "align", json_object_new_int(SHARC_SHARD_ALIGN));
    json_object_object_add(meta, "dtype", json_object_new_string("f32"));
    json_object_array_add(states, json_object_new_string("master"));
    for (int s = 0; s < g->nstates; s++) {
        json_object_array_add(states, json_object_new_string(g->state_names[s]));
    }
    json_object_object_add(meta, "states", states);
    for (int ui = 0; ui < g->nunits; ui++) {
        const sharc_shard_unit_t *u = &g->units[ui];
        json_object *unit = json_object_new_object(), *params = json_object_new_array();

        json_object_object_add(unit, "count", json_object_new_uint64(u->count));
        json_object_object_add(unit, "shard_count", json_object_new_uint64(u->shard));
        for (int i = u->first_param; i < u->first_param + u->nparams; i++) {
            const sharc_shard_param_info_t *p = &g->params[i];
            json_object *param = json_object_new_object(), *shape = json_object_new_array();

            json_object_object_add(param, "name", json_object_new_string(p->name));
            json_object_object_add(param, "offset", json_object_new_uint64(p->offset));
            json_object_object_add(param, "count", json_object_new_uint64(p->count));
            for (int d = 0; d < p->ndim; d++) {
                json_object_array_add(shape, json_object_new_uint64(p->shape[d]));
            }
            json_object_object_add(param, "shape", shape);
            json_object_array_add(params, param);
        }
        json_object_object_add(unit, "params", params);
        json_object_array_add(units, unit);
    }
    json_object_object_add(meta, "units", units);
    /* the shard files: rank r of the first shard group wrote shard r */
    for (int r = 0; r < g->shard_size; r++) {
        json_object *file = json_object_new_object();

        sharc_ckpt_file_name(name, sizeof(name), gen, r);
        snprintf(hex, sizeof(hex), "%016" PRIx64, files[r].b);
        json_object_object_add(file, "shard_rank", json_object_new_int(r));
        json_object_object_add(file, "name", json_object_new_string(name));
        json_object_object_add(file, "bytes", json_object_new_uint64(files[r].a));
        json_object_object_add(file, "xxh3", json_object_new_string(hex));
        json_object_array_add(list, file);
    }
    json_object_object_add(meta, "files", list);
    return meta;
}

/*
 * After the commit: this rank's files of other generations go, with temporary files that
 * saves killed before they could rename them left behind (rank 0: the metadata's too).
 */
static void sharc_ckpt_remove_old(const char *dir, uint64_t gen, int shard_rank, int rank0)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL) {
        const char *tmp = strstr(e->d_name, ".tmp.");
        uint64_t g;
        int r, len = 0, stale;

        stale = rank0 &&
                strncmp(e->d_name, SHARC_CKPT_META ".tmp.", strlen(SHARC_CKPT_META ".tmp.")) == 0;
        if (sscanf(e->d_name, "shard-g%" SCNu64 "-r%d.bin%n", &g, &r, &len) == 2 &&
            r == shard_rank) {
            stale = (e->d_name[len] == '\0' && g != gen) || tmp == e->d_name + len;
        }
        if (stale) {
            char *path = sharc_ckpt_path(dir, e->d_name);

            if (path != NULL && unlink(path) != 0) {
                sharc_warn("cannot remove the old checkpoint file %s: %m", path);
            }
            free(path);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

sharc_status_t sharc_shard_save(sharc_shard_group_h g, const char *dir, uint64_t step)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_save"), mine;
    sharc_shard_vote_t vote = {0}, *all = NULL;
    uint64_t gen = 0;
    int writer;

    if (status != SHARC_OK) {
        return status;
    }
    mine = SHARC_OK;
    if (dir == NULL || dir[0] == '\0' || g->rhead != NULL) {
        sharc_error("sharc_shard_save: %s", g->rhead != NULL
                                                ? "reductions are in flight (sharc_shard_finish "
                                                  "first)"
                                                : "no directory given");
        mine = SHARC_ERR_INVALID;
    } else if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        sharc_error("sharc_shard_save: cannot create %s: %m", dir);
        mine = SHARC_ERR_IO;
    }
    all = calloc((size_t)g->size, sizeof(*all));
    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (mine == SHARC_OK && g->rank == 0) {
        vote.a = sharc_ckpt_last_generation(dir) + 1;
    }
    status = sharc_shard_exchange(g, mine, &vote, all, "starting a checkpoint save");
    if (status != SHARC_OK) {
        goto out;
    }
    gen = all[0].a;
    /* one copy of each shard: the first shard group's ranks write (shard rank == rank) */
    writer = g->replica_rank == 0;
    memset(&vote, 0, sizeof(vote));
    mine = writer ? sharc_ckpt_write_shard(g, dir, gen, &vote.a, &vote.b) : SHARC_OK;
    status = sharc_shard_exchange(g, mine, &vote, all, "writing a checkpoint shard");
    if (status == SHARC_OK) {
        mine = SHARC_OK;
        if (g->rank == 0) {
            json_object *meta = sharc_ckpt_describe(g, gen, step, all);
            const char *text = json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PRETTY);
            const void *buf = text;
            size_t len = strlen(text);
            uint64_t hash;

            /* the commit: from here the new generation is the checkpoint */
            mine = sharc_ckpt_write_file(dir, SHARC_CKPT_META, &buf, &len, 1, &hash);
            sharc_ckpt_sync_dir(dir);
            json_object_put(meta);
        }
        memset(&vote, 0, sizeof(vote));
        status = sharc_shard_exchange(g, mine, &vote, all, "committing a checkpoint");
    }
    if (writer && status == SHARC_OK) { /* committed: older generations go */
        sharc_ckpt_remove_old(dir, gen, g->shard_rank, g->rank == 0);
    }
    /* A failure leaves this generation's files: a failed commit may still have reached the
     * metadata, which then needs them. The next save that commits removes what is stale. */
    if (status == SHARC_OK) {
        sharc_info("saved step %" PRIu64 " to %s (generation %" PRIu64 ")", step, dir, gen);
    }
out:
    free(all);
    return status;
}
