/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/safetensors_read.c: the safetensors reader (safetensors.h): a file, a sharded set
 * through its index, or a directory holding either. Nothing read from a file is trusted until
 * checked: every file's header is validated in full when the set is opened
 * (safetensors_header.c), so a malformed or hostile file gives one error naming the file and
 * the cause, never a crash or a read outside the file. Assumes a little-endian host.
 */
#define _GNU_SOURCE
#include "safetensors_int.h"
#include "../util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trainer/io/safetensors_read.c reads the little-endian data in place"
#endif

#define ST_MAX_HEADER (100u << 20) /* bytes of JSON; the reference reader allows 100 MB */
#define ST_MAX_INDEX  (100u << 20) /* bytes of a *.index.json */

struct llama_st {
    int nfiles;
    int *fds;     /* open until llama_st_close */
    char **paths; /* for messages */
    int ntensors;
    llama_st_tensor_t *tensors;        /* by file, then by offset in the file */
    const llama_st_tensor_t **by_name; /* sorted by name, for llama_st_find */
};

/* Exactly @p bytes at @p offset, through EINTR and short reads; an early end of file is an
 * error too (the file shrank after its header was checked). */
static sharc_status_t st_pread(int fd, const char *path, void *buf, size_t bytes, uint64_t offset)
{
    char *p = buf;
    ssize_t ret;

    while (bytes > 0) {
        ret = pread(fd, p, bytes, (off_t)offset);
        if (ret < 0 && errno == EINTR) {
            continue;
        }
        if (ret < 0) {
            llama_err("%s: read of %zu bytes at %llu failed: %s", path, bytes,
                      (unsigned long long)offset, strerror(errno));
            return SHARC_ERR_IO;
        }
        if (ret == 0) {
            llama_err("%s: file ends before byte %llu (truncated while open?)", path,
                      (unsigned long long)offset + bytes);
            return SHARC_ERR_IO;
        }
        p += ret;
        bytes -= (size_t)ret;
        offset += (uint64_t)ret;
    }
    return SHARC_OK;
}

static char *st_join(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);

    if (path == NULL) {
        llama_err("safetensors: out of memory for a path");
        return NULL;
    }
    snprintf(path, len, "%s/%s", dir, name);
    return path;
}

/* Open one .safetensors file, validate its header and append the file and its tensors. */
static sharc_status_t st_add_file(llama_st_t *st, const char *path)
{
    llama_st_tensor_t *tensors, *all;
    unsigned char lenbuf[8];
    sharc_status_t status;
    uint64_t hlen = 0, size;
    char *header, *copy;
    int i, fd, n, *fds;
    char **paths;

    fd = llama_open_file(path, &size);
    if (fd < 0) {
        return SHARC_ERR_IO;
    }
    if (size < 8) {
        llama_err("%s: file of %llu bytes is shorter than its 8-byte header length", path,
                  (unsigned long long)size);
        status = SHARC_ERR_INVALID;
        goto err_close;
    }
    status = st_pread(fd, path, lenbuf, sizeof(lenbuf), 0);
    if (status != SHARC_OK) {
        goto err_close;
    }
    for (i = 7; i >= 0; i--) {
        hlen = hlen << 8 | lenbuf[i];
    }
    if (hlen > size - 8 || hlen > ST_MAX_HEADER) {
        llama_err("%s: header length %llu is past the file's end (%llu bytes: truncated?) or "
                  "above %u",
                  path, (unsigned long long)hlen, (unsigned long long)size, ST_MAX_HEADER);
        status = SHARC_ERR_INVALID;
        goto err_close;
    }
    header = malloc(hlen + 1);
    if (header == NULL) {
        llama_err("%s: out of memory for a header of %llu bytes", path, (unsigned long long)hlen);
        status = SHARC_ERR_NOMEM;
        goto err_close;
    }
    status = st_pread(fd, path, header, hlen, 8);
    if (status != SHARC_OK) {
        goto err_free_header;
    }
    header[hlen] = '\0';
    status = llama_st_parse_header(path, header, hlen, 8 + hlen, size - 8 - hlen, st->nfiles,
                                   &tensors, &n);
    if (status != SHARC_OK) {
        goto err_free_header;
    }

    /* grown one by one, so st stays consistent (and freeable) if one of these fails */
    status = SHARC_ERR_NOMEM;
    copy = strdup(path);
    if (copy == NULL) {
        goto err_nomem;
    }
    fds = realloc(st->fds, (size_t)(st->nfiles + 1) * sizeof(*fds));
    if (fds == NULL) {
        goto err_free_copy;
    }
    st->fds = fds;
    paths = realloc(st->paths, (size_t)(st->nfiles + 1) * sizeof(*paths));
    if (paths == NULL) {
        goto err_free_copy;
    }
    st->paths = paths;
    if (n > INT32_MAX - st->ntensors) {
        goto err_free_copy;
    }
    all = realloc(st->tensors, (size_t)(st->ntensors + n + 1) * sizeof(*all));
    if (all == NULL) {
        goto err_free_copy;
    }
    st->tensors = all;
    memcpy(all + st->ntensors, tensors, (size_t)n * sizeof(*all));
    st->ntensors += n;
    free(tensors); /* the names moved into st */
    st->fds[st->nfiles] = fd;
    st->paths[st->nfiles] = copy;
    st->nfiles++;
    free(header);
    return SHARC_OK;

err_free_copy:
    free(copy);
err_nomem:
    llama_err("%s: out of memory for the tensor table", path);
    llama_st_free_tensors(tensors, n);
err_free_header:
    free(header);
err_close:
    close(fd);
    return status;
}

