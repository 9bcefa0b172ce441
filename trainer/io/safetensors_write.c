/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/safetensors_write.c: the safetensors writer (safetensors.h): the header goes out
 * at once into a temporary file, the data follow as f32 converted to each tensor's dtype a
 * chunk at a time, and a commit renames the finished file onto its name (atomic). Writes F32,
 * BF16 and F16 only; assumes a little-endian host, like the format.
 */
#define _GNU_SOURCE
#include "safetensors_int.h"
#include "../util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trainer/io/safetensors_write.c writes the little-endian data in place"
#endif

struct llama_st_writer {
    char *path;
    char *tmp; /* "<path>.tmp.<pid>", renamed onto path on commit */
    int fd;
    int n;
    sharc_dtype_t *dtypes; /* per tensor */
    size_t *counts;        /* per tensor */
    int cur;               /* tensor being written */
    size_t cur_done;       /* its elements written */
    uint64_t total, done;  /* elements of all tensors, and written */
    unsigned char *buf;    /* converted data not yet written */
    size_t buf_used;
    int failed; /* a put failed: the file cannot be committed */
};

static void st_writer_free(llama_st_writer_t *w)
{
    free(w->buf);
    free(w->counts);
    free(w->dtypes);
    free(w->tmp);
    free(w->path);
    free(w);
}

/* Add @p v (NULL: allocation failed) to an object or an array, which then owns it; on failure
 * @p v is freed. A later failure frees it with the container. */
