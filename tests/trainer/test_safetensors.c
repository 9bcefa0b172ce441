/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_safetensors.c: the trainer's safetensors files (trainer/io/safetensors*.c) on files it
 * writes and files written here byte by byte: F32/BF16/F16 round trips (exact values), slices
 * at any offset, I32/I64 tensors, sharded sets through an index and through a directory,
 * writer misuse, and damaged indexes, each of which must give SHARC_ERR_INVALID or
 * SHARC_ERR_IO with exactly one logged line naming the file (damaged files themselves:
 * test_safetensors_bad.c).
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "testfiles.h"
#include "io/safetensors.h"

/* Values exact in bf16 and f16: multiples of 0.5 in [-128, 127.5]. */
static float val(size_t i, int salt)
{
    return (float)((i * 7 + (size_t)salt) % 512) * 0.5f - 128.0f;
}

static sharc_status_t write_set(const char *path, const llama_st_out_t *outs, int n,
                                const char *const *meta, int salt)
{
    llama_st_writer_t *w;
    sharc_status_t status;
    float *buf;
    size_t total = 0, i, k, c;
    int t, d;

    for (t = 0; t < n; t++) {
        for (c = 1, d = 0; d < outs[t].ndim; d++) {
            c *= outs[t].shape[d];
        }
        total += c;
    }
    buf = malloc((total + 1) * sizeof(*buf));
    for (i = 0; i < total; i++) {
        buf[i] = val(i, salt);
    }
    status = llama_st_writer_open(path, outs, n, meta, &w);
    if (status != SHARC_OK) {
        free(buf);
        return status;
    }
    /* uneven pieces that straddle tensor boundaries: 1, 2, 4, ... elements */
    for (i = 0, k = 1; i < total && status == SHARC_OK; i += k, k *= 2) {
        k = k < total - i ? k : total - i;
        status = llama_st_writer_put(w, buf + i, k);
    }
    free(buf);
    if (status != SHARC_OK) {
        llama_st_writer_close(w, 0);
        return status;
    }
    return llama_st_writer_close(w, 1);
}

/* Check every tensor of @p st named in @p outs against the values write_set wrote. */
static void check_values(const llama_st_t *st, const llama_st_out_t *outs, int n, int salt)
{
    size_t offset = 0, c, i, start, len;
    float *buf;
    int t, d;

    for (t = 0; t < n; t++) {
        const llama_st_tensor_t *ti = llama_st_find(st, outs[t].name);

        for (c = 1, d = 0; d < outs[t].ndim; d++) {
            c *= outs[t].shape[d];
        }
        CHECK_MSG(ti != NULL, "%s missing", outs[t].name);
        if (ti == NULL) {
            offset += c;
            continue;
        }
        CHECK(ti->dtype == outs[t].dtype && ti->ndim == outs[t].ndim && ti->count == c);
        for (d = 0; d < outs[t].ndim; d++) {
            CHECK(ti->shape[d] == outs[t].shape[d]);
        }
        buf = malloc((c + 1) * sizeof(*buf));
        CHECK(llama_st_read_f32(st, ti, 0, c, buf) == SHARC_OK);
        for (i = 0; i < c; i++) {
            CHECK_MSG(buf[i] == val(offset + i, salt), "%s[%zu] = %g", outs[t].name, i, buf[i]);
            if (buf[i] != val(offset + i, salt)) {
                break;
            }
        }
        /* slices: the first, the last, and odd pieces in between */
        for (start = 0; start < c; start += start / 2 + 3) {
            len = c - start < 5 ? c - start : 5;
            CHECK(llama_st_read_f32(st, ti, start, len, buf) == SHARC_OK);
            for (i = 0; i < len; i++) {
                CHECK(buf[i] == val(offset + start + i, salt));
            }
        }
        if (c > 0) {
            CHECK(llama_st_read_f32(st, ti, c - 1, 1, buf) == SHARC_OK &&
                  buf[0] == val(offset + c - 1, salt));
        }
        CHECK(llama_st_read_f32(st, ti, c, 0, buf) == SHARC_OK);
        free(buf);
        offset += c;
    }
}

static const llama_st_out_t round_outs[] = {
    {"model.embed_tokens.weight", SHARC_DTYPE_BF16, 2, {7, 5}},
    {"w32", SHARC_DTYPE_F32, 3, {2, 3, 4}},
    {"w16", SHARC_DTYPE_F16, 1, {13}},
    {"scalar", SHARC_DTYPE_F32, 0, {0}},
    {"empty", SHARC_DTYPE_BF16, 2, {0, 4}},
    {"name \"quoted\" \\ / \xc3\xa9", SHARC_DTYPE_F32, 1, {3}},
    /* larger than the 1 MiB buffers of reader and writer */
    {"big.bf16", SHARC_DTYPE_BF16, 2, {700, 1001}},
    {"big.f32", SHARC_DTYPE_F32, 1, {300001}},
};

