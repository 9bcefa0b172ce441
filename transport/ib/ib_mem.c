/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_mem.c: memory registrations of the verbs transport, and their cache.
 *
 * Buffers from sharc_mem_alloc are registered whole, once, and kept: the cache is keyed by
 * the buffer's id (never reused), the least recently used registrations not in use are
 * released past SHARC_IB_REG_CACHE bytes, and sharc_mem_free drops a buffer's registration
 * at once (the context's table tells the cache; one still in use by a transfer goes when that
 * transfer ends). Other host memory is registered for one transfer, or for as long as a
 * handle from mem_reg lives: without hooks on munmap a registration of arbitrary memory
 * cannot be kept safely, since a freed and reused range would still be pinned to the old
 * pages. CUDA memory is registered through a dmabuf when the driver and the device allow it
 * (ibv_reg_dmabuf_mr), else directly (peer memory: nvidia-peermem).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../base/gpu.h"
#include "../../base/log.h"
#include "ib.h"

#define SHARC_IB_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)

static sharc_ib_reg_t *sharc_ib_reg_new(struct ibv_mr *mr, void *base, size_t bytes, uint64_t id)
{
    sharc_ib_reg_t *r = calloc(1, sizeof(*r));

    if (r == NULL) {
        ibv_dereg_mr(mr);
        return NULL;
    }
    r->mr = mr;
    r->base = base;
    r->bytes = bytes;
    r->region_id = id;
    r->refs = 1;
    return r;
}

static void sharc_ib_reg_free(sharc_ib_reg_t *r)
{
    ibv_dereg_mr(r->mr);
    free(r);
}

/* Take @p r off the cache's list (lock held). */
static void sharc_ib_rcache_unlink(sharc_ib_rcache_t *rc, sharc_ib_reg_t *r)
{
    if (r->prev != NULL) {
        r->prev->next = r->next;
    } else {
        rc->head = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev;
    } else {
        rc->tail = r->prev;
    }
    r->prev = r->next = NULL;
    rc->bytes -= r->bytes;
}

/* Most recently used first (lock held). */
static void sharc_ib_rcache_push(sharc_ib_rcache_t *rc, sharc_ib_reg_t *r)
{
    r->prev = NULL;
    r->next = rc->head;
    if (rc->head != NULL) {
        rc->head->prev = r;
    } else {
        rc->tail = r;
    }
    rc->head = r;
    rc->bytes += r->bytes;
}

/* Past the limit: release the least recently used registrations nobody uses (lock held). */
static void sharc_ib_rcache_trim(sharc_ib_rcache_t *rc)
{
    sharc_ib_reg_t *r = rc->tail, *prev;

    for (; r != NULL && rc->bytes > rc->limit; r = prev) {
        prev = r->prev;
        if (r->refs == 0) {
            sharc_ib_rcache_unlink(rc, r);
            sharc_debug("ib: registration cache: released %zu bytes at %p (least recently used; "
                        "%zu of %zu bytes kept)",
                        r->bytes, (void *)r->base, rc->bytes, rc->limit);
            rc->evictions++;
            sharc_ib_reg_free(r);
        }
    }
}

/* sharc_mem_free of a buffer: its registration goes now, or with its last user. */
static void sharc_ib_rcache_freed(void *arg, const sharc_mem_region_t *region)
{
    sharc_ib_rcache_t *rc = arg;

    sharc_ib_reg_t *r, *next;

    pthread_mutex_lock(&rc->lock);
    rc->frees++;
    for (r = rc->head; r != NULL; r = next) {
        next = r->next;
        if (r->region_id == region->id) {
            sharc_ib_rcache_unlink(rc, r);
            if (r->refs == 0) {
                sharc_ib_reg_free(r);
            } else {
                r->dead = 1;
            }
        }
    }
    pthread_mutex_unlock(&rc->lock);
}

sharc_status_t sharc_ib_rcache_init(sharc_ib_rcache_t *rc, struct ibv_pd *pd,
                                    sharc_mem_table_t *mem, size_t limit)
{
    pthread_mutex_init(&rc->lock, NULL);
    rc->pd = pd;
    rc->mem = mem;
    rc->limit = limit;
    rc->ready = 1;
    return mem != NULL ? sharc_mem_table_watch(mem, sharc_ib_rcache_freed, rc) : SHARC_OK;
}

