/*
 * shm_ep.c: messages of the shm transport (the protocols are described in shm.h): posting
 * sends and receives, draining the inbound FIFOs, matching, the CMA copy, and failing the
 * requests of a peer that exited. Everything runs under tp->lock; a request is always
 * unlinked from its queue before it completes, because its callback may post again.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "../../kernels/kernels.h"
#include "../../src/base/log.h"
#include "../../src/base/util.h"
#include "shm.h"

/* What a request remembers while in flight (tp_priv). */
#define SHM_BUF(_r)   ((_r)->tp_priv[0].ptr)
#define SHM_BYTES(_r) ((_r)->tp_priv[1].u64) /* send: size; receive: capacity, then size */
#define SHM_TAG(_r)   ((_r)->tp_priv[2].u64) /* until matched */
#define SHM_SENT(_r)  ((_r)->tp_priv[2].u64) /* streaming send: bytes written as FRAGs */
#define SHM_COOKIE(_r)                                                                             \
    ((_r)->tp_priv[3].u64) /* rendezvous: its cookie; streaming send: the receive's */

#define SHARC_SHM_LIVENESS_PERIOD 1.0 /* seconds between checks that busy peers still exist */

/* ---- request queues ------------------------------------------------------------------ */

static void shm_push(sharc_shm_queue_t *q, sharc_tp_req_t *r)
{
    r->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = r;
    } else {
        q->head = r;
    }
    q->tail = r;
}

/* Unlink and return the oldest request whose tp_priv[slot] is @p v, or NULL. */
static sharc_tp_req_t *shm_take(sharc_shm_queue_t *q, int slot, uint64_t v)
{
    for (sharc_tp_req_t **p = &q->head, *prev = NULL; *p != NULL; prev = *p, p = &(*p)->next) {
        sharc_tp_req_t *r = *p;

        if (r->tp_priv[slot].u64 == v) {
            *p = r->next;
            if (q->tail == r) {
                q->tail = prev;
            }
            r->next = NULL;
            return r;
        }
    }
    return NULL;
}

static sharc_tp_req_t *shm_pop(sharc_shm_queue_t *q)
{
    sharc_tp_req_t *r = q->head;

    if (r != NULL) {
        q->head = r->next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        r->next = NULL;
    }
    return r;
}

/* ---- the FIFO ------------------------------------------------------------------------ */

/* The next free slot of @p f, or NULL when the reader has not caught up. Writer only. */
static unsigned char *shm_fifo_slot(sharc_shm_fifo_t *f)
{
    uint64_t head = __atomic_load_n(&f->head, __ATOMIC_RELAXED);

    if (head - __atomic_load_n(&f->tail, __ATOMIC_ACQUIRE) >= SHARC_SHM_SLOTS) {
        return NULL;
    }
    return f->slot[head % SHARC_SHM_SLOTS];
}

