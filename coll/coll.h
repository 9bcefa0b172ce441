/*
 * coll.h: the collective layer's internals. A collective is a task: its arguments, the
 * algorithm chosen for it, and the algorithm's state. Algorithms are init + progress: the
 * progress function keeps its place in the task, never blocks, and returns SHARC_INPROGRESS
 * until it is done (UCC's model). Tasks run over the communicator's point-to-point
 * transport; all messages of one task share one tag (the task's sequence number), which
 * the transport matches in posting order between any two ranks.
 */
#ifndef SHARC_COLL_INT_H
#define SHARC_COLL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sharc/coll.h>

#include "../kernels/kernels.h"
#include "../src/comm.h"

typedef enum {
    SHARC_COLL_ALLGATHER,
    SHARC_COLL_REDUCE_SCATTER,
    SHARC_COLL_ALLREDUCE,
    SHARC_COLL_BROADCAST,
    SHARC_COLL_ALLTOALL,
    SHARC_COLL_BARRIER, /* the one collective without a SHARC_<COLL>_ALGO knob */
    SHARC_COLL_LAST
} sharc_coll_type_t;

typedef struct {
    sharc_coll_type_t type;
    const void *sendbuf;
    void *recvbuf;
    /* allgather: per rank; alltoall: per block (peer); reduce_scatter: per rank (recvcount);
     * else total */
    size_t count;
    sharc_dtype_t dtype;
    sharc_op_t op;
    int root;
    void *stream; /* CUDA buffers: the stream whose queued work the collective follows */
} sharc_coll_args_t;

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
 * and allreduce_ring.c, which runs one after the other). Blocks are cut into chunks and the
 * units of work are taken chunk by chunk, all ring steps of a chunk before the next chunk
 * (as NCCL does), so a chunk moves on as soon as it arrives and scratch stays at a few
 * chunks. Unit u is chunk u / (n-1), step u % (n-1).
 */
typedef struct {
    /* set by the caller */
    char *vec;       /* the whole vector: recvbuf (allgather), or the reduction input */
    char *out;       /* reduce-scatter: where this rank's block result goes */
    const char *own; /* allgather: this rank's block while it is not yet in vec, or NULL */
    int own_copied;  /* allgather: own has been copied into vec */
    int reducing;    /* a reduce-scatter: scratch slots and fused receives */
    sharc_coll_blocks_t blocks;
    size_t chunk; /* elements per chunk */
    double scale; /* reduce-scatter: factor for the result (AVG), or 0 */
    /* derived at init */
    size_t esize, nchunks, units;
    int n, rank, left, right;
    sharc_tp_req_t *sreq, *rreq; /* [units] */
    char *scratch;               /* reduce-scatter: SHARC_COLL_RS_SLOTS chunks */
    unsigned char *fused;        /* reduce-scatter [units]: the transport combined on arrival */
    size_t next_send, next_recv, next_reduce, freed;
    int started;
} sharc_coll_ring_t;

typedef struct sharc_request sharc_coll_task_t; /* a task is what the API calls a request */

typedef struct {
    const char *name;
    /* Optional: sequence numbers (tags) it needs beyond its own, for sub-tasks; asked before
     * init, so every rank reserves the same range. */
    size_t (*tags)(const sharc_coll_task_t *task);
    sharc_status_t (*init)(sharc_coll_task_t *task);
    /* SHARC_INPROGRESS, SHARC_OK, or the error that ended it; never blocks */
    sharc_status_t (*progress)(sharc_coll_task_t *task);
    /* No cleanup member: the engine frees a task's reqs and ring arrays and scratch. */
} sharc_coll_algo_t;

struct sharc_request {
    sharc_comm_h comm;
    sharc_coll_args_t args;
    const sharc_coll_algo_t *algo;
    uint64_t seq;          /* per communicator; the tag of every message of the task */
    sharc_status_t status; /* the algorithm's result once done */
    int done;              /* the algorithm finished (possibly before earlier tasks) */
    double t_done;         /* when it finished (sharc_time_now), for the shard statistics */
    int complete;          /* done, and every earlier task too: visible to the caller */
    int await_peer;        /* a peer the task waits for, for timeout messages, or -1 */
    int freed;             /* the caller freed it; the engine releases it when complete */
    void *event;           /* CUDA: fires on the device when the collective is done, or NULL */
    int stream_waited;     /* a stream waits for event: freeing it need not wait */
    void *stage;           /* staged.c's state */
    struct sharc_request *next;
    /* algorithm state */
    int phase;
    sharc_coll_ring_t ring;
    size_t step;
    size_t retired; /* windowed algorithms: steps whose requests have all completed */
    sharc_tp_req_t *reqs;
    size_t nreqs;
    char *scratch;      /* from sharc_coll_scratch, or NULL; returned when the task is done */
    int scratch_cached; /* scratch is the communicator's cached buffer */
};

