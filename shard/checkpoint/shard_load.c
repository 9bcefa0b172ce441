/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_load.c: sharc_shard_load. Rank 0 reads the metadata and every rank gets its text, so
 * all check the same thing against the group; each rank then reads its new shard from the
 * old shard files that cover it (verified once: size, checksum, header), into fresh buffers
 * that replace the group's only when every rank has succeeded. A unit's layout does not
 * depend on the number of ranks, only its shard size does, so re-sharding is by element.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "shard/shard_group.h"

#include <json-c/json.h>
#include <xxhash.h>

#include "shard/checkpoint/ckpt.h"

/* A shard file of the checkpoint, as the metadata describes it. */
typedef struct {
    char *path;
    uint64_t bytes, hash;
    int fd;       /* open once verified, else -1 */
    int verified; /* size, checksum and header checked */
} sharc_ckpt_file_t;

/* What a load reads, checked against the group. */
typedef struct {
    uint64_t generation, step;
    int shard_size, nstates;
    int *state_of; /* [1 + g->nstates]: the checkpoint's index of each of the group's states */
    sharc_ckpt_file_t *files;
} sharc_ckpt_t;

static void sharc_ckpt_free(sharc_ckpt_t *c)
{
    for (int r = 0; c->files != NULL && r < c->shard_size; r++) {
        if (c->files[r].fd >= 0) {
            close(c->files[r].fd);
        }
        free(c->files[r].path);
    }
    free(c->files);
    free(c->state_of);
}

/* Field @p key of @p obj with type @p type, or NULL (logged as a corrupt metadata file). */
static json_object *sharc_ckpt_get(json_object *obj, const char *key, json_type type,
                                   const char *where)
{
    json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, type)) {
        sharc_error("checkpoint metadata: %s has no %s '%s'", where, json_type_to_name(type), key);
        return NULL;
    }
    return v;
}

/* The units and parameters of the checkpoint against the group's. */
static sharc_status_t sharc_ckpt_check_layout(sharc_shard_group_t *g, json_object *units)
{
    if ((int)json_object_array_length(units) != g->nunits) {
        sharc_error("the checkpoint has %zu units, this group %d", json_object_array_length(units),
                    g->nunits);
        return SHARC_ERR_INVALID;
    }
    for (int ui = 0; ui < g->nunits; ui++) {
        const sharc_shard_unit_t *u = &g->units[ui];
        json_object *unit = json_object_array_get_idx(units, (size_t)ui), *params;

        json_object *count = sharc_ckpt_get(unit, "count", json_type_int, "a unit");

        params = sharc_ckpt_get(unit, "params", json_type_array, "a unit");
        if (params == NULL || count == NULL) {
            return SHARC_ERR_INVALID;
        }
        if (json_object_get_uint64(count) != u->count) {
            sharc_error("unit %d has %" PRIu64 " elements in the checkpoint, %zu in this "
                        "group",
                        ui, json_object_get_uint64(count), u->count);
            return SHARC_ERR_INVALID;
        }
        if ((int)json_object_array_length(params) != u->nparams) {
            sharc_error("unit %d has %zu parameters in the checkpoint, %d in this group", ui,
                        json_object_array_length(params), u->nparams);
            return SHARC_ERR_INVALID;
        }
        for (int i = 0; i < u->nparams; i++) {
            const sharc_shard_param_info_t *p = &g->params[u->first_param + i];
            json_object *param = json_object_array_get_idx(params, (size_t)i);
            json_object *name = sharc_ckpt_get(param, "name", json_type_string, "a parameter");
            json_object *off = sharc_ckpt_get(param, "offset", json_type_int, "a parameter");
            json_object *cnt = sharc_ckpt_get(param, "count", json_type_int, "a parameter");
            json_object *shape = sharc_ckpt_get(param, "shape", json_type_array, "a parameter");
            int same_shape;

            if (name == NULL || off == NULL || cnt == NULL || shape == NULL) {
                return SHARC_ERR_INVALID;
            }
            same_shape = (int)json_object_array_length(shape) == p->ndim;
            for (int d = 0; same_shape && d < p->ndim; d++) {
                same_shape = json_object_get_uint64(json_object_array_get_idx(shape, (size_t)d)) ==
                             p->shape[d];
            }
            if (strcmp(json_object_get_string(name), p->name) != 0 ||
                json_object_get_uint64(cnt) != p->count || !same_shape ||
                json_object_get_uint64(off) != p->offset) {
                sharc_error("parameter %d of unit %d is '%s' with %" PRIu64
                            " elements in the checkpoint, '%s' with %zu (and maybe another "
                            "shape) in this group",
                            i, ui, json_object_get_string(name), json_object_get_uint64(cnt),
                            p->name, p->count);
                return SHARC_ERR_INVALID;
            }
        }
    }
    return SHARC_OK;
}