static int shm_emit(sharc_shm_fifo_t *f, const sharc_shm_hdr_t *hdr, const void *payload,
                    size_t bytes)
{
    unsigned char *slot = shm_fifo_slot(f);

    if (slot == NULL) {
        return 0;
    }
    memcpy(slot, hdr, sizeof(*hdr));
    if (bytes > 0) {
        memcpy(slot + SHARC_SHM_HDR_BYTES, payload, bytes);
    }
    __atomic_store_n(&f->head, __atomic_load_n(&f->head, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    return 1;
}

/* CTS and FIN: into the FIFO now if nothing waits before them, else queued. */
static void shm_ctrl(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr)
{
    sharc_shm_ctrl_t *c;

    if (p->ctrl_head == NULL && shm_emit(p->out, hdr, NULL, 0)) {
        return;
    }
    c = malloc(sizeof(*c));
    if (c == NULL) {
        /* the peer's request then waits until SHARC_TIMEOUT fails it */
        sharc_error("shm: rank %d: no memory to queue a message for rank %d", tp->rank, p->rank);
        return;
    }
    c->hdr = *hdr;
    c->next = NULL;
    if (p->ctrl_tail != NULL) {
        p->ctrl_tail->next = c;
    } else {
        p->ctrl_head = c;
    }
    p->ctrl_tail = c;
}

/* ---- sends --------------------------------------------------------------------------- */

/* Put a send's first slot (EAGER_MSG or RTS) into the FIFO; 0 if the FIFO is full. */
static int shm_send_start(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req)
{
    size_t bytes = SHM_BYTES(req);
    sharc_shm_hdr_t hdr = {.tag = SHM_TAG(req), .bytes = bytes};
    sharc_mem_region_t region;

    if (bytes <= SHARC_SHM_EAGER) {
        hdr.type = SHARC_SHM_EAGER_MSG;
        if (!shm_emit(p->out, &hdr, SHM_BUF(req), bytes)) {
            return 0;
        }
        sharc_tp_req_complete(req, SHARC_OK);
        return 1;
    }
    hdr.type = SHARC_SHM_RTS;
    hdr.addr = (uint64_t)(uintptr_t)SHM_BUF(req);
    hdr.scookie = tp->next_cookie;
    if (sharc_mem_table_find(tp->mem, SHM_BUF(req), bytes, &region)) {
        hdr.region = region.id;
        hdr.region_bytes = region.bytes;
        hdr.region_ino = region.ino;
        hdr.region_fd = region.fd;
        hdr.offset = (uint64_t)((const char *)SHM_BUF(req) - (const char *)region.base);
    }
    if (!shm_emit(p->out, &hdr, NULL, 0)) {
        return 0;
    }
    SHM_COOKIE(req) = tp->next_cookie++;
    shm_push(&p->wait_fin, req);
    return 1;
}

/* Write FRAGs of the oldest streaming sends while the FIFO has room. */
static int shm_stream(sharc_shm_peer_t *p)
{
    int n = 0;

    while (p->streaming.head != NULL) {
        sharc_tp_req_t *req = p->streaming.head;
        sharc_shm_hdr_t hdr = {.type = SHARC_SHM_FRAG, .rcookie = SHM_COOKIE(req)};

        while (SHM_SENT(req) < SHM_BYTES(req)) {
            hdr.offset = SHM_SENT(req);
            hdr.bytes = SHARC_MIN(SHM_BYTES(req) - hdr.offset, SHARC_SHM_EAGER);
            if (!shm_emit(p->out, &hdr, (const char *)SHM_BUF(req) + hdr.offset, hdr.bytes)) {
                return n;
            }
            SHM_SENT(req) += hdr.bytes;
            n++;
        }
        shm_pop(&p->streaming);
        sharc_tp_req_complete(req, SHARC_OK); /* the rest of the data is in the FIFO */
    }
    return n;
}

/* Move what waits for FIFO space into it, oldest first. */
static int shm_flush(sharc_tp_comm_t *tp, sharc_shm_peer_t *p)
{
    int n = 0;

    while (p->ctrl_head != NULL && shm_emit(p->out, &p->ctrl_head->hdr, NULL, 0)) {
        sharc_shm_ctrl_t *c = p->ctrl_head;

        p->ctrl_head = c->next;
        if (p->ctrl_head == NULL) {
            p->ctrl_tail = NULL;
        }
        free(c);
        n++;
    }
    while (p->sendq.head != NULL && shm_fifo_slot(p->out) != NULL) {
        shm_send_start(tp, p, shm_pop(&p->sendq)); /* cannot fail: there is a free slot */
        n++;
    }
    return n + shm_stream(p);
}

/* ---- receives ------------------------------------------------------------------------ */

/*
 * Message data lands in a receive at byte @p off: stored, or for recv_reduce combined with
 * the local operand straight from where the data is (a FIFO slot, the sender's mapping).
 */
static void shm_land(sharc_tp_req_t *req, size_t off, const void *data, size_t bytes)
{
    char *dst = (char *)SHM_BUF(req) + off;

    if (req->red_src == NULL) {
        sharc_kern_copy(dst, data, bytes);
    } else {
        sharc_kern_cpu_ops.reduce(dst, data, (const char *)req->red_src + off,
                                  bytes / sharc_dtype_size(req->red_dtype), req->red_dtype,
                                  req->red_op, NULL);
    }
}

/* Copy @p bytes from the peer's @p addr into @p dst with process_vm_readv. */
static sharc_status_t shm_cma_read(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, void *dst,
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
                       tp->rank, p->rank);
            return SHARC_ERR_UNSUPPORTED;
        }
        sharc_error("shm: rank %d cannot read %zu bytes of rank %d's message at offset %zu: %s",
                    tp->rank, bytes, p->rank, done,
                    n < 0 ? strerror(errno) : "its buffer ended early");
        return (n < 0 && errno == ESRCH) ? SHARC_ERR_REMOTE : SHARC_ERR_BACKEND;
    }
    return SHARC_OK;
}

