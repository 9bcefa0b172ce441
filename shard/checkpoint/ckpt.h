/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt.h: the on-disk format of sharded checkpoints, shared by shard_save.c and
 * shard_load.c, and the file helpers both use (ckpt_io.c). Built with json-c and xxHash.
 */
#ifndef SHARC_SHARD_CKPT_H
#define SHARC_SHARD_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sharc/status.h>

#include "base/def_int.h"

#define SHARC_CKPT_META    "sharc-shard.json" /* the metadata: replaced by rename = the commit */
#define SHARC_CKPT_FORMAT  "sharc-shard-checkpoint"
#define SHARC_CKPT_VERSION 1
#define SHARC_CKPT_MAGIC   "SHARCSHD"
#define SHARC_CKPT_HEADER  64 /* bytes before the payload of a shard file */

/* The header of a shard file; the payload follows: per unit, per state, shard f32 values. */
typedef struct {
    char magic[8];
    uint32_t version, shard_rank, shard_size, nunits, nstates, pad;
    uint64_t generation, payload_bytes;
    char reserved[SHARC_CKPT_HEADER - 48];
} sharc_ckpt_header_t;

_Static_assert(sizeof(sharc_ckpt_header_t) == SHARC_CKPT_HEADER, "shard file header size");

/* "shard-g<gen>-r<shard_rank>.bin" */
SHARC_HIDDEN void sharc_ckpt_file_name(char *buf, size_t size, uint64_t gen, int shard_rank);

/* dir/name, malloc'ed (NULL: no memory). */
SHARC_HIDDEN char *sharc_ckpt_path(const char *dir, const char *name);

/* pread(2) all of it: 0, or -1 (errno set; EIO for a file that ends early). */
SHARC_HIDDEN int sharc_ckpt_read_at(int fd, void *buf, size_t bytes, off_t off);

/* Make the directory entry of a rename durable. */
SHARC_HIDDEN void sharc_ckpt_sync_dir(const char *dir);

/*
 * Write @p n buffers to dir/name atomically: into a temporary file, fsync, rename. The
 * XXH3 of everything written goes to *hash_p. Logs what failed.
 */
SHARC_HIDDEN sharc_status_t sharc_ckpt_write_file(const char *dir, const char *name,
                                                  const void *const *bufs, const size_t *lens,
                                                  int n, uint64_t *hash_p);

#endif
