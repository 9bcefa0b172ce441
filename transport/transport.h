/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.h: the backend interface. One versioned ops table (sharc_tp_ops_t) holds what
 * every backend does (its communicators, memory, progress), and points to what its kind moves:
 *  - a point-to-point transport (self, ucx, ib, shm, and the hybrid of two) sets p2p
 *    (sharc_tp_p2p_ops_t: send, receive, ...), and coll/ runs its algorithms on it;
 *  - a CUDA backend (nccl) sets coll (sharc_tp_coll_ops_t), and runs whole collectives
 *    and grouped sends and receives on CUDA buffers itself: a communicator's CUDA backend.
 * A caller knows the kind from where it holds the table, so it never asks whether a member of
 * its kind is there; members marked optional may be NULL, and callers test those. A backend never
 * includes another backend's headers; the registry (registry.c) is the only place that knows them
 * all.
 */
#ifndef SHARC_TRANSPORT_H
#define SHARC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/coll.h>
#include <sharc/types.h>

#include "../boot/boot.h"
#include "../base/config_int.h"
#include "../base/def_int.h"
#include "../base/mem.h"

/* Bump when a member is added, removed or changes meaning. */
#define SHARC_TP_OPS_VERSION 7

typedef struct sharc_tp_comm sharc_tp_comm_t; /* a backend's state for one communicator */
typedef struct sharc_tp_mem sharc_tp_mem_t;   /* a backend's registration of one buffer */

/* Point-to-point tags are below 2^SHARC_TP_TAG_BITS on every transport. The collective layer
 * splits this space between collectives and the public point-to-point calls (coll/coll.h). */
#define SHARC_TP_TAG_BITS 40
#define SHARC_TP_TAG_MAX  ((1ull << SHARC_TP_TAG_BITS) - 1)

/* What a backend can do (sharc_tp_ops_t.caps). */
enum {
    SHARC_TP_CAP_HOST_MEM = 1u << 2, /* reads and writes host buffers */
    SHARC_TP_CAP_CUDA_MEM = 1u << 3, /* reads and writes CUDA buffers directly */
    SHARC_TP_CAP_REMOTE = 1u << 4,   /* reaches ranks on other hosts */
};

/*
 * A request's space for its backend while it is in flight: five words, aligned for the
 * pointers, 64-bit integers and doubles a backend keeps there. Each backend views it as a
 * struct of its own (backend.h: SHARC_TP_REQ_PRIV_FITS, sharc_tp_req_priv); nothing else
 * reads it.
 */
typedef union {
    unsigned char bytes[5 * sizeof(uint64_t)];
    uint64_t align_u64; /* (the members below only align it) */
    void *align_ptr;
    double align_dbl;
} sharc_tp_req_priv_t;

/*
 * A request: embedded in the caller's task, never allocated by the backend. The backend sets
 * status to SHARC_INPROGRESS when it accepts the operation and to the final status when it
 * completes (from inside a post, a progress call, or the backend's own thread: read it with
 * sharc_tp_req_status, which has acquire ordering). Then, if cb is set, it calls cb once.
 */
typedef struct sharc_tp_req {
    sharc_status_t status;
    size_t bytes; /* recv: bytes received */
    /* the peer: set by the caller to the one it names (the flight recorder reads it); for
     * recv_any, set by the backend to the sender when it completes fine */
    int peer;
    void (*cb)(struct sharc_tp_req *req);
    void *user;  /* for the caller */
    int is_recv; /* for the caller: a receive (the flight recorder reads it) */
    /* recv_reduce: the local operand and the reduction (the receive buffer is dst) */
    const void *red_src;
    sharc_dtype_t red_dtype;
    sharc_op_t red_op;
    /* a CUDA backend on CUDA streams: an event recorded after the operation on the
     * device, set when it is posted (a stream may wait for it before it completes) */
    void *event;
    sharc_tp_req_priv_t tp_priv; /* for the backend while the request is in flight */
    struct sharc_tp_req *next;   /* for the backend's queues */
} sharc_tp_req_t;

static inline sharc_status_t sharc_tp_req_status(const sharc_tp_req_t *req)
{
    return __atomic_load_n(&req->status, __ATOMIC_ACQUIRE);
}

/* For backends: finish a request. */
static inline void sharc_tp_req_complete(sharc_tp_req_t *req, sharc_status_t status)
{
    __atomic_store_n(&req->status, status, __ATOMIC_RELEASE);
    if (req->cb != NULL) {
        req->cb(req);
    }
}

