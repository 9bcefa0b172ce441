/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tokens.c: libFuzzer harness for the trainer's token-file reader. The input is written to
 * a file (one per process, rewritten for each input), opened, and every token read: with the
 * vocabulary the header records (65536 when it records none), then with the largest one. Any
 * bytes must open or fail with a status, never fault or read outside the mapping. With
 * SHARC_FUZZ_SEEDS=<dir> set it writes seed inputs there and exits. Built and run by
 * tools/fuzz.sh, not by make check.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/tokens.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_path[] = "/tmp/fuzz_tokens.XXXXXX";
static int fz_fd = -1;

static void fz_cleanup(void)
{
    unlink(fz_path);
}

/* Seeds through the writer: both widths, with ids up to the vocabulary's last. */
static void fz_write_seeds(const char *dir)
{
    static const uint32_t ids[] = {0, 1, 2, 65535, 7, 300, 65535, 42, 0, 9};
    uint32_t wide[sizeof(ids) / sizeof(ids[0])];
    char path[4096];
    size_t i, n = sizeof(ids) / sizeof(ids[0]);

    for (i = 0; i < n; i++) {
        wide[i] = ids[i] * 3 + 1;
    }
    snprintf(path, sizeof(path), "%s/w2.bin", dir);
    if (llama_tokens_write(path, ids, n, 65536) != SHARC_OK) {
        abort();
    }
    snprintf(path, sizeof(path), "%s/w4.bin", dir);
    if (llama_tokens_write(path, wide, n, 200000) != SHARC_OK) {
        abort();
    }
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
    fz_fd = mkstemp(fz_path);
    if (fz_fd < 0) {
        perror("mkstemp");
        abort();
    }
    atexit(fz_cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llama_tokens_t *tok;
    int32_t *out;

    /* written over, then cut to size: a truncation to 0 would make ext4 flush the file at
     * every close (its replace-by-truncate heuristic), a hundred times slower */
    if (pwrite(fz_fd, data, size, 0) != (ssize_t)size || ftruncate(fz_fd, (off_t)size) != 0) {
        perror(fz_path);
        abort();
    }
    if (llama_tokens_open(fz_path, &tok) != SHARC_OK) {
        return 0;
    }
    /* open promised count x width bytes of tokens: reading them all must stay inside */
    if (tok->count == 0 || tok->count * (size_t)tok->width != size - LLAMA_TOKENS_HEADER) {
        __builtin_trap();
    }
    out = malloc(tok->count * sizeof(*out));
    if (out != NULL) {
        (void)llama_tokens_read(tok, 0, tok->count, tok->vocab != 0 ? tok->vocab : 65536, out);
        (void)llama_tokens_read(tok, 0, tok->count, UINT32_MAX, out);
        (void)llama_tokens_read(tok, tok->count - 1, 1, UINT32_MAX, out);
        free(out);
    }
    llama_tokens_close(tok);
    return 0;
}