static int st_cmp_name(const void *a, const void *b)
{
    const llama_st_tensor_t *const *x = a, *const *y = b;

    return strcmp((*x)->name, (*y)->name);
}

/* The by-name table; a name held by two files of a set is an error. */
static sharc_status_t st_sort_names(llama_st_t *st, const char *path)
{
    int i;

    st->by_name = malloc((size_t)(st->ntensors + 1) * sizeof(*st->by_name));
    if (st->by_name == NULL) {
        llama_err("%s: out of memory for %d tensor names", path, st->ntensors);
        return SHARC_ERR_NOMEM;
    }
    for (i = 0; i < st->ntensors; i++) {
        st->by_name[i] = &st->tensors[i];
    }
    qsort(st->by_name, (size_t)st->ntensors, sizeof(*st->by_name), st_cmp_name);
    for (i = 1; i < st->ntensors; i++) {
        if (strcmp(st->by_name[i - 1]->name, st->by_name[i]->name) == 0) {
            llama_err("%s: tensor %s is in both %s and %s", path, st->by_name[i]->name,
                      st->paths[st->by_name[i - 1]->file], st->paths[st->by_name[i]->file]);
            return SHARC_ERR_INVALID;
        }
    }
    return SHARC_OK;
}

/* A small file, whole and NUL-terminated. */
static sharc_status_t st_slurp(const char *path, size_t limit, char **text_p, size_t *len_p)
{
    sharc_status_t status;
    uint64_t size;
    char *text;
    int fd;

    fd = llama_open_file(path, &size);
    if (fd < 0) {
        return SHARC_ERR_IO;
    }
    if (size > limit) {
        llama_err("%s: %llu bytes, more than the %zu allowed", path, (unsigned long long)size,
                  limit);
        status = SHARC_ERR_INVALID;
        goto err_close;
    }
    text = malloc((size_t)size + 1);
    if (text == NULL) {
        llama_err("%s: out of memory", path);
        status = SHARC_ERR_NOMEM;
        goto err_close;
    }
    status = st_pread(fd, path, text, (size_t)size, 0);
    if (status != SHARC_OK) {
        free(text);
        goto err_close;
    }
    text[size] = '\0';
    close(fd);
    *text_p = text;
    *len_p = (size_t)size;
    return SHARC_OK;

err_close:
    close(fd);
    return status;
}

/*
 * A sharded set: {"metadata": {...}, "weight_map": {tensor: file}}. Each distinct file is
 * opened from the index's directory (a plain file name only: no '/', no "." or ".."), and each
 * tensor of weight_map must be in the file it names. Tensors of those files missing from
 * weight_map are kept, as a loader of the whole files would see them. A name listed twice in
 * weight_map is seen once (json-c keeps the last), which is harmless: the check above holds.
 */