typedef struct {
    /* for address exchange (collective over it); it outlives the transport, which may also
     * report a peer it lost through it (sharc_boot_report) so that every rank learns it */
    sharc_boot_t *boot;
    const sharc_cfg_t *cfg; /* outlives the transport communicator */
    double timeout;         /* SHARC_TIMEOUT (coll's): the longest an operation may take */
    int rank, size;
    const int *node_of;     /* [size]: node of every rank (valid during comm_create) */
    sharc_mem_table_t *mem; /* the context's shareable buffers (outlives the transport) */
} sharc_tp_comm_params_t;

/* One send or receive of a CUDA backend (p2p); counts and dtypes as in sharc's API. */
typedef struct {
    int is_send;
    void *buf; /* a send's is only read */
    size_t count;
    sharc_dtype_t dtype;
    int peer;
    void *stream; /* CUDA stream of the caller, or NULL */
} sharc_tp_p2p_args_t;

/* One whole collective for a CUDA backend; buffer contracts as in sharc's API. */
typedef struct {
    sharc_coll_type_t type; /* any but the barrier */
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* elements per rank (allgather, gather, scatter: each rank's block;
                   * reduce_scatter: received; alltoall: per peer), else in all */
    sharc_dtype_t dtype;
    sharc_op_t op;
    int root;
    void *stream; /* CUDA stream of the caller, or NULL */
    /* the uneven collectives: [size] counts and displacements (set) in elements, of recvbuf's
     * blocks (reduce_scatterv: sendbuf's) and alltoallv's sendbuf's */
    const size_t *counts, *displs, *scounts, *sdispls;
} sharc_tp_coll_args_t;

/*
 * The types of the members below that a backend implements in one file and lists in its
 * table in another: function types, not pointers, so that its header declares them as
 * `SHARC_HIDDEN sharc_tp_send_fn_t sharc_tp_<backend>_send;`. What each does: at its member.
 */
typedef void sharc_tp_abort_fn_t(sharc_tp_comm_t *tp);
typedef sharc_status_t sharc_tp_mem_reg_fn_t(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                             sharc_memtype_t memtype, sharc_tp_mem_t **mem_p);
typedef void sharc_tp_mem_dereg_fn_t(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem);
typedef sharc_status_t sharc_tp_mem_alloc_fn_t(sharc_tp_comm_t *tp, size_t bytes,
                                               sharc_memtype_t memtype, void **ptr_p);
typedef void sharc_tp_mem_free_fn_t(sharc_tp_comm_t *tp, void *ptr);
typedef sharc_status_t sharc_tp_send_fn_t(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                          const void *buf, size_t bytes, sharc_tp_mem_t *mem,
                                          sharc_tp_req_t *req);
typedef sharc_status_t sharc_tp_recv_fn_t(sharc_tp_comm_t *tp, int peer, uint64_t tag, void *buf,
                                          size_t bytes, sharc_tp_mem_t *mem, sharc_tp_req_t *req);
typedef sharc_status_t sharc_tp_recv_any_fn_t(sharc_tp_comm_t *tp, uint64_t tag, void *buf,
                                              size_t bytes, sharc_tp_mem_t *mem,
                                              sharc_tp_req_t *req);
typedef int sharc_tp_probe_fn_t(sharc_tp_comm_t *tp, uint64_t tag, int *peer_p);
typedef sharc_status_t sharc_tp_recv_reduce_fn_t(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                                 void *dst, const void *src, size_t count,
                                                 sharc_dtype_t dtype, sharc_op_t op,
                                                 sharc_tp_req_t *req);
typedef sharc_status_t sharc_tp_coll_fn_t(sharc_tp_comm_t *tp, const sharc_tp_coll_args_t *args,
                                          sharc_tp_req_t *req);
typedef sharc_status_t sharc_tp_p2p_fn_t(sharc_tp_comm_t *tp, const sharc_tp_p2p_args_t *args,
                                         size_t n, sharc_tp_req_t *const *reqs);
typedef int sharc_tp_progress_fn_t(sharc_tp_comm_t *tp);
typedef void sharc_tp_block_fn_t(sharc_tp_comm_t *tp, double timeout, int (*ready)(void *arg),
                                 void *arg);
typedef void sharc_tp_wake_fn_t(sharc_tp_comm_t *tp);

