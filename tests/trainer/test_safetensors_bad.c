/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_safetensors_bad.c: the trainer's safetensors reader (trainer/io/safetensors*.c) on
 * every kind of damaged file written here byte by byte: too short or cut, huge header lengths,
 * headers that are no JSON object, bad entries, dtypes, shapes and offsets, tensors that do not
 * tile the data section exactly (holes and trailing bytes are errors like overlaps), missing
 * files; each must give SHARC_ERR_INVALID or SHARC_ERR_IO with exactly one logged line naming
 * the file. And the valid corner cases beside them (an empty header, zero-size and unaligned
 * tensors, a name with '}', header padding).
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

/* Opening @p name (written with @p json) must fail with INVALID, naming it and @p word. */
static void expect_bad(const char *name, const char *json, const void *data, size_t len,
                       const char *word)
{
    const char *path = tmp_path(name);
    llama_st_t *st = NULL;

    write_st(path, json, data, len, 0);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, word);
    CHECK(st == NULL);
    unlink(path);
}

/* the file's framing: too short, cut, huge header lengths; a header that is not a JSON object */
static void test_bad_framing(void)
{
    const char *path = tmp_path("bad.safetensors");
    const char *good = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    unsigned char data[64] = {0}, *whole;
    size_t glen = strlen(good);
    llama_st_t *st = NULL;
    int fd;

    /* too short, cut in the header, cut in the data */
    write_bytes(path, "", 0);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "shorter");
    write_bytes(path, "\x05\0\0\0\0", 5);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "shorter");
    write_st(path, good, data, 8, 0);
    whole = malloc(8 + glen + 8);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && read(fd, whole, 8 + glen + 8) == (ssize_t)(8 + glen + 8));
    close(fd);
    CHECK(llama_st_open(path, &st) == SHARC_OK);
    llama_st_close(st);
    st = NULL;
    write_bytes(path, whole, 8 + glen / 2);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "truncated");
    write_bytes(path, whole, 8 + glen + 7); /* tests/trainer/trainer.sh looks for "truncat" */
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "truncated");
    free(whole);

    /* huge header lengths: past the end, and past 100 MiB in a (sparse) file that long */
    write_st(path, good, data, 8, UINT64_MAX);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "header length");
    write_st(path, good, data, 8, 1ULL << 63);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "header length");
    write_st(path, good, data, 8, 101ULL << 20);
    CHECK(truncate(path, 8 + (101 << 20)) == 0);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "header length");

    /* not JSON, not an object, trailing bytes */
    expect_bad("j1", "", NULL, 0, "JSON");
    expect_bad("j2", "{\"a\":", NULL, 0, "JSON");
    expect_bad("j3", "{\"a\":{}} x", NULL, 0, "JSON");
    expect_bad("j4", "[1, 2]", NULL, 0, "not a JSON object");
    expect_bad("j7", " {}", NULL, 0, "begin with '{'");
    expect_bad("j5", "{'a': {}}", NULL, 0, "JSON");
    expect_bad("j6", "{\"a\":{},}", NULL, 0, "JSON");
    write_bytes(path, "\x04\0\0\0\0\0\0\0{}\0\0", 12);
    EXPECT_ERR(llama_st_open(path, &st), SHARC_ERR_INVALID, path, "after its JSON");
    unlink(path);
}

/* the header's entries: objects, dtypes, shapes */
static void test_bad_entries(void)
{
    unsigned char data[64] = {0};

    /* entries */
    expect_bad("e1", "{\"a\": 1}", NULL, 0, "not an object");
    expect_bad("e2", "{\"a\": {\"shape\":[],\"data_offsets\":[0,4]}}", data, 4, "dtype");
    expect_bad("e3", "{\"a\": {\"dtype\":7,\"shape\":[],\"data_offsets\":[0,4]}}", data, 4,
               "dtype");
    expect_bad("e4", "{\"a\": {\"dtype\":\"F8_E4M3\",\"shape\":[],\"data_offsets\":[0,1]}}", data,
               1, "F8_E4M3");
    expect_bad("e5", "{\"a\": {\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[0,1]}}", data, 1,
               "BOOL");
    expect_bad("e6", "{\"a\": {\"dtype\":\"f32\",\"shape\":[],\"data_offsets\":[0,4]}}", data, 4,
               "f32");
    expect_bad("e7", "{\"a\": {\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", data, 4, "shape");
    expect_bad("e8", "{\"a\": {\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}", data, 4,
               "shape");
    expect_bad("e9", "{\"a\": {\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", data, 4,
               "shape[0]");
    expect_bad("e10", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", data,
               4, "shape[0]");
    expect_bad("e11", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1,\"2\"],\"data_offsets\":[0,8]}}",
               data, 8, "shape[1]");
    expect_bad("e12",
               "{\"a\": {\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
               data, 1, "dimensions");
    expect_bad("e13",
               "{\"a\": {\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],"
               "\"data_offsets\":[0,1]}}",
               data, 1, "overflows");
    expect_bad("e14",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
               "\"data_offsets\":[0,4]}}",
               data, 4, "overflows");
    expect_bad("e15",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[18446744073709551615],"
               "\"data_offsets\":[0,4]}}",
               data, 4, "overflows");
}