#define NUM_ROUND ((int)(sizeof(round_outs) / sizeof(round_outs[0])))

static void test_round_trip(void)
{
    const char *meta[] = {"format", "pt", "note", "a \"quoted\" value", NULL};
    const char *path = tmp_path("round.safetensors");
    const llama_st_tensor_t *t;
    unsigned char len8[8];
    llama_st_t *st = NULL;
    char tmpname[64];
    uint64_t hlen = 0;
    float x;
    int i;
    FILE *f;

    CHECK(write_set(path, round_outs, NUM_ROUND, meta, 1) == SHARC_OK);
    snprintf(tmpname, sizeof(tmpname), "round.safetensors.tmp.%ld", (long)getpid());
    CHECK(access(tmp_path(tmpname), F_OK) != 0);
    f = fopen(path, "rb");
    CHECK(f != NULL && fread(len8, 1, 8, f) == 8);
    if (f != NULL) {
        fclose(f);
    }
    for (i = 7; i >= 0; i--) {
        hlen = hlen << 8 | len8[i];
    }
    CHECK_MSG((8 + hlen) % 8 == 0, "data starts at %llu", (unsigned long long)(8 + hlen));

    CHECK(llama_st_open(path, &st) == SHARC_OK);
    if (st == NULL) {
        return;
    }
    CHECK(llama_st_num_tensors(st) == NUM_ROUND);
    check_values(st, round_outs, NUM_ROUND, 1);
    for (i = 0; i < llama_st_num_tensors(st); i++) { /* by offset: the order written */
        t = llama_st_tensor(st, i);
        CHECK(t != NULL && strcmp(t->name, round_outs[i].name) == 0 && t->file == 0);
        CHECK(t != NULL && t->offset % 2 == 0 && t->offset >= 8 + hlen);
    }
    CHECK(llama_st_tensor(st, NUM_ROUND) == NULL && llama_st_tensor(st, -1) == NULL);
    CHECK(llama_st_find(st, "absent") == NULL);
    t = llama_st_find(st, "scalar");
    CHECK(t != NULL && t->count == 1);
    t = llama_st_find(st, "w16");
    EXPECT_ERR(llama_st_read_f32(st, t, 13, 1, &x), SHARC_ERR_INVALID, "w16", "outside");
    EXPECT_ERR(llama_st_read_f32(st, t, 14, 0, &x), SHARC_ERR_INVALID, "w16", "outside");
    EXPECT_ERR(llama_st_read_f32(st, t, 5, SIZE_MAX, &x), SHARC_ERR_INVALID, "w16", "outside");
    EXPECT_ERR(llama_st_read_i32(st, t, 0, 1, (int32_t *)&x), SHARC_ERR_INVALID, "w16", "not I32");
    llama_st_close(st);
    llama_st_close(NULL);
}

static void test_integers(void)
{
    const char *path = tmp_path("ints.safetensors");
    const char *json = "{\"__metadata__\":{\"k\":\"v\"},"
                       "\"i32\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[0,12]},"
                       "\"i64\":{\"dtype\":\"I64\",\"shape\":[2,2],\"data_offsets\":[12,44]},"
                       "\"f64\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[44,52]},"
                       "\"u8\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[52,53]}}";
    int32_t i32[3] = {7, -2, 2147483647}, out[4];
    int64_t i64[4] = {-2147483648LL, 5, 0, 1LL << 40};
    unsigned char data[53] = {0};
    const llama_st_tensor_t *t;
    llama_st_t *st = NULL;
    float x;

    memcpy(data, i32, 12);
    memcpy(data + 12, i64, 32); /* unaligned, as the format allows */
    write_st(path, json, data, sizeof(data), 0);
    CHECK(llama_st_open(path, &st) == SHARC_OK);
    if (st == NULL) {
        return;
    }
    CHECK(llama_st_num_tensors(st) == 4);
    t = llama_st_find(st, "i32");
    CHECK(t != NULL && t->dtype == SHARC_DTYPE_I32 && t->count == 3);
    CHECK(llama_st_read_i32(st, t, 0, 3, out) == SHARC_OK && memcmp(out, i32, 12) == 0);
    CHECK(llama_st_read_i32(st, t, 2, 1, out) == SHARC_OK && out[0] == 2147483647);
    EXPECT_ERR(llama_st_read_f32(st, t, 0, 1, &x), SHARC_ERR_INVALID, path, "I32");
    t = llama_st_find(st, "i64");
    CHECK(t != NULL && t->dtype == SHARC_DTYPE_I64 && t->ndim == 2 && t->count == 4);
    CHECK(llama_st_read_i32(st, t, 0, 3, out) == SHARC_OK && out[0] == INT32_MIN && out[1] == 5 &&
          out[2] == 0);
    EXPECT_ERR(llama_st_read_i32(st, t, 1, 3, out), SHARC_ERR_INVALID, path, "element 3");
    t = llama_st_find(st, "f64");
    CHECK(t != NULL && t->dtype == SHARC_DTYPE_F64);
    EXPECT_ERR(llama_st_read_f32(st, t, 0, 1, &x), SHARC_ERR_INVALID, path, "F64");
    t = llama_st_find(st, "u8");
    CHECK(t != NULL && t->dtype == SHARC_DTYPE_U8 && t->bytes == 1);
    EXPECT_ERR(llama_st_read_i32(st, t, 0, 1, out), SHARC_ERR_INVALID, path, "U8");
    llama_st_close(st);
    unlink(path);
}