/* A point-to-point transport's messages: every member is set but recv_reduce. */
typedef struct sharc_tp_p2p_ops {
    /**
     * Messages between two ranks with the same tag match in posting order; tags match
     * exactly. A receive buffer shorter than the message completes the receive with
     * SHARC_ERR_INVALID (req->bytes: the message's size, or 0 where the transport cannot
     * tell), logged at debug level only: coll/ says it once, in the caller's terms; the send
     * completes fine. Nonblocking: returns SHARC_OK when req completed inside the call (its
     * outcome is in req->status), SHARC_INPROGRESS when it was queued, or an error when it
     * could not be posted (req untouched). @p mem may be NULL.
     */
    sharc_tp_send_fn_t *send;
    sharc_tp_recv_fn_t *recv;

    /**
     * A receive from whichever peer sends a message with @p tag, matched in MPI's order: a
     * message arriving from peer p goes to the oldest receive posted that accepts it, one
     * that names p or one from any peer; a receive from any peer posted when messages with
     * its tag are waiting takes the oldest of them. When it completes fine, req->peer is the
     * sender. One peer's end does not fail it (a peer that finished and left is no failure; one
     * that died fails the communicator, whose abort ends it). Nonblocking, as recv.
     */
    sharc_tp_recv_any_fn_t *recv_any;

    /**
     * Has a message with @p tag arrived that no receive has taken? 1 with *peer_p its sender (of
     * the oldest, as well as the transport knows: a receive posted now for that peer and tag takes
     * exactly that message), else 0. Never blocks, changes nothing (MPI_Iprobe).
     */
    sharc_tp_probe_fn_t *probe;

    /**
     * Optional (NULL: the caller receives into scratch and reduces). A receive that combines
     * instead of storing: for a message of exactly @p count elements of @p dtype,
     * dst[i] = msg[i] op src[i], as the reduce kernel computes it with the message first
     * (@p src may equal @p dst). A transport that sees the sender's data in place (a mapped
     * buffer, its FIFO) reduces from there and saves the copy into scratch. Nonblocking, as
     * recv; SHARC_ERR_UNSUPPORTED (req untouched) where it cannot, for this peer: the
     * caller falls back. A message of another size completes it with SHARC_ERR_INVALID (logged
     * as recv's).
     */
    sharc_tp_recv_reduce_fn_t *recv_reduce;
} sharc_tp_p2p_ops_t;

/* A CUDA backend's work on CUDA buffers (NCCL's): every member is set. */
typedef struct sharc_tp_coll_ops {
    /**
     * A whole collective: any of sharc's API but the barrier (args->type), and all-to-all
     * of bytes for the quantized reduce-scatter on CUDA buffers. Nonblocking, as send. On
     * CUDA streams: queued after the work on args->stream, and req->event set.
     */
    sharc_tp_coll_fn_t *run;

    /**
     * @p n sends and receives issued together (NCCL: one group, so that an exchange in both
     * directions cannot deadlock), each on the backend's stream after the work queued on
     * its args' stream. No tags: between two ranks sends match receives in posting order,
     * and a receive takes exactly its count. Each request completes as run's do (req->event
     * set). Nonblocking; SHARC_INPROGRESS when issued, or an error when none was.
     */
    sharc_tp_p2p_fn_t *sendrecv;
} sharc_tp_coll_ops_t;