static sharc_status_t st_add_index(llama_st_t *st, const char *path)
{
    json_object *root, *map;
    const char **fnames, *slash, *fname;
    const llama_st_tensor_t *t;
    sharc_status_t status;
    char *text, *dir, *file;
    size_t len;
    int i, nnames = 0;

    status = st_slurp(path, ST_MAX_INDEX, &text, &len);
    if (status != SHARC_OK) {
        return status;
    }
    status = llama_st_parse_object(path, text, len, &root);
    if (status != SHARC_OK) {
        goto err_free_text;
    }
    if (!json_object_object_get_ex(root, "weight_map", &map) ||
        !json_object_is_type(map, json_type_object) || json_object_object_length(map) == 0) {
        llama_err("%s: no weight_map object, or an empty one", path);
        status = SHARC_ERR_INVALID;
        goto err_put;
    }
    slash = strrchr(path, '/');
    dir = slash == NULL ? strdup(".") : strndup(path, (size_t)(slash - path));
    fnames = calloc((size_t)json_object_object_length(map), sizeof(*fnames));
    if (dir == NULL || fnames == NULL) {
        llama_err("%s: out of memory", path);
        status = SHARC_ERR_NOMEM;
        goto err_free_dir;
    }

    json_object_object_foreach(map, key, val)
    {
        fname = llama_st_json_str(val);
        if (fname == NULL || fname[0] == '\0' || strchr(fname, '/') != NULL ||
            strcmp(fname, ".") == 0 || strcmp(fname, "..") == 0) {
            llama_err("%s: weight_map gives tensor %s a file that is not a plain file name", path,
                      key);
            status = SHARC_ERR_INVALID;
            goto err_free_dir;
        }
        for (i = 0; i < nnames && strcmp(fnames[i], fname) != 0; i++) {
        }
        if (i < nnames) {
            continue;
        }
        file = st_join(dir, fname);
        if (file == NULL) {
            status = SHARC_ERR_NOMEM;
            goto err_free_dir;
        }
        status = st_add_file(st, file);
        free(file);
        if (status != SHARC_OK) {
            goto err_free_dir;
        }
        fnames[nnames++] = fname; /* file nnames - 1 of st */
    }
    status = st_sort_names(st, path);
    if (status != SHARC_OK) {
        goto err_free_dir;
    }
    json_object_object_foreach(map, name, val2)
    {
        t = llama_st_find(st, name);
        fname = json_object_get_string(val2);
        if (t == NULL || strcmp(fnames[t->file], fname) != 0) {
            llama_err("%s: weight_map puts tensor %s in %s, which does not hold it", path, name,
                      fname);
            status = SHARC_ERR_INVALID;
            goto err_free_dir;
        }
    }

err_free_dir:
    free(fnames);
    free(dir);
err_put:
    json_object_put(root);
err_free_text:
    free(text);
    return status;
}

static int st_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int st_exists(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0;
}

sharc_status_t llama_st_open(const char *path, llama_st_t **st_p)
{
    sharc_status_t status;
    llama_st_t *st;
    struct stat sb;
    char *file = NULL;

    if (path == NULL || st_p == NULL) {
        llama_err("llama_st_open: NULL argument");
        return SHARC_ERR_INVALID;
    }
    if (stat(path, &sb) != 0) {
        llama_err("%s: cannot open: %s", path, strerror(errno));
        return SHARC_ERR_IO;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        llama_err("%s: out of memory", path);
        return SHARC_ERR_NOMEM;
    }
    if (S_ISDIR(sb.st_mode)) {
        file = st_join(path, "model.safetensors.index.json");
        if (file != NULL && !st_exists(file)) {
            free(file);
            file = st_join(path, "model.safetensors");
            if (file != NULL && !st_exists(file)) {
                llama_err("%s: holds neither model.safetensors.index.json nor model.safetensors",
                          path);
                status = SHARC_ERR_IO;
                goto err_close;
            }
        }
        if (file == NULL) {
            status = SHARC_ERR_NOMEM;
            goto err_close;
        }
        path = file;
    }
    if (st_has_suffix(path, ".json")) {
        status = st_add_index(st, path);
    } else {
        status = st_add_file(st, path);
        if (status == SHARC_OK) {
            status = st_sort_names(st, path);
        }
    }
    if (status != SHARC_OK) {
        goto err_close;
    }
    free(file);
    *st_p = st;
    return SHARC_OK;

err_close:
    free(file);
    llama_st_close(st);
    return status;
}

void llama_st_close(llama_st_t *st)
{
    int i;

    if (st == NULL) {
        return;
    }
    for (i = 0; i < st->nfiles; i++) {
        close(st->fds[i]);
        free(st->paths[i]);
    }
    free(st->fds);
    free(st->paths);
    llama_st_free_tensors(st->tensors, st->ntensors);
    free(st->by_name);
    free(st);
}

int llama_st_num_tensors(const llama_st_t *st)
{
    return st->ntensors;
}

const llama_st_tensor_t *llama_st_tensor(const llama_st_t *st, int index)
{
    return index >= 0 && index < st->ntensors ? &st->tensors[index] : NULL;
}

const llama_st_tensor_t *llama_st_find(const llama_st_t *st, const char *name)
{
    llama_st_tensor_t key = {.name = name};
    const llama_st_tensor_t *kp = &key, **found;

    if (st->by_name == NULL) {
        return NULL;
    }
    found = bsearch(&kp, st->by_name, (size_t)st->ntensors, sizeof(*st->by_name), st_cmp_name);
    return found != NULL ? *found : NULL;
}

