/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_init.c: the shm transport's ops table and per-communicator setup. Every rank creates
 * its segment, the segment names, pids and CMA probe addresses go round through the bootstrap,
 * each rank maps its node's segments and probes whether it may read each peer's memory, and
 * the ranks agree that every one of them succeeded; only then is each segment unlinked (it
 * lives on while mapped), so a crash later leaves nothing behind in /dev/shm. If any rank
 * failed, every rank returns SHARC_ERR_UNSUPPORTED and the caller uses another transport.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "shm.h"

#define SHARC_SHM_PROBE 0x7368617263434d41ull /* "sharcCMA" */

/* What each rank tells the others. */
typedef struct {
    char name[64]; /* its segment */
    int32_t pid;
    int32_t ok;     /* its segment exists */
    uint64_t probe; /* address of its probe word */
    uint64_t pidns; /* inode of its PID namespace, 0 if unknown */
} sharc_shm_card_t;

static uint64_t sharc_shm_pidns(void)
{
    struct stat st;

    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static size_t sharc_shm_seg_bytes(int nlocal)
{
    return SHARC_ALIGN_UP(sizeof(sharc_shm_seg_hdr_t), 64) +
           (size_t)nlocal * sizeof(sharc_shm_fifo_t);
}

static sharc_shm_fifo_t *sharc_shm_fifo(void *seg, int i)
{
    return (sharc_shm_fifo_t *)((char *)seg + SHARC_ALIGN_UP(sizeof(sharc_shm_seg_hdr_t), 64)) + i;
}

/* Create, size (reserving the pages: tmpfs would otherwise SIGBUS when full) and map. */
static sharc_status_t sharc_shm_seg_create(sharc_tp_comm_t *tp, sharc_shm_card_t *card)
{
    int fd = -1, err;

    tp->seg_bytes = sharc_shm_seg_bytes(tp->nlocal);
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
        snprintf(card->name, sizeof(card->name), "/sharc-%d-%d-%llx", (int)getpid(), tp->base.rank,
                 (unsigned long long)(sharc_time_now() * 1e9) + (unsigned)attempt);
        fd = shm_open(card->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 && errno != EEXIST) {
            break;
        }
    }
    if (fd < 0) {
        sharc_info("shm: rank %d cannot create a shared-memory segment: %m", tp->base.rank);
        return SHARC_ERR_UNSUPPORTED;
    }
    err = posix_fallocate(fd, 0, (off_t)tp->seg_bytes);
    if (err == 0) {
        tp->seg = mmap(NULL, tp->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = (tp->seg == MAP_FAILED) ? errno : 0;
    }
    close(fd);
    if (err != 0) {
        sharc_info("shm: rank %d cannot size or map its %zu-byte segment %s: %s", tp->base.rank,
                   tp->seg_bytes, card->name, strerror(err));
        tp->seg = NULL;
        shm_unlink(card->name);
        return SHARC_ERR_UNSUPPORTED;
    }
    ((sharc_shm_seg_hdr_t *)tp->seg)->nfifos = (uint64_t)tp->nlocal;
    __atomic_store_n(&((sharc_shm_seg_hdr_t *)tp->seg)->magic, SHARC_SHM_MAGIC, __ATOMIC_RELEASE);
    return SHARC_OK;
}

static void *sharc_shm_seg_attach(const sharc_tp_comm_t *tp, const sharc_shm_card_t *card, int peer)
{
    const sharc_shm_seg_hdr_t *hdr;
    struct stat st;
    void *map;
    int fd = shm_open(card->name, O_RDWR, 0);

    if (fd < 0) {
        sharc_info("shm: rank %d cannot open rank %d's segment %s: %m (not the same /dev/shm?)",
                   tp->base.rank, peer, card->name);
        return NULL;
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != tp->seg_bytes) {
        sharc_info("shm: rank %d: rank %d's segment %s is not %zu bytes", tp->base.rank, peer,
                   card->name, tp->seg_bytes);
        close(fd);
        return NULL;
    }
    map = mmap(NULL, tp->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        sharc_info("shm: rank %d cannot map rank %d's segment: %m", tp->base.rank, peer);
        return NULL;
    }
    hdr = map;
    if (__atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE) != SHARC_SHM_MAGIC ||
        hdr->nfifos != (uint64_t)tp->nlocal) {
        sharc_info("shm: rank %d: rank %d's segment has another layout", tp->base.rank, peer);
        munmap(map, tp->seg_bytes);
        return NULL;
    }
    return map;
}