/*
 * The sender's data at @p addr into the receive with process_vm_readv: straight into the
 * buffer, or for recv_reduce through a bounce buffer a chunk at a time.
 */
#define SHARC_SHM_BOUNCE (1u << 20)

static sharc_status_t shm_cma_land(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                                   uint64_t addr, size_t bytes)
{
    sharc_status_t status = SHARC_OK;

    if (req->red_src == NULL) {
        return shm_cma_read(tp, p, SHM_BUF(req), addr, bytes);
    }
    if (tp->bounce == NULL && (tp->bounce = malloc(SHARC_SHM_BOUNCE)) == NULL) {
        return SHARC_ERR_UNSUPPORTED; /* streamed through the FIFO instead */
    }
    for (size_t off = 0; status == SHARC_OK && off < bytes; off += SHARC_SHM_BOUNCE) {
        size_t n = SHARC_MIN((size_t)SHARC_SHM_BOUNCE, bytes - off);

        status = shm_cma_read(tp, p, tp->bounce, addr + off, n);
        if (status == SHARC_OK) {
            shm_land(req, off, tp->bounce, n);
        } else if (status == SHARC_ERR_UNSUPPORTED && off > 0) {
            status = SHARC_ERR_BACKEND; /* part of it is combined already: no way back */
        }
    }
    return status;
}

/* Unmap entry @p i of the peer's mappings (the last entry takes its place). */
static void shm_map_drop(sharc_shm_peer_t *p, int i)
{
    munmap((void *)p->map[i].base, p->map[i].bytes);
    p->map[i] = p->map[--p->nmap];
}

/* Unmap every buffer of the peer mapped here. */
static void shm_map_drop_all(sharc_shm_peer_t *p)
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
        shm_map_drop_all(p);
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

