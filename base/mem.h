/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem.h: the context's table of shareable buffers (sharc/mem.h), which transports consult to
 * tell a peer how to map the buffer of a message.
 */
#ifndef SHARC_MEM_INT_H
#define SHARC_MEM_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sharc/status.h>

#include "def_int.h"

typedef struct sharc_mem_table sharc_mem_table_t;

/* One buffer: a peer in the same PID namespace maps it through /proc/<pid>/fd/<fd>. */
typedef struct {
    void *base;
    size_t bytes; /* mapped size (whole pages) */
    int fd;
    uint64_t ino; /* inode of the file, for the peer to check what it opened */
    uint64_t id;  /* unique within the table, never reused */
} sharc_mem_region_t;

SHARC_HIDDEN sharc_status_t sharc_mem_table_create(sharc_mem_table_t **table_p);

/* Frees the buffers left in it, with a warning. */
SHARC_HIDDEN void sharc_mem_table_destroy(sharc_mem_table_t *table);

/*
 * A shareable buffer of @p bytes (rounded up to pages; 0 gives NULL), entered in @p table:
 * SHARC_OK, or SHARC_ERR_NOMEM (logged).
 */
SHARC_HIDDEN sharc_status_t sharc_mem_table_alloc(sharc_mem_table_t *table, size_t bytes,
                                                  void **ptr_p);

/*
 * Release a buffer of @p table, after telling the watchers; NULL is a no-op.
 * SHARC_ERR_INVALID (logged) for a pointer that is no buffer of the table.
 */
SHARC_HIDDEN sharc_status_t sharc_mem_table_free(sharc_mem_table_t *table, void *ptr);

/* Does [addr, addr + bytes) lie inside one buffer of @p table? 1 and *region_p, or 0. */
SHARC_HIDDEN int sharc_mem_table_find(sharc_mem_table_t *table, const void *addr, size_t bytes,
                                      sharc_mem_region_t *region_p);

/*
 * Told of every buffer sharc_mem_free releases, before it is unmapped: a transport drops
 * what it keeps about it (memory registrations). Runs in the freeing thread, without the
 * table's lock held (it may look buffers up).
 */
typedef void (*sharc_mem_free_cb_t)(void *arg, const sharc_mem_region_t *region);

SHARC_HIDDEN sharc_status_t sharc_mem_table_watch(sharc_mem_table_t *table, sharc_mem_free_cb_t cb,
                                                  void *arg);
SHARC_HIDDEN void sharc_mem_table_unwatch(sharc_mem_table_t *table, sharc_mem_free_cb_t cb,
                                          void *arg);

#endif
