/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_safetensors.c: libFuzzer harness for the trainer's safetensors reader. The input is
 * written to a file and opened twice: as a .safetensors file, and as an index JSON next to two
 * valid shards; whatever opens has every tensor read in full and its table checked for
 * consistency (a violation traps). Any bytes must open or fail with a status, never fault.
 * With SHARC_FUZZ_SEEDS=<dir> set it writes seed inputs there and exits. Built and run by
 * tools/fuzz.sh, not by make check.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two valid shards that index inputs may name: every readable dtype, zero-size tensors,
 * unaligned offsets. Data bytes are arbitrary (any bit pattern is some float). */
static const struct {
    const char *name;
    const char *json;
    size_t data_bytes;
} fz_shards[] = {
    {"s1.safetensors",
     "{\"__metadata__\":{\"format\":\"pt\"},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
     "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
     "\"e\":{\"dtype\":\"F16\",\"shape\":[0,7],\"data_offsets\":[32,32]},"
     "\"c\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[32,44]},"
     "\"u\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[44,45]}}",
     45},
    {"s2.safetensors",
     "{\"d\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[0,10]},"
     "\"i\":{\"dtype\":\"I64\",\"shape\":[2,1],\"data_offsets\":[10,26]},"
     "\"f\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[26,34]}}",
     34},
};

#define FZ_NUM_SHARDS (sizeof(fz_shards) / sizeof(fz_shards[0]))

static const char fz_index[] = "{\"metadata\":{\"total_size\":79},\"weight_map\":{"
                               "\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\","
                               "\"c\":\"s1.safetensors\",\"d\":\"s2.safetensors\","
                               "\"i\":\"s2.safetensors\"}}";

static char fz_dir[] = "/tmp/fuzz_safetensors.XXXXXX";
static char fz_file[sizeof(fz_dir) + 32]; /* the input as a .safetensors file */
static char fz_json[sizeof(fz_dir) + 32]; /* the input as an index */
static int fz_file_fd = -1, fz_json_fd = -1;

/* A safetensors file's bytes: length, header, @p data_bytes of a byte pattern. */
static unsigned char *fz_st_bytes(const char *json, size_t data_bytes, size_t *size_p)
{
    size_t jlen = strlen(json), i;
    unsigned char *buf = malloc(8 + jlen + data_bytes);

    if (buf == NULL) {
        abort();
    }
    for (i = 0; i < 8; i++) {
        buf[i] = (unsigned char)((uint64_t)jlen >> (8 * i));
    }
    memcpy(buf + 8, json, jlen);
    for (i = 0; i < data_bytes; i++) {
        buf[8 + jlen + i] = (unsigned char)(i * 37 + 1);
    }
    *size_p = 8 + jlen + data_bytes;
    return buf;
}

static void fz_write(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0 || write(fd, data, size) != (ssize_t)size || close(fd) != 0) {
        perror(path);
        abort();
    }
}

/* The input into an open file: written over, then cut to size (a truncation to 0 would make
 * ext4 flush the file at every close, its replace-by-truncate heuristic: a hundred times
 * slower). */
static void fz_rewrite(int fd, const char *path, const void *data, size_t size)
{
    if (pwrite(fd, data, size, 0) != (ssize_t)size || ftruncate(fd, (off_t)size) != 0) {
        perror(path);
        abort();
    }
}

static void fz_write_shards(const char *dir)
{
    unsigned char *bytes;
    char path[4096];
    size_t i, size;

    for (i = 0; i < FZ_NUM_SHARDS; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, fz_shards[i].name);
        bytes = fz_st_bytes(fz_shards[i].json, fz_shards[i].data_bytes, &size);
        fz_write(path, bytes, size);
        free(bytes);
    }
}

