/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem.c: shareable host memory (behind sharc/mem.h, whose calls are in comm/context.c). Each
 * buffer is a memfd mapped MAP_SHARED; the fd stays open while the buffer lives so that a
 * peer can open it through /proc. The context's table keeps the buffers sorted by address
 * for lookups from the transports.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"
#include "util.h"

struct sharc_mem_table {
    pthread_mutex_t lock;
    sharc_mem_region_t *regions; /* [n], sorted by base */
    size_t n, cap;
    uint64_t next_id;
    /* who hears of frees (transports' registration caches); its own lock, taken without
     * the table's, so that a watcher may look buffers up */
    pthread_mutex_t watch_lock;
    struct sharc_mem_watch {
        sharc_mem_free_cb_t cb;
        void *arg;
    } * watch;
    size_t nwatch, watch_cap;
};

sharc_status_t sharc_mem_table_create(sharc_mem_table_t **table_p)
{
    sharc_mem_table_t *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        return SHARC_ERR_NOMEM;
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->watch_lock, NULL);
    t->next_id = 1;
    *table_p = t;
    return SHARC_OK;
}

static void sharc_mem_unmap(const sharc_mem_region_t *r)
{
    munmap(r->base, r->bytes);
    close(r->fd);
}

void sharc_mem_table_destroy(sharc_mem_table_t *t)
{
    if (t == NULL) {
        return;
    }
    if (t->n > 0) {
        sharc_warn("%zu buffer(s) from sharc_mem_alloc were not freed: freed with the context",
                   t->n);
    }
    for (size_t i = 0; i < t->n; i++) {
        sharc_mem_unmap(&t->regions[i]);
    }
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->watch_lock);
    free(t->watch);
    free(t->regions);
    free(t);
}

sharc_status_t sharc_mem_table_watch(sharc_mem_table_t *t, sharc_mem_free_cb_t cb, void *arg)
{
    sharc_status_t status = SHARC_OK;

    pthread_mutex_lock(&t->watch_lock);
    if (sharc_array_grow(&t->watch, &t->watch_cap, t->nwatch, sizeof(*t->watch), 4) != 0) {
        status = SHARC_ERR_NOMEM;
    } else {
        t->watch[t->nwatch].cb = cb;
        t->watch[t->nwatch++].arg = arg;
    }
    pthread_mutex_unlock(&t->watch_lock);
    return status;
}

void sharc_mem_table_unwatch(sharc_mem_table_t *t, sharc_mem_free_cb_t cb, void *arg)
{
    pthread_mutex_lock(&t->watch_lock);
    for (size_t i = 0; i < t->nwatch; i++) {
        if (t->watch[i].cb == cb && t->watch[i].arg == arg) {
            t->watch[i] = t->watch[--t->nwatch];
            break;
        }
    }
    pthread_mutex_unlock(&t->watch_lock);
}

/* Index of the first region whose base is above @p addr. Lock held. */
static size_t sharc_mem_upper(const sharc_mem_table_t *t, const void *addr)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if ((uintptr_t)t->regions[mid].base <= (uintptr_t)addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

int sharc_mem_table_find(sharc_mem_table_t *t, const void *addr, size_t bytes,
                         sharc_mem_region_t *region_p)
{
    int found = 0;

    if (t == NULL || addr == NULL) {
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    if (t->n > 0) {
        size_t i = sharc_mem_upper(t, addr);
        const sharc_mem_region_t *r = (i > 0) ? &t->regions[i - 1] : NULL;
        uintptr_t a = (uintptr_t)addr, b = (uintptr_t)(r ? r->base : NULL);

        if (r != NULL && a >= b && a - b <= r->bytes && bytes <= r->bytes - (a - b)) {
            *region_p = *r;
            found = 1;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

sharc_status_t sharc_mem_table_alloc(sharc_mem_table_t *t, size_t bytes, void **ptr_p)
{
    sharc_mem_region_t r = {.fd = -1};
    struct stat st;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), i;

    if (bytes == 0) {
        *ptr_p = NULL;
        return SHARC_OK;
    }
    if (bytes > SIZE_MAX - page) {
        sharc_error("sharc_mem_alloc: %zu bytes is too large", bytes);
        return SHARC_ERR_NOMEM;
    }
    r.bytes = SHARC_ALIGN_UP(bytes, page);
    r.fd = memfd_create("sharc-mem", MFD_CLOEXEC);
    if (r.fd < 0 || ftruncate(r.fd, (off_t)r.bytes) != 0 || fstat(r.fd, &st) != 0) {
        sharc_error("sharc_mem_alloc: cannot create a %zu-byte shared file: %m", r.bytes);
        goto err;
    }
    r.ino = (uint64_t)st.st_ino;
    r.base = mmap(NULL, r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
    if (r.base == MAP_FAILED) {
        sharc_error("sharc_mem_alloc: cannot map %zu bytes: %m", r.bytes);
        goto err;
    }
    pthread_mutex_lock(&t->lock);
    if (sharc_array_grow(&t->regions, &t->cap, t->n, sizeof(*t->regions), 16) != 0) {
        pthread_mutex_unlock(&t->lock);
        munmap(r.base, r.bytes);
        goto err;
    }
    r.id = t->next_id++;
    i = sharc_mem_upper(t, r.base);
    memmove(&t->regions[i + 1], &t->regions[i], (t->n - i) * sizeof(r));
    t->regions[i] = r;
    t->n++;
    pthread_mutex_unlock(&t->lock);
    *ptr_p = r.base;
    return SHARC_OK;

err:
    if (r.fd >= 0) {
        close(r.fd);
    }
    return SHARC_ERR_NOMEM;
}

sharc_status_t sharc_mem_table_free(sharc_mem_table_t *t, void *ptr)
{
    sharc_mem_region_t r;
    size_t i;

    if (ptr == NULL) {
        return SHARC_OK;
    }
    pthread_mutex_lock(&t->lock);
    i = sharc_mem_upper(t, ptr);
    if (i == 0 || t->regions[i - 1].base != ptr) {
        pthread_mutex_unlock(&t->lock);
        sharc_error("sharc_mem_free: %p is not a buffer from sharc_mem_alloc on this context", ptr);
        return SHARC_ERR_INVALID;
    }
    r = t->regions[i - 1];
    memmove(&t->regions[i - 1], &t->regions[i], (t->n - i) * sizeof(r));
    t->n--;
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_lock(&t->watch_lock);
    for (size_t w = 0; w < t->nwatch; w++) {
        t->watch[w].cb(t->watch[w].arg, &r);
    }
    pthread_mutex_unlock(&t->watch_lock);
    sharc_mem_unmap(&r);
    return SHARC_OK;
}