static int st_obj_add(json_object *o, const char *key, json_object *v)
{
    if (v == NULL || json_object_object_add(o, key, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

static int st_arr_add(json_object *a, json_object *v)
{
    if (v == NULL || json_object_array_add(a, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

/* The header's JSON, in the order of @p tensors; @p counts gets each one's element count. */
static sharc_status_t st_writer_header(const char *path, const llama_st_out_t *tensors, int n,
                                       const char *const *meta, size_t *counts,
                                       json_object **root_p)
{
    json_object *root, *m, *e, *shape, *offsets;
    uint64_t offset = 0, count, bytes;
    int i, d;

    root = json_object_new_object();
    if (root == NULL) {
        goto err_nomem;
    }
    if (meta != NULL) {
        m = json_object_new_object();
        if (st_obj_add(root, LLAMA_ST_META_KEY, m) != 0) {
            goto err_nomem;
        }
        for (; meta[0] != NULL; meta += 2) {
            if (meta[1] == NULL) {
                llama_err("%s: metadata key %s has no value", path, meta[0]);
                goto err_invalid;
            }
            if (st_obj_add(m, meta[0], json_object_new_string(meta[1])) != 0) {
                goto err_nomem;
            }
        }
    }
    for (i = 0; i < n; i++) {
        const llama_st_out_t *t = &tensors[i];
        size_t esize = llama_st_dtype_size(t->dtype);

        if (t->name == NULL || strcmp(t->name, LLAMA_ST_META_KEY) == 0 ||
            json_object_object_get_ex(root, t->name, NULL)) {
            llama_err("%s: tensor %d: %s%s", path, i, t->name == NULL ? "no name" : t->name,
                      t->name == NULL                           ? ""
                      : strcmp(t->name, LLAMA_ST_META_KEY) == 0 ? " is a reserved name"
                                                                : " given twice");
            goto err_invalid;
        }
        if (t->dtype != SHARC_DTYPE_F32 && t->dtype != SHARC_DTYPE_BF16 &&
            t->dtype != SHARC_DTYPE_F16) {
            llama_err("%s: tensor %s: can write F32, BF16 or F16 only", path, t->name);
            goto err_invalid;
        }
        if (t->ndim < 0 || t->ndim > LLAMA_ST_MAX_DIMS) {
            llama_err("%s: tensor %s: %d dimensions", path, t->name, t->ndim);
            goto err_invalid;
        }
        count = 1;
        for (d = 0; d < t->ndim; d++) {
            if (__builtin_mul_overflow(count, (uint64_t)t->shape[d], &count)) {
                break;
            }
        }
        if (d < t->ndim || count > SIZE_MAX || __builtin_mul_overflow(count, esize, &bytes) ||
            __builtin_add_overflow(offset, bytes, &bytes)) {
            llama_err("%s: tensor %s: size overflows", path, t->name);
            goto err_invalid;
        }
        counts[i] = (size_t)count;
        e = json_object_new_object();
        if (e == NULL || st_obj_add(root, t->name, e) != 0) {
            goto err_nomem;
        }
        shape = json_object_new_array_ext(t->ndim);
        offsets = json_object_new_array_ext(2);
        if (st_obj_add(e, "dtype", json_object_new_string(llama_st_dtype_name(t->dtype))) != 0 ||
            st_obj_add(e, "shape", shape) != 0 || st_obj_add(e, "data_offsets", offsets) != 0) {
            goto err_nomem;
        }
        for (d = 0; d < t->ndim; d++) {
            if (st_arr_add(shape, json_object_new_uint64(t->shape[d])) != 0) {
                goto err_nomem;
            }
        }
        if (st_arr_add(offsets, json_object_new_uint64(offset)) != 0 ||
            st_arr_add(offsets, json_object_new_uint64(bytes)) != 0) {
            goto err_nomem;
        }
        offset = bytes;
    }
    *root_p = root;
    return SHARC_OK;

err_nomem:
    llama_err("%s: out of memory building the header", path);
    json_object_put(root);
    return SHARC_ERR_NOMEM;
err_invalid:
    json_object_put(root);
    return SHARC_ERR_INVALID;
}

sharc_status_t llama_st_writer_open(const char *path, const llama_st_out_t *tensors, int n,
                                    const char *const *meta, llama_st_writer_t **w_p)
{
    unsigned char lenbuf[8];
    llama_st_writer_t *w;
    sharc_status_t status;
    json_object *root;
    const char *json;
    size_t len, hlen, tmplen;
    int i;

    if (path == NULL || w_p == NULL || n < 0 || (n > 0 && tensors == NULL)) {
        llama_err("llama_st_writer_open: bad argument");
        return SHARC_ERR_INVALID;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        goto err_nomem;
    }
    w->fd = -1;
    w->n = n;
    tmplen = strlen(path) + 32;
    w->path = strdup(path);
    w->tmp = malloc(tmplen);
    w->dtypes = calloc((size_t)n + 1, sizeof(*w->dtypes));
    w->counts = calloc((size_t)n + 1, sizeof(*w->counts));
    w->buf = malloc(LLAMA_ST_CHUNK);
    if (w->path == NULL || w->tmp == NULL || w->dtypes == NULL || w->counts == NULL ||
        w->buf == NULL) {
        st_writer_free(w);
        goto err_nomem;
    }
    snprintf(w->tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
    status = st_writer_header(path, tensors, n, meta, w->counts, &root);
    if (status != SHARC_OK) {
        goto err_free;
    }
    for (i = 0; i < n; i++) {
        w->dtypes[i] = tensors[i].dtype;
        w->total += w->counts[i];
    }

    json = json_object_to_json_string_ext(root,
                                          JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (json == NULL) {
        llama_err("%s: out of memory building the header", path);
        status = SHARC_ERR_NOMEM;
        goto err_put;
    }
    /* spaces after the JSON put the data at a multiple of 8 bytes, as the reference does */
    len = strlen(json);
    hlen = (len + 7) & ~(size_t)7;
    for (i = 0; i < 8; i++) {
        lenbuf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    }
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        llama_err("%s: cannot create: %s", w->tmp, strerror(errno));
        status = SHARC_ERR_IO;
        goto err_put;
    }
    status = llama_write_all(w->fd, w->tmp, lenbuf, sizeof(lenbuf));
    if (status == SHARC_OK) {
        status = llama_write_all(w->fd, w->tmp, json, len);
    }
    if (status == SHARC_OK) {
        status = llama_write_all(w->fd, w->tmp, "       ", hlen - len);
    }
    if (status != SHARC_OK) {
        goto err_unlink;
    }
    json_object_put(root);
    *w_p = w;
    return SHARC_OK;

err_unlink:
    close(w->fd);
    unlink(w->tmp);
err_put:
    json_object_put(root);
err_free:
    st_writer_free(w);
    return status;
err_nomem:
    llama_err("%s: out of memory for a writer", path);
    return SHARC_ERR_NOMEM;
}

static sharc_status_t st_writer_flush(llama_st_writer_t *w)
{
    sharc_status_t status = llama_write_all(w->fd, w->tmp, w->buf, w->buf_used);

    w->buf_used = 0;
    return status;
}

sharc_status_t llama_st_writer_put(llama_st_writer_t *w, const float *data, size_t count)
{
    sharc_status_t status;
    size_t i, k, esize;
    uint16_t *h;

    if (w == NULL || (count > 0 && data == NULL)) {
        llama_err("llama_st_writer_put: NULL argument");
        return SHARC_ERR_INVALID;
    }
    if (w->failed || count > w->total - w->done) {
        llama_err("%s: %s", w->path,
                  w->failed ? "an earlier put failed" : "more elements put than the tensors hold");
        w->failed = 1;
        return SHARC_ERR_INVALID;
    }
    while (count > 0) {
        while (w->cur_done == w->counts[w->cur]) { /* skips empty tensors too */
            w->cur++;
            w->cur_done = 0;
        }
        esize = llama_st_dtype_size(w->dtypes[w->cur]);
        if (LLAMA_ST_CHUNK - w->buf_used < esize) {
            status = st_writer_flush(w);
            if (status != SHARC_OK) {
                w->failed = 1;
                return status;
            }
        }
        k = (LLAMA_ST_CHUNK - w->buf_used) / esize;
        k = k < count ? k : count;
        k = k < w->counts[w->cur] - w->cur_done ? k : w->counts[w->cur] - w->cur_done;
        if (w->dtypes[w->cur] == SHARC_DTYPE_F32) {
            memcpy(w->buf + w->buf_used, data, k * 4);
        } else {
            h = (uint16_t *)(w->buf + w->buf_used);
            for (i = 0; i < k; i++) {
                h[i] = w->dtypes[w->cur] == SHARC_DTYPE_BF16 ? llama_f32_to_bf16(data[i])
                                                             : llama_f32_to_f16(data[i]);
            }
        }
        w->buf_used += k * esize;
        w->cur_done += k;
        w->done += k;
        data += k;
        count -= k;
    }
    return SHARC_OK;
}

sharc_status_t llama_st_writer_close(llama_st_writer_t *w, int commit)
{
    sharc_status_t status = SHARC_OK;
    char *slash;
    int dfd;

    if (w == NULL) {
        return SHARC_OK;
    }
    if (commit && (w->failed || w->done != w->total)) {
        llama_err("%s: not written: %llu of %llu elements put%s", w->path,
                  (unsigned long long)w->done, (unsigned long long)w->total,
                  w->failed ? ", and a put failed" : "");
        status = SHARC_ERR_INVALID;
    }
    if (commit && status == SHARC_OK) {
        status = st_writer_flush(w);
    }
    if (commit && status == SHARC_OK && fsync(w->fd) != 0) {
        llama_err("%s: fsync failed: %s", w->tmp, strerror(errno));
        status = SHARC_ERR_IO;
    }
    if (close(w->fd) != 0 && commit && status == SHARC_OK) {
        llama_err("%s: close failed: %s", w->tmp, strerror(errno));
        status = SHARC_ERR_IO;
    }
    if (commit && status == SHARC_OK && rename(w->tmp, w->path) != 0) {
        llama_err("%s: rename onto %s failed: %s", w->tmp, w->path, strerror(errno));
        status = SHARC_ERR_IO;
    }
    if (!commit || status != SHARC_OK) {
        unlink(w->tmp);
    } else {
        /* make the rename itself durable; best effort: some file systems refuse a directory
         * fsync, and the data are already safe */
        slash = strrchr(w->path, '/');
        if (slash != NULL) {
            *slash = '\0';
        }
        dfd = open(slash != NULL ? (w->path[0] ? w->path : "/") : ".", O_RDONLY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    st_writer_free(w);
    return status;
}