void sharc_ib_rcache_fini(sharc_ib_rcache_t *rc)
{
    sharc_ib_reg_t *r, *next;

    if (!rc->ready) {
        return;
    }
    if (rc->mem != NULL) {
        sharc_mem_table_unwatch(rc->mem, sharc_ib_rcache_freed, rc);
    }
    for (r = rc->head; r != NULL; r = next) {
        next = r->next;
        if (r->refs > 0) { /* a handle not deregistered: mem_dereg must come first */
            sharc_warn("ib: a registration of %zu bytes at %p is still in use as the "
                       "communicator goes (deregister handles before destroying it)",
                       r->bytes, (void *)r->base);
        }
        sharc_ib_reg_free(r);
    }
    sharc_debug("ib: registration cache: %llu hits, %llu misses, %llu released",
                (unsigned long long)rc->hits, (unsigned long long)rc->misses,
                (unsigned long long)rc->evictions);
    pthread_mutex_destroy(&rc->lock);
    rc->ready = 0;
}

/* The cached registration of buffer @p id, taken (lock held); NULL if none. */
static sharc_ib_reg_t *sharc_ib_rcache_take(sharc_ib_rcache_t *rc, uint64_t id)
{
    sharc_ib_reg_t *r;

    for (r = rc->head; r != NULL && r->region_id != id; r = r->next) {
    }
    if (r != NULL) {
        sharc_ib_rcache_unlink(rc, r);
        sharc_ib_rcache_push(rc, r);
        r->refs++;
    }
    return r;
}

sharc_ib_reg_t *sharc_ib_reg_get(sharc_ib_rcache_t *rc, void *addr, size_t bytes, int temp_ok)
{
    sharc_mem_region_t region;
    sharc_ib_reg_t *r, *mine;
    struct ibv_mr *mr;
    unsigned long long frees;

    pthread_mutex_lock(&rc->lock);
    frees = rc->frees;
    pthread_mutex_unlock(&rc->lock);
    if (!sharc_mem_table_find(rc->mem, addr, bytes, &region)) {
        if (!temp_ok) {
            return NULL;
        }
        mr = ibv_reg_mr(rc->pd, addr, bytes, SHARC_IB_ACCESS);
        if (mr == NULL) {
            sharc_error("ib: registering %zu bytes at %p failed: %s%s", bytes, addr,
                        strerror(errno),
                        errno == ENOMEM ? " (the locked-memory limit, ulimit -l, too low?)" : "");
            return NULL;
        }
        return sharc_ib_reg_new(mr, addr, bytes, 0);
    }
    pthread_mutex_lock(&rc->lock);
    r = sharc_ib_rcache_take(rc, region.id);
    rc->hits += r != NULL;
    rc->misses += r == NULL;
    pthread_mutex_unlock(&rc->lock);
    if (r != NULL) {
        return r;
    }
    /* registered outside the lock (it pins every page) */
    mr = ibv_reg_mr(rc->pd, region.base, region.bytes, SHARC_IB_ACCESS);
    if (mr == NULL) {
        sharc_error("ib: registering the %zu-byte buffer at %p failed: %s", region.bytes,
                    region.base, strerror(errno));
        return NULL;
    }
    mine = sharc_ib_reg_new(mr, region.base, region.bytes, region.id);
    if (mine == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&rc->lock);
    r = sharc_ib_rcache_take(rc, region.id); /* a racing thread registered it meanwhile? */
    if (r == NULL) {
        r = mine;
        mine = NULL;
        /* freed while being registered (a buffer in use freed: the caller's bug): not cached,
         * released by its last user */
        sharc_mem_region_t now;
        r->dead = rc->frees != frees &&
                  (!sharc_mem_table_find(rc->mem, addr, bytes, &now) || now.id != r->region_id);
        if (!r->dead) {
            sharc_ib_rcache_push(rc, r);
            sharc_ib_rcache_trim(rc);
        }
    }
    pthread_mutex_unlock(&rc->lock);
    if (mine != NULL) {
        sharc_ib_reg_free(mine);
    }
    sharc_debug("ib: registration cache: registered the %zu-byte buffer at %p", region.bytes,
                region.base);
    return r;
}

void sharc_ib_reg_put(sharc_ib_rcache_t *rc, sharc_ib_reg_t *r)
{
    int gone;

    if (r == NULL) {
        return;
    }
    pthread_mutex_lock(&rc->lock);
    gone = --r->refs == 0;
    if (gone && r->region_id != 0 && !r->dead) { /* cached: kept while the cache has room */
        sharc_ib_rcache_trim(rc);
        gone = 0;
    }
    pthread_mutex_unlock(&rc->lock);
    if (gone) { /* a registration of its own, or of a buffer freed meanwhile */
        sharc_ib_reg_free(r);
    }
}