/* The group's states (master first) in the checkpoint's list. */
static sharc_status_t sharc_ckpt_check_states(sharc_shard_group_t *g, json_object *states,
                                              sharc_ckpt_t *c)
{
    c->nstates = (int)json_object_array_length(states);
    c->state_of = calloc((size_t)(1 + g->nstates), sizeof(int));
    if (c->state_of == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int s = 0; s <= g->nstates; s++) {
        const char *want = (s == 0) ? "master" : g->state_names[s - 1];

        c->state_of[s] = -1;
        for (int k = 0; k < c->nstates; k++) {
            const char *have = json_object_get_string(json_object_array_get_idx(states, (size_t)k));

            if (have != NULL && strcmp(have, want) == 0) {
                c->state_of[s] = k;
            }
        }
        if (c->state_of[s] < 0) {
            sharc_error("the checkpoint has no state '%s'", want);
            return SHARC_ERR_INVALID;
        }
    }
    return SHARC_OK;
}

static sharc_status_t sharc_ckpt_parse(sharc_shard_group_t *g, const char *dir, const char *text,
                                       sharc_ckpt_t *c)
{
    enum json_tokener_error err = json_tokener_success;
    json_object *meta = json_tokener_parse_verbose(text, &err), *v, *files;
    sharc_status_t status = SHARC_ERR_INVALID;

    if (meta == NULL || !json_object_is_type(meta, json_type_object)) {
        sharc_error("%s/%s is not a JSON object (%s)", dir, SHARC_CKPT_META,
                    meta == NULL ? json_tokener_error_desc(err) : "another type");
        goto out;
    }
    if ((v = sharc_ckpt_get(meta, "format", json_type_string, "the file")) == NULL ||
        strcmp(json_object_get_string(v), SHARC_CKPT_FORMAT) != 0 ||
        (v = sharc_ckpt_get(meta, "version", json_type_int, "the file")) == NULL ||
        json_object_get_int(v) != SHARC_CKPT_VERSION) {
        sharc_error("%s/%s is not a version-%d sharc checkpoint", dir, SHARC_CKPT_META,
                    SHARC_CKPT_VERSION);
        goto out;
    }
    if ((v = sharc_ckpt_get(meta, "generation", json_type_int, "the file")) == NULL) {
        goto out;
    }
    c->generation = json_object_get_uint64(v);
    if ((v = sharc_ckpt_get(meta, "step", json_type_int, "the file")) == NULL) {
        goto out;
    }
    c->step = json_object_get_uint64(v);
    if ((v = sharc_ckpt_get(meta, "shard_size", json_type_int, "the file")) == NULL) {
        goto out;
    }
    c->shard_size = json_object_get_int(v);
    if ((v = sharc_ckpt_get(meta, "units", json_type_array, "the file")) == NULL ||
        (status = sharc_ckpt_check_layout(g, v)) != SHARC_OK) {
        status = SHARC_ERR_INVALID;
        goto out;
    }
    status = SHARC_ERR_INVALID;
    if ((v = sharc_ckpt_get(meta, "states", json_type_array, "the file")) == NULL ||
        (status = sharc_ckpt_check_states(g, v, c)) != SHARC_OK) {
        goto out;
    }
    status = SHARC_ERR_INVALID;
    files = sharc_ckpt_get(meta, "files", json_type_array, "the file");
    if (files == NULL || c->shard_size <= 0 ||
        (int)json_object_array_length(files) != c->shard_size) {
        sharc_error("the checkpoint lists %zu shard files for a shard size of %d",
                    files ? json_object_array_length(files) : 0, c->shard_size);
        goto out;
    }
    c->files = calloc((size_t)c->shard_size, sizeof(*c->files));
    if (c->files == NULL) {
        status = SHARC_ERR_NOMEM;
        goto out;
    }
    for (int r = 0; r < c->shard_size; r++) {
        c->files[r].fd = -1;
    }
    for (int r = 0; r < c->shard_size; r++) {
        json_object *file = json_object_array_get_idx(files, (size_t)r), *name, *bytes, *hash;
        const char *n;
        char *end;

        name = sharc_ckpt_get(file, "name", json_type_string, "a file");
        bytes = sharc_ckpt_get(file, "bytes", json_type_int, "a file");
        hash = sharc_ckpt_get(file, "xxh3", json_type_string, "a file");
        if (name == NULL || bytes == NULL || hash == NULL) {
            goto out;
        }
        n = json_object_get_string(name);
        if (strchr(n, '/') != NULL || n[0] == '.') {
            sharc_error("the checkpoint names a file outside its directory: '%s'", n);
            goto out;
        }
        c->files[r].path = sharc_ckpt_path(dir, n);
        c->files[r].bytes = json_object_get_uint64(bytes);
        c->files[r].hash = strtoull(json_object_get_string(hash), &end, 16);
        if (c->files[r].path == NULL || *end != '\0') {
            sharc_error("the checkpoint's checksum of '%s' is not hexadecimal", n);
            goto out;
        }
    }
    status = SHARC_OK;
out:
    json_object_put(meta);
    return status;
}