/* Map the peer's sharc_mem_alloc buffer named by @p rts (cached), or NULL to use CMA. */
static const unsigned char *shm_peer_region(sharc_tp_comm_t *tp, sharc_shm_peer_t *p,
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
                   tp->rank, p->rank, fd < 0 ? strerror(errno) : "not the file it named");
        goto fail;
    }
    base = mmap(NULL, rts->region_bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) {
        sharc_info("shm: rank %d cannot map rank %d's shared buffer: %m", tp->rank, p->rank);
        goto fail;
    }
    close(fd);
    slot = shm_map_slot(tp, p);
    if (slot == NULL) {
        munmap(base, rts->region_bytes);
        return NULL; /* no memory for the entry: CMA this time */
    }
    sharc_debug("shm: rank %d maps rank %d's %llu-byte shared buffer (%d mapped)", tp->rank,
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

/* Does a message of @p bytes fit the receive (a reduction takes exactly its size)? */
static int shm_fits(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                    const sharc_shm_hdr_t *hdr)
{
    if (hdr->bytes > SHM_BYTES(req) || (req->red_src != NULL && hdr->bytes != SHM_BYTES(req))) {
        sharc_error("shm: rank %d: a %llu-byte message from rank %d with tag %#llx does not fit "
                    "the %llu-byte %s",
                    tp->rank, (unsigned long long)hdr->bytes, p->rank, (unsigned long long)hdr->tag,
                    (unsigned long long)SHM_BYTES(req),
                    req->red_src != NULL ? "reduction" : "receive buffer");
        return 0;
    }
    return 1;
}

static void shm_recv_eager(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                           const sharc_shm_hdr_t *hdr, const void *payload)
{
    if (!shm_fits(tp, p, req, hdr)) {
        sharc_tp_req_complete(req, SHARC_ERR_INVALID);
        return;
    }
    if (hdr->bytes > 0) {
        shm_land(req, 0, payload, hdr->bytes);
    }
    req->bytes = hdr->bytes;
    sharc_tp_req_complete(req, SHARC_OK);
}

/* A receive matched an RTS: read the data, or ask the sender to stream it. */
static void shm_recv_rndv(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, sharc_tp_req_t *req,
                          const sharc_shm_hdr_t *rts)
{
    sharc_shm_hdr_t ans = {.type = SHARC_SHM_FIN, .scookie = rts->scookie};
    sharc_status_t status = SHARC_ERR_UNSUPPORTED;
    const unsigned char *src;

    if (!shm_fits(tp, p, req, rts)) {
        status = SHARC_ERR_INVALID;
    } else if ((src = shm_peer_region(tp, p, rts)) != NULL) {
        shm_land(req, 0, src + rts->offset, rts->bytes);
        status = SHARC_OK;
    } else if (p->cma) {
        status = shm_cma_land(tp, p, req, rts->addr, rts->bytes);
        p->cma = status != SHARC_ERR_UNSUPPORTED;
    }
    if (status == SHARC_ERR_UNSUPPORTED) {
        SHM_BYTES(req) = rts->bytes;
        SHM_COOKIE(req) = tp->next_cookie++;
        req->bytes = 0;
        shm_push(&p->frag_recv, req);
        ans.type = SHARC_SHM_CTS;
        ans.rcookie = SHM_COOKIE(req);
        shm_ctrl(tp, p, &ans);
        return;
    }
    ans.status = status;
    shm_ctrl(tp, p, &ans);
    req->bytes = (status == SHARC_OK) ? rts->bytes : 0;
    sharc_tp_req_complete(req, status);
}

static void shm_frag(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr,
                     const void *payload)
{
    sharc_tp_req_t *req = p->frag_recv.head;

    while (req != NULL && SHM_COOKIE(req) != hdr->rcookie) {
        req = req->next;
    }
    if (req == NULL || hdr->offset + hdr->bytes > SHM_BYTES(req)) {
        sharc_error("shm: rank %d: a fragment from rank %d fits no receive (protocol error)",
                    tp->rank, p->rank);
        return;
    }
    shm_land(req, hdr->offset, payload, hdr->bytes);
    req->bytes += hdr->bytes;
    if (req->bytes == SHM_BYTES(req)) {
        shm_take(&p->frag_recv, 3, hdr->rcookie);
        sharc_tp_req_complete(req, SHARC_OK);
    }
}

/* Keep a message no receive waits for yet (the payload of an RTS stays with the sender). */
static void shm_unexpected(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr,
                           const void *payload)
{
    size_t bytes = (hdr->type == SHARC_SHM_EAGER_MSG) ? hdr->bytes : 0;
    sharc_shm_unexp_t *u = malloc(sizeof(*u) + bytes);

    if (u == NULL) {
        sharc_error("shm: rank %d: no memory to keep a message from rank %d (tag %#llx)", tp->rank,
                    p->rank, (unsigned long long)hdr->tag);
        return;
    }
    u->hdr = *hdr;
    u->next = NULL;
    if (bytes > 0) {
        memcpy(u->payload, payload, bytes);
    }
    if (p->unexp_tail != NULL) {
        p->unexp_tail->next = u;
    } else {
        p->unexp_head = u;
    }
    p->unexp_tail = u;
}

static void shm_on_message(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr,
                           const void *payload)
{
    sharc_tp_req_t *req;

    switch (hdr->type) {
    case SHARC_SHM_EAGER_MSG:
    case SHARC_SHM_RTS:
        req = shm_take(&p->posted, 2, hdr->tag);
        if (req == NULL) {
            shm_unexpected(tp, p, hdr, payload);
        } else if (hdr->type == SHARC_SHM_EAGER_MSG) {
            shm_recv_eager(tp, p, req, hdr, payload);
        } else {
            shm_recv_rndv(tp, p, req, hdr);
        }
        return;
    case SHARC_SHM_CTS:
        req = shm_take(&p->wait_fin, 3, hdr->scookie);
        if (req != NULL) {
            SHM_SENT(req) = 0;
            SHM_COOKIE(req) = hdr->rcookie;
            shm_push(&p->streaming, req);
            return;
        }
        break;
    case SHARC_SHM_FRAG: shm_frag(tp, p, hdr, payload); return;
    case SHARC_SHM_FIN:
        req = shm_take(&p->wait_fin, 3, hdr->scookie);
        if (req != NULL) {
            /* a receive too short for the message is the receiver's error, not the sender's */
            sharc_tp_req_complete(
                req, hdr->status == SHARC_ERR_INVALID ? SHARC_OK : (sharc_status_t)hdr->status);
            return;
        }
        break;
    default: break;
    }
    sharc_error("shm: rank %d: message of type %u from rank %d names no pending request "
                "(protocol error)",
                tp->rank, hdr->type, p->rank);
}

/* Handle every slot the peer has written. */
static int shm_drain(sharc_tp_comm_t *tp, sharc_shm_peer_t *p)
{
    sharc_shm_fifo_t *f = p->in;
    uint64_t tail = __atomic_load_n(&f->tail, __ATOMIC_RELAXED);
    uint64_t head = __atomic_load_n(&f->head, __ATOMIC_ACQUIRE);
    int n = 0;

    for (; tail != head; tail++, n++) {
        const unsigned char *slot = f->slot[tail % SHARC_SHM_SLOTS];
        sharc_shm_hdr_t hdr;

        memcpy(&hdr, slot, sizeof(hdr));
        if (hdr.bytes > SHARC_SHM_EAGER &&
            (hdr.type == SHARC_SHM_EAGER_MSG || hdr.type == SHARC_SHM_FRAG)) {
            sharc_error("shm: rank %d: corrupt slot from rank %d (%llu payload bytes)", tp->rank,
                        p->rank, (unsigned long long)hdr.bytes);
        } else {
            shm_on_message(tp, p, &hdr, slot + SHARC_SHM_HDR_BYTES);
        }
        __atomic_store_n(&f->tail, tail + 1, __ATOMIC_RELEASE); /* the slot is free again */
    }
    return n;
}

/* ---- failure ------------------------------------------------------------------------- */

static void shm_fail_queue(sharc_shm_queue_t *q)
{
    sharc_tp_req_t *r;

    while ((r = shm_pop(q)) != NULL) {
        sharc_tp_req_complete(r, SHARC_ERR_REMOTE);
    }
}

static int shm_busy(const sharc_shm_peer_t *p)
{
    return p->sendq.head || p->wait_fin.head || p->streaming.head || p->posted.head ||
           p->frag_recv.head;
}

/* Fail the requests of local peers that no longer exist (a crash leaves no other trace). */
static void shm_check_liveness(sharc_tp_comm_t *tp)
{
    double now = sharc_time_now();

    if (!tp->same_pidns || now < tp->next_liveness) {
        return;
    }
    tp->next_liveness = now + SHARC_SHM_LIVENESS_PERIOD;
    for (int i = 0; i < tp->nlocal; i++) {
        sharc_shm_peer_t *p = &tp->peers[i];

        if (p->failed || !shm_busy(p) || kill(p->pid, 0) == 0 || errno != ESRCH) {
            continue;
        }
        sharc_error("shm: rank %d's peer rank %d (pid %d, this node) has exited: its operations "
                    "fail",
                    tp->rank, p->rank, (int)p->pid);
        p->failed = 1;
        sharc_boot_report(tp->boot, p->rank); /* every rank of the communicator hears of it */
        shm_fail_queue(&p->sendq);
        shm_fail_queue(&p->wait_fin);
        shm_fail_queue(&p->streaming);
        shm_fail_queue(&p->posted);
        shm_fail_queue(&p->frag_recv);
    }
}

void sharc_tp_shm_peer_cleanup(sharc_shm_peer_t *p)
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
    shm_map_drop_all(p);
    free(p->map);
    p->map = NULL;
    p->map_alloc = 0;
}