/*
 * Map the pages of FIFO @p f into this process now: the first message through each slot would
 * otherwise fault in its pages on both sides (about 2 us a message at first, seen as 4 us
 * against 1.5 us for a 1 KiB exchange until all 64 slots had been used). Only what this rank
 * uses of a segment, and without writing to it: a peer may already be sending through it.
 */
static void sharc_shm_prefault(sharc_shm_fifo_t *f)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)f & ~(page - 1), hi = (uintptr_t)(f + 1);

#ifdef MADV_POPULATE_WRITE
    if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0) {
        return;
    }
#endif
    for (uintptr_t a = lo; a < hi; a += page) { /* (older kernels: a read maps shmem pages) */
        (void)*(volatile const unsigned char *)a;
    }
}

/* May this rank read @p card's process with process_vm_readv? */
static int sharc_shm_cma_probe(const sharc_tp_comm_t *tp, const sharc_shm_card_t *card, int peer)
{
    uint64_t value = 0;
    struct iovec local = {.iov_base = &value, .iov_len = sizeof(value)};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)card->probe, .iov_len = sizeof(value)};
    ssize_t n = process_vm_readv(card->pid, &local, 1, &remote, 1, 0);

    if (n != (ssize_t)sizeof(value) || value != (SHARC_SHM_PROBE ^ (uint64_t)card->pid)) {
        sharc_info("shm: rank %d cannot read rank %d's memory with process_vm_readv (%s): large "
                   "messages from it go through the FIFO",
                   tp->base.rank, peer, n < 0 ? strerror(errno) : "wrong value");
        return 0;
    }
    return 1;
}

/* sharc_mem_free of one of this rank's buffers: its id goes to the segment's header, where
 * the peers that mapped the buffer find it and unmap it. Frees may come from any thread. */
static void sharc_shm_freed(void *arg, const sharc_mem_region_t *region)
{
    sharc_tp_comm_t *tp = arg;
    sharc_shm_seg_hdr_t *hdr = tp->seg;
    uint64_t k;

    pthread_mutex_lock(&tp->base.lock);
    k = hdr->freed;
    __atomic_store_n(&hdr->freed_id[k % SHARC_SHM_FREED_IDS], region->id, __ATOMIC_RELAXED);
    __atomic_store_n(&hdr->freed, k + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&tp->base.lock);
}

/* Free what the peer's queues still hold (at destroy, after every request completed). */
static void sharc_shm_peer_cleanup(sharc_shm_peer_t *p)
{
    while (p->ctrl_head != NULL) {
        sharc_shm_ctrl_t *c = p->ctrl_head;

        p->ctrl_head = c->next;
        free(c);
    }
    while (p->unexp_head != NULL) {
        sharc_shm_unexp_t *u = p->unexp_head;

        p->unexp_head = u->next;
        free(u);
    }
    p->ctrl_tail = NULL;
    p->unexp_tail = NULL;
    sharc_tp_shm_unmap_all(p);
    free(p->map);
    p->map = NULL;
    p->map_alloc = 0;
}

static void sharc_shm_comm_destroy(sharc_tp_comm_t *tp)
{
    if (tp->mem != NULL && tp->seg != NULL) {
        sharc_mem_table_unwatch(tp->mem, sharc_shm_freed, tp);
    }
    for (int i = 0; tp->peers != NULL && i < tp->nlocal; i++) {
        sharc_shm_peer_cleanup(&tp->peers[i]);
    }
    for (int i = 0; tp->maps != NULL && i < tp->nlocal; i++) {
        if (tp->maps[i] != NULL && tp->maps[i] != tp->seg) {
            munmap(tp->maps[i], tp->seg_bytes);
        }
    }
    if (tp->seg != NULL) {
        munmap(tp->seg, tp->seg_bytes);
    }
    sharc_tp_base_fini(&tp->base);
    free(tp->maps);
    free(tp->peers);
    free(tp->local_of);
    free(tp->bounce);
    free(tp);
}

