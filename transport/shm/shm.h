/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm.h: the `shm` transport: point-to-point messages between ranks on one node, with no
 * library in between.
 *
 * Each rank owns one POSIX shared-memory segment holding an inbound FIFO per rank of its node
 * (the sender writes, the owner reads: single producer, single consumer). A FIFO has a fixed
 * number of slots; a slot is a header and up to SHARC_SHM_EAGER bytes of payload.
 *
 * Protocols, chosen by message size:
 *  - eager (<= SHARC_SHM_EAGER bytes): the payload travels in the slot; the send completes
 *    when the slot is written.
 *  - rendezvous: the sender posts RTS (size, its buffer's address, a cookie, and where the
 *    buffer came from sharc_mem_alloc, the shared file behind it). When the receive is
 *    matched, the receiver copies the data straight from the sender's memory into the receive
 *    buffer, then answers FIN, which completes the send. A sharc_mem_alloc buffer is mapped
 *    (once; the mapping is cached) and copied with memcpy at memory speed; any other buffer is
 *    copied by the kernel with process_vm_readv (cross-memory attach, CMA), about half as fast
 *    but still one copy. Where the kernel refuses CMA (ptrace restrictions, seccomp,
 *    SHARC_SHM_CMA=no) the receiver answers CTS instead and the sender streams the data as
 *    FRAG slots (two copies, pipelined through the FIFO).
 *
 * Messages between two ranks travel through one FIFO in posting order, and receives match the
 * oldest message with their tag, so equal tags match in order. Messages that arrive before
 * their receive is posted are kept: eager ones with a copy of the payload, rendezvous ones as
 * the RTS alone (no data moves until the receive exists).
 *
 * Receives from any peer wait in a queue of the communicator's beside each peer's posted
 * receives; every receive is stamped when posted and every message kept when it arrives, so
 * an arriving message goes to the older of the first receive for its tag in its peer's queue
 * and the first in the any-peer queue, and a receive from any peer takes the message for its
 * tag that arrived first, whichever peer sent it (MPI's matching order).
 */
#ifndef SHARC_TP_SHM_H
#define SHARC_TP_SHM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "../backend.h"

/* shm's knobs (SHARC_SHM_*; the table is in shm_init.c). */
typedef struct {
    int cma;               /* large messages may be copied with process_vm_readv */
    size_t cma_reduce_min; /* ... and of a reduction, those of at least this many bytes */
} sharc_tp_shm_cfg_t;

static inline const sharc_tp_shm_cfg_t *sharc_tp_shm_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_tp_shm_cfg_t *)sharc_cfg_get(cfg, &sharc_tp_shm_cfg_table);
}

#define SHARC_SHM_SLOTS      64
#define SHARC_SHM_SLOT_BYTES 8192
#define SHARC_SHM_HDR_BYTES  128
/* Peer buffers a rank keeps mapped, all peers together (each peer gets its share, at least
 * SHARC_SHM_MAPS_MIN). A step of the sharding engine reads a buffer per unit from each peer
 * (its master shard, its gradients): fewer entries than that, and an LRU cache misses on
 * every message, each miss mapping megabytes anew. Mappings of buffers the peer freed are
 * dropped (the seg header's freed ids), so a large cache holds no dead memory. */
#define SHARC_SHM_MAPS      4096
#define SHARC_SHM_MAPS_MIN  64
#define SHARC_SHM_FREED_IDS 64 /* the owner's last freed buffer ids, in its segment */
#define SHARC_SHM_EAGER     (SHARC_SHM_SLOT_BYTES - SHARC_SHM_HDR_BYTES)
#define SHARC_SHM_MAGIC     0x73686172632d6d34ull /* "sharc-m4": segment layout version */

typedef enum {
    SHARC_SHM_EAGER_MSG = 1, /* payload in the slot */
    SHARC_SHM_RTS,           /* rendezvous request: bytes, addr, scookie */
    SHARC_SHM_CTS,           /* receiver cannot read the sender: stream FRAGs to rcookie */
    SHARC_SHM_FRAG,          /* a piece of a rendezvous message: rcookie, offset, bytes */
    SHARC_SHM_FIN,           /* receiver has read the data (status): the send is complete */
} sharc_shm_type_t;