/* Size, checksum and header of shard file @p r, once; it stays open for the reads. */
static sharc_status_t sharc_ckpt_verify(sharc_shard_group_t *g, sharc_ckpt_t *c, int r)
{
    sharc_ckpt_file_t *f = &c->files[r];
    sharc_ckpt_header_t h;
    XXH3_state_t *xxh;
    struct stat st;
    char *buf;
    uint64_t hash;
    off_t off = 0;

    if (f->verified) {
        return SHARC_OK;
    }
    f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0 || fstat(f->fd, &st) != 0) {
        sharc_error("cannot open checkpoint file %s: %m", f->path);
        return SHARC_ERR_IO;
    }
    if ((uint64_t)st.st_size != f->bytes) {
        sharc_error("checkpoint file %s has %lld bytes, the metadata says %" PRIu64
                    " (truncated or replaced)",
                    f->path, (long long)st.st_size, f->bytes);
        return SHARC_ERR_INVALID;
    }
    buf = malloc(1 << 20);
    xxh = XXH3_createState();
    if (buf == NULL || xxh == NULL) {
        free(buf);
        XXH3_freeState(xxh);
        return SHARC_ERR_NOMEM;
    }
    XXH3_64bits_reset(xxh);
    while ((uint64_t)off < f->bytes) {
        size_t n = (size_t)SHARC_MIN((uint64_t)(1 << 20), f->bytes - (uint64_t)off);

        if (sharc_ckpt_read_at(f->fd, buf, n, off) != 0) {
            sharc_error("cannot read checkpoint file %s: %m", f->path);
            free(buf);
            XXH3_freeState(xxh);
            return SHARC_ERR_IO;
        }
        XXH3_64bits_update(xxh, buf, n);
        off += (off_t)n;
    }
    hash = XXH3_64bits_digest(xxh);
    free(buf);
    XXH3_freeState(xxh);
    if (hash != f->hash) {
        sharc_error("checkpoint file %s has checksum %016" PRIx64 ", the metadata says "
                    "%016" PRIx64 " (corrupt)",
                    f->path, hash, f->hash);
        return SHARC_ERR_INVALID;
    }
    if (sharc_ckpt_read_at(f->fd, &h, sizeof(h), 0) != 0 ||
        memcmp(h.magic, SHARC_CKPT_MAGIC, sizeof(h.magic)) != 0 ||
        h.version != SHARC_CKPT_VERSION || h.shard_rank != (uint32_t)r ||
        h.shard_size != (uint32_t)c->shard_size || h.nunits != (uint32_t)g->nunits ||
        h.nstates != (uint32_t)c->nstates || h.generation != c->generation) {
        sharc_error("checkpoint file %s does not belong to this checkpoint (its header "
                    "says shard %u of %u, generation %" PRIu64 ")",
                    f->path, h.shard_rank, h.shard_size, h.generation);
        return SHARC_ERR_INVALID;
    }
    f->verified = 1;
    return SHARC_OK;
}

