/*
 * trainer/io/safetensors_read.c: reader and writer of Hugging Face safetensors files.
 * Nothing read from a file is trusted until checked: every header is validated in full when
 * the set is opened, so a malformed or hostile file gives one error naming the file and the
 * cause, never a crash or a read outside the file. Not a general JSON or safetensors library:
 * only the dtypes sharc has are accepted. Assumes a little-endian host, like the format.
 */
#define _GNU_SOURCE
#include "safetensors.h"
#include "../util.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trainer/io/safetensors_read.c reads and writes the little-endian data in place"
#endif

#define ST_MAX_HEADER (100u << 20) /* bytes of JSON; the reference reader allows 100 MB */
#define ST_MAX_INDEX  (100u << 20) /* bytes of a *.index.json */
#define ST_CHUNK      (1u << 20)   /* bytes read or written through a bounce buffer at once */
#define ST_META_KEY   "__metadata__"

/*
 * The dtypes accepted. The format has more (BOOL, I8, I16, U16, U32, U64, F8_E4M3, F8_E5M2,
 * ...): a file holding one of them is rejected when opened, with an error naming the dtype,
 * rather than listed with a dtype nothing can read. sharc_dtype_t has no value for them and a
 * Llama checkpoint does not use them. F64 and U8 are listed but not readable (safetensors.h).
 */
static const struct {
    const char *name;
    sharc_dtype_t dtype;
    size_t size;
} st_dtypes[] = {
    {"F64", SHARC_DTYPE_F64, 8},   {"F32", SHARC_DTYPE_F32, 4}, {"F16", SHARC_DTYPE_F16, 2},
    {"BF16", SHARC_DTYPE_BF16, 2}, {"I64", SHARC_DTYPE_I64, 8}, {"I32", SHARC_DTYPE_I32, 4},
    {"U8", SHARC_DTYPE_U8, 1},
};

#define ST_NUM_DTYPES (sizeof(st_dtypes) / sizeof(st_dtypes[0]))

struct llama_st {
    int nfiles;
    int *fds;     /* open until llama_st_close */
    char **paths; /* for messages */
    int ntensors;
    llama_st_tensor_t *tensors;        /* by file, then by offset in the file */
    const llama_st_tensor_t **by_name; /* sorted by name, for llama_st_find */
};

/* Element size of a dtype sharc_dtype_t has (0 for none): the trainer links without libsharc. */
static size_t st_dtype_size(sharc_dtype_t dtype)
{
    size_t i;

    for (i = 0; i < ST_NUM_DTYPES; i++) {
        if (st_dtypes[i].dtype == dtype) {
            return st_dtypes[i].size;
        }
    }
    return 0;
}

static const char *st_dtype_name(sharc_dtype_t dtype)
{
    size_t i;

    for (i = 0; i < ST_NUM_DTYPES; i++) {
        if (st_dtypes[i].dtype == dtype) {
            return st_dtypes[i].name;
        }
    }
    return "?";
}

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

/* A non-negative JSON integer; json-c holds those above INT64_MAX as uint64. */
static int st_json_uint(json_object *o, uint64_t *v_p)
{
    if (!json_object_is_type(o, json_type_int) || json_object_get_int64(o) < 0) {
        return -1;
    }
    *v_p = json_object_get_uint64(o);
    return 0;
}

/* A JSON string without an embedded NUL (which the C string of json-c would cut short). */
static const char *st_json_str(json_object *o)
{
    const char *s;

    if (!json_object_is_type(o, json_type_string)) {
        return NULL;
    }
    s = json_object_get_string(o);
    return strlen(s) == (size_t)json_object_get_string_len(o) ? s : NULL;
}

/*
 * Keys of the top-level object counted in the text. json-c keeps only the last value of a
 * duplicate key, so a count above the parsed object's length means a duplicate. It also cuts a
 * key at an escaped NUL ("a\u0000b" becomes "a", another tensor's name): such a key gives
 * SIZE_MAX. Only called on text json-c parsed strictly, i.e. valid JSON.
 */
static size_t st_count_top_keys(const char *s, size_t len)
{
    size_t i, keys = 0;
    int depth = 0, want_key = 0, key;

    for (i = 0; i < len; i++) {
        switch (s[i]) {
        case '"':
            key = depth == 1 && want_key;
            keys += key;
            want_key = want_key && !key;
            for (i++; i < len && s[i] != '"'; i++) {
                if (key && s[i] == '\\' && len - i > 5 && memcmp(s + i + 1, "u0000", 5) == 0) {
                    return SIZE_MAX;
                }
                i += s[i] == '\\'; /* an escaped character, '"' included */
            }
            break;
        case '{':
        case '[': want_key = ++depth == 1; break;
        case '}':
        case ']': depth--; break;
        case ',': want_key = depth == 1; break;
        default: break;
        }
    }
    return keys;
}

