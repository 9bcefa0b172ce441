/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.h: small internal helpers shared by the core: name tables, monotonic time, a 64-bit
 * hash, bounded formatting and recursive mutexes. Not part of the public API.
 */
#ifndef SHARC_UTIL_H
#define SHARC_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#include "def_int.h"

/** Index of @p name (case-insensitive) in @p names[0..n), or -1. NULL entries are skipped. */
SHARC_HIDDEN int sharc_name_index(const char *const *names, int n, const char *name);

/** Seconds on the monotonic clock. */
SHARC_HIDDEN double sharc_time_now(void);

/** FNV-1a 64-bit hash of @p len bytes, continuing from @p seed (use SHARC_HASH_SEED). */
#define SHARC_HASH_SEED 0xcbf29ce484222325ull
SHARC_HIDDEN uint64_t sharc_hash64(uint64_t seed, const void *data, size_t len);

/** snprintf that reports truncation: 0 when the whole text fit, -1 otherwise. */
SHARC_HIDDEN int sharc_snprintf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** A mutex the thread holding it may take again (completions that post from inside progress). */
SHARC_HIDDEN void sharc_mutex_init_recursive(pthread_mutex_t *mutex);

/**
 * Room for one more element in a growable array: @p items_p points to the array's pointer
 * (of any element type), which holds @p count elements of @p esize bytes in room for
 * *@p cap_p. When it is full the room doubles (@p first elements the first time). 0, or -1
 * when out of memory: then the array and its room are unchanged.
 */
SHARC_HIDDEN int sharc_array_grow(void *items_p, size_t *cap_p, size_t count, size_t esize,
                                  size_t first);

extern SHARC_HIDDEN const char *const sharc_log_level_names[];
extern SHARC_HIDDEN const char *const sharc_bootstrap_names[];

#endif