/* the entries' offsets and sizes, and how the tensors tile the data */
static void test_bad_offsets(void)
{
    unsigned char data[64] = {0};

    /* data_offsets */
    expect_bad("o1", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1]}}", data, 4, "data_offsets");
    expect_bad("o2", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", data, 4,
               "data_offsets");
    expect_bad("o3", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", data, 8,
               "data_offsets");
    expect_bad("o4", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", data, 4,
               "data_offsets");
    expect_bad("o5", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", data, 8,
               "data_offsets");
    expect_bad("o6", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", data, 7,
               "data_offsets");
    expect_bad("o7",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],"
               "\"data_offsets\":[18446744073709551612,18446744073709551615]}}",
               data, 4, "data_offsets");
    expect_bad("o8", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}", data,
               4, "data_offsets");
    expect_bad("o9", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", data, 4,
               "data_offsets");
    /* size against shape, overlap, duplicates */
    expect_bad("s1", "{\"a\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", data, 8,
               "take 8");
    expect_bad("s2", "{\"a\": {\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", data,
               24, "take 12");
    expect_bad("s3",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               data, 12, "overlap");
    expect_bad("s4",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
               "\"b\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               data, 16, "overlap");
    expect_bad("s5",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               data, 8, "duplicate");
    expect_bad("s6",
               "{\"a\\u0000x\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               data, 8, "duplicate");
    expect_bad("s7", "{\"a\\u0000x\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
               data, 4, "NUL");
    expect_bad("m1", "{\"__metadata__\": [1]}", NULL, 0, "__metadata__");
    expect_bad("m2", "{\"__metadata__\": {\"k\": 1}}", NULL, 0, "__metadata__");

    /* the tensors must tile the data exactly: holes, trailing bytes and aliasing are errors */
    expect_bad("g1",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
               data, 12, "hole");
    expect_bad("g2", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", data, 8,
               "[0, 4) before tensor a");
    expect_bad("g3", "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", data, 5,
               "[4, 5) after the last tensor");
    expect_bad("g4", "{}", data, 1, "after the last tensor");
    expect_bad("g5", "{\"__metadata__\": {\"k\": \"v\"}}", data, 8, "no tensor");
    expect_bad("g6",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"e\": {\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
               data, 8, "overlap");
    expect_bad("g7",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"e\": {\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[8,8]}}",
               data, 4, "data_offsets");
    expect_bad("g8",
               "{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
               data, 4, "overlap");
}

/* valid corner cases, and missing files and directories */
static void test_corner_files(void)
{
    const char *path = tmp_path("bad.safetensors");
    unsigned char data[64] = {0};
    llama_st_t *st = NULL;

    /* valid corner cases: empty header, zero-size tensors first, between and last, unaligned
     * tensors, a name with '}', header padding */
    write_st(path, "{}", NULL, 0, 0);
    CHECK(llama_st_open(path, &st) == SHARC_OK && llama_st_num_tensors(st) == 0);
    llama_st_close(st);
    st = NULL;
    write_st(path,
             "{\"e\": {\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[5,5]},"
             "\"a}\\\"{,\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"z\": {\"dtype\":\"BF16\",\"shape\":[2,0],\"data_offsets\":[9,9]},"
             "\"u\": {\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[4,5]},"
             "\"e0\": {\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[0,0]},"
             "\"b\": {\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[5,9]}}   ",
             data, 9, 0);
    CHECK(llama_st_open(path, &st) == SHARC_OK);
    if (st != NULL) {
        const char *order[] = {"e0", "a}\"{,", "u", "e", "b", "z"};
        const llama_st_tensor_t *t;
        float f[2];
        int i;

        CHECK(llama_st_num_tensors(st) == 6);
        for (i = 0; i < 6 && i < llama_st_num_tensors(st); i++) {
            t = llama_st_tensor(st, i);
            CHECK_MSG(strcmp(t->name, order[i]) == 0, "tensor %d is %s", i, t->name);
        }
        t = llama_st_find(st, "b");
        CHECK(t != NULL && t->offset - llama_st_tensor(st, 0)->offset == 5); /* unaligned */
        CHECK(t != NULL && llama_st_read_f32(st, t, 0, 2, f) == SHARC_OK && f[0] == 0.0f);
        t = llama_st_find(st, "z");
        CHECK(t != NULL && t->count == 0 && t->bytes == 0 && t->ndim == 2);
        CHECK(t != NULL && llama_st_read_f32(st, t, 0, 0, f) == SHARC_OK);
        llama_st_close(st);
    }
    st = NULL;

    /* missing files and directories, and a directory where a file should be */
    EXPECT_ERR(llama_st_open(tmp_path("nope.safetensors"), &st), SHARC_ERR_IO, "nope", "open");
    EXPECT_ERR(llama_st_open(tmp_path("nope/"), &st), SHARC_ERR_IO, "nope", "open");
    EXPECT_ERR(llama_st_open(tmp_path("nope.index.json"), &st), SHARC_ERR_IO, "nope", "open");
    CHECK(mkdir(tmp_path("sub.safetensors"), 0700) == 0);
    write_index(tmp_path("sub.index.json"), "{\"w\": \"sub.safetensors\"}");
    EXPECT_ERR(llama_st_open(tmp_path("sub.index.json"), &st), SHARC_ERR_IO, "sub.safetensors",
               "regular file");
    rmdir(tmp_path("sub.safetensors"));
    unlink(tmp_path("sub.index.json"));
    CHECK(st == NULL);
    unlink(path);
}

int main(void)
{
    if (testdir_create("test_safetensors_bad") != 0) {
        return 1;
    }
    test_bad_framing();
    test_bad_entries();
    test_bad_offsets();
    test_corner_files();
    testdir_remove();
    return check_result("test_safetensors_bad");
}
