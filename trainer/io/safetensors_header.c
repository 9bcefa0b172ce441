/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/safetensors_header.c: one safetensors file's JSON header, parsed with json-c and
 * checked in full before anything is read (dtypes, shapes, sizes matching dtype x shape, and
 * tensors tiling the data section exactly), so that a malformed or hostile header gives one
 * error naming the file and the cause. Also the dtype names the writer uses. Opening files and
 * reading tensors: safetensors_read.c.
 */
#include "safetensors_int.h"
#include "../util.h"

#include <stdlib.h>
#include <string.h>

/*
 * The dtypes accepted. The format has more (BOOL, I8, I16, U16, U32, U64, F8_E4M3, F8_E5M2,
 * ...): a file holding one of them is rejected when opened, with an error naming the dtype,
 * rather than listed with a dtype nothing can read. sharc_dtype_t has no value for them and a
 * Llama checkpoint does not use them. F64 and U8 are listed but not readable (safetensors.h).
 */
typedef struct {
    const char *name;
    sharc_dtype_t dtype;
    size_t size;
} st_dtype_t;

static const st_dtype_t st_dtypes[] = {
    {"F64", SHARC_DTYPE_F64, 8},   {"F32", SHARC_DTYPE_F32, 4}, {"F16", SHARC_DTYPE_F16, 2},
    {"BF16", SHARC_DTYPE_BF16, 2}, {"I64", SHARC_DTYPE_I64, 8}, {"I32", SHARC_DTYPE_I32, 4},
    {"U8", SHARC_DTYPE_U8, 1},
};

#define ST_NUM_DTYPES (sizeof(st_dtypes) / sizeof(st_dtypes[0]))

static const st_dtype_t *st_dtype_of(sharc_dtype_t dtype)
{
    size_t i;

    for (i = 0; i < ST_NUM_DTYPES; i++) {
        if (st_dtypes[i].dtype == dtype) {
            return &st_dtypes[i];
        }
    }
    return NULL;
}

size_t llama_st_dtype_size(sharc_dtype_t dtype)
{
    const st_dtype_t *d = st_dtype_of(dtype);

    return d != NULL ? d->size : 0;
}

const char *llama_st_dtype_name(sharc_dtype_t dtype)
{
    const st_dtype_t *d = st_dtype_of(dtype);

    return d != NULL ? d->name : "?";
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

const char *llama_st_json_str(json_object *o)
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

sharc_status_t llama_st_parse_object(const char *path, const char *text, size_t len,
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
        llama_err("%s: %s is not an object", path, LLAMA_ST_META_KEY);
        return SHARC_ERR_INVALID;
    }
    json_object_object_foreach(meta, key, val)
    {
        if (llama_st_json_str(val) == NULL) {
            llama_err("%s: %s entry \"%s\" is not a string", path, LLAMA_ST_META_KEY, key);
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
    if (!json_object_object_get_ex(e, "dtype", &dtype) ||
        (dname = llama_st_json_str(dtype)) == NULL) {
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

void llama_st_free_tensors(llama_st_tensor_t *tensors, int n)
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
sharc_status_t llama_st_parse_header(const char *path, const char *header, size_t hlen,
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
    status = llama_st_parse_object(path, header, hlen, &root);
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
        if (strcmp(key, LLAMA_ST_META_KEY) == 0) {
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
    llama_st_free_tensors(tensors, n);
err_put:
    json_object_put(root);
    return status;
}
