/*
 * coll.h: the collective layer's internals. A collective is a task: its arguments, the
 * algorithm chosen for it, and the algorithm's state. Algorithms are init + progress (+ an
 * optional finalize): the progress function keeps its place in the task, never blocks, and
 * returns SHARC_INPROGRESS until it is done (UCC's model). Tasks run over the communicator's
 * point-to-point transport; all messages of one task share one tag (the task's sequence
 * number), which the transport matches in posting order between any two ranks. The layers
 * above see api.h only.
 */
#ifndef SHARC_COLL_INT_H
#define SHARC_COLL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sharc/coll.h>

#include "../kernels/kernels.h"
#include "api.h"

/*
 * How a vector of @count elements splits into @n blocks, one per rank: the first (count % n)
 * blocks hold one element more. Uniform when count is a multiple of n.
 */
typedef struct {
    size_t base, extra;
} sharc_coll_blocks_t;

static inline size_t sharc_coll_block_off(const sharc_coll_blocks_t *b, int i)
{
    return (size_t)i * b->base + SHARC_MIN((size_t)i, b->extra);
}

static inline size_t sharc_coll_block_len(const sharc_coll_blocks_t *b, int i)
{
    return b->base + ((size_t)i < b->extra);
}

/*
 * The ring engine shared by the ring algorithms (allgather_ring.c, reduce_scatter_ring.c,
 * and allreduce_ring.c, which runs one after the other). Blocks are cut into chunks of
 * SHARC_COLL_CHUNK bytes and the units of work are taken chunk by chunk, all ring steps of
 * a chunk before the next chunk (as NCCL does), so a chunk moves on as soon as it arrives
 * and scratch stays at a few chunks. Unit u is chunk u / (n-1), step u % (n-1).
 */
typedef struct {
    /* set by the caller */
    char *vec;       /* the whole vector: recvbuf (allgather), or the reduction input */
    char *out;       /* reduce-scatter: where this rank's block result goes */
    const char *own; /* allgather: this rank's block while it is not yet in vec, or NULL */
    int own_copied;  /* allgather: own has been copied into vec */
    int reducing;    /* a reduce-scatter: scratch slots and fused receives */
    sharc_coll_blocks_t blocks;
    double scale; /* reduce-scatter: factor for the result (AVG), or 0 */
    /* derived at init */
    size_t chunk; /* elements per chunk */
    size_t esize, nchunks, units;
    int n, rank, left, right;
    sharc_tp_req_t *sreq, *rreq; /* [units] */
    char *scratch;               /* reduce-scatter: SHARC_COLL_RS_SLOTS chunks */
    unsigned char *fused;        /* reduce-scatter [units]: the transport combined on arrival */
    size_t next_send, next_recv, next_reduce, freed;
    int started;
} sharc_coll_ring_t;

typedef struct sharc_request sharc_coll_task_t; /* a task is what the API calls a request */

typedef struct sharc_coll_algo {
    sharc_coll_algo_info_t info; /* name and constraints (sharc_coll_algo in sharc/coll.h) */
    sharc_coll_type_t type;
    /* Optional: sequence numbers (tags) it needs beyond its own, for sub-tasks; asked before
     * init, so every rank reserves the same range. */
    size_t (*tags)(const sharc_coll_task_t *task);
    sharc_status_t (*init)(sharc_coll_task_t *task);
    /* SHARC_INPROGRESS, SHARC_OK, or the error that ended it; never blocks */
    sharc_status_t (*progress)(sharc_coll_task_t *task);
    /* Optional: release the algorithm's own state (task->u), done or not (lock held). The
     * engine frees reqs and scratch itself. */
    void (*finalize)(sharc_coll_task_t *task);
} sharc_coll_algo_t;

typedef struct sharc_stage sharc_coll_stage_t; /* staged.c's state of a task */

