/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tokens.c: trainer/io/tokens.c on files it writes and files written here byte by byte:
 * round trips at token widths 2 and 4, reads of any range, the vocabulary check (the model's
 * and the file's), and every kind of damaged file, each of which must give SHARC_ERR_INVALID or
 * SHARC_ERR_IO with exactly one logged line naming the file and the cause.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "testfiles.h"
#include "io/tokens.h"

static void put_u32(unsigned char *p, uint32_t v)
{
    int i;

    for (i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/* A token file from its header fields and @p len bytes of tokens (zeros when NULL). */
static void write_tok(const char *path, const char *magic, uint32_t version, uint32_t width,
                      uint64_t count, uint32_t vocab, uint32_t reserved, const void *tokens,
                      size_t len)
{
    unsigned char *buf = calloc(1, LLAMA_TOKENS_HEADER + len + 1);

    memcpy(buf, magic, 8);
    put_u32(buf + 8, version);
    put_u32(buf + 12, width);
    put_u32(buf + 16, (uint32_t)count);
    put_u32(buf + 20, (uint32_t)(count >> 32));
    put_u32(buf + 24, vocab);
    put_u32(buf + 28, reserved);
    if (tokens != NULL) {
        memcpy(buf + LLAMA_TOKENS_HEADER, tokens, len);
    }
    write_bytes(path, buf, LLAMA_TOKENS_HEADER + len);
    free(buf);
}

/* Opening @p path must fail with @p status, naming it and @p word, and set nothing. */
static void expect_bad_open(const char *path, sharc_status_t status, const char *word)
{
    llama_tokens_t *tok = NULL;

    EXPECT_ERR(llama_tokens_open(path, &tok), status, path, word);
    CHECK(tok == NULL);
}

/* Every read of [start, start + n) against what was written, for a few ranges. */
static void check_ranges(const llama_tokens_t *tok, const uint32_t *ids, size_t count,
                         uint32_t vocab)
{
    int32_t *out = malloc((count + 1) * sizeof(*out));
    size_t start, n, i;

    CHECK(llama_tokens_read(tok, 0, count, vocab, out) == SHARC_OK);
    for (i = 0; i < count; i++) {
        CHECK_MSG(out[i] == (int32_t)ids[i], "token %zu: %d, want %u", i, out[i], ids[i]);
        if (out[i] != (int32_t)ids[i]) {
            break;
        }
    }
    /* odd pieces everywhere, the last token alone, empty reads at both ends */
    for (start = 0; start < count; start += start / 3 + 7) {
        n = count - start < 11 ? count - start : 11;
        CHECK(llama_tokens_read(tok, start, n, vocab, out) == SHARC_OK);
        for (i = 0; i < n; i++) {
            CHECK(out[i] == (int32_t)ids[start + i]);
        }
    }
    CHECK(llama_tokens_read(tok, count - 1, 1, vocab, out) == SHARC_OK &&
          out[0] == (int32_t)ids[count - 1]);
    CHECK(llama_tokens_read(tok, 0, 0, vocab, out) == SHARC_OK);
    CHECK(llama_tokens_read(tok, count, 0, vocab, NULL) == SHARC_OK);
    free(out);
}

static long file_size(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Round trips: width 2 up to a vocabulary of 65536, 4 above; ids up to vocab - 1. */
static void test_round_trip(uint32_t vocab, int width, size_t count)
{
    const char *path = tmp_path(width == 2 ? "w2.bin" : "w4.bin");
    uint32_t *ids = malloc(count * sizeof(*ids));
    llama_tokens_t *tok = NULL;
    char tmpname[64];
    int32_t x;
    size_t i;

    for (i = 0; i < count; i++) {
        ids[i] = (uint32_t)((i * 2654435761u) % vocab);
    }
    ids[0] = vocab - 1;
    ids[count / 2] = 0;
    CHECK(llama_tokens_write(path, ids, count, vocab) == SHARC_OK);
    snprintf(tmpname, sizeof(tmpname), "%s.tmp.%ld", width == 2 ? "w2.bin" : "w4.bin",
             (long)getpid());
    CHECK(access(tmp_path(tmpname), F_OK) != 0);
    CHECK_MSG(file_size(path) == (long)(LLAMA_TOKENS_HEADER + count * (size_t)width),
              "%s: %ld bytes", path, file_size(path));
    CHECK(llama_tokens_open(path, &tok) == SHARC_OK);
    if (tok == NULL) {
        free(ids);
        return;
    }
    CHECK(tok->count == count && tok->width == width && tok->vocab == vocab);
    CHECK(strcmp(tok->path, path) == 0);
    check_ranges(tok, ids, count, vocab);
    /* a model with a larger vocabulary reads the file too; the file's own limit still holds */
    check_ranges(tok, ids, count, vocab + 1000);

    /* the model's vocabulary is smaller: the first token at or above it is named */
    EXPECT_ERR(llama_tokens_read(tok, 0, count, vocab - 1, &x), SHARC_ERR_INVALID, path,
               "token 0 is");
    EXPECT_ERR(llama_tokens_read(tok, 0, 1, 0, &x), SHARC_ERR_INVALID, "llama_tokens_read",
               "vocabulary of 0");
    /* ranges past the end, including ones whose end wraps around */
    EXPECT_ERR(llama_tokens_read(tok, count, 1, vocab, &x), SHARC_ERR_INVALID, path, "past");
    EXPECT_ERR(llama_tokens_read(tok, count + 1, 0, vocab, &x), SHARC_ERR_INVALID, path, "past");
    EXPECT_ERR(llama_tokens_read(tok, 1, count, vocab, &x), SHARC_ERR_INVALID, path, "past");
    EXPECT_ERR(llama_tokens_read(tok, 2, SIZE_MAX, vocab, &x), SHARC_ERR_INVALID, path, "past");
    EXPECT_ERR(llama_tokens_read(tok, SIZE_MAX, 2, vocab, &x), SHARC_ERR_INVALID, path, "past");
    EXPECT_ERR(llama_tokens_read(tok, 0, 1, vocab, NULL), SHARC_ERR_INVALID, "llama_tokens_read",
               "NULL");
    llama_tokens_close(tok);
    unlink(path);
    free(ids);
}

/* The vocabulary check at the position of the bad token, from both limits. */
static void test_vocab(void)
{
    const char *path = tmp_path("vocab.bin");
    uint16_t t16[6] = {1, 2, 3, 4, 9, 5};
    uint32_t t32[3] = {7, 0x80000000u, 1}, ids[3] = {1, 2, 3};
    llama_tokens_t *tok = NULL;
    int32_t out[6];

    /* recorded vocabulary 8, one token of 9 at position 4: rejected whatever the model says */
    write_tok(path, LLAMA_TOKENS_MAGIC, 1, 2, 6, 8, 0, t16, sizeof(t16));
    CHECK(llama_tokens_open(path, &tok) == SHARC_OK);
    if (tok != NULL) {
        CHECK(tok->vocab == 8);
        CHECK(llama_tokens_read(tok, 0, 4, 1000, out) == SHARC_OK && out[3] == 4);
        CHECK(llama_tokens_read(tok, 5, 1, 1000, out) == SHARC_OK && out[0] == 5);
        EXPECT_ERR(llama_tokens_read(tok, 0, 6, 1000, out), SHARC_ERR_INVALID, path,
                   "token 4 is 9, not below the vocabulary size 8");
        EXPECT_ERR(llama_tokens_read(tok, 2, 3, 1000, out), SHARC_ERR_INVALID, path, "token 4");
        /* the model's limit when it is the smaller one */
        EXPECT_ERR(llama_tokens_read(tok, 0, 4, 4, out), SHARC_ERR_INVALID, path,
                   "token 3 is 4, not below the vocabulary size 4");
        llama_tokens_close(tok);
        tok = NULL;
    }
    /* not recorded (0): only the model's vocabulary counts */
    write_tok(path, LLAMA_TOKENS_MAGIC, 1, 2, 6, 0, 0, t16, sizeof(t16));
    CHECK(llama_tokens_open(path, &tok) == SHARC_OK);
    if (tok != NULL) {
        CHECK(tok->vocab == 0);
        CHECK(llama_tokens_read(tok, 0, 6, 10, out) == SHARC_OK && out[4] == 9);
        EXPECT_ERR(llama_tokens_read(tok, 0, 6, 9, out), SHARC_ERR_INVALID, path, "token 4 is 9");
        llama_tokens_close(tok);
        tok = NULL;
    }
    /* width 4: an id above INT32_MAX cannot be returned as int32, even below the vocabulary */
    write_tok(path, LLAMA_TOKENS_MAGIC, 1, 4, 3, 0, 0, t32, sizeof(t32));
    CHECK(llama_tokens_open(path, &tok) == SHARC_OK);
    if (tok != NULL) {
        CHECK(tok->width == 4);
        EXPECT_ERR(llama_tokens_read(tok, 0, 3, UINT32_MAX, out), SHARC_ERR_INVALID, path,
                   "token 1 is 2147483648");
        CHECK(llama_tokens_read(tok, 2, 1, UINT32_MAX, out) == SHARC_OK && out[0] == 1);
        llama_tokens_close(tok);
    }
    llama_tokens_close(NULL);

    /* the writer checks every id first and creates nothing when one is too large */
    unlink(path);
    EXPECT_ERR(llama_tokens_write(path, ids, 3, 3), SHARC_ERR_INVALID, path, "token 2 is 3");
    CHECK(access(path, F_OK) != 0);
    EXPECT_ERR(llama_tokens_write(path, ids, 0, 10), SHARC_ERR_INVALID, "llama_tokens_write",
               "no tokens");
    EXPECT_ERR(llama_tokens_write(path, ids, 3, 0), SHARC_ERR_INVALID, "llama_tokens_write",
               "vocabulary of 0");
    CHECK(access(path, F_OK) != 0);
    EXPECT_ERR(llama_tokens_write(tmp_path("nodir/x.bin"), ids, 3, 10), SHARC_ERR_IO, "nodir",
               "create");
    /* a committed write replaces the old file */
    write_bytes(path, "old", 3);
    CHECK(llama_tokens_write(path, ids, 3, 10) == SHARC_OK);
    CHECK(file_size(path) == LLAMA_TOKENS_HEADER + 3 * 2);
    unlink(path);
}

static void test_bad_files(void)
{
    const char *path = tmp_path("bad.bin");
    const char *m = LLAMA_TOKENS_MAGIC;
    unsigned char zeros[64] = {0};

    expect_bad_open(tmp_path("missing.bin"), SHARC_ERR_IO, "cannot open");
    CHECK(mkdir(tmp_path("adir"), 0700) == 0);
    expect_bad_open(tmp_path("adir"), SHARC_ERR_IO, "regular file");
    rmdir(tmp_path("adir"));

    write_bytes(path, "", 0);
    expect_bad_open(path, SHARC_ERR_INVALID, "empty");
    write_bytes(path, "SHARCTOK", 8);
    expect_bad_open(path, SHARC_ERR_INVALID, "shorter than the 32-byte header");
    write_bytes(path, zeros, LLAMA_TOKENS_HEADER - 1);
    expect_bad_open(path, SHARC_ERR_INVALID, "shorter than the 32-byte header");
    write_tok(path, m, 1, 2, 0, 100, 0, NULL, 0);
    expect_bad_open(path, SHARC_ERR_INVALID, "no tokens");
    write_tok(path, m, 1, 2, 0, 100, 0, zeros, 4); /* count 0 but tokens after */
    expect_bad_open(path, SHARC_ERR_INVALID, "no tokens");

    /* header fields */
    write_tok(path, "SHARCTOX", 1, 2, 2, 100, 0, zeros, 4);
    expect_bad_open(path, SHARC_ERR_INVALID, "magic");
    write_tok(path, "sharctok", 1, 2, 2, 100, 0, zeros, 4);
    expect_bad_open(path, SHARC_ERR_INVALID, "magic");
    write_tok(path, m, 2, 2, 2, 100, 0, zeros, 4);
    expect_bad_open(path, SHARC_ERR_INVALID, "version 2");
    write_tok(path, m, 0, 2, 2, 100, 0, zeros, 4);
    expect_bad_open(path, SHARC_ERR_INVALID, "version 0");
    write_tok(path, m, 0x01000000, 2, 2, 100, 0, zeros, 4); /* big-endian 1 */
    expect_bad_open(path, SHARC_ERR_INVALID, "version 16777216");
    write_tok(path, m, 1, 3, 2, 100, 0, zeros, 6);
    expect_bad_open(path, SHARC_ERR_INVALID, "width 3");
    write_tok(path, m, 1, 1, 2, 100, 0, zeros, 2);
    expect_bad_open(path, SHARC_ERR_INVALID, "width 1");
    write_tok(path, m, 1, 8, 2, 100, 0, zeros, 16);
    expect_bad_open(path, SHARC_ERR_INVALID, "width 8");
    write_tok(path, m, 1, 0, 2, 100, 0, zeros, 0);
    expect_bad_open(path, SHARC_ERR_INVALID, "width 0");
    write_tok(path, m, 1, 2, 2, 100, 7, zeros, 4);
    expect_bad_open(path, SHARC_ERR_INVALID, "reserved");

    /* size against count x width: truncated, trailing bytes, the other width's size */
    write_tok(path, m, 1, 2, 10, 100, 0, zeros, 19);
    expect_bad_open(path, SHARC_ERR_INVALID, "10 tokens of 2 bytes");
    write_tok(path, m, 1, 2, 10, 100, 0, zeros, 21);
    expect_bad_open(path, SHARC_ERR_INVALID, "10 tokens of 2 bytes");
    write_tok(path, m, 1, 4, 10, 100, 0, zeros, 20);
    expect_bad_open(path, SHARC_ERR_INVALID, "10 tokens of 4 bytes");
    write_tok(path, m, 1, 2, 10, 100, 0, zeros, 40);
    expect_bad_open(path, SHARC_ERR_INVALID, "10 tokens of 2 bytes");
    /* counts whose size in bytes wraps around 2^64 onto the file's real size: 4 x (2^62 + 1)
     * = 2^64 + 4 and 2 x 2^63 = 2^64 + 0 (a reader that multiplied blindly would accept
     * these and read far past the mapping) */
    write_tok(path, m, 1, 4, (1ULL << 62) + 1, 100, 0, zeros, 4);
    expect_bad_open(path, SHARC_ERR_INVALID, "4611686018427387905 tokens");
    write_tok(path, m, 1, 2, 1ULL << 63, 100, 0, zeros, 0);
    expect_bad_open(path, SHARC_ERR_INVALID, "9223372036854775808 tokens");
    write_tok(path, m, 1, 2, UINT64_MAX, 100, 0, zeros, 30);
    expect_bad_open(path, SHARC_ERR_INVALID, "18446744073709551615 tokens");
    /* no overflow in count x width, but in adding the header: 2 x (2^63 - 8) + 32 */
    write_tok(path, m, 1, 2, (1ULL << 63) - 8, 100, 0, zeros, 16);
    expect_bad_open(path, SHARC_ERR_INVALID, "9223372036854775800 tokens");
    unlink(path);
}

int main(void)
{
    if (testdir_create("test_tokens") != 0) {
        return 1;
    }
    test_round_trip(1000, 2, 5000);
    test_round_trip(65536, 2, 70000);       /* the largest vocabulary of width 2 */
    test_round_trip(65537, 4, 3);           /* the smallest of width 4 */
    test_round_trip(128256, 4, 100000 + 7); /* Llama 3 */
    test_vocab();
    test_bad_files();
    testdir_remove();
    return check_result("test_tokens");
}