/* Seeds: the shards themselves, the index, and one file of a single tensor. */
static void fz_write_seeds(const char *dir)
{
    const char *one = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    unsigned char *bytes;
    char path[4096];
    size_t size;

    fz_write_shards(dir);
    snprintf(path, sizeof(path), "%s/index.json", dir);
    fz_write(path, fz_index, strlen(fz_index));
    snprintf(path, sizeof(path), "%s/one.safetensors", dir);
    bytes = fz_st_bytes(one, 4, &size);
    fz_write(path, bytes, size);
    free(bytes);
}

static void fz_cleanup(void)
{
    char path[4096];
    size_t i;

    unlink(fz_file);
    unlink(fz_json);
    for (i = 0; i < FZ_NUM_SHARDS; i++) {
        snprintf(path, sizeof(path), "%s/%s", fz_dir, fz_shards[i].name);
        unlink(path);
    }
    rmdir(fz_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *seeds = getenv("SHARC_FUZZ_SEEDS");

    (void)argc;
    (void)argv;
    if (seeds != NULL && *seeds) {
        fz_write_seeds(seeds);
        exit(0);
    }
    if (mkdtemp(fz_dir) == NULL) {
        perror("mkdtemp");
        abort();
    }
    snprintf(fz_file, sizeof(fz_file), "%s/in.safetensors", fz_dir);
    snprintf(fz_json, sizeof(fz_json), "%s/in.index.json", fz_dir);
    fz_write_shards(fz_dir);
    fz_file_fd = open(fz_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    fz_json_fd = open(fz_json, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fz_file_fd < 0 || fz_json_fd < 0) {
        perror(fz_dir);
        abort();
    }
    atexit(fz_cleanup);
    return 0;
}

/* Every tensor read whole (and its last element alone), every name found again; no tensor
 * may end past @p file_bytes. */
static void fz_read_all(const llama_st_t *st, size_t file_bytes)
{
    const llama_st_tensor_t *t;
    size_t esize, d, count;
    void *buf;
    int i;

    for (i = 0; i < llama_st_num_tensors(st); i++) {
        t = llama_st_tensor(st, i);
        if (t == NULL || llama_st_find(st, t->name) != t) {
            __builtin_trap();
        }
        for (count = 1, d = 0; d < (size_t)t->ndim; d++) {
            count *= t->shape[d];
        }
        esize = t->dtype == SHARC_DTYPE_F64 || t->dtype == SHARC_DTYPE_I64   ? 8
                : t->dtype == SHARC_DTYPE_F32 || t->dtype == SHARC_DTYPE_I32 ? 4
                : t->dtype == SHARC_DTYPE_U8                                 ? 1
                                                                             : 2;
        if (count != t->count || t->bytes != count * esize || t->offset + t->bytes > file_bytes) {
            __builtin_trap();
        }
        buf = malloc(t->count * sizeof(float) + 1);
        if (buf == NULL) {
            continue;
        }
        if (t->dtype == SHARC_DTYPE_I32 || t->dtype == SHARC_DTYPE_I64) {
            (void)llama_st_read_i32(st, t, 0, t->count, buf);
            if (t->count > 0) {
                (void)llama_st_read_i32(st, t, t->count - 1, 1, buf);
            }
        } else {
            (void)llama_st_read_f32(st, t, 0, t->count, buf);
            if (t->count > 0) {
                (void)llama_st_read_f32(st, t, t->count - 1, 1, buf);
            }
        }
        free(buf);
    }
    if (llama_st_tensor(st, i) != NULL || llama_st_tensor(st, -1) != NULL) {
        __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llama_st_t *st = NULL;

    fz_rewrite(fz_file_fd, fz_file, data, size);
    if (llama_st_open(fz_file, &st) == SHARC_OK) {
        fz_read_all(st, size);
        llama_st_close(st);
    }
    /* as an index, its shards are s1 and s2 (a few hundred bytes each), the input itself or
     * missing */
    st = NULL;
    fz_rewrite(fz_json_fd, fz_json, data, size);
    if (llama_st_open(fz_json, &st) == SHARC_OK) {
        fz_read_all(st, size > 4096 ? size : 4096);
        llama_st_close(st);
    }
    return 0;
}