static const llama_st_out_t shard_a[] = {
    {"layers.0.w", SHARC_DTYPE_BF16, 2, {3, 4}},
    {"layers.0.b", SHARC_DTYPE_F32, 1, {4}},
};
static const llama_st_out_t shard_b[] = {
    {"layers.1.w", SHARC_DTYPE_F16, 2, {4, 3}},
};

static void test_sharded(void)
{
    const char *map = "{\"layers.0.w\": \"a-00001-of-00002.safetensors\", "
                      "\"layers.0.b\": \"a-00001-of-00002.safetensors\", "
                      "\"layers.1.w\": \"b-00002-of-00002.safetensors\"}";
    const char *index = tmp_path("model.safetensors.index.json");
    const llama_st_tensor_t *ta, *tb;
    llama_st_t *st = NULL;

    CHECK(write_set(tmp_path("a-00001-of-00002.safetensors"), shard_a, 2, NULL, 2) == SHARC_OK);
    CHECK(write_set(tmp_path("b-00002-of-00002.safetensors"), shard_b, 1, NULL, 3) == SHARC_OK);
    write_index(index, map);
    CHECK(llama_st_open(index, &st) == SHARC_OK);
    if (st != NULL) {
        CHECK(llama_st_num_tensors(st) == 3);
        check_values(st, shard_a, 2, 2);
        check_values(st, shard_b, 1, 3);
        ta = llama_st_find(st, "layers.0.w");
        tb = llama_st_find(st, "layers.1.w");
        CHECK(ta != NULL && tb != NULL && ta->file == 0 && tb->file == 1);
        llama_st_close(st);
    }
    /* the directory finds the index (model.safetensors in it is not looked at then) */
    CHECK(llama_st_open(dir, &st) == SHARC_OK);
    CHECK(st != NULL && llama_st_num_tensors(st) == 3);
    llama_st_close(st);
    unlink(index);
    unlink(tmp_path("a-00001-of-00002.safetensors"));
    unlink(tmp_path("b-00002-of-00002.safetensors"));

    /* a directory with model.safetensors only */
    CHECK(write_set(tmp_path("model.safetensors"), shard_b, 1, NULL, 4) == SHARC_OK);
    CHECK(llama_st_open(dir, &st) == SHARC_OK);
    if (st != NULL) {
        CHECK(llama_st_num_tensors(st) == 1);
        check_values(st, shard_b, 1, 4);
        llama_st_close(st);
    }
    unlink(tmp_path("model.safetensors"));
    /* and with neither */
    EXPECT_ERR(llama_st_open(dir, &st), SHARC_ERR_IO, dir, "neither");
}

