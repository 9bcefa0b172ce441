/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_io.c: file helpers of the sharded checkpoints (ckpt.h): names, positioned reads,
 * atomic writes with their XXH3 checksum.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/log.h"
#include "shard/checkpoint/ckpt.h"

void sharc_ckpt_file_name(char *buf, size_t size, uint64_t gen, int shard_rank)
{
    snprintf(buf, size, "shard-g%" PRIu64 "-r%d.bin", gen, shard_rank);
}

char *sharc_ckpt_path(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);

    if (path != NULL) {
        snprintf(path, len, "%s/%s", dir, name);
    }
    return path;
}

/* write(2) all of it. */
static int sharc_ckpt_write_all(int fd, const void *buf, size_t bytes)
{
    const char *p = buf;

    while (bytes > 0) {
        ssize_t n = write(fd, p, bytes);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

/* pread(2) all of it: 0, or -1 (errno set; EIO for a file that ends early). */
int sharc_ckpt_read_at(int fd, void *buf, size_t bytes, off_t off)
{
    char *p = buf;

    while (bytes > 0) {
        ssize_t n = pread(fd, p, bytes, off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = EIO;
            }
            return -1;
        }
        p += n;
        off += n;
        bytes -= (size_t)n;
    }
    return 0;
}

/* Make the directory entry of a rename durable. */
void sharc_ckpt_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);

    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/*
 * Write @p n buffers to dir/name atomically: into a temporary file, fsync, rename. The
 * XXH3 of everything written goes to *hash_p.
 */
sharc_status_t sharc_ckpt_write_file(const char *dir, const char *name, const void *const *bufs,
                                     const size_t *lens, int n, uint64_t *hash_p)
{
    char *path = sharc_ckpt_path(dir, name), *tmp = NULL;
    XXH3_state_t *xxh = XXH3_createState();
    sharc_status_t status = SHARC_ERR_NOMEM;
    int fd = -1;

    if (path == NULL || xxh == NULL || (tmp = malloc(strlen(path) + 32)) == NULL) {
        goto out;
    }
    sprintf(tmp, "%s.tmp.%d", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        sharc_error("cannot create %s: %m", tmp);
        status = SHARC_ERR_IO;
        goto out;
    }
    XXH3_64bits_reset(xxh);
    for (int i = 0; i < n; i++) {
        XXH3_64bits_update(xxh, bufs[i], lens[i]);
        if (sharc_ckpt_write_all(fd, bufs[i], lens[i]) != 0) {
            sharc_error("cannot write %s: %m", tmp);
            status = SHARC_ERR_IO;
            goto out_unlink;
        }
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        fd = -1;
        sharc_error("cannot write %s to disk: %m", tmp);
        status = SHARC_ERR_IO;
        goto out_unlink;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        sharc_error("cannot rename %s to %s: %m", tmp, path);
        status = SHARC_ERR_IO;
        goto out_unlink;
    }
    *hash_p = XXH3_64bits_digest(xxh);
    status = SHARC_OK;
    goto out;

out_unlink:
    if (fd >= 0) {
        close(fd);
    }
    unlink(tmp);
out:
    XXH3_freeState(xxh);
    free(tmp);
    free(path);
    return status;
}
