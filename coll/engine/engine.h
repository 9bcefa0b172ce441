/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine.h: the collective engine. A collective is a task: its arguments, the
 * algorithm chosen for it, and the algorithm's state. Algorithms are init + progress (+ an
 * optional finalize): the progress function keeps its place in the task, never blocks, and
 * returns SHARC_INPROGRESS until it is done (UCC's model). Tasks run over the communicator's
 * point-to-point transport; all messages of one task share one tag (the task's sequence
 * number), which the transport matches in posting order between any two ranks. The public
 * point-to-point calls are tasks too (sendrecv.c), with tags of their own and no sequence
 * number. The engine drives tasks and knows algorithms only through their descriptor
 * (sharc_coll_algo_t), and the diagnostics only through cc->diag; the algorithms
 * (algorithms.h), the device path (device.h), the diagnostics (diagnostics.h) and the posting
 * of the layer's calls (coll.h) build on it. The layers above see api.h only.
 */
#ifndef SHARC_COLL_ENGINE_H
#define SHARC_COLL_ENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sharc/coll.h>

#include "../../kernels/kernels.h"
#include "../api.h"

/*
 * The transports' tag space (SHARC_TP_TAG_BITS, 40 bits) in two halves, so that no message of
 * a collective can ever match a point-to-point receive or the other way round:
 *  - top bit clear: a collective's messages, tagged with its sequence number, which wraps
 *    after 2^39 collectives (SHARC_COLL_SEQ_MASK);
 *  - top bit set (SHARC_COLL_TAG_P2P): the public sends and receives, the caller's tag
 *    (0 .. SHARC_TAG_MAX, 31 bits) in the low bits.
 */
#define SHARC_COLL_TAG_P2P  (1ull << (SHARC_TP_TAG_BITS - 1))
#define SHARC_COLL_SEQ_MASK (SHARC_COLL_TAG_P2P - 1)

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
 * Rank @p i's block of a collective with one block per rank (all-gather's recvbuf,
 * reduce-scatter's sendbuf, all-to-all's two buffers: @p send picks all-to-all's sendbuf):
 * its element count and its first element. Even collectives: @p count at i * count; the
 * uneven ones from their counts and displacements (the task's copy: displacements set).
 */
static inline size_t sharc_coll_vcount(const sharc_coll_args_t *a, int i, int send)
{
    if (a->counts == NULL) {
        return a->count;
    }
    return (send && a->scounts != NULL) ? a->scounts[i] : a->counts[i];
}

static inline size_t sharc_coll_vdispl(const sharc_coll_args_t *a, int i, int send)
{
    if (a->counts == NULL) {
        return (size_t)i * a->count;
    }
    return (send && a->sdispls != NULL) ? a->sdispls[i] : a->displs[i];
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
    /* Optional: whether a task that failed may still have requests with the transport, so
     * that its memory must outlive the communicator's transports (NULL: yes, its requests
     * are not tracked one by one). */
    int (*held)(const sharc_coll_task_t *task);
    int device; /* it runs on the GPU (the CUDA backend, staging copies) */
} sharc_coll_algo_t;

typedef struct sharc_stage sharc_coll_stage_t; /* staged.c's state of a task */

/*
 * What a task is: a collective (every rank posts it, it takes a sequence number, it
 * completes in posting order within its lane), or a send or receive of the public
 * point-to-point calls (posted by one rank, no sequence number, complete as soon as done,
 * whatever was posted before them: sendrecv.c).
 */
typedef enum {
    SHARC_COLL_KIND_COLL,
    SHARC_COLL_KIND_SEND,
    SHARC_COLL_KIND_RECV,
} sharc_coll_kind_t;

/*
 * A task's lifecycle. The engine moves it forward only, under the communicator's lock:
 *
 *   NEW --hand over--> HANDED --start--> QUEUED --first progress--> RUNNING --+
 *    |                   |                  |                                 |
 *    +------start--------+------------------+-----------------------------> DONE
 *                                                                             |
 *                                    it and every earlier task of its lane --> COMPLETE
 *
 * start (sharc_coll_task_start) gives it its sequence number and runs its algorithm's
 * init; a start that fails ends it at DONE with the error (a task the caller never received
 * is released at once instead). COMPLETE is stored with release ordering: test and wait
 * read it without the lock. Sub-tasks (staged.c's chunks) are driven by their parent's
 * algorithm and never queued: they stay NEW and are freed with their parent.
 */
typedef enum {
    SHARC_COLL_TASK_NEW,      /* made and routed (sharc_coll_task_new) */
    SHARC_COLL_TASK_HANDED,   /* handed to a running progress pass, which starts it */
    SHARC_COLL_TASK_QUEUED,   /* started and queued; its algorithm has not run yet */
    SHARC_COLL_TASK_RUNNING,  /* its algorithm has progressed */
    SHARC_COLL_TASK_DONE,     /* its algorithm finished (status); earlier ones may not have */
    SHARC_COLL_TASK_COMPLETE, /* done, and every earlier task of its lane: visible to callers */
} sharc_coll_task_state_t;

/*
 * A collective in the engine. The public API hands it out as a request (sharc_request_h),
 * the one name the layers above use for it; inside coll/ it is a task.
 */
struct sharc_request {
    /* the engine's */
    sharc_coll_comm_t *cc;
    sharc_coll_args_t args; /* a send's buffer is sendbuf, a receive's recvbuf */
    sharc_coll_kind_t kind;
    const sharc_coll_algo_t *algo;
    sharc_coll_task_state_t state; /* see above; COMPLETE is read without the lock */
    uint64_t seq;                  /* per communicator; the tag of every message of the task */
    uint64_t ordinal;              /* the communicator's posts before it: its flight entry */
    double t_post;                 /* when it was started (sharc_time_now) */
    sharc_status_t status;         /* the algorithm's result once DONE */
    double t_start;                /* when it became RUNNING (sharc_time_now) */
    double t_done;                 /* when it became DONE */
    double t_complete;             /* when it became COMPLETE */
    int await_peer;                /* a peer the task waits for, for timeout messages, or -1 */
    int lane;                      /* its completion lane (sharc_coll_post_lane) */
    int freed;         /* the caller freed its request: the engine releases it when COMPLETE */
    void *event;       /* CUDA: fires on the device when the collective is done, or NULL */
    int stream_waited; /* a stream waits for event: freeing the request need not wait */
    struct sharc_request *next;
    /* what any algorithm may use; the engine releases them */
    sharc_tp_req_t *reqs;
    size_t nreqs;
    /* the transport requests the algorithm keeps (sharc_coll_reqs_alloc, the ring's), for the
     * flight recorder: the receives still in flight say whose data has not arrived */
    struct {
        const sharc_tp_req_t *reqs;
        size_t n;
    } watch[2];
    char *scratch;   /* from sharc_coll_scratch, or NULL; returned when the task is done */
    size_t *vblocks; /* the uneven collectives: its copy of args' counts and displacements */
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
        struct {
            int peer;     /* the peer named, or SHARC_ANY_SOURCE (a receive) */
            int tag;      /* the caller's tag */
            int grouped;  /* CUDA buffers: waits in its group until the group ends (NEW) */
            int source;   /* a receive that completed fine: the sender */
            size_t bytes; /* a receive that completed fine: the bytes received */
        } p2p;            /* a send or a receive (sendrecv.c) */
        struct {
            int phase;                /* what is done: quantized, exchanged, ... */
            sharc_coll_task_t *child; /* the exchange of the wire segments, or NULL */
            size_t seg;               /* bytes per wire segment (sharc_wire_size) */
            size_t arrived;           /* all-gather: the child ring's units dequantized */
            void *event;              /* CUDA: fires when the result is written */
        } quant;                      /* collectives over a quantized wire */
    } u;
};

/*
 * One collective in a communicator's flight recorder (flight.c): a ring of the last
 * SHARC_FLIGHT_RECORDER collectives, written under the lock as they are started and change
 * state, read when it is dumped and for the stall verdict.
 */
typedef struct {
    uint64_t ordinal; /* UINT64_MAX: unused */
    uint64_t seq;
    const char *algo;
    size_t count;
    double t_post, t_start, t_done; /* sharc_time_now's clock; 0: not yet */
    sharc_status_t status;
    int8_t type, dtype, op, lane, state;
} sharc_coll_fr_entry_t;

typedef struct {
    sharc_coll_fr_entry_t *ring; /* [cap], NULL when the recorder is off */
    size_t cap;
} sharc_coll_fr_t;

/* A communicator's metrics (metrics.h), when asked for. */
typedef struct sharc_coll_metrics sharc_coll_metrics_t;

/* Who drives a communicator's progress: whoever tests or waits, or a thread of its own. */
typedef enum {
    SHARC_COLL_DRIVER_CALLER,
    SHARC_COLL_DRIVER_THREAD, /* SHARC_PROGRESS_THREAD */
} sharc_coll_driver_t;

/* Where a progress pass is (sharc_coll_progress; written under the lock, read without it). */
typedef enum {
    SHARC_COLL_PASS_NONE,    /* no pass: a post takes the lock */
    SHARC_COLL_PASS_RUNNING, /* a pass drives the tasks: posts are handed over to it */
    SHARC_COLL_PASS_ENDING,  /* it queues what was handed over: posts take the lock */
} sharc_coll_pass_t;

/*
 * What the engine tells the diagnostics (the recorder's dumps, which rank is gone, the stall
 * verdict: diagnostics.h), which build on it: the engine reaches them only through this table,
 * which the communicator's creation sets (cc->diag). A member may be NULL. Lock held.
 */
typedef struct sharc_coll_diag_ops {
    /* A progress pass: ask the bootstrap whether a rank is gone (at its own pace). */
    void (*watch)(sharc_coll_comm_t *cc);
    /* A task failed the communicator on a peer's or a transport's error: learn, within a
     * moment, which rank's loss caused it (sets cc->explained when it did). */
    void (*explain)(sharc_coll_comm_t *cc);
    /* The communicator failed (cc->failed, cc->why set): write the recorder where asked. */
    void (*failed)(sharc_coll_comm_t *cc);
} sharc_coll_diag_ops_t;

/* Communicator-level state of the collective layer (the communicator owns one). */
struct sharc_coll_comm {
    int rank, size;
    const sharc_coll_cfg_t *cfg;
    const sharc_coll_tune_t *tune;
    sharc_boot_t *boot;
    const sharc_tp_ops_t *tp_ops; /* NULL: bootstrap only */
    sharc_tp_comm_t *tp;
    const sharc_tp_ops_t *cuda_ops; /* NULL: CUDA buffers are staged (or fail: cuda_failed) */
    sharc_tp_comm_t *cuda_tp;
    sharc_status_t cuda_failed;
    const char (*hosts)[SHARC_HOST_MAX];
    /* the node layout (state.c): nodes, and when every node has as many ranks (node_size;
     * else 0) the ranks of each node in rank order, node after node, and this rank's node and
     * place in it: what the hierarchical quantized reduce-scatter needs */
    int nnodes, node_size, node_index, local_index;
    int *node_ranks;
    pthread_mutex_t lock; /* the queue, and the algorithms' progress; recursive */
    uint64_t seq;
    uint64_t posts;   /* collectives started so far (their ordinals) */
    const char *name; /* the communicator's, for flight records */
    sharc_coll_fr_t fr;
    const sharc_coll_diag_ops_t *diag; /* the diagnostics (never NULL) */
    sharc_coll_task_t *head, *tail;
    sharc_status_t failed;           /* SHARC_OK, or why the communicator cannot run collectives */
    char why[320];                   /* what failed it, for the messages of later posts */
    char verdict[1024];              /* the last stall verdict the ranks agreed on, or "" */
    int verdict_rank;                /* the rank it blames (-1: none), with verdict_ordinal */
    int lost_rank;                   /* a rank the store said is gone (-1: none known) */
    uint64_t verdict_ordinal;        /* the collective it is about (atomic; UINT64_MAX: none) */
    double verdict_ends;             /* when its last waiting rank times out (stall.c) */
    uint64_t stall_asked;            /* the last stalled ordinal a verdict was asked for */
    sharc_coll_watchdog_t *watchdog; /* the context's, while this communicator is in it */
    double next_check; /* when progress next asks the bootstrap whether a rank is gone */
    int explained;     /* it named the rank that is gone */
    /* tasks that ended in an error: a transport may still hold their requests and buffers,
     * so they are freed only with the communicator, after its transports */
    sharc_coll_task_t *graveyard;
    /* progress (thread.c): the driver; with a thread, it waits on cond while the queue is
     * empty, and lets callers waiting for the lock (waiters, atomic) in first */
    sharc_coll_driver_t driver;
    pthread_t thread;
    pthread_cond_t cond;
    int stop;
    int waiters;
    unsigned kicks; /* (atomic) posts for the thread so far: it blocks only when none is new */
    int spin_yield; /* a spinning poller yields its core (SHARC_WAIT_YIELD, wait.c) */
    /* with a thread: collectives posted while a pass ran (a pass may copy or reduce
     * megabytes), newest first, which the pass starts as it ends, so that a post never waits
     * for a pass (sharc_coll_task_post); pass (atomic): where the pass is */
    sharc_coll_task_t *incoming;
    sharc_coll_pass_t pass;
    /* sharc_p2p_group_start's nesting, and the sends and receives on CUDA buffers posted
     * inside it, in posting order, issued together when the outermost group ends; under lock */
    int group_depth;
    sharc_coll_task_t *group_head, *group_tail;
    /* the open group's messages with data are on host memory (1) or CUDA buffers (2); 0: none
     * yet. A group takes one kind (sharc_coll_p2p_post). */
    int group_kind;
    /* the metrics (metrics.c), or NULL when off: then a finished task costs one test */
    sharc_coll_metrics_t *metrics;
    int local_rank;      /* this rank's place on its node, for the metrics' labels */
    const char *tp_name; /* its point-to-point transport's name, or "none" */
    struct sharc_coll_exporter *exporter; /* the context's, while this communicator is in it */
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

/* ---- the node layout (state.c) */

/* The rank at place @p local of node @p node (a uniform layout: cc->node_size > 0). */
static inline int sharc_coll_node_rank(const sharc_coll_comm_t *cc, int node, int local)
{
    return cc->node_ranks[node * cc->node_size + local];
}

/* ---- tasks (task.c) */

/* A NEW task of @p cc for @p args in completion lane @p lane, with no algorithm yet (the
 * caller routes it); NULL: no memory. */
SHARC_HIDDEN sharc_coll_task_t *sharc_coll_task_new(sharc_coll_comm_t *cc,
                                                    const sharc_coll_args_t *args, int lane);

/*
 * The one start of a task (lock held), for a post and for a task handed over alike: its
 * sequence number (a range, for an algorithm with sub-tasks: the same on every rank), its
 * algorithm's init, its place at the queue's tail (QUEUED). On an error (the communicator
 * failed, the init failed: logged) nothing was sent, it holds no scratch and is not queued.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_task_start(sharc_coll_task_t *task);

/* Give a task its ordinal (the communicator's posts before it) and its flight entry (lock
 * held): at its start, or as it fails to start once its caller holds it. */
SHARC_HIDDEN void sharc_coll_task_record(sharc_coll_task_t *task);

/* The caller is done with a task (lock held): freed now, or, if it ended in an error, kept
 * until the communicator's transports are gone (they may still write into it). */
SHARC_HIDDEN void sharc_coll_task_release(sharc_coll_task_t *task);

/* Free a task and what it holds now (lock held, or the communicator's last owner). */
SHARC_HIDDEN void sharc_coll_task_free(sharc_coll_task_t *task);

/**
 * Scratch of @p bytes for a task's algorithm (from its init or progress, lock held): the
 * communicator's kept buffer when no other task holds it, grown as needed, so that repeated
 * large collectives do not fault fresh pages in on every call; else a buffer of its own.
 * Sets and returns task->scratch (NULL: no memory). The engine takes it back when the task
 * is done.
 */
SHARC_HIDDEN char *sharc_coll_scratch(sharc_coll_task_t *task, size_t bytes);
SHARC_HIDDEN void sharc_coll_scratch_put(sharc_coll_task_t *task); /* lock held */

/* Whether @p task runs on the GPU (the CUDA backend, or staging copies). */
SHARC_HIDDEN int sharc_coll_on_gpu(const sharc_coll_task_t *task);

/* Append @p task to the list from *head_p to *tail_p (linked through next). */
static inline void sharc_coll_list_push(sharc_coll_task_t **head_p, sharc_coll_task_t **tail_p,
                                        sharc_coll_task_t *task)
{
    task->next = NULL;
    if (*tail_p != NULL) {
        (*tail_p)->next = task;
    } else {
        *head_p = task;
    }
    *tail_p = task;
}

/* Put a task at the tail of the queue (lock held): started (QUEUED), or DONE with an error
 * its caller will see in its turn. */
SHARC_HIDDEN void sharc_coll_task_queue(sharc_coll_task_t *task);

/* What a task is, for messages: "allgather", "send", "recv". */
SHARC_HIDDEN const char *sharc_coll_task_name(const sharc_coll_task_t *task);

/* A task for messages: "allgather #12 (4096 f32)", "recv from rank 2, tag 7 (10 i32)". */
SHARC_HIDDEN void sharc_coll_task_describe(const sharc_coll_task_t *task, char *buf, size_t len);

/* ---- the queue and its progress pass (queue.c) */

/* One progress pass (lock held): drive the transports and every task, complete those at the
 * head of their lanes. 1 if anything moved (pollers back off when nothing does). */
SHARC_HIDDEN int sharc_coll_progress(sharc_coll_comm_t *cc);

/*
 * Lock held: start the tasks handed over during a pass, oldest first (the order they were
 * posted in, so every rank gives them the same sequence numbers). One that cannot start is
 * queued DONE with the error, and completes with it in its turn.
 */
SHARC_HIDDEN void sharc_coll_take_over(sharc_coll_comm_t *cc);

/* ---- who drives progress (thread.c) */

/* Start the progress thread when SHARC_PROGRESS_THREAD asks for one (at creation). */
SHARC_HIDDEN sharc_status_t sharc_coll_driver_start(sharc_coll_comm_t *cc);
/* Stop it (it finishes its pass); the caller drives progress from then on. */
SHARC_HIDDEN void sharc_coll_driver_stop(sharc_coll_comm_t *cc);
/* Wake the thread: a task was queued (lock held). */
SHARC_HIDDEN void sharc_coll_driver_kick(sharc_coll_comm_t *cc);
/* The lock, for callers: the progress thread lets them in ahead of its next pass. */
SHARC_HIDDEN void sharc_coll_lock(sharc_coll_comm_t *cc);
SHARC_HIDDEN void sharc_coll_unlock(sharc_coll_comm_t *cc);

/* ---- waiting (wait.c) */

/* A poller's idle stretch: the passes since one last moved something. */
typedef struct {
    int passes;   /* passes that moved nothing, in a row */
    double since; /* when the first of them ran (sharc_time_now) */
    int naps;     /* sleeps since, where the transport cannot block */
} sharc_coll_idle_t;

/*
 * After a progress pass (@p moved: it moved something), pause as a poller with nothing to do
 * should: spin (yielding) for SHARC_WAIT_SPIN, then block on the transport until it may have
 * work or the poller's own condition @p ready(arg) holds (asked after the transport has made
 * sure a wake-up from then on is not lost), or sleep where it cannot block. @p gpu: the work
 * polled for runs on the GPU (yields, then short sleeps). Without the lock.
 */
SHARC_HIDDEN void sharc_coll_idle(sharc_coll_comm_t *cc, sharc_coll_idle_t *idle, int moved,
                                  int gpu, int (*ready)(void *arg), void *arg);
/* Whether @p cc's spinning pollers yield (SHARC_WAIT_YIELD; @p local_size: its ranks on this
 * node), at creation. */
SHARC_HIDDEN int sharc_coll_spin_yields(const sharc_coll_cfg_t *cfg, int local_size);
/* End the blocks of every poller of @p cc (a task completed, a post for the thread). */
SHARC_HIDDEN void sharc_coll_wake(sharc_coll_comm_t *cc);

/* ---- failure (fail.c) */

/*
 * The communicator cannot run collectives any more (lock held): every task in flight and
 * every later post fails with @p status; @p why is logged once and repeated by later posts.
 */
SHARC_HIDDEN void sharc_coll_fail(sharc_coll_comm_t *cc, sharc_status_t status, const char *why);

/* sharc_coll_fail without telling the diagnostics: 1 if @p cc failed now, 0 if it had already. */
SHARC_HIDDEN int sharc_coll_fail_now(sharc_coll_comm_t *cc, sharc_status_t status, const char *why);

/* A task failed (lock held): the communicator fails with it, and waits a moment to learn
 * from the store which rank's loss caused it. A send or receive fails it only when its error
 * is a peer's or a transport's (a receive buffer too short is that receive's error alone). */
SHARC_HIDDEN void sharc_coll_fail_task(sharc_coll_task_t *task);

/* Whether the error that ended @p task fails its communicator (see sharc_coll_fail_task). */
SHARC_HIDDEN int sharc_coll_fails_comm(const sharc_coll_task_t *task);

/* The oldest collective this rank has started and not completed, or NULL (lock held; task.c). */
SHARC_HIDDEN const sharc_coll_task_t *sharc_coll_oldest(const sharc_coll_comm_t *cc);

/* The verdict the ranks agreed on collective @p ordinal (the stall verdict writes it:
 * flight.h), or NULL: the messages of its failure carry it, whatever ends it (this rank's
 * timeout, a peer's leaving). */
static inline const char *sharc_coll_verdict_on(const sharc_coll_comm_t *cc, uint64_t ordinal)
{
    return ordinal != UINT64_MAX &&
                   __atomic_load_n(&cc->verdict_ordinal, __ATOMIC_ACQUIRE) == ordinal
               ? cc->verdict
               : NULL;
}

/* The host of @p rank, for messages ("?" when unknown). */
static inline const char *sharc_coll_host(const sharc_coll_comm_t *cc, int rank)
{
    return (cc->hosts != NULL && rank >= 0 && rank < cc->size) ? cc->hosts[rank] : "?";
}

/* Transport requests of a task's algorithm: task->reqs, @p n of them (NULL: no memory),
 * watched by the flight recorder. */
SHARC_HIDDEN sharc_tp_req_t *sharc_coll_reqs_alloc(sharc_coll_task_t *task, size_t n);

/* ---- point-to-point for the algorithms (p2p.c) */

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

/* ---- sends and receives in an open group (sendrecv_post.c) */

/* Whether @p task waits in an open group (not issued, not queued). */
static inline int sharc_coll_p2p_unissued(const sharc_coll_task_t *task)
{
    return task->kind != SHARC_COLL_KIND_COLL && task->u.p2p.grouped;
}
/* task.c: free a task that waits in an open group, out of it (lock held). */
SHARC_HIDDEN void sharc_coll_group_drop(sharc_coll_task_t *task);

#endif