/*
 * This rank's new shard of state @p s of unit @p ui, from the old shards that cover it:
 * elements [lo, hi) of the unit, old shards of old_shard elements each.
 */
static sharc_status_t sharc_ckpt_read_shard(sharc_shard_group_t *g, sharc_ckpt_t *c, int ui, int s,
                                            float *out)
{
    const sharc_shard_unit_t *u = &g->units[ui];
    size_t old_shard = sharc_shard_count(u->count, c->shard_size);
    size_t lo = (size_t)g->shard_rank * u->shard, hi = SHARC_MIN(lo + u->shard, u->count);
    off_t base = SHARC_CKPT_HEADER;
    sharc_status_t status;

    for (int v = 0; v < ui; v++) { /* the old file's payload: per unit, per state */
        base += (off_t)(sharc_shard_count(g->units[v].count, c->shard_size) * sizeof(float) *
                        (size_t)c->nstates);
    }
    base += (off_t)(old_shard * sizeof(float) * (size_t)c->state_of[s]);
    memset(out, 0, u->shard * sizeof(float)); /* padding stays zero */
    for (size_t x = lo; x < hi;) {
        int r = (int)(x / old_shard);
        size_t end = SHARC_MIN(hi, (size_t)(r + 1) * old_shard);

        status = sharc_ckpt_verify(g, c, r);
        if (status != SHARC_OK) {
            return status;
        }
        if (sharc_ckpt_read_at(c->files[r].fd, out + (x - lo), (end - x) * sizeof(float),
                               base + (off_t)((x - (size_t)r * old_shard) * sizeof(float))) != 0) {
            sharc_error("cannot read checkpoint file %s: %m", c->files[r].path);
            return SHARC_ERR_IO;
        }
        x = end;
    }
    return SHARC_OK;
}

/* The metadata text, read by rank 0 and broadcast, so every rank loads the same. */
static sharc_status_t sharc_ckpt_read_meta(sharc_shard_group_t *g, const char *dir, char **text_p)
{
    sharc_shard_vote_t vote = {0}, *all = calloc((size_t)g->size, sizeof(*all));
    sharc_status_t status, mine = SHARC_OK;
    char *text = NULL;
    FILE *f = NULL;
    long len = 0;

    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (g->rank == 0) {
        char *path = (dir != NULL) ? sharc_ckpt_path(dir, SHARC_CKPT_META) : NULL;

        f = (path != NULL) ? fopen(path, "rb") : NULL;
        if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
            fseek(f, 0, SEEK_SET) != 0) {
            sharc_error("cannot read the checkpoint %s: %m", path ? path : "(no directory)");
            mine = SHARC_ERR_IO;
        } else if ((size_t)len > sharc_boot_cfg(g->ctx->cfg)->max_msg) {
            sharc_error("%s is %ld bytes, more than SHARC_BOOTSTRAP_MAX_MSG", path, len);
            mine = SHARC_ERR_INVALID;
        }
        free(path);
        vote.a = (uint64_t)len;
    }
    status = sharc_shard_exchange(g, mine, &vote, all, "reading the checkpoint metadata");
    if (status == SHARC_OK) {
        len = (long)all[0].a;
        text = calloc((size_t)len + 1, 1);
        mine = (text == NULL) ? SHARC_ERR_NOMEM : SHARC_OK;
        if (g->rank == 0 && text != NULL && fread(text, 1, (size_t)len, f) != (size_t)len) {
            sharc_error("cannot read the checkpoint metadata of %s: %m", dir);
            mine = SHARC_ERR_IO;
        }
        status = sharc_shard_exchange(g, mine, &vote, all, "reading the checkpoint metadata");
    }
    if (status == SHARC_OK) {
        status = sharc_boot_bcast(g->comm->boot, text, (size_t)len, 0);
    }
    if (f != NULL) {
        fclose(f);
    }
    free(all);
    if (status != SHARC_OK) {
        free(text);
        return status;
    }
    *text_p = text;
    return SHARC_OK;
}