static void test_bad_index(void)
{
    const char *index = tmp_path("bad.index.json");
    const char *a = tmp_path("a.safetensors"), *b = tmp_path("b.safetensors");
    llama_st_t *st = NULL;

    CHECK(write_set(a, shard_a, 2, NULL, 2) == SHARC_OK);
    CHECK(write_set(b, shard_b, 1, NULL, 3) == SHARC_OK);
    write_index(index, "{\"layers.0.w\": \"a.safetensors\", \"x\": \"missing.safetensors\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_IO, "missing.safetensors", "cannot open");
    write_index(index, "{\"layers.0.w\": \"../a.safetensors\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "plain file name");
    write_index(index, "{\"layers.0.w\": \"sub/a.safetensors\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "plain file name");
    write_index(index, "{\"layers.0.w\": \"..\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "plain file name");
    write_index(index, "{\"layers.0.w\": \"/etc/passwd\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "plain file name");
    write_index(index, "{\"layers.0.w\": 3}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "plain file name");
    /* a tensor the named file does not hold, though the other one does */
    write_index(index, "{\"layers.0.w\": \"a.safetensors\", \"layers.1.w\": \"a.safetensors\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "layers.1.w");
    write_index(index, "{\"layers.9.w\": \"a.safetensors\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "layers.9.w");
    write_index(index, "{}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "weight_map");
    write_index(index, "[]");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "weight_map");
    write_bytes(index, "{\"weight_map\": {", 16);
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, index, "JSON");
    /* one tensor in two files */
    CHECK(write_set(b, shard_a, 1, NULL, 3) == SHARC_OK);
    write_index(index, "{\"layers.0.w\": \"a.safetensors\", \"layers.0.b\": \"b.safetensors\"}");
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, "layers.0.w", "both");
    /* a damaged shard is named */
    write_st(b, "{\"x\":1}", NULL, 0, 0);
    EXPECT_ERR(llama_st_open(index, &st), SHARC_ERR_INVALID, b, "not an object");
    CHECK(st == NULL);
    unlink(index);
    unlink(a);
    unlink(b);
}

static void test_writer_misuse(void)
{
    const char *path = tmp_path("w.safetensors");
    llama_st_out_t bad[2] = {{"x", SHARC_DTYPE_F32, 1, {2}}, {"x", SHARC_DTYPE_F32, 1, {2}}};
    const char *odd_meta[] = {"key", NULL, NULL};
    float data[8] = {0};
    llama_st_writer_t *w = NULL;

    EXPECT_ERR(llama_st_writer_open(path, bad, 2, NULL, &w), SHARC_ERR_INVALID, path, "twice");
    bad[1].name = "__metadata__";
    EXPECT_ERR(llama_st_writer_open(path, bad, 2, NULL, &w), SHARC_ERR_INVALID, path, "reserved");
    bad[1].name = "y";
    bad[1].dtype = SHARC_DTYPE_I32;
    EXPECT_ERR(llama_st_writer_open(path, bad, 2, NULL, &w), SHARC_ERR_INVALID, path, "F32");
    bad[1].dtype = SHARC_DTYPE_F16;
    bad[1].ndim = 9;
    EXPECT_ERR(llama_st_writer_open(path, bad, 2, NULL, &w), SHARC_ERR_INVALID, path, "dimensions");
    bad[1].ndim = 3;
    bad[1].shape[1] = bad[1].shape[2] = (size_t)1 << 40;
    EXPECT_ERR(llama_st_writer_open(path, bad, 2, NULL, &w), SHARC_ERR_INVALID, path, "overflows");
    bad[1].ndim = 1;
    EXPECT_ERR(llama_st_writer_open(path, bad, 2, odd_meta, &w), SHARC_ERR_INVALID, path, "key");
    CHECK(w == NULL);

    /* too few elements: commit fails and leaves nothing; too many: the put fails */
    CHECK(llama_st_writer_open(path, bad, 2, NULL, &w) == SHARC_OK);
    CHECK(llama_st_writer_put(w, data, 3) == SHARC_OK);
    EXPECT_ERR(llama_st_writer_close(w, 1), SHARC_ERR_INVALID, path, "3 of 4");
    CHECK(access(path, F_OK) != 0);
    CHECK(llama_st_writer_open(path, bad, 2, NULL, &w) == SHARC_OK);
    EXPECT_ERR(llama_st_writer_put(w, data, 5), SHARC_ERR_INVALID, path, "more elements");
    EXPECT_ERR(llama_st_writer_close(w, 1), SHARC_ERR_INVALID, path, "a put failed");
    CHECK(access(path, F_OK) != 0);
    /* an aborted write leaves nothing either, and a committed one replaces the old file */
    CHECK(llama_st_writer_open(path, bad, 2, NULL, &w) == SHARC_OK);
    CHECK(llama_st_writer_put(w, data, 4) == SHARC_OK);
    CHECK(llama_st_writer_close(w, 0) == SHARC_OK);
    CHECK(access(path, F_OK) != 0);
    write_bytes(path, "old", 3);
    CHECK(write_set(path, bad, 2, NULL, 5) == SHARC_OK);
    CHECK(llama_st_writer_close(NULL, 1) == SHARC_OK);
    unlink(path);
    EXPECT_ERR(llama_st_writer_open(tmp_path("nodir/x"), bad, 2, NULL, &w), SHARC_ERR_IO, "nodir",
               "create");
}

int main(void)
{
    if (testdir_create("test_safetensors") != 0) {
        return 1;
    }
    test_round_trip();
    unlink(tmp_path("round.safetensors"));
    test_integers();
    test_sharded();
    test_bad_index();
    test_writer_misuse();
    testdir_remove();
    return check_result("test_safetensors");
}
