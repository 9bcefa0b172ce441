/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_mem.c: how the shm transport reads a peer's memory for a rendezvous: the peer's
 * sharc_mem_alloc buffers mapped here (a cache of mappings, dropped when the peer frees the
 * buffer), else process_vm_readv (CMA). Not the protocol (shm_recv.c decides which to use)
 * and not the node's segments (shm_init.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "shm.h"

/* Unmap entry @p i of the peer's mappings (the last entry takes its place). */
static void shm_map_drop(sharc_shm_peer_t *p, int i)
{
    munmap((void *)p->map[i].base, p->map[i].bytes);
    p->map[i] = p->map[--p->nmap];
}

void sharc_tp_shm_unmap_all(sharc_shm_peer_t *p)
{
    while (p->nmap > 0) {
        shm_map_drop(p, p->nmap - 1);
    }
}

/*
 * Drop the mappings of buffers the peer freed since the last look: a mapping keeps the
 * buffer's memory alive. The ids are read as a seqlock's reader reads: if the peer freed
 * more than SHARC_SHM_FREED_IDS buffers meanwhile, some ids were overwritten, and every
 * mapping of the peer goes (the live ones are mapped again when next used).
 */
static void shm_maps_forget(sharc_tp_comm_t *tp, sharc_shm_peer_t *p)
{
    const sharc_shm_seg_hdr_t *hdr = tp->maps[p - tp->peers];
    uint64_t n = __atomic_load_n(&hdr->freed, __ATOMIC_ACQUIRE), k;

    if (n == p->freed_seen) {
        return;
    }
    for (k = p->freed_seen; k < n && n - k <= SHARC_SHM_FREED_IDS; k++) {
        uint64_t id = __atomic_load_n(&hdr->freed_id[k % SHARC_SHM_FREED_IDS], __ATOMIC_RELAXED);

        for (int i = 0; i < p->nmap; i++) {
            if (p->map[i].id == id) {
                shm_map_drop(p, i);
                break;
            }
        }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&hdr->freed, __ATOMIC_RELAXED) - p->freed_seen > SHARC_SHM_FREED_IDS) {
        sharc_tp_shm_unmap_all(p);
    }
    p->freed_seen = n;
}

/* An entry for a new mapping: a free one (the table grows up to tp->map_cap), or the least
 * recently used one, unmapped. NULL when memory runs out. */
static sharc_shm_map_t *shm_map_slot(sharc_tp_comm_t *tp, sharc_shm_peer_t *p)
{
    sharc_shm_map_t *slot;

    if (p->nmap == p->map_alloc && p->map_alloc < tp->map_cap) {
        int cap = SHARC_MIN(tp->map_cap, p->map_alloc > 0 ? 2 * p->map_alloc : 16);
        sharc_shm_map_t *m = realloc(p->map, (size_t)cap * sizeof(*m));

        if (m == NULL) {
            return NULL;
        }
        p->map = m;
        p->map_alloc = cap;
    }
    if (p->nmap < p->map_alloc) {
        return &p->map[p->nmap++];
    }
    slot = &p->map[0];
    for (int i = 1; i < p->nmap; i++) {
        if (p->map[i].last_use < slot->last_use) {
            slot = &p->map[i];
        }
    }
    munmap((void *)slot->base, slot->bytes);
    return slot;
}

const unsigned char *sharc_tp_shm_region(sharc_tp_comm_t *tp, sharc_shm_peer_t *p,
                                         const sharc_shm_hdr_t *rts)
{
    sharc_shm_map_t *slot;
    char path[64];
    struct stat st;
    void *base;
    int fd;

    if (rts->region == 0 || p->no_map || !tp->same_pidns ||
        rts->offset + rts->bytes > rts->region_bytes) {
        return NULL;
    }
    shm_maps_forget(tp, p);
    for (int i = 0; i < p->nmap; i++) {
        if (p->map[i].id == rts->region) {
            p->map[i].last_use = ++tp->map_clock;
            return p->map[i].base;
        }
    }
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)p->pid, (int)rts->region_fd);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_ino != rts->region_ino ||
        (uint64_t)st.st_size < rts->region_bytes) {
        sharc_info("shm: rank %d cannot open rank %d's shared buffer (%s): copying with CMA",
                   tp->base.rank, p->rank, fd < 0 ? strerror(errno) : "not the file it named");
        goto fail;
    }
    base = mmap(NULL, rts->region_bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) {
        sharc_info("shm: rank %d cannot map rank %d's shared buffer: %m", tp->base.rank, p->rank);
        goto fail;
    }
    close(fd);
    slot = shm_map_slot(tp, p);
    if (slot == NULL) {
        munmap(base, rts->region_bytes);
        return NULL; /* no memory for the entry: CMA this time */
    }
    sharc_debug("shm: rank %d maps rank %d's %llu-byte shared buffer (%d mapped)", tp->base.rank,
                p->rank, (unsigned long long)rts->region_bytes, p->nmap);
    *slot = (sharc_shm_map_t){rts->region, base, rts->region_bytes, ++tp->map_clock};
    return base;

fail:
    if (fd >= 0) {
        close(fd);
    }
    p->no_map = 1;
    return NULL;
}

sharc_status_t sharc_tp_shm_cma_read(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, void *dst,
                                     uint64_t addr, size_t bytes)
{
    size_t done = 0;

    while (done < bytes) {
        struct iovec local = {.iov_base = (char *)dst + done, .iov_len = bytes - done};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)(addr + done),
                               .iov_len = bytes - done};
        ssize_t n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);

        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EPERM || errno == ENOSYS) && done == 0) {
            sharc_info("shm: rank %d may no longer read rank %d's memory (%m): using the FIFO",
                       tp->base.rank, p->rank);
            return SHARC_ERR_UNSUPPORTED;
        }
        sharc_error("shm: rank %d cannot read %zu bytes of rank %d's message at offset %zu: %s",
                    tp->base.rank, bytes, p->rank, done,
                    n < 0 ? strerror(errno) : "its buffer ended early");
        return (n < 0 && errno == ESRCH) ? SHARC_ERR_REMOTE : SHARC_ERR_BACKEND;
    }
    return SHARC_OK;
}