/* ---- the ops ------------------------------------------------------------------------- */

/* The peer's state, or NULL with *status_p set: a bad rank or tag, or a peer that exited. */
static sharc_shm_peer_t *shm_peer(sharc_tp_comm_t *tp, int peer, uint64_t tag, const char *what,
                                  sharc_status_t *status_p)
{
    sharc_shm_peer_t *p;

    *status_p = SHARC_ERR_INVALID;
    if (peer < 0 || peer >= tp->size || tp->local_of[peer] < 0 || tag > SHARC_TP_TAG_MAX) {
        sharc_error("shm: rank %d cannot %s rank %d with tag %#llx: %s", tp->rank, what, peer,
                    (unsigned long long)tag,
                    (peer < 0 || peer >= tp->size) ? "no such rank"
                    : tag > SHARC_TP_TAG_MAX       ? "tags are below 2^40"
                                                   : "it is on another node");
        return NULL;
    }
    p = &tp->peers[tp->local_of[peer]];
    if (p->failed) {
        sharc_error("shm: rank %d cannot %s rank %d: it exited earlier", tp->rank, what, peer);
        *status_p = SHARC_ERR_REMOTE;
        return NULL;
    }
    return p;
}

/* What a send and a receive share: the peer, and the request's state before the post. */
static sharc_shm_peer_t *shm_prepare(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                     size_t bytes, sharc_tp_req_t *req, const char *what,
                                     sharc_status_t *status_p)
{
    sharc_shm_peer_t *p = shm_peer(tp, peer, tag, what, status_p);

    if (p != NULL) {
        req->status = SHARC_INPROGRESS;
        req->bytes = 0;
        req->next = NULL;
        SHM_BUF(req) = (void *)buf;
        SHM_BYTES(req) = bytes;
        SHM_TAG(req) = tag;
        SHM_COOKIE(req) = 0;
    }
    return p;
}