typedef struct {
    uint32_t type;    /* sharc_shm_type_t */
    int32_t status;   /* FIN: how the receive ended */
    uint64_t tag;     /* EAGER_MSG, RTS */
    uint64_t bytes;   /* EAGER_MSG, FRAG: payload bytes; RTS: message bytes */
    uint64_t addr;    /* RTS: the sender's buffer */
    uint64_t scookie; /* RTS, CTS, FIN: names the send */
    uint64_t rcookie; /* CTS, FRAG: names the receive */
    uint64_t offset;  /* FRAG: where the payload goes in the message; RTS: offset in region */
    uint64_t region;  /* RTS: sharc_mem_alloc buffer holding the data (its id), or 0 */
    uint64_t region_bytes, region_ino;
    int32_t region_fd; /* in the sender's process */
} sharc_shm_hdr_t;

_Static_assert(sizeof(sharc_shm_hdr_t) <= SHARC_SHM_HDR_BYTES, "slot header too large");

typedef struct {
    _Alignas(64) uint64_t head; /* slots written, by the sender */
    _Alignas(64) uint64_t tail; /* slots consumed, by the owner */
    /* set by the sender that found every slot taken: the owner rings the sender's doorbell
     * when it frees slots (shm_wait.c) */
    uint32_t want_room;
    _Alignas(64) unsigned char slot[SHARC_SHM_SLOTS][SHARC_SHM_SLOT_BYTES];
} sharc_shm_fifo_t;

/* The start of every segment; the FIFOs follow, one per local rank. */
typedef struct {
    _Alignas(64) uint64_t magic;
    uint64_t nfifos;
    /* the owner's sharc_mem_alloc buffers freed so far (peers drop their mappings): the k-th
     * freed buffer's id is freed_id[k % SHARC_SHM_FREED_IDS], stored before freed counts it */
    _Alignas(64) uint64_t freed;
    uint64_t freed_id[SHARC_SHM_FREED_IDS];
    /* the doorbell (shm_wait.c): sleepers counts the owner's threads blocked (or about to
     * block) on bell, a futex word that a writer bumps, and wakes, when it finds sleepers
     * after writing a slot to the owner */
    _Alignas(64) uint32_t bell;
    uint32_t sleepers;
} sharc_shm_seg_hdr_t;

/* A message that arrived before its receive was posted. */
typedef struct sharc_shm_unexp {
    sharc_shm_hdr_t hdr; /* EAGER_MSG (payload follows) or RTS */
    uint64_t stamp;      /* when it arrived (tp->next_stamp) */
    struct sharc_shm_unexp *next;
    unsigned char payload[];
} sharc_shm_unexp_t;

/* A control message (CTS, FIN) waiting for space in the peer's FIFO. */
typedef struct sharc_shm_ctrl {
    sharc_shm_hdr_t hdr;
    struct sharc_shm_ctrl *next;
} sharc_shm_ctrl_t;

/* A peer's sharc_mem_alloc buffer, mapped here. */
typedef struct {
    uint64_t id; /* the peer's buffer id (sharc_mem_region_t) */
    const unsigned char *base;
    size_t bytes;
    uint64_t last_use;
} sharc_shm_map_t;

/* Everything about one rank of this node. */
typedef struct {
    int rank;
    pid_t pid;
    int cma;              /* this rank may read the peer's memory with process_vm_readv */
    int failed;           /* the peer exited: its requests have failed */
    int no_map;           /* its buffers cannot be mapped here: do not try again */
    sharc_shm_map_t *map; /* its buffers mapped here: nmap of map_alloc entries */
    int nmap, map_alloc;
    uint64_t freed_seen;          /* its seg header's freed count when last looked at */
    sharc_shm_fifo_t *in;         /* the peer writes, this rank reads */
    sharc_shm_fifo_t *out;        /* this rank writes, the peer reads */
    sharc_shm_seg_hdr_t *out_seg; /* the peer's segment: its doorbell */
    sharc_tp_queue_t sendq;       /* sends not yet in the FIFO (it was full), in posting order */
    sharc_shm_ctrl_t *ctrl_head, *ctrl_tail;
    sharc_tp_queue_t wait_fin;  /* rendezvous sends waiting for FIN or CTS */
    sharc_tp_queue_t streaming; /* rendezvous sends writing FRAGs */
    sharc_tp_queue_t posted;    /* unmatched receives, in posting order */
    sharc_tp_queue_t frag_recv; /* matched receives waiting for FRAGs */
    sharc_shm_unexp_t *unexp_head, *unexp_tail;
} sharc_shm_peer_t;