typedef struct sharc_tp_ops {
    unsigned version; /* SHARC_TP_OPS_VERSION the backend was written against */
    const char *name; /* as in SHARC_TRANSPORT */
    unsigned caps;    /* SHARC_TP_CAP_* */

    /**
     * Optional. Can this backend run here (library loads, device present)? Local, fast,
     * no side effects. SHARC_OK or SHARC_ERR_UNSUPPORTED with the reason logged at info.
     */
    sharc_status_t (*query)(const sharc_cfg_t *cfg);

    /**
     * Set up the backend for one communicator: collective over params->boot (this is where
     * addresses are exchanged). Blocking, bounded by the bootstrap timeout.
     */
    sharc_status_t (*comm_create)(const sharc_tp_comm_params_t *params, sharc_tp_comm_t **tp_p);

    /** Release it; every request must have completed. Not collective. */
    void (*comm_destroy)(sharc_tp_comm_t *tp);

    /**
     * Optional (NULL: the child sets itself up with comm_create). The backend of a split of
     * the communicator, from this one (ncclCommSplit): collective over the parent's ranks,
     * each passing its color (SHARC_COMM_SPLIT_NOCOLOR: no child, *new_p NULL) and key.
     * @p params describe the child (for a colored rank).
     */
    sharc_status_t (*comm_split)(sharc_tp_comm_t *tp, int color, int key,
                                 const sharc_tp_comm_params_t *params, sharc_tp_comm_t **new_p);

    /**
     * Optional. Give up: fail every operation in flight at once (ncclCommAbort), after a
     * timeout or a peer's failure. Requests still complete (with an error); then destroy.
     */
    sharc_tp_abort_fn_t *abort;

    /**
     * Optional (NULL: the backend needs no registration). Register @p bytes at @p addr for
     * use in send/recv/coll; the handle stays valid until mem_dereg.
     */
    sharc_tp_mem_reg_fn_t *mem_reg;
    sharc_tp_mem_dereg_fn_t *mem_dereg;

    /**
     * Optional. Memory of @p memtype the backend moves fastest (ncclMemAlloc: registrable
     * for zero-copy collectives), and its release. SHARC_ERR_UNSUPPORTED: use another
     * allocator.
     */
    sharc_tp_mem_alloc_fn_t *mem_alloc;
    sharc_tp_mem_free_fn_t *mem_free;

    /**
     * Optional (NULL: everything completes inside the posts). Advance outstanding
     * operations without blocking: >0 if something completed, 0 if not, or a negative
     * sharc_status_t when the transport failed.
     */
    sharc_tp_progress_fn_t *progress;

    /**
     * Optional, with wake (NULL: a caller with nothing to do polls progress, sleeping between
     * passes). Block the calling thread until progress may have something to move (a peer
     * wrote to this rank, or room opened for what waits to be written), wake is called, or
     * @p timeout seconds pass. Returns at once when that is so already, or when
     * @p ready(arg) (the caller's own condition, asked once after the backend has made sure
     * that a wake from now on ends the block) is true. May return early for no reason. Not
     * called with the backend's lock held; any thread.
     */
    sharc_tp_block_fn_t *block;

    /**
     * Optional, with block. End the blocks of every thread of this rank that is blocked in
     * block on @p tp (the caller's condition may have become true). Cheap when none is:
     * called at every completion. Any thread, any lock held.
     */
    sharc_tp_wake_fn_t *wake;

    /* What the backend moves: exactly one of the two is set. A point-to-point transport's
     * messages, on which coll/ runs its algorithms (every communicator has one) ... */
    const sharc_tp_p2p_ops_t *p2p;
    /* ... or a CUDA backend's whole collectives and grouped sends and receives on
     * CUDA buffers (the CUDA backend of a communicator, when it has one). */
    const sharc_tp_coll_ops_t *coll;
} sharc_tp_ops_t;

/**
 * The CUDA backend (nccl) if one was built in and can run here (its
 * query: local, no side effects), else NULL (not logged). The communicator opens it with
 * comm_create when every rank found one, and otherwise stages CUDA buffers through host
 * memory over the point-to-point transport.
 */
SHARC_HIDDEN const sharc_tp_ops_t *sharc_tp_cuda_find(const sharc_cfg_t *cfg);

/*
 * The knob tables of the transport layer (SHARC_TRANSPORT, registry.c) and of its backends
 * (shm's in shm_init.c; ib's in ib/ib_cfg.c, built with or without verbs), for the library's
 * list of every knob. Each backend reads its own through its header.
 */
extern SHARC_HIDDEN const sharc_cfg_table_t sharc_tp_cfg_table;
extern SHARC_HIDDEN const sharc_cfg_table_t sharc_tp_shm_cfg_table;
extern SHARC_HIDDEN const sharc_cfg_table_t sharc_tp_ib_cfg_table;

/* The transport layer's own knobs. */
typedef struct {
    int transport; /* index into sharc_tp_names; 0: auto */
} sharc_tp_cfg_t;

static inline const sharc_tp_cfg_t *sharc_tp_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_tp_cfg_t *)sharc_cfg_get(cfg, &sharc_tp_cfg_table);
}

/* SHARC_TRANSPORT's values, the index sharc_cfg_t.transport holds: "auto" (0), then every
 * backend sharc knows, built into this library or not (registry.c). */
#define SHARC_TP_NAMES 6
extern SHARC_HIDDEN const char *const sharc_tp_names[SHARC_TP_NAMES];

/** Backend for a SHARC_TRANSPORT name, or NULL if it was not built in. */
SHARC_HIDDEN const sharc_tp_ops_t *sharc_tp_find(const char *name);

/**
 * Choose and set up the data transport of a communicator: collective over params->boot.
 * SHARC_TRANSPORT names one backend (an unknown or unusable one is SHARC_ERR_UNSUPPORTED,
 * logged). Auto: self for one rank; shm between the ranks of a node and the preferred remote
 * backend (ucx) between nodes, joined per peer (hybrid.h) when there are both; the remote
 * backend alone where shm cannot attach. *ops_p is NULL when no backend fits: the
 * communicator then has only its bootstrap.
 */
SHARC_HIDDEN sharc_status_t sharc_tp_open(const sharc_tp_comm_params_t *params,
                                          const sharc_tp_ops_t **ops_p, sharc_tp_comm_t **tp_p);

#endif