void sharc_ib_reg_ref(sharc_ib_rcache_t *rc, sharc_ib_reg_t *r)
{
    pthread_mutex_lock(&rc->lock);
    r->refs++;
    pthread_mutex_unlock(&rc->lock);
}

/* ---- registration handles (mem_reg / mem_dereg) -------------------------------------------- */

/* CUDA memory through a dmabuf of its pages (the GPU runtime exports it); NULL where the
 * driver or the stack cannot. */
static struct ibv_mr *sharc_ib_reg_dmabuf(struct ibv_pd *pd, void *addr, size_t bytes)
{
    struct ibv_mr *mr;
    size_t offset;
    int fd;

    if (sharc_gpu_dmabuf_export(addr, bytes, &fd, &offset) != SHARC_OK) {
        errno = ENOTSUP;
        return NULL;
    }
    mr = ibv_reg_dmabuf_mr(pd, offset, bytes, (uintptr_t)addr, fd, SHARC_IB_ACCESS);
    close(fd);
    return mr;
}

sharc_status_t sharc_tp_ib_mem_reg(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                   sharc_memtype_t memtype, sharc_tp_mem_t **mem_p)
{
    sharc_tp_mem_t *mem = calloc(1, sizeof(*mem));
    sharc_status_t status = SHARC_ERR_NOMEM;

    if (mem == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (addr == NULL || bytes == 0) {
        sharc_error("ib: registering %zu bytes at %p: nothing to register", bytes, addr);
        free(mem);
        return SHARC_ERR_INVALID;
    }
    mem->memtype = memtype;
    if (memtype == SHARC_MEMTYPE_HOST) {
        mem->reg = sharc_ib_reg_get(&tp->rcache, addr, bytes, 1);
    } else if (sharc_gpu_memtype(addr) == SHARC_MEMTYPE_HOST) {
        status = SHARC_ERR_UNSUPPORTED;
        sharc_error("ib: %p is not CUDA memory (or sharc was built without CUDA): cannot "
                    "register it as device memory",
                    addr);
    } else {
        struct ibv_mr *mr = sharc_ib_reg_dmabuf(tp->pd, addr, bytes);
        const char *how = "a dmabuf";

        if (mr == NULL) { /* peer memory (nvidia-peermem), where it is loaded */
            mr = ibv_reg_mr(tp->pd, addr, bytes, SHARC_IB_ACCESS);
            how = "peer memory";
        }
        if (mr == NULL) {
            status = SHARC_ERR_UNSUPPORTED;
            sharc_error("ib: %s cannot register CUDA memory (%zu bytes at %p): neither a dmabuf "
                        "(driver and kernel support) nor peer memory (nvidia-peermem): %s",
                        tp->dev_name, bytes, addr, strerror(errno));
        } else {
            sharc_info("ib: CUDA memory (%zu bytes at %p) registered through %s", bytes, addr, how);
            mem->reg = sharc_ib_reg_new(mr, addr, bytes, 0);
        }
    }
    if (mem->reg == NULL) {
        free(mem);
        return status;
    }
    *mem_p = mem;
    return SHARC_OK;
}

void sharc_tp_ib_mem_dereg(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem)
{
    if (mem != NULL) {
        sharc_ib_reg_put(&tp->rcache, mem->reg);
        free(mem);
    }
}

int sharc_ib_reg_covers(const sharc_ib_reg_t *reg, const void *addr, size_t bytes)
{
    uintptr_t a = (uintptr_t)addr, b = (uintptr_t)(reg != NULL ? reg->base : NULL);

    return reg != NULL && a >= b && a - b <= reg->bytes && bytes <= reg->bytes - (a - b);
}

sharc_ib_reg_t *sharc_ib_reg_for(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem, void *addr, size_t bytes,
                                 int temp_ok)
{
    if (mem != NULL && sharc_ib_reg_covers(mem->reg, addr, bytes)) {
        sharc_ib_reg_ref(&tp->rcache, mem->reg);
        return mem->reg;
    }
    return sharc_ib_reg_get(&tp->rcache, addr, bytes, temp_ok);
}

void *sharc_tp_ib_alloc(size_t bytes)
{
    void *p = NULL;

    return posix_memalign(&p, 4096, bytes) == 0 ? memset(p, 0, bytes) : NULL;
}