struct sharc_tp_comm {
    sharc_tp_base_t base; /* lock, boot (a peer found dead is reported through it), rank, size */
    int nlocal;
    int *local_of;           /* [size]: index into peers, or -1 for ranks on other nodes */
    sharc_shm_peer_t *peers; /* [nlocal] */
    void *seg;               /* this rank's segment (inbound FIFOs) */
    size_t seg_bytes;
    void **maps;            /* [nlocal]: the peers' segments */
    int same_pidns;         /* the node's ranks share a PID namespace: pids are comparable */
    sharc_mem_table_t *mem; /* the context's sharc_mem_alloc buffers */
    uint64_t next_cookie, map_clock;
    sharc_tp_queue_t any_posted; /* receives from any peer not matched yet, in posting order */
    uint64_t next_stamp;         /* orders posted receives and kept messages (see above) */
    int aborted;                 /* everything in flight failed: the communicator failed */
    int map_cap;                 /* mappings kept per peer (SHARC_SHM_MAPS / nlocal) */
    double next_liveness;        /* time of the next check that peers with work are alive */
    volatile uint64_t probe;     /* read by the peers' CMA probe */
    char *bounce;                /* recv_reduce over CMA: the sender's data, a chunk at a time */
    size_t cma_reduce_min;       /* SHARC_SHM_CMA_REDUCE_MIN: smaller reductions stream */
    int lost_wake;               /* a block found a lost wake-up (shm_wait.c; said once) */
};

/* The ops (shm_ep.c, shm_recv.c, shm_progress.c). */
SHARC_HIDDEN sharc_tp_send_fn_t sharc_tp_shm_send;
SHARC_HIDDEN sharc_tp_recv_fn_t sharc_tp_shm_recv;
SHARC_HIDDEN sharc_tp_recv_any_fn_t sharc_tp_shm_recv_any;
SHARC_HIDDEN sharc_tp_probe_fn_t sharc_tp_shm_probe;
SHARC_HIDDEN sharc_tp_abort_fn_t sharc_tp_shm_abort;
SHARC_HIDDEN sharc_tp_recv_reduce_fn_t sharc_tp_shm_recv_reduce;
SHARC_HIDDEN sharc_tp_progress_fn_t sharc_tp_shm_progress;
SHARC_HIDDEN sharc_tp_block_fn_t sharc_tp_shm_block;
SHARC_HIDDEN sharc_tp_wake_fn_t sharc_tp_shm_wake;

/* What a request remembers while in flight (its backend space). */
typedef struct {
    void *buf;
    uint64_t bytes; /* send: size; receive: capacity, then the size of a streamed message */
    uint64_t tag;   /* until matched */
    union {
        uint64_t sent;  /* streaming send: bytes written as FRAGs */
        uint64_t stamp; /* receive, until matched: when it was posted (tp->next_stamp) */
    };
    uint64_t cookie; /* rendezvous: its cookie; streaming send: the receive's */
} sharc_tp_shm_req_t;

SHARC_TP_REQ_PRIV_FITS(sharc_tp_shm_req_t);

static inline sharc_tp_shm_req_t *sharc_tp_shm_req(sharc_tp_req_t *req)
{
    return sharc_tp_req_priv(req);
}