sharc_status_t sharc_shard_load(sharc_shard_group_h g, const char *dir, uint64_t *step_p)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_load"), mine;
    sharc_ckpt_t c = {0};
    sharc_shard_vote_t vote = {0}, *all;
    float **fresh = NULL; /* [nunits * (1 + nstates)]: loaded here first, kept on success */
    int per_unit;
    char *text = NULL;

    if (status != SHARC_OK) {
        return status;
    }
    per_unit = 1 + g->nstates;
    mine = SHARC_OK;
    if (g->plan.alive > 0 || g->rhead != NULL) {
        sharc_error("sharc_shard_load: %s", g->rhead != NULL
                                                ? "reductions are in flight (sharc_shard_finish "
                                                  "first)"
                                                : "units are gathered (reshard them first)");
        mine = SHARC_ERR_INVALID;
    }
    all = calloc((size_t)g->size, sizeof(*all));
    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_shard_exchange(g, mine, &vote, all, "starting a checkpoint load");
    if (status == SHARC_OK) {
        status = sharc_ckpt_read_meta(g, dir, &text);
    }
    if (status == SHARC_OK) {
        mine = sharc_ckpt_parse(g, dir, text, &c);
        fresh = calloc((size_t)(g->nunits * per_unit), sizeof(*fresh));
        if (fresh == NULL && mine == SHARC_OK) {
            mine = SHARC_ERR_NOMEM;
        }
        for (int ui = 0; mine == SHARC_OK && ui < g->nunits; ui++) {
            for (int s = 0; mine == SHARC_OK && s < per_unit; s++) {
                float **slot = &fresh[ui * per_unit + s];

                *slot = malloc(g->units[ui].shard * sizeof(float));
                mine =
                    (*slot == NULL) ? SHARC_ERR_NOMEM : sharc_ckpt_read_shard(g, &c, ui, s, *slot);
            }
        }
        status = sharc_shard_exchange(g, mine, &vote, all, "loading a checkpoint");
    }
    if (status == SHARC_OK) {
        /* every rank has its new shards: copy them in (on CUDA after, and before, whatever
         * the streams have queued) */
        status = sharc_shard_quiesce(g);
        for (int ui = 0; status == SHARC_OK && ui < g->nunits; ui++) {
            sharc_shard_unit_t *u = &g->units[ui];

            /* into the group's own memory (shareable, or on the device) */
            for (int s = 0; status == SHARC_OK && s < per_unit; s++) {
                status = sharc_shard_copy(g, (s == 0) ? u->master : u->state[s - 1],
                                          fresh[ui * per_unit + s], u->shard * sizeof(float));
            }
            if (status == SHARC_OK && sharc_shard_offload_zero(g, u) == SHARC_ERR_UNSUPPORTED) {
                status = sharc_shard_zero(g, u->grad, u->shard * sizeof(float), g->estream);
            }
            u->grad_zero = 1;
        }
        sharc_shard_offload_dirty_all(g); /* offloaded masters: up before their next gathers */
        if (status == SHARC_OK) {
            status = sharc_shard_quiesce(g);
        }
    }
    if (status == SHARC_OK) {
        if (step_p != NULL) {
            *step_p = c.step;
        }
        sharc_info("loaded step %" PRIu64 " from %s (generation %" PRIu64
                   ", saved with shard size %d)",
                   c.step, dir, c.generation, c.shard_size);
    }
    for (int i = 0; fresh != NULL && i < g->nunits * per_unit; i++) {
        free(fresh[i]);
    }
    free(fresh);
    free(text);
    free(all);
    sharc_ckpt_free(&c);
    return status;
}