struct sharc_request {
    /* the engine's */
    sharc_coll_comm_t *cc;
    sharc_coll_args_t args;
    const sharc_coll_algo_t *algo;
    uint64_t seq;          /* per communicator; the tag of every message of the task */
    sharc_status_t status; /* the algorithm's result once done */
    int done;              /* the algorithm finished (possibly before earlier tasks) */
    double t_start;        /* when its algorithm first ran (sharc_time_now), 0 before */
    double t_done;         /* when it finished (sharc_time_now) */
    double t_complete;     /* when it became complete, 0 before */
    int complete;          /* done, and every earlier task too: visible to the caller */
    int await_peer;        /* a peer the task waits for, for timeout messages, or -1 */
    int lane;              /* its completion lane (sharc_coll_start_lane) */
    int freed;             /* the caller freed it; the engine releases it when complete */
    void *event;           /* CUDA: fires on the device when the collective is done, or NULL */
    int stream_waited;     /* a stream waits for event: freeing it need not wait */
    struct sharc_request *next;
    /* what any algorithm may use; the engine releases them */
    sharc_tp_req_t *reqs;
    size_t nreqs;
    char *scratch;      /* from sharc_coll_scratch, or NULL; returned when the task is done */
    int scratch_cached; /* scratch is the communicator's cached buffer */
    /* the algorithm's own state: the member of its family */
    union {
        sharc_coll_ring_t ring; /* ring allgather and reduce-scatter */
        struct {
            int phase; /* 0: reduce-scatter, 1: allgather */
            sharc_coll_ring_t ring;
        } allreduce_ring;
        struct {
            int phase;   /* exchanges posted */
            size_t step; /* recursive doubling and halving, dissemination: the round */
            size_t lo;   /* recursive halving: first block of the range this rank holds */
        } rounds;
        struct {
            int phase;    /* direct algorithms, binomial and chain broadcast: what is posted */
            size_t step;  /* chain broadcast: chunks forwarded */
            size_t chunk; /* chain broadcast: bytes per chunk */
        } direct;
        struct {
            size_t step;           /* peers posted */
            size_t retired;        /* steps whose requests have all completed */
        } window;                  /* pairwise all-to-all */
        sharc_coll_stage_t *stage; /* collectives on CUDA buffers staged through host memory */
    } u;
};

/* Communicator-level state of the collective layer (the communicator owns one). */
struct sharc_coll_comm {
    int rank, size;
    const sharc_cfg_t *cfg;
    const sharc_coll_tune_t *tune;
    sharc_boot_t *boot;
    const sharc_tp_ops_t *tp_ops; /* NULL: bootstrap only */
    sharc_tp_comm_t *tp;
    const sharc_tp_ops_t *gpu_ops; /* NULL: CUDA buffers are staged (or fail: gpu_failed) */
    sharc_tp_comm_t *gpu_tp;
    sharc_status_t gpu_failed;
    const char (*hosts)[SHARC_HOST_MAX];
    pthread_mutex_t lock; /* the queue, and the algorithms' progress; recursive */
    uint64_t seq;
    sharc_coll_task_t *head, *tail;
    sharc_status_t failed; /* SHARC_OK, or why the communicator cannot run collectives */
    char why[192];         /* what failed it, for the messages of later posts */
    double next_check;     /* when progress next asks the bootstrap whether a rank is gone */
    int explained;         /* it named the rank that is gone */
    /* tasks that ended in an error: a transport may still hold their requests and buffers,
     * so they are freed only with the communicator, after its transports */
    sharc_coll_task_t *graveyard;
    /* SHARC_PROGRESS_THREAD: the thread waits on cond while the queue is empty */
    pthread_t thread;
    pthread_cond_t cond;
    int thread_running, stop;
    int waiters; /* callers waiting for the lock (atomic): the thread lets them in first */
    /* SHARC_PROGRESS_THREAD: collectives posted while a progress pass held the lock (a pass
     * may copy or reduce megabytes), newest first, for that pass to queue as it ends, so that
     * a post never waits for a pass; in_pass (atomic): a pass is running */
    sharc_coll_task_t *incoming;
    int in_pass;
    int progressing; /* a pass runs in this thread (lock held): a nested call does nothing */
    /* scratch kept between collectives (sharc_coll_scratch); under lock */
    char *scratch;
    size_t scratch_bytes;
    int scratch_busy;
    /* staging of CUDA buffers through host memory (staged.c): its stream and the page-locked
     * buffer kept between collectives; under lock, released with the communicator */
    void *stage_stream;
    char *pinned;
    size_t pinned_bytes;
    int pinned_busy;
};

/* ---- the one table of host algorithms (algos.c) */

/* The host algorithms of @p type in SHARC_<COLL>_ALGO's order ("auto" aside): the
 * @p index-th, or NULL past the last. */
SHARC_HIDDEN const sharc_coll_algo_t *sharc_coll_algo_at(sharc_coll_type_t type, int index);

/* The host algorithm of @p type that SHARC_<COLL>_ALGO calls @p name (any case), or NULL
 * ("auto" included). */
SHARC_HIDDEN const sharc_coll_algo_t *sharc_coll_algo_find(sharc_coll_type_t type,
                                                           const char *name);

/* Whether @p algo can run on @p nranks ranks (its constraints). */
SHARC_HIDDEN int sharc_coll_algo_fits(const sharc_coll_algo_t *algo, int nranks);

/* The knob naming each collective's algorithm ("SHARC_ALLGATHER_ALGO"), for messages. */
SHARC_HIDDEN const char *sharc_coll_algo_knob(sharc_coll_type_t type);

/* ---- selection (select.c) */

/*
 * The host algorithm for a collective: SHARC_<COLL>_ALGO's, else the tune file's, else the
 * built-in table's. Logs the choice and why at debug level.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_select(sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                              const sharc_coll_algo_t **algo_p);

/* nccl-tests' size of a collective: bytes of its larger side (alltoall: all blocks). */
SHARC_HIDDEN size_t sharc_coll_size(int nranks, const sharc_coll_args_t *a);