/* Number the ranks of this node in rank order. */
static sharc_status_t sharc_shm_local_ranks(sharc_tp_comm_t *tp, const int *node_of)
{
    tp->local_of = malloc((size_t)tp->base.size * sizeof(*tp->local_of));
    if (tp->local_of == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int r = 0; r < tp->base.size; r++) {
        tp->local_of[r] = (node_of[r] == node_of[tp->base.rank]) ? tp->nlocal++ : -1;
    }
    tp->peers = calloc((size_t)tp->nlocal, sizeof(*tp->peers));
    tp->maps = calloc((size_t)tp->nlocal, sizeof(*tp->maps));
    tp->map_cap = SHARC_MAX(SHARC_SHM_MAPS / SHARC_MAX(tp->nlocal, 1), SHARC_SHM_MAPS_MIN);
    return (tp->peers != NULL && tp->maps != NULL) ? SHARC_OK : SHARC_ERR_NOMEM;
}

/* Map the node's segments and wire each peer's FIFOs; 0 if one could not be mapped. */
static int sharc_shm_connect(sharc_tp_comm_t *tp, const sharc_shm_card_t *cards, int cma)
{
    int me = tp->local_of[tp->base.rank];

    tp->same_pidns = 1;
    for (int r = 0; r < tp->base.size; r++) {
        int i = tp->local_of[r];
        sharc_shm_peer_t *p;

        if (i < 0) {
            continue;
        }
        if (!cards[r].ok) {
            return 0;
        }
        tp->maps[i] = (r == tp->base.rank) ? tp->seg : sharc_shm_seg_attach(tp, &cards[r], r);
        if (tp->maps[i] == NULL) {
            return 0;
        }
        p = &tp->peers[i];
        p->rank = r;
        p->pid = cards[r].pid;
        p->in = sharc_shm_fifo(tp->seg, i);
        p->out = sharc_shm_fifo(tp->maps[i], me);
        p->out_seg = tp->maps[i];
        sharc_shm_prefault(p->in);
        sharc_shm_prefault(p->out);
        p->cma = (r == tp->base.rank) || (cma && sharc_shm_cma_probe(tp, &cards[r], r));
        if (cards[r].pidns == 0 || cards[r].pidns != cards[tp->base.rank].pidns) {
            tp->same_pidns = 0;
        }
    }
    return 1;
}