/* Parse @p len bytes of @p text (from @p path) as one JSON object followed by whitespace only,
 * with no duplicate top-level key. */
static sharc_status_t st_parse_object(const char *path, const char *text, size_t len,
                                      json_object **root_p)
{
    struct json_tokener *tok;
    json_object *root;
    size_t end;

    if (len > INT32_MAX) { /* json-c takes an int length; callers cap it far lower */
        llama_err("%s: JSON of %zu bytes is too long", path, len);
        return SHARC_ERR_INVALID;
    }
    tok = json_tokener_new();
    if (tok == NULL) {
        llama_err("%s: out of memory for a JSON parser", path);
        return SHARC_ERR_NOMEM;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    root = json_tokener_parse_ex(tok, text, (int)len);
    if (root == NULL) {
        enum json_tokener_error jerr = json_tokener_get_error(tok);

        llama_err("%s: not valid JSON: %s at byte %zu", path,
                  jerr == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(jerr),
                  json_tokener_get_parse_end(tok));
        json_tokener_free(tok);
        return SHARC_ERR_INVALID;
    }
    end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    for (; end < len; end++) {
        if (strchr(" \t\r\n", text[end]) == NULL || text[end] == '\0') {
            llama_err("%s: bytes after its JSON (at byte %zu)", path, end);
            goto err_put;
        }
    }
    if (!json_object_is_type(root, json_type_object)) {
        llama_err("%s: JSON but not an object", path);
        goto err_put;
    }
    if (st_count_top_keys(text, len) != (size_t)json_object_object_length(root)) {
        llama_err("%s: duplicate name (or a name holding a NUL) in the JSON", path);
        goto err_put;
    }
    *root_p = root;
    return SHARC_OK;

err_put:
    json_object_put(root);
    return SHARC_ERR_INVALID;
}

static sharc_status_t st_check_metadata(const char *path, json_object *meta)
{
    if (!json_object_is_type(meta, json_type_object)) {
        llama_err("%s: %s is not an object", path, ST_META_KEY);
        return SHARC_ERR_INVALID;
    }
    json_object_object_foreach(meta, key, val)
    {
        if (st_json_str(val) == NULL) {
            llama_err("%s: %s entry \"%s\" is not a string", path, ST_META_KEY, key);
            return SHARC_ERR_INVALID;
        }
    }
    return SHARC_OK;
}

/*
 * One header entry into @p t (its name not yet set). @p data_start is the file offset of the
 * data section, @p data_bytes its length.
 */
static sharc_status_t st_parse_entry(const char *path, const char *name, json_object *e,
                                     uint64_t data_start, uint64_t data_bytes, llama_st_tensor_t *t)
{
    json_object *dtype, *shape, *offsets;
    const char *dname;
    uint64_t v, begin, end, bytes, count = 1;
    size_t i, ndim, esize = 0;

    if (!json_object_is_type(e, json_type_object)) {
        llama_err("%s: entry of tensor %s is not an object", path, name);
        return SHARC_ERR_INVALID;
    }
    if (!json_object_object_get_ex(e, "dtype", &dtype) || (dname = st_json_str(dtype)) == NULL) {
        llama_err("%s: tensor %s has no dtype string", path, name);
        return SHARC_ERR_INVALID;
    }
    for (i = 0; i < ST_NUM_DTYPES; i++) {
        if (strcmp(dname, st_dtypes[i].name) == 0) {
            t->dtype = st_dtypes[i].dtype;
            esize = st_dtypes[i].size;
        }
    }
    if (esize == 0) {
        llama_err("%s: tensor %s has dtype \"%s\", not one of F64 F32 F16 BF16 I64 I32 U8", path,
                  name, dname);
        return SHARC_ERR_INVALID;
    }

    if (!json_object_object_get_ex(e, "shape", &shape) ||
        !json_object_is_type(shape, json_type_array)) {
        llama_err("%s: tensor %s has no shape array", path, name);
        return SHARC_ERR_INVALID;
    }
    ndim = json_object_array_length(shape);
    if (ndim > LLAMA_ST_MAX_DIMS) {
        llama_err("%s: tensor %s has %zu dimensions, more than %d", path, name, ndim,
                  LLAMA_ST_MAX_DIMS);
        return SHARC_ERR_INVALID;
    }
    for (i = 0; i < ndim; i++) {
        if (st_json_uint(json_object_array_get_idx(shape, i), &v) != 0 || v > SIZE_MAX) {
            llama_err("%s: tensor %s: shape[%zu] is not a non-negative integer", path, name, i);
            return SHARC_ERR_INVALID;
        }
        t->shape[i] = (size_t)v;
        if (__builtin_mul_overflow(count, v, &count)) {
            llama_err("%s: tensor %s: element count overflows", path, name);
            return SHARC_ERR_INVALID;
        }
    }
    if (count > SIZE_MAX || __builtin_mul_overflow(count, (uint64_t)esize, &bytes)) {
        llama_err("%s: tensor %s: size in bytes overflows", path, name);
        return SHARC_ERR_INVALID;
    }

    if (!json_object_object_get_ex(e, "data_offsets", &offsets) ||
        !json_object_is_type(offsets, json_type_array) || json_object_array_length(offsets) != 2 ||
        st_json_uint(json_object_array_get_idx(offsets, 0), &begin) != 0 ||
        st_json_uint(json_object_array_get_idx(offsets, 1), &end) != 0) {
        llama_err("%s: tensor %s: data_offsets is not two non-negative integers", path, name);
        return SHARC_ERR_INVALID;
    }
    if (begin > end) {
        llama_err("%s: tensor %s: data_offsets [%llu, %llu] begin after they end", path, name,
                  (unsigned long long)begin, (unsigned long long)end);
        return SHARC_ERR_INVALID;
    }
    if (end > data_bytes) {
        llama_err("%s: tensor %s: data_offsets [%llu, %llu] go past the %llu data bytes the file "
                  "has (truncated?)",
                  path, name, (unsigned long long)begin, (unsigned long long)end,
                  (unsigned long long)data_bytes);
        return SHARC_ERR_INVALID;
    }
    if (end - begin != bytes) {
        llama_err("%s: tensor %s: data_offsets hold %llu bytes, but %s x %llu elements take %llu",
                  path, name, (unsigned long long)(end - begin), dname, (unsigned long long)count,
                  (unsigned long long)bytes);
        return SHARC_ERR_INVALID;
    }
    t->ndim = (int)ndim;
    t->count = (size_t)count;
    t->offset = data_start + begin;
    t->bytes = bytes;
    return SHARC_OK;
}

static void st_free_tensors(llama_st_tensor_t *tensors, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        free((char *)tensors[i].name);
    }
    free(tensors);
}