/* ---- the engine (coll.c), for post.c and the algorithms that run sub-tasks */

SHARC_HIDDEN void sharc_coll_lock(sharc_coll_comm_t *cc);      /* callers first, then the thread */
SHARC_HIDDEN int sharc_coll_progress(sharc_coll_comm_t *cc);   /* lock held; 1: anything moved */
SHARC_HIDDEN void sharc_coll_enqueue(sharc_coll_task_t *task); /* lock held; an initialized task */

/*
 * Queue a checked and routed task (lock held): the communicator's state (failed?), its
 * sequence number, its algorithm's init, the queue. An error leaves nothing queued; the
 * caller releases the task.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_queue(sharc_coll_task_t *task);

/*
 * With a progress thread whose pass holds the lock now: hand it @p task to queue when the
 * pass ends (1), instead of waiting for the lock; 0: take the lock and queue it (the lock
 * was free, and this call holds it now; or no thread). A task handed over reports its
 * errors through test and wait.
 */
SHARC_HIDDEN int sharc_coll_hand_over(sharc_coll_task_t *task);
SHARC_HIDDEN void sharc_coll_scratch_put(sharc_coll_task_t *task); /* lock held */
SHARC_HIDDEN void sharc_coll_release(sharc_coll_task_t *task);     /* free a task's state */

/*
 * The communicator cannot run collectives any more (lock held): every task in flight and
 * every later post fails with @p status; @p why is logged once and repeated by later posts.
 */
SHARC_HIDDEN void sharc_coll_fail(sharc_coll_comm_t *cc, sharc_status_t status, const char *why);

/**
 * Scratch of @p bytes for a task's algorithm (from its init or progress, lock held): the
 * communicator's kept buffer when no other task holds it, grown as needed, so that repeated
 * large collectives do not fault fresh pages in on every call; else a buffer of its own.
 * Sets and returns task->scratch (NULL: no memory). The engine takes it back when the task
 * is done.
 */
SHARC_HIDDEN char *sharc_coll_scratch(sharc_coll_task_t *task, size_t bytes);

/* Post the send / receive of a task over the communicator's transport. */
SHARC_HIDDEN sharc_status_t sharc_coll_send(sharc_coll_task_t *task, int peer, const void *buf,
                                            size_t bytes, sharc_tp_req_t *req);
SHARC_HIDDEN sharc_status_t sharc_coll_recv(sharc_coll_task_t *task, int peer, void *buf,
                                            size_t bytes, sharc_tp_req_t *req);

/*
 * A receive whose message is combined on arrival: dst = msg op src (the task's dtype and
 * op), @p count elements. SHARC_ERR_UNSUPPORTED when the transport cannot for this peer:
 * then the caller receives and reduces itself.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_recv_reduce(sharc_coll_task_t *task, int peer, void *dst,
                                                   const void *src, size_t count,
                                                   sharc_tp_req_t *req);

/* A receive from @p from and a send to @p to, posted together (the receive first). */
SHARC_HIDDEN sharc_status_t sharc_coll_sendrecv(sharc_coll_task_t *task, int to, const void *sbuf,
                                                size_t sbytes, sharc_tp_req_t *sreq, int from,
                                                void *rbuf, size_t rbytes, sharc_tp_req_t *rreq);

/* SHARC_OK when all @p n requests completed fine, SHARC_INPROGRESS, or the first error. */
SHARC_HIDDEN sharc_status_t sharc_coll_reqs_status(const sharc_tp_req_t *reqs, size_t n);

/* ---- the ring engine (ring.c): init, then progress until it returns something but
 * SHARC_INPROGRESS; cleanup in the algorithm's finalize */
SHARC_HIDDEN sharc_status_t sharc_coll_ring_init(sharc_coll_task_t *task, sharc_coll_ring_t *ring);
SHARC_HIDDEN sharc_status_t sharc_coll_ring_allgather(sharc_coll_task_t *task,
                                                      sharc_coll_ring_t *ring);
SHARC_HIDDEN sharc_status_t sharc_coll_ring_reduce_scatter(sharc_coll_task_t *task,
                                                           sharc_coll_ring_t *ring);
SHARC_HIDDEN void sharc_coll_ring_cleanup(sharc_coll_ring_t *ring);

/* ---- the algorithms, one per file */
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgather_ring;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgather_recursive_doubling;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgather_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_recursive_halving;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allreduce_recursive_doubling;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_ring;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allreduce_ring;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_broadcast_chain;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_broadcast_binomial;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_alltoall_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_alltoall_pairwise;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_barrier_dissemination;
/* Collectives on CUDA buffers: through the collective backend, or staged through host memory. */
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_backend;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_staged;

#endif
