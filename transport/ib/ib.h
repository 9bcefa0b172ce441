/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib.h: the raw-verbs transport (SHARC_TRANSPORT=ib): sharc's algorithms on InfiniBand or
 * RoCE without UCX. One reliable-connected QP per peer, brought up through the bootstrap.
 *
 * Data moves by RDMA write with immediate into a ring of slots the receiver registered for
 * that peer: each slot holds a header (tag, message size, offset) and a chunk of the
 * message; the immediate names the slot. A sender uses a slot only while it holds a credit
 * for it: the receiver writes the count of slots it has consumed into the sender's credit
 * word (an RDMA write, no completion on the sender), so a sender never overruns the posted
 * buffers. Large messages go as a pipeline of chunks, up to a ring's worth in flight.
 * Chunks are staged through registered bounce slots on the sender and copied out of the
 * ring on the receiver, so user buffers need no registration. Such a send completes when
 * its last chunk is copied and posted (eager), never on the peer's acknowledgement: soft-RoCE
 * acknowledges after the receiver's completion, and a receiver that then destroys its side
 * at once would leave the sender waiting forever. Destroying a communicator first waits (a
 * bounded time) for this rank's posted chunks and finish words to be acknowledged.
 *
 * Zero-copy: a message of at least SHARC_IB_ZCOPY_MIN bytes whose send buffer is registered
 * (sharc_mem_alloc memory, through the registration cache; or a handle from mem_reg) goes as
 * a request to send (RTS) in a slot, carrying the buffer's address, rkey and a sequence
 * number. The receiver, once the message matches a receive, reads it with RDMA reads
 * straight into the receive buffer (registered from the cache, by the receive's handle, or
 * for this transfer), up to a few reads in flight, then writes the sequence number into the
 * sender's finish word for that number (an RDMA write, no completion on the sender), which
 * the sender's progress sees and completes the send. At most SHARC_IB_ZC of them are in
 * flight per direction; their sequence numbers index the finish words.
 *
 * Matching: per peer, messages arrive in order (one QP, in-order delivery); the first chunk
 * of a message is matched against the receives posted for that peer and those posted for
 * any peer (the communicator's queue), the oldest first (receives are stamped when posted),
 * by exact tag; a message with no receive yet is kept in an unexpected queue (its chunks
 * copied out, its slots returned, stamped as it arrives) until one is posted. A receive from
 * any peer takes the kept message with its tag that arrived first, whichever peer sent it.
 *
 * Errors: a completion with an error status (retry exceeded when a peer died, a QP in the
 * error state, a remote access error) fails that peer: every request on it completes with
 * SHARC_ERR_REMOTE and the log names the peer and the verbs status. A peer this rank waits
 * for (a receive posted, or a send out of credits) that has shown no sign of life for a
 * second gets a probe, its credit word written again: if its side of the connection is gone
 * the probe fails with "retry exceeded" within the QP's timeout, and so does the wait.
 */
#ifndef SHARC_TP_IB_H
#define SHARC_TP_IB_H

#include <infiniband/verbs.h>
#include <pthread.h>

#include "../backend.h"
#include "ib_cfg.h"

#define SHARC_IB_SLOTS      32         /* slots in a ring: chunks in flight per peer */
#define SHARC_IB_SLOT_BYTES (64 << 10) /* header + chunk */

/* RC: 7 retries of SHARC_IB_TIMEOUT each (4.096 us * 2^timeout) */
#define SHARC_IB_RETRY     7
#define SHARC_IB_RNR_RETRY 7

/* At the start of every slot. */
typedef struct {
    uint64_t tag;
    uint64_t total;  /* bytes of the whole message */
    uint64_t offset; /* of this chunk in the message */
    uint32_t len;    /* bytes of this chunk, after the header */
    uint32_t flags;  /* SHARC_IB_F_* */
} sharc_ib_hdr_t;

#define SHARC_IB_F_RTS 1u /* no data: a sharc_ib_rts_t after the header */

/* A zero-copy message's request to send. */
typedef struct {
    uint64_t addr; /* the sender's buffer */
    uint32_t rkey;
    uint32_t seq;
} sharc_ib_rts_t;

#define SHARC_IB_ZC         16        /* zero-copy messages in flight per direction */
#define SHARC_IB_READS      8         /* RDMA reads in flight per peer, at most */
#define SHARC_IB_READ_CHUNK (1 << 20) /* bytes per read */
#define SHARC_IB_FIN_ERR    (1ull << 63)

/* work requests on a send queue at most: data and credit writes, finish writes, reads, a probe */
#define SHARC_IB_SEND_WR (2 * SHARC_IB_SLOTS + 2 * SHARC_IB_ZC + SHARC_IB_READS + 8)
#define SHARC_IB_RECV_WR (SHARC_IB_SLOTS + 4)

/* wr_id: what completed (kind), for which peer, which slot (zero-copy: which message) */
enum {
    SHARC_IB_WR_PROBE = 0,
    SHARC_IB_WR_DATA = 1,
    SHARC_IB_WR_CREDIT = 2,
    SHARC_IB_WR_RECV = 3,
    SHARC_IB_WR_READ = 4,
    SHARC_IB_WR_FIN = 5,
};

#define SHARC_IB_WR(_kind, _peer, _slot)                                                           \
    (((uint64_t)(_kind) << 61) | (((uint64_t)(uint32_t)(_peer)&0x1fffffff) << 32) |                \
     (uint32_t)(_slot))
#define SHARC_IB_WR_KIND(_id) ((int)((_id) >> 61))
#define SHARC_IB_WR_PEER(_id) ((int)(((_id) >> 32) & 0x1fffffff))
#define SHARC_IB_WR_SLOT(_id) ((uint32_t)(_id))

/* A registration (ib_mem.c): of a sharc_mem buffer, cached; or of its own. */
typedef struct sharc_ib_reg {
    struct ibv_mr *mr;
    char *base;
    size_t bytes;
    uint64_t region_id; /* the sharc_mem buffer, 0: not cached */
    int refs;           /* users: handles, transfers */
    int dead;           /* its buffer was freed: released by the last user */
    struct sharc_ib_reg *prev, *next;
} sharc_ib_reg_t;

typedef struct {
    pthread_mutex_t lock; /* taken after tp->lock, never before */
    int ready;
    struct ibv_pd *pd;
    sharc_mem_table_t *mem;
    sharc_ib_reg_t *head, *tail; /* most recently used first */
    size_t bytes, limit;
    unsigned long long hits, misses, evictions;
    unsigned long long frees; /* buffers freed so far (a registration racing one is not kept) */
} sharc_ib_rcache_t;

struct sharc_tp_mem {
    sharc_memtype_t memtype;
    sharc_ib_reg_t *reg;
};

#define SHARC_IB_CHUNK (SHARC_IB_SLOT_BYTES - sizeof(sharc_ib_hdr_t))

/* A message being received: matched (into req's buffer) or unexpected (into its own). */
typedef struct sharc_ib_msg {
    uint64_t tag;
    uint64_t stamp; /* unexpected: when it arrived (tp->next_stamp) */
    size_t total, got;
    char *data;          /* unexpected: malloc'd, total bytes */
    sharc_tp_req_t *req; /* the receive it matched, or NULL */
    struct sharc_ib_msg *next;
    /* zero-copy (an RTS arrived): the sender's buffer, what is read of it, into what */
    int zc;
    sharc_ib_rts_t rts;
    size_t posted; /* bytes of reads posted */
    int reads;     /* reads in flight */
    sharc_ib_reg_t *reg;
} sharc_ib_msg_t;

/* What each side tells the other at bring-up, per peer (through the bootstrap). */
typedef struct {
    uint32_t qpn, psn;
    uint64_t ring_addr; /* my ring for you */
    uint64_t credit_addr;
    uint64_t fin_addr; /* my finish words for you */
    uint32_t ring_rkey, credit_rkey, fin_rkey;
    uint16_t lid;
    uint8_t mtu;     /* enum ibv_mtu */
    uint8_t rd_atom; /* RDMA reads I answer at once (max_dest_rd_atomic) */
    uint8_t gid[16];
} sharc_ib_addr_t;

typedef struct {
    struct ibv_qp *qp;
    int failed;
    double last_heard; /* when a completion last showed the peer alive */
    int probing;       /* a probe is in flight */
    /* receiving: my ring for this peer, and how much of it I consumed */
    char *ring;
    struct ibv_mr *ring_mr;
    uint64_t consumed, reported;
    int credit_writes;                       /* credit writes in flight */
    sharc_ib_msg_t *cur;                     /* the message whose chunks are arriving */
    sharc_ib_msg_t *unexp_head, *unexp_tail; /* unexpected, in arrival order */
    sharc_tp_queue_t posted;                 /* receives not matched yet, in order */
    /* sending: bounce slots, the peer's ring, credits */
    char *bounce;
    struct ibv_mr *bounce_mr;
    unsigned char slot_busy[SHARC_IB_SLOTS]; /* a bounce slot's write not completed yet */
    int busy;                                /* such slots */
    int fin_writes;                          /* finish writes in flight */
    uint64_t sent;                           /* slots written */
    uint64_t remote_ring, remote_credit;
    uint32_t remote_ring_rkey, remote_credit_rkey;
    sharc_tp_queue_t sendq; /* sends not fully posted, in order */
    /* zero-copy sends the peer reads (by seq % SHARC_IB_ZC) and their registrations; the
     * peer's finish words for me */
    sharc_tp_req_t *zc_send[SHARC_IB_ZC];
    sharc_ib_reg_t *zc_reg[SHARC_IB_ZC];
    uint32_t zc_seq[SHARC_IB_ZC];
    uint32_t zc_next; /* the next RTS's sequence number */
    int zc_out;       /* zero-copy sends in flight */
    uint64_t remote_fin;
    uint32_t remote_fin_rkey;
    /* zero-copy receives being read (by seq % SHARC_IB_ZC) */
    sharc_ib_msg_t *zc_recv[SHARC_IB_ZC];
    int reads, max_reads; /* RDMA reads in flight, and the most the peer answers at once */
} sharc_ib_peer_t;

struct sharc_tp_comm {
    sharc_tp_base_t base; /* lock, boot (a peer lost is reported through it), rank, size */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    uint8_t port;
    int gid_index; /* -1: InfiniBand, LID routing */
    sharc_ib_peer_t *peers;
    /* credits[p]: slots peer p has consumed of what I sent (it writes it); credit_src[p]:
     * what I consumed of p's, the source of my writes to p */
    uint64_t *credits, *credit_src;
    struct ibv_mr *credits_mr, *credit_src_mr;
    /* fin[p * SHARC_IB_ZC + i]: peer p's word for my zero-copy send i (seq + 1, with
     * SHARC_IB_FIN_ERR when it could not read it); fin_src: the source of my writes */
    uint64_t *fin, *fin_src;
    struct ibv_mr *fin_mr, *fin_src_mr;
    sharc_ib_rcache_t rcache;
    size_t zcopy_min;          /* SHARC_IB_ZCOPY_MIN, 0: never */
    int timeout;               /* SHARC_IB_TIMEOUT: ACK timeout exponent of the QPs */
    double drain_s;            /* longest wait for acknowledgements at destroy */
    int rd_atom, init_rd_atom; /* RDMA reads a QP answers / issues at once (device limits) */
    char dev_name[64];
    double now;                  /* monotonic seconds at the start of the current progress call */
    sharc_tp_queue_t any_posted; /* receives from any peer not matched yet, in posting order */
    uint64_t next_stamp;         /* orders posted receives and kept messages */
    int aborted;                 /* the communicator failed: nothing more is posted */
};

/* The ops (ib_ep.c, ib_recv.c, ib_progress.c, ib_mem.c). */
SHARC_HIDDEN sharc_tp_send_fn_t sharc_tp_ib_send;
SHARC_HIDDEN sharc_tp_recv_fn_t sharc_tp_ib_recv;
SHARC_HIDDEN sharc_tp_recv_any_fn_t sharc_tp_ib_recv_any;
SHARC_HIDDEN sharc_tp_probe_fn_t sharc_tp_ib_probe;
SHARC_HIDDEN sharc_tp_progress_fn_t sharc_tp_ib_progress;
SHARC_HIDDEN sharc_tp_mem_reg_fn_t sharc_tp_ib_mem_reg;
SHARC_HIDDEN sharc_tp_mem_dereg_fn_t sharc_tp_ib_mem_dereg;

/* What a request remembers while in flight (its backend space). */
typedef struct {
    void *buf;
    sharc_tp_mem_t *mem; /* mem_reg's handle it was posted with, or NULL */
    uint64_t tag;
    union {
        uint64_t posted; /* send: bytes of it posted */
        uint64_t stamp;  /* receive, until matched: when it was posted (tp->next_stamp) */
    };
    uint64_t capacity; /* receive: bytes its buffer holds */
} sharc_tp_ib_req_t;

SHARC_TP_REQ_PRIV_FITS(sharc_tp_ib_req_t);

static inline sharc_tp_ib_req_t *sharc_tp_ib_req(sharc_tp_req_t *req)
{
    return sharc_tp_req_priv(req);
}

/* A request on CUDA memory (a handle from mem_reg): only zero-copy reaches it. */
static inline int sharc_tp_ib_on_device(sharc_tp_req_t *req)
{
    const sharc_tp_mem_t *mem = sharc_tp_ib_req(req)->mem;

    return mem != NULL && mem->memtype != SHARC_MEMTYPE_HOST;
}

/* Complete @p req unless it has completed already. */
static inline void sharc_tp_ib_complete(sharc_tp_req_t *req, sharc_status_t status)
{
    if (sharc_tp_req_status(req) == SHARC_INPROGRESS) {
        sharc_tp_req_complete(req, status);
    }
}

/* A receive posted for @p tag (sharc_tp_queue_take on a peer's posted receives)? */
static inline int sharc_tp_ib_has_tag(sharc_tp_req_t *req, uint64_t tag)
{
    return sharc_tp_ib_req(req)->tag == tag;
}

/* Between the files of this backend; tp->base.lock held unless said otherwise. */

/* ib_dev.c: which active port a rank takes when SHARC_IB_HCA names none: among @p n
 * candidates, the nearest (smallest @p key: the PCI distance to the rank's GPU, else 0 for
 * its NUMA node and 1 for the others) spread by local rank: the (local_rank % count)-th of
 * those with the smallest key, so that the ranks of a node spread over its NICs (rails). */
SHARC_HIDDEN int sharc_tp_ib_choose_nearest(const int *key, int n, int local_rank);
/* ib_dev.c: the device and port, its protection domain, completion queue, the registered
 * credit and finish words (allocated already), the registration cache and the port's GID.
 * Not locked (the transport is being created). */
SHARC_HIDDEN sharc_status_t sharc_tp_ib_device_setup(sharc_tp_comm_t *tp,
                                                     const sharc_tp_comm_params_t *params,
                                                     struct ibv_port_attr *pa, union ibv_gid *gid);

/* ib_mem.c: @p bytes zeroed, page-aligned (for registration); NULL when out of memory. */
SHARC_HIDDEN void *sharc_tp_ib_alloc(size_t bytes);

/*
 * ib_conn.c: a QP, ring and bounce slots per peer, their addresses exchanged through the
 * bootstrap and every QP brought up; collective, so every rank calls it even after a failed
 * step (@p status not SHARC_OK: it then sends an all-zero address and the failure is agreed
 * on). Not locked (the transport is being created).
 */
SHARC_HIDDEN sharc_status_t sharc_tp_ib_connect(sharc_tp_comm_t *tp,
                                                const sharc_tp_comm_params_t *params,
                                                sharc_status_t status,
                                                const struct ibv_port_attr *pa,
                                                const union ibv_gid *gid);
/* ib_conn.c: post the receive work requests that RDMA writes with immediate consume. */
SHARC_HIDDEN int sharc_tp_ib_post_recvs(sharc_tp_comm_t *tp, int peer, int n);

/* One signaled RDMA operation on a peer's QP (sharc_tp_ib_post_rdma). */
typedef struct {
    uint64_t wr_id;            /* SHARC_IB_WR(kind, peer, slot) */
    enum ibv_wr_opcode opcode; /* IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ */
    const void *local;         /* the registered local side: @p bytes in @p lkey */
    uint32_t bytes, lkey;
    uint64_t remote; /* the peer's side, in @p rkey */
    uint32_t rkey;
    uint32_t imm; /* with immediate: its value, in network order */
} sharc_ib_rdma_t;

/* ib_peer.c: post @p op on @p peer's QP: 0, or -1 when verbs refused it (logged with @p what,
 * and the peer failed). */
SHARC_HIDDEN int sharc_tp_ib_post_rdma(sharc_tp_comm_t *tp, int peer, const sharc_ib_rdma_t *op,
                                       const char *what);
/* ib_peer.c: fail every request on @p peer with SHARC_ERR_REMOTE. */
SHARC_HIDDEN void sharc_tp_ib_fail_peer(sharc_tp_comm_t *tp, int peer);
/* ib_peer.c: a verbs call on @p peer's QP failed (@p err): logged once, and the peer fails. */
SHARC_HIDDEN void sharc_tp_ib_verbs_error(sharc_tp_comm_t *tp, int peer, const char *what, int err);
/* ib_peer.c: what a send and a receive do first: check the peer and the tag (@p state's), then
 * (with tp->base.lock taken, and kept on success) that the connection to the peer has not
 * failed; then @p req is in progress, with @p state (and 0 bytes). */
SHARC_HIDDEN sharc_status_t sharc_tp_ib_begin(sharc_tp_comm_t *tp, int peer, const char *what,
                                              sharc_tp_req_t *req, const sharc_tp_ib_req_t *state);
/* ib_ep.c: post the chunks of queued sends to @p peer while slots and credits last. */
SHARC_HIDDEN void sharc_tp_ib_push(sharc_tp_comm_t *tp, int peer);

/* ib_recv.c: one chunk of a message from @p peer (from its ring slot, or a whole message to
 * self); -1 when it breaks the protocol or memory ran out (the caller fails the peer). */
SHARC_HIDDEN int sharc_tp_ib_deliver(sharc_tp_comm_t *tp, int peer, const sharc_ib_hdr_t *h,
                                     const void *data);
/* ib_peer.c: the receive's buffer is too short for the message: it fails, and says so. */
SHARC_HIDDEN void sharc_tp_ib_truncated(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req,
                                        size_t total);

/* ib_zcopy.c: a zero-copy message matched its receive: read it (or fail the receive). */
SHARC_HIDDEN void sharc_tp_ib_zc_start(sharc_tp_comm_t *tp, int peer, sharc_ib_msg_t *m);
/* ib_zcopy.c: should @p req go zero-copy? 1: it took a zero-copy slot and *rts is filled;
 * 0: it goes by copy; -1: it waits (device memory, no slot free). */
SHARC_HIDDEN int sharc_tp_ib_zc_claim(sharc_tp_comm_t *tp, int peer, sharc_tp_req_t *req,
                                      sharc_ib_rts_t *rts);
/* ib_zcopy.c: post RDMA reads of the messages being read from @p peer, as many as it answers. */
SHARC_HIDDEN void sharc_tp_ib_reads(sharc_tp_comm_t *tp, int peer);
/* ib_zcopy.c: read @p i of @p peer completed: its message, once all read, too. */
SHARC_HIDDEN void sharc_tp_ib_read_done(sharc_tp_comm_t *tp, int peer, uint32_t i);
/* ib_zcopy.c: the zero-copy sends to @p peer whose finish word it wrote complete. */
SHARC_HIDDEN void sharc_tp_ib_fins(sharc_tp_comm_t *tp, int peer);

/* ib_mem.c: the registration cache over @p mem (the context's sharc_mem buffers, whose frees
 * it watches), keeping up to @p limit bytes registered. */
SHARC_HIDDEN sharc_status_t sharc_ib_rcache_init(sharc_ib_rcache_t *rc, struct ibv_pd *pd,
                                                 sharc_mem_table_t *mem, size_t limit);
SHARC_HIDDEN void sharc_ib_rcache_fini(sharc_ib_rcache_t *rc);
/* A registration covering [addr, addr + bytes), taken (release it with sharc_ib_reg_put):
 * from the cache for sharc_mem memory; else, with @p temp_ok, one of its own; else NULL.
 * NULL also when registering failed (logged). */
SHARC_HIDDEN sharc_ib_reg_t *sharc_ib_reg_get(sharc_ib_rcache_t *rc, void *addr, size_t bytes,
                                              int temp_ok);
SHARC_HIDDEN void sharc_ib_reg_put(sharc_ib_rcache_t *rc, sharc_ib_reg_t *reg);
SHARC_HIDDEN void sharc_ib_reg_ref(sharc_ib_rcache_t *rc, sharc_ib_reg_t *reg);
/* Does @p reg (NULL: no) cover [addr, addr + bytes)? */
SHARC_HIDDEN int sharc_ib_reg_covers(const sharc_ib_reg_t *reg, const void *addr, size_t bytes);
/* As sharc_ib_reg_get, but @p mem's registration when it covers the range. */
SHARC_HIDDEN sharc_ib_reg_t *sharc_ib_reg_for(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem, void *addr,
                                              size_t bytes, int temp_ok);

#endif
