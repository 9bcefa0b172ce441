/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz.h: what the libFuzzer harnesses that read a file share: SHARC_FUZZ_SEEDS=<dir> (write
 * the seeds there and exit), the temporary file each input is written to, seed texts written
 * as files. Header only: tools/fuzz.sh builds each harness from its one source file.
 */
#ifndef SHARC_TEST_FUZZ_H
#define SHARC_TEST_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* @p data as the whole of the file at @p path (aborts when it cannot be written). */
static inline void fz_put(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");

    if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        abort();
    }
}

/* Each of the @p n texts as DIR/seedI@p suffix. */
static inline void fz_put_seeds(const char *dir, const char *const *seeds, size_t n,
                                const char *suffix)
{
    char path[4096];

    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/seed%zu%s", dir, i, suffix);
        fz_put(path, (const uint8_t *)seeds[i], strlen(seeds[i]));
    }
}

/*
 * LLVMFuzzerInitialize's common part: with SHARC_FUZZ_SEEDS set, @p write_seeds writes the
 * seeds into that directory and the process exits; else the temporary file @p path (a
 * mkstemps template whose last @p suffix_len characters stay) is made for the inputs.
 */
static inline void fz_init(void (*write_seeds)(const char *dir), char *path, int suffix_len)
{
    const char *seeds = getenv("SHARC_FUZZ_SEEDS");
    int fd;

    if (seeds != NULL && *seeds) {
        write_seeds(seeds);
        exit(0);
    }
    fd = mkstemps(path, suffix_len);
    if (fd < 0) {
        abort();
    }
    close(fd);
}

#endif
