/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.c: internal helpers (see util.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util.h"

int sharc_name_index(const char *const *names, int n, const char *name)
{
    if (name == NULL) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (names[i] != NULL && strcasecmp(names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

double sharc_time_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t sharc_hash64(uint64_t seed, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = seed;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int sharc_snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

void sharc_mutex_init_recursive(pthread_mutex_t *mutex)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(mutex, &attr);
    pthread_mutexattr_destroy(&attr);
}

int sharc_array_grow(void *items_p, size_t *cap_p, size_t count, size_t esize, size_t first)
{
    size_t cap = *cap_p ? 2 * *cap_p : first;
    void *items;

    if (count < *cap_p) {
        return 0;
    }
    /* the caller's pointer is read and written as bytes: it may point to any type */
    memcpy(&items, items_p, sizeof(items));
    items = realloc(items, cap * esize);
    if (items == NULL) {
        return -1;
    }
    memcpy(items_p, &items, sizeof(items));
    *cap_p = cap;
    return 0;
}