static sharc_status_t sharc_shm_comm_create(const sharc_tp_comm_params_t *params,
                                            sharc_tp_comm_t **tp_p)
{
    sharc_shm_card_t *cards = NULL, mine = {.ok = 0};
    sharc_tp_comm_t *tp;
    sharc_status_t status;
    int32_t ok, *oks = NULL;

    tp = calloc(1, sizeof(*tp));
    if (tp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    sharc_tp_base_init(&tp->base, params);
    tp->next_cookie = 1;
    tp->mem = params->mem;
    tp->probe = SHARC_SHM_PROBE ^ (uint64_t)getpid();
    status = sharc_shm_local_ranks(tp, params->node_of);
    cards = calloc((size_t)tp->base.size, sizeof(*cards));
    oks = calloc((size_t)tp->base.size, sizeof(*oks));
    if (status != SHARC_OK || cards == NULL || oks == NULL) {
        status = SHARC_ERR_NOMEM;
        goto out; /* collective calls below would now disagree: fail like a lost rank */
    }
    mine.pid = (int32_t)getpid();
    mine.probe = (uint64_t)(uintptr_t)&tp->probe;
    mine.pidns = sharc_shm_pidns();
    mine.ok = sharc_shm_seg_create(tp, &mine) == SHARC_OK;
    if (mine.ok && tp->mem != NULL &&
        sharc_mem_table_watch(tp->mem, sharc_shm_freed, tp) != SHARC_OK) {
        shm_unlink(mine.name); /* out of memory: as a segment that could not be made */
        mine.ok = 0;
    }
    tp->cma_reduce_min = sharc_tp_shm_cfg(params->cfg)->cma_reduce_min;
    if (sharc_tp_shm_cfg(params->cfg)->cma) {
        /* Yama's ptrace_scope 1 lets only a parent read a process: open this one to peers */
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    }
    status = sharc_boot_allgather(params->boot, &mine, cards, sizeof(mine));
    if (status != SHARC_OK) {
        goto out;
    }
    ok = sharc_shm_connect(tp, cards, sharc_tp_shm_cfg(params->cfg)->cma);
    status = sharc_boot_allgather(params->boot, &ok, oks, sizeof(ok));
    if (status != SHARC_OK) {
        goto out;
    }
    for (int r = 0; r < tp->base.size; r++) {
        if (!oks[r]) {
            sharc_info("shm: rank %d could not attach its node's shared memory: the communicator "
                       "cannot use the shm transport",
                       r);
            status = SHARC_ERR_UNSUPPORTED;
            break;
        }
    }
out:
    if (mine.ok) {
        shm_unlink(mine.name); /* every peer has mapped it, or none will use it */
    }
    free(cards);
    free(oks);
    if (status != SHARC_OK) {
        sharc_shm_comm_destroy(tp);
        return status;
    }
    *tp_p = tp;
    return SHARC_OK;
}

static const sharc_tp_p2p_ops_t sharc_tp_shm_p2p_ops = {
    .send = sharc_tp_shm_send,
    .recv = sharc_tp_shm_recv,
    .recv_any = sharc_tp_shm_recv_any,
    .probe = sharc_tp_shm_probe,
    .recv_reduce = sharc_tp_shm_recv_reduce,
};

const sharc_tp_ops_t sharc_tp_shm_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "shm",
    .caps = SHARC_TP_CAP_HOST_MEM,
    .query = NULL,
    .comm_create = sharc_shm_comm_create,
    .comm_destroy = sharc_shm_comm_destroy,
    .mem_reg = NULL,
    .mem_dereg = NULL,
    .abort = sharc_tp_shm_abort,
    .progress = sharc_tp_shm_progress,
    .block = sharc_tp_shm_block,
    .wake = sharc_tp_shm_wake,
    .p2p = &sharc_tp_shm_p2p_ops,
};

static const sharc_cfg_field_t sharc_tp_shm_cfg_fields[] = {
    {.name = "SHM_CMA",
     .dflt = "yes",
     .type = SHARC_CFG_BOOL,
     .offset = offsetof(sharc_tp_shm_cfg_t, cma),
     .doc = "Let the shm transport copy large messages straight from the sender's memory with "
            "process_vm_readv (one copy). It makes the process readable by other processes of "
            "its user (PR_SET_PTRACER), as Open MPI does; no streams every message through the "
            "shared FIFO (two copies)."},
    {.name = "SHM_CMA_REDUCE_MIN",
     .dflt = "256k",
     .type = SHARC_CFG_SIZE,
     .offset = offsetof(sharc_tp_shm_cfg_t, cma_reduce_min),
     .doc = "Messages a reduction combines on arrival (allreduce, reduce_scatter) use CMA only "
            "from this many bytes; smaller ones stream through the shared FIFO, where the "
            "receiver combines each slot while the sender fills the next, instead of reading "
            "the whole message into a bounce buffer first (docs/perf.md, 'The shm transport "
            "and reductions'). Plain receives use CMA from the FIFO's eager limit."},
};

const sharc_cfg_table_t sharc_tp_shm_cfg_table =
    SHARC_CFG_TABLE("transport: shm", sharc_tp_shm_cfg_fields, sharc_tp_shm_cfg_t);