/* Matching a queued request (sharc_tp_queue_take): a receive by tag, a rendezvous by cookie. */
static inline int sharc_tp_shm_has_tag(sharc_tp_req_t *req, uint64_t tag)
{
    return sharc_tp_shm_req(req)->tag == tag;
}

static inline int sharc_tp_shm_has_cookie(sharc_tp_req_t *req, uint64_t cookie)
{
    return sharc_tp_shm_req(req)->cookie == cookie;
}

/*
 * Between the files of this backend. Everything runs under tp->base.lock; a request is
 * always unlinked from its queue before it completes, because its callback may post again.
 */

/* shm_ep.c: the peer a post names, or NULL with *status_p set (a bad rank or tag, a peer that
 * exited, a transport aborted); else @p req is made ready to post (buf, bytes, tag; in
 * progress). */
SHARC_HIDDEN sharc_shm_peer_t *sharc_tp_shm_prepare(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                                    const void *buf, size_t bytes,
                                                    sharc_tp_req_t *req, const char *what,
                                                    sharc_status_t *status_p);

/* What a post returns: SHARC_INPROGRESS, or SHARC_OK when the request completed inside it. */
static inline sharc_status_t sharc_tp_shm_posted(const sharc_tp_req_t *req)
{
    return sharc_tp_req_status(req) == SHARC_INPROGRESS ? SHARC_INPROGRESS : SHARC_OK;
}

/* shm_ep.c: a control message (CTS, FIN) into the peer's FIFO, or queued until it has room. */
SHARC_HIDDEN void sharc_tp_shm_ctrl(sharc_tp_comm_t *tp, sharc_shm_peer_t *p,
                                    const sharc_shm_hdr_t *hdr);
/* shm_ep.c: move what waits for room in the peer's FIFO into it; how many slots it wrote. */
SHARC_HIDDEN int sharc_tp_shm_flush(sharc_tp_comm_t *tp, sharc_shm_peer_t *p);

/* shm_recv.c: an EAGER_MSG or RTS from @p p: into the oldest receive posted for its tag (for
 * @p p or any peer), or kept until one is posted. */
SHARC_HIDDEN void sharc_tp_shm_arrived(sharc_tp_comm_t *tp, sharc_shm_peer_t *p,
                                       const sharc_shm_hdr_t *hdr, const void *payload);
/* shm_recv.c: a FRAG of a streamed message, into its receive. */
SHARC_HIDDEN void sharc_tp_shm_frag(sharc_tp_comm_t *tp, sharc_shm_peer_t *p,
                                    const sharc_shm_hdr_t *hdr, const void *payload);

/* shm_mem.c: the peer's sharc_mem_alloc buffer an RTS names, mapped here (cached), or NULL:
 * copy with CMA. */
SHARC_HIDDEN const unsigned char *sharc_tp_shm_region(sharc_tp_comm_t *tp, sharc_shm_peer_t *p,
                                                      const sharc_shm_hdr_t *rts);
/* shm_mem.c: copy @p bytes at the peer's @p addr into @p dst with process_vm_readv;
 * SHARC_ERR_UNSUPPORTED when the kernel refuses before anything was read. */
SHARC_HIDDEN sharc_status_t sharc_tp_shm_cma_read(sharc_tp_comm_t *tp, sharc_shm_peer_t *p,
                                                  void *dst, uint64_t addr, size_t bytes);
/* shm_progress.c: fail every request queued for @p p with @p status. */
SHARC_HIDDEN void sharc_tp_shm_fail_peer(sharc_shm_peer_t *p, sharc_status_t status);
/* shm_progress.c: fail every request of @p q with @p status. */
SHARC_HIDDEN void sharc_tp_shm_fail_queue(sharc_tp_queue_t *q, sharc_status_t status);

/* shm_wait.c: after slots were written to the owner of @p seg (their head published), wake
 * its threads blocked on its doorbell, if any. */
SHARC_HIDDEN void sharc_tp_shm_ring(sharc_shm_seg_hdr_t *seg);

/* shm_mem.c: unmap every buffer of the peer mapped here. */
SHARC_HIDDEN void sharc_tp_shm_unmap_all(sharc_shm_peer_t *p);

#endif