/* Communicator-level state of the collective layer (the communicator owns one). */
struct sharc_coll_comm {
    pthread_mutex_t lock; /* the queue, and the algorithms' progress; recursive */
    uint64_t seq;
    sharc_coll_task_t *head, *tail;
    sharc_status_t failed; /* SHARC_OK, or why the communicator cannot run collectives */
    /* SHARC_PROGRESS_THREAD: the thread waits on cond while the queue is empty */
    pthread_t thread;
    pthread_cond_t cond;
    int thread_running, stop;
    int waiters; /* callers waiting for the lock (atomic): the thread lets them in first */
    /* scratch kept between collectives (sharc_coll_scratch); under lock */
    char *scratch;
    size_t scratch_bytes;
    int scratch_busy;
    /* staging of CUDA buffers through host memory (staged.c): its stream and the page-locked
     * buffer kept between collectives; under lock */
    void *stage_stream;
    char *pinned;
    size_t pinned_bytes;
    int pinned_busy;
};

/*
 * Post a collective (post.c): the public calls with the communicator's stream, the shard
 * engine with its own. Checks, routing, queueing; blocks when @p req_p is NULL.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_start(sharc_comm_h comm, const sharc_coll_args_t *args,
                                             sharc_request_h *req_p);

/* Let @p stream wait for @p req on the device (for host tasks: wait on the host). */
SHARC_API sharc_status_t sharc_request_wait_stream(sharc_request_h req, void *stream);

/* The collectives' names, for messages ("allgather", ...). */
extern SHARC_HIDDEN const char *const sharc_coll_names[SHARC_COLL_LAST];

/* Algorithm names each collective's SHARC_<COLL>_ALGO accepts ("auto" first, then NULL). */
extern SHARC_HIDDEN const char *const *const sharc_coll_algo_names[SHARC_COLL_BARRIER];

/*
 * The host algorithm for a collective: SHARC_<COLL>_ALGO's, else the tune file's, else the
 * built-in table's (select.c). Logs the choice and why at debug level.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_select(sharc_comm_h comm, const sharc_coll_args_t *a,
                                              const sharc_coll_algo_t **algo_p);

/*
 * The host algorithm of @p type that SHARC_<COLL>_ALGO calls @p name, or NULL ("auto"
 * included); *pow2_p: whether it needs a power-of-two rank count.
 */
SHARC_HIDDEN const sharc_coll_algo_t *sharc_coll_algo_find(sharc_coll_type_t type, const char *name,
                                                           int *pow2_p);

/* The engine (coll.c), for post.c and the algorithms that run sub-tasks. */
SHARC_HIDDEN void sharc_coll_lock(sharc_coll_comm_t *cc); /* callers first, then the thread */
SHARC_HIDDEN int sharc_coll_progress(sharc_comm_h comm);  /* lock held; 1 if anything moved */
SHARC_HIDDEN void sharc_coll_scratch_put(sharc_coll_task_t *task); /* lock held */
SHARC_HIDDEN void sharc_coll_release(sharc_coll_task_t *task);     /* free a task's state */

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

/* The ring engine: init, then progress until it returns something but SHARC_INPROGRESS. */
SHARC_HIDDEN sharc_status_t sharc_coll_ring_init(sharc_coll_task_t *task, sharc_coll_ring_t *ring);
SHARC_HIDDEN sharc_status_t sharc_coll_ring_allgather(sharc_coll_task_t *task,
                                                      sharc_coll_ring_t *ring);
SHARC_HIDDEN sharc_status_t sharc_coll_ring_reduce_scatter(sharc_coll_task_t *task,
                                                           sharc_coll_ring_t *ring);
SHARC_HIDDEN void sharc_coll_ring_cleanup(sharc_coll_ring_t *ring);

/* The algorithms, one per file. */
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

/* staged.c: a task's staging state (lock held), and the communicator's at destroy. */
SHARC_HIDDEN void sharc_coll_staged_free(sharc_coll_task_t *task);
SHARC_HIDDEN void sharc_coll_staged_cleanup(sharc_coll_comm_t *cc);

#endif