static int st_cmp_offset(const void *a, const void *b)
{
    const llama_st_tensor_t *x = a, *y = b;

    if (x->offset != y->offset) {
        return x->offset < y->offset ? -1 : 1;
    }
    if (x->bytes != y->bytes) {
        return x->bytes < y->bytes ? -1 : 1;
    }
    return strcmp(x->name, y->name); /* zero-size tensors at one offset: a fixed order */
}

/*
 * The tensors of one file's header, sorted by offset. As the format requires, they must tile
 * the data section exactly: each begins where the one before ends, the first at 0, the last
 * at the end of the file. A hole or trailing bytes would be data no tensor owns (the format
 * forbids them so that a file cannot also be something else, a polyglot); an overlap would let
 * two tensors alias. Zero-size tensors take part like any other: at the running offset.
 */
static sharc_status_t st_parse_header(const char *path, const char *header, size_t hlen,
                                      uint64_t data_start, uint64_t data_bytes, int file,
                                      llama_st_tensor_t **tensors_p, int *n_p)
{
    llama_st_tensor_t *tensors;
    json_object *root;
    sharc_status_t status;
    uint64_t at;
    size_t max = 0;
    int i, n = 0;

    /* the format wants the '{' first (json-c would skip leading blanks) */
    if (hlen == 0 || header[0] != '{') {
        llama_err("%s: header is not a JSON object: it does not begin with '{'", path);
        return SHARC_ERR_INVALID;
    }
    status = st_parse_object(path, header, hlen, &root);
    if (status != SHARC_OK) {
        return status;
    }
    max = (size_t)json_object_object_length(root);
    tensors = calloc(max > 0 ? max : 1, sizeof(*tensors));
    if (tensors == NULL) {
        llama_err("%s: out of memory for %zu tensors", path, max);
        status = SHARC_ERR_NOMEM;
        goto err_put;
    }
    json_object_object_foreach(root, key, val)
    {
        if (strcmp(key, ST_META_KEY) == 0) {
            status = st_check_metadata(path, val);
            if (status != SHARC_OK) {
                goto err_free;
            }
            continue;
        }
        status = st_parse_entry(path, key, val, data_start, data_bytes, &tensors[n]);
        if (status != SHARC_OK) {
            goto err_free;
        }
        tensors[n].file = file;
        tensors[n].name = strdup(key);
        if (tensors[n].name == NULL) {
            llama_err("%s: out of memory for tensor names", path);
            status = SHARC_ERR_NOMEM;
            goto err_free;
        }
        n++;
    }
    qsort(tensors, (size_t)n, sizeof(*tensors), st_cmp_offset);
    status = SHARC_ERR_INVALID;
    for (at = data_start, i = 0; i < n; at = tensors[i].offset + tensors[i].bytes, i++) {
        if (tensors[i].offset < at) {
            llama_err("%s: tensors %s and %s overlap", path, tensors[i - 1].name, tensors[i].name);
            goto err_free;
        }
        if (tensors[i].offset > at) {
            llama_err("%s: data bytes [%llu, %llu) before tensor %s belong to no tensor (a hole)",
                      path, (unsigned long long)(at - data_start),
                      (unsigned long long)(tensors[i].offset - data_start), tensors[i].name);
            goto err_free;
        }
    }
    if (at != data_start + data_bytes) {
        llama_err("%s: data bytes [%llu, %llu) after the last tensor belong to no tensor", path,
                  (unsigned long long)(at - data_start), (unsigned long long)data_bytes);
        goto err_free;
    }
    json_object_put(root);
    *tensors_p = tensors;
    *n_p = n;
    return SHARC_OK;

err_free:
    st_free_tensors(tensors, n);
err_put:
    json_object_put(root);
    return status;
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
    status =
        st_parse_header(path, header, hlen, 8 + hlen, size - 8 - hlen, st->nfiles, &tensors, &n);
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
    st_free_tensors(tensors, n);
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
    status = st_parse_object(path, text, len, &root);
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
        fname = st_json_str(val);
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
    st_free_tensors(st->tensors, st->ntensors);
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
                  st_dtype_name(t->dtype));
        return SHARC_ERR_INVALID;
    }
    fd = st->fds[t->file];
    esize = st_dtype_size(t->dtype);
    if (t->dtype == SHARC_DTYPE_F32) { /* no conversion: straight into the output */
        return st_pread(fd, st->paths[t->file], out, n * 4, t->offset + start * 4);
    }
    k = n < ST_CHUNK / esize ? n : ST_CHUNK / esize;
    buf = malloc(k * esize + 1);
    if (buf == NULL) {
        llama_err("%s: out of memory for a read buffer", st->paths[t->file]);
        return SHARC_ERR_NOMEM;
    }
    for (done = 0; done < n; done += k) {
        k = n - done < ST_CHUNK / esize ? n - done : ST_CHUNK / esize;
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
                  st_dtype_name(t->dtype));
        return SHARC_ERR_INVALID;
    }
    k = n < ST_CHUNK / 8 ? n : ST_CHUNK / 8;
    buf = malloc(k * 8 + 1);
    if (buf == NULL) {
        llama_err("%s: out of memory for a read buffer", st->paths[t->file]);
        return SHARC_ERR_NOMEM;
    }
    for (done = 0; done < n && status == SHARC_OK; done += k) {
        k = n - done < ST_CHUNK / 8 ? n - done : ST_CHUNK / 8;
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

/* ---- writer ---- */

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
        if (st_obj_add(root, ST_META_KEY, m) != 0) {
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
        size_t esize = st_dtype_size(t->dtype);

        if (t->name == NULL || strcmp(t->name, ST_META_KEY) == 0 ||
            json_object_object_get_ex(root, t->name, NULL)) {
            llama_err("%s: tensor %d: %s%s", path, i, t->name == NULL ? "no name" : t->name,
                      t->name == NULL                     ? ""
                      : strcmp(t->name, ST_META_KEY) == 0 ? " is a reserved name"
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
        if (st_obj_add(e, "dtype", json_object_new_string(st_dtype_name(t->dtype))) != 0 ||
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
    w->buf = malloc(ST_CHUNK);
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
        esize = st_dtype_size(w->dtypes[w->cur]);
        if (ST_CHUNK - w->buf_used < esize) {
            status = st_writer_flush(w);
            if (status != SHARC_OK) {
                w->failed = 1;
                return status;
            }
        }
        k = (ST_CHUNK - w->buf_used) / esize;
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