/* Range and ownership checks common to both readers; @p what names the reader. */
static sharc_status_t st_check_read(const llama_st_t *st, const llama_st_tensor_t *t, size_t start,
                                    size_t n, const void *out, const char *what)
{
    if (st == NULL || t == NULL || t < st->tensors || t >= st->tensors + st->ntensors) {
        llama_err("%s: not a tensor of this set", what);
        return SHARC_ERR_INVALID;
    }
    if (start > t->count || n > t->count - start) {
        llama_err("%s: tensor %s of %s: elements [%zu, %zu + %zu) are outside its %zu", what,
                  t->name, st->paths[t->file], start, start, n, t->count);
        return SHARC_ERR_INVALID;
    }
    if (n > 0 && out == NULL) {
        llama_err("%s: NULL output for tensor %s", what, t->name);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

sharc_status_t llama_st_read_f32(const llama_st_t *st, const llama_st_tensor_t *t, size_t start,
                                 size_t n, float *out)
{
    size_t i, k, done, esize;
    sharc_status_t status;
    const uint16_t *h;
    uint16_t *buf;
    int fd;

    status = st_check_read(st, t, start, n, out, "llama_st_read_f32");
    if (status != SHARC_OK) {
        return status;
    }
    if (t->dtype != SHARC_DTYPE_F32 && t->dtype != SHARC_DTYPE_F16 &&
        t->dtype != SHARC_DTYPE_BF16) {
        llama_err("%s: tensor %s is %s, not F32, F16 or BF16", st->paths[t->file], t->name,
                  llama_st_dtype_name(t->dtype));
        return SHARC_ERR_INVALID;
    }
    fd = st->fds[t->file];
    esize = llama_st_dtype_size(t->dtype);
    if (t->dtype == SHARC_DTYPE_F32) { /* no conversion: straight into the output */
        return st_pread(fd, st->paths[t->file], out, n * 4, t->offset + start * 4);
    }
    k = n < LLAMA_ST_CHUNK / esize ? n : LLAMA_ST_CHUNK / esize;
    buf = malloc(k * esize + 1);
    if (buf == NULL) {
        llama_err("%s: out of memory for a read buffer", st->paths[t->file]);
        return SHARC_ERR_NOMEM;
    }
    for (done = 0; done < n; done += k) {
        k = n - done < LLAMA_ST_CHUNK / esize ? n - done : LLAMA_ST_CHUNK / esize;
        status =
            st_pread(fd, st->paths[t->file], buf, k * esize, t->offset + (start + done) * esize);
        if (status != SHARC_OK) {
            break;
        }
        h = buf;
        for (i = 0; i < k; i++) {
            out[done + i] =
                t->dtype == SHARC_DTYPE_BF16 ? llama_bf16_to_f32(h[i]) : llama_f16_to_f32(h[i]);
        }
    }
    free(buf);
    return status;
}

sharc_status_t llama_st_read_i32(const llama_st_t *st, const llama_st_tensor_t *t, size_t start,
                                 size_t n, int32_t *out)
{
    size_t i, k, done;
    sharc_status_t status;
    int64_t *buf;
    int fd;

    status = st_check_read(st, t, start, n, out, "llama_st_read_i32");
    if (status != SHARC_OK) {
        return status;
    }
    fd = st->fds[t->file];
    if (t->dtype == SHARC_DTYPE_I32) {
        return st_pread(fd, st->paths[t->file], out, n * 4, t->offset + start * 4);
    }
    if (t->dtype != SHARC_DTYPE_I64) {
        llama_err("%s: tensor %s is %s, not I32 or I64", st->paths[t->file], t->name,
                  llama_st_dtype_name(t->dtype));
        return SHARC_ERR_INVALID;
    }
    k = n < LLAMA_ST_CHUNK / 8 ? n : LLAMA_ST_CHUNK / 8;
    buf = malloc(k * 8 + 1);
    if (buf == NULL) {
        llama_err("%s: out of memory for a read buffer", st->paths[t->file]);
        return SHARC_ERR_NOMEM;
    }
    for (done = 0; done < n && status == SHARC_OK; done += k) {
        k = n - done < LLAMA_ST_CHUNK / 8 ? n - done : LLAMA_ST_CHUNK / 8;
        status = st_pread(fd, st->paths[t->file], buf, k * 8, t->offset + (start + done) * 8);
        for (i = 0; i < k && status == SHARC_OK; i++) {
            if (buf[i] < INT32_MIN || buf[i] > INT32_MAX) {
                llama_err("%s: tensor %s: element %zu = %lld is outside int32's range",
                          st->paths[t->file], t->name, start + done + i, (long long)buf[i]);
                status = SHARC_ERR_INVALID;
                break;
            }
            out[done + i] = (int32_t)buf[i];
        }
    }
    free(buf);
    return status;
}