static sharc_status_t shm_posted(const sharc_tp_req_t *req)
{
    return sharc_tp_req_status(req) == SHARC_INPROGRESS ? SHARC_INPROGRESS : SHARC_OK;
}

sharc_status_t sharc_tp_shm_send(sharc_tp_comm_t *tp, int peer, uint64_t tag, const void *buf,
                                 size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    sharc_shm_peer_t *p;
    sharc_status_t status;

    (void)mem;
    pthread_mutex_lock(&tp->lock);
    p = shm_prepare(tp, peer, tag, buf, bytes, req, "send to", &status);
    if (p != NULL) {
        if (p->sendq.head != NULL || !shm_send_start(tp, p, req)) {
            shm_push(&p->sendq, req); /* after the sends before it */
        }
        status = shm_posted(req);
    }
    pthread_mutex_unlock(&tp->lock);
    return status;
}

/* A receive (plain, or recv_reduce with req->red_* set) matched or queued. */
static sharc_status_t shm_recv_post(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                    size_t bytes, sharc_tp_req_t *req)
{
    sharc_shm_peer_t *p;
    sharc_status_t status;

    pthread_mutex_lock(&tp->lock);
    p = shm_prepare(tp, peer, tag, buf, bytes, req, "receive from", &status);
    if (p != NULL) {
        sharc_shm_unexp_t **u = &p->unexp_head, *prev = NULL;

        while (*u != NULL && (*u)->hdr.tag != tag) {
            prev = *u;
            u = &(*u)->next;
        }
        if (*u == NULL) {
            shm_push(&p->posted, req);
        } else {
            sharc_shm_unexp_t *m = *u;

            *u = m->next;
            if (p->unexp_tail == m) {
                p->unexp_tail = prev;
            }
            if (m->hdr.type == SHARC_SHM_EAGER_MSG) {
                shm_recv_eager(tp, p, req, &m->hdr, m->payload);
            } else {
                shm_recv_rndv(tp, p, req, &m->hdr);
            }
            free(m);
        }
        status = shm_posted(req);
    }
    pthread_mutex_unlock(&tp->lock);
    return status;
}

sharc_status_t sharc_tp_shm_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                 size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req)
{
    (void)mem;
    req->red_src = NULL;
    return shm_recv_post(tp, peer, tag, buf, bytes, req);
}

sharc_status_t sharc_tp_shm_recv_reduce(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *dst,
                                        const void *src, size_t count, sharc_dtype_t dtype,
                                        sharc_op_t op, sharc_tp_req_t *req)
{
    if (src == NULL || sharc_dtype_size(dtype) == 0 || !sharc_kern_op_valid(dtype, op)) {
        sharc_error("shm: recv_reduce without an operand, or with an invalid dtype or op");
        return SHARC_ERR_INVALID;
    }
    req->red_src = src;
    req->red_dtype = dtype;
    req->red_op = op;
    return shm_recv_post(tp, peer, tag, dst, count * sharc_dtype_size(dtype), req);
}

int sharc_tp_shm_progress(sharc_tp_comm_t *tp)
{
    int n = 0;

    pthread_mutex_lock(&tp->lock);
    for (int i = 0; i < tp->nlocal; i++) {
        if (!tp->peers[i].failed) {
            n += shm_drain(tp, &tp->peers[i]);
            n += shm_flush(tp, &tp->peers[i]);
        }
    }
    shm_check_liveness(tp);
    pthread_mutex_unlock(&tp->lock);
    return n > 0;
}
