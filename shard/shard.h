/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard.h: the sharding engine's internals (public contract in sharc/shard.h). A group holds
 * units; a unit holds its rank's f32 master and gradient shards for good, and, for a while,
 * an unsharded parameter buffer (param dtype) and an unsharded gradient buffer (reduce
 * dtype). The files, from the bottom: shard_layout.c lays parameters out; shard_mem.c says
 * where memory lives and orders the CUDA streams; shard_stats.c accounts for time and
 * memory; shard_op.c posts and completes the group's collectives; shard_unit.c moves a
 * unit's parameters, shard_reduce.c reduces its gradients, shard_sched.c keeps the
 * schedule and shard_auto.c its adaptive prefetch depth, both deciding through the pure
 * planner of shard_plan.h (shard_plan.c, shard_plan_auto.c, which sharc-perf predict
 * replays); shard_calls.c and shard_step.c
 * are the calls that drive them; shard_trace.c records the timeline; shard_group.c makes
 * and destroys groups, its ranks agreeing through shard_exchange.c; shard_save.c and
 * shard_load.c write and read checkpoints.
 */
#ifndef SHARC_SHARD_INT_H
#define SHARC_SHARD_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sharc/coll.h>
#include <sharc/shard.h>

#include "../coll/api.h"
#include "../kernels/kernels.h"
#include "../core/comm.h"
#include "shard_plan.h"

/* Where a unit's parameters are. */
typedef enum {
    SHARC_SHARD_SHARDED,   /* master shard only */
    SHARC_SHARD_GATHERING, /* all-gather in flight into pbuf */
    SHARC_SHARD_GATHERED,  /* pbuf holds every parameter */
} sharc_shard_pstate_t;

/* Where a unit's gradients are. */
typedef enum {
    SHARC_SHARD_GRAD_NONE,     /* nothing since the last reduction */
    SHARC_SHARD_GRAD_OPEN,     /* gbuf exists; the caller adds gradients to it */
    SHARC_SHARD_GRAD_REDUCING, /* reduce-scatter in flight on gbuf */
    SHARC_SHARD_GRAD_REPLICA,  /* HSDP: all-reduce of the shard in flight across replicas */
} sharc_shard_gstate_t;

/*
 * The queues the group's collectives complete through, each in posting order. Gathers:
 * the shard communicator's lane 0. Reductions: on the host its lane 1 (the same progress
 * thread drives both, and a gather never completes behind a reduce-scatter posted before
 * it); on CUDA a communicator of their own split from it (its own NCCL communicator and
 * stream, so that they also run beside the gathers); with SHARC_SHARD_REDUCE_QUEUE=no, lane
 * 0 with the gathers. HSDP's all-reduces: the replica communicator.
 */
typedef enum {
    SHARC_SHARD_Q_GATHER,
    SHARC_SHARD_Q_REDUCE,
    SHARC_SHARD_Q_REPLICA,
    SHARC_SHARD_Q_NODE, /* hpZ: gathers from secondary shards, within the node */
    SHARC_SHARD_Q_LAST
} sharc_shard_queue_t;

/* A collective the group posted, for completion and time accounting. */
typedef struct {
    sharc_request_h req;
    double t_post;
    int timed; /* CUDA: its interval is measured by events (a collective of the backend) */
    int queue; /* sharc_shard_queue_t: the communicator it went through */
} sharc_shard_op_t;

typedef struct sharc_shard_unit {
    int id, first_param, nparams;
    size_t count;         /* end of the last parameter, elements */
    size_t padded;        /* shard * shard_size */
    size_t shard;         /* elements per rank */
    float *master, *grad; /* [shard] each, f32 */
    int grad_zero;        /* grad is all zeros (sharc_shard_zero_grads, creation, load) */
    float **state;        /* [group->nstates][shard] */

    sharc_shard_pstate_t pstate;
    void *pbuf;          /* [padded] param dtype, while not SHARDED */
    sharc_shard_op_t ag; /* (prefetched, in use: the group's plan says, g->plan.units[id]) */
    void *sbuf;          /* hpZ: this rank's part of the forward's parameters, or NULL */
    double t_begun;      /* trace: when its last begin returned */

    sharc_shard_gstate_t gstate;
    void *gbuf; /* [padded] reduce dtype, while not NONE */
    sharc_shard_op_t rs, ar;
    int rs_direct; /* the reduce-scatter writes the gradient shard itself */
    struct sharc_shard_unit *next_reduction; /* the group's queue of reductions in flight */

    size_t unsharded_bytes;          /* pbuf and gbuf */
    sharc_shard_stats_t stats, last; /* this step's and the last finished step's */
} sharc_shard_unit_t;

/* An unsharded buffer of the group: in use by a unit, or pooled for reuse (shard_mem.c). */
typedef struct {
    sharc_coll_devmem_t mem; /* host: mem.ptr from sharc_mem_alloc; CUDA: coll/'s device memory */
    size_t bytes;
    void *free_ev;     /* CUDA: recorded where its last users end */
    void *free_stream; /* CUDA: ... on this stream (engine, caller, download) */
    int pooled;
    uint64_t seq; /* when it was last taken or returned: the oldest pooled one goes first */
} sharc_shard_buf_t;

/* CUDA statistics: an interval between two events (shard_stats.c). */
typedef struct {
    void *e0, *e1; /* timing events */
    int unit;
    int comm; /* 1: a collective in flight, 0: the caller's stream waiting (exposed) */
} sharc_shard_evspan_t;

/* A step's event spans (sharc_array_grow grows them). */
typedef struct {
    sharc_shard_evspan_t *span;
    size_t n, cap;
} sharc_shard_evspans_t;

/* One interval [t0, t1] a collective was in flight, for the union in the statistics. */
typedef struct {
    double t0, t1;
    int unit;
} sharc_shard_span_t;

/* Requests the device follows, of one step (sharc_array_grow grows them). */
typedef struct {
    sharc_request_h *req;
    size_t n, cap;
} sharc_shard_reqs_t;

/* The engine's knobs (shard_cfg.c holds their table). */
typedef struct {
    size_t bucket;                /* bytes per automatically packed unit */
    int prefetch;                 /* units gathered ahead; -1: auto */
    int max_unsharded;            /* bound on gathered units; 0: derived */
    int reshard_after_forward;    /* release gathered parameters after a unit's forward: 0, 1,
                                   * or SHARC_SHARD_RESHARD_NODE (keep a secondary shard) */
    int param_wire, reduce_wire;  /* sharc_wire_t of the gathers and the reduce-scatters */
    int wire_block;               /* values per scale of a quantized wire */
    int reduce_queue;             /* reductions through a queue of their own */
    const char *trace;            /* SHARC_SHARD_TRACE: the trace file, "" for none */
    int trace_steps;              /* steps the trace keeps */
    int offload;                  /* sharc_shard_offload_t, for CUDA groups */
    const char *offload_fraction; /* the offloaded share of elements, (0, 1] */
    int offload_threads;          /* the host's threads for offloaded units; -1: auto */
} sharc_shard_cfg_t;

extern SHARC_HIDDEN const sharc_cfg_table_t sharc_shard_cfg_table;
extern SHARC_HIDDEN const char *const sharc_shard_offload_names[]; /* none, host, managed */

static inline const sharc_shard_cfg_t *sharc_shard_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_shard_cfg_t *)sharc_cfg_get(cfg, &sharc_shard_cfg_table);
}

struct sharc_shard_group {
    sharc_comm_h comm;         /* the caller's, not owned */
    sharc_comm_h shard_comm;   /* ranks sharing one copy of the model: split of comm, owned */
    sharc_comm_h replica_comm; /* HSDP: the same shard rank in every shard group, or NULL */
    /* reductions (see sharc_shard_queue_t): shard_comm in lane reduce_lane on the host, or a
     * split of it on CUDA (owned; else the same as shard_comm, not owned twice) */
    sharc_comm_h reduce_comm;
    int reduce_lane;
    sharc_context_h ctx;
    int rank, size; /* in comm */
    int shard_rank, shard_size;
    int replica_rank, replicas;
    const sharc_kern_ops_t *kern;
    /* CUDA (memtype SHARC_MEMTYPE_CUDA): the caller's compute stream, the engine's stream
     * (casts, zeroing, accumulation, buffer reuse), a stream that only waits for collectives
     * (to time their ends), and an event for ordering one stream after another */
    int cuda;
    void *stream, *estream, *tstream, *order_ev;
    /* CUDA: requests the device follows but the host has not seen done, this step's and the
     * last step's; the next step's finish waits for the last step's (bounded by the timeout,
     * so a dead peer is reported, not hung on) */
    sharc_shard_reqs_t inflight, inflight_last;
    /* host: requests seen complete, freed at the step's end: freeing one takes its
     * communicator's lock, which the progress thread holds through a whole pass (copies,
     * reductions of megabytes), and at finish the queues are idle */
    sharc_request_h *retired;
    size_t nretired, retired_cap;

    sharc_dtype_t pdtype, rdtype;
    size_t pesize, resize;
    /* the wires of the gathers and of the reduce-scatters, and their block (shard_wire.c) */
    sharc_wire_t pwire, rwire;
    size_t wire_block;
    /* hpZ (reshard_after_forward = node): the shard group's ranks on this node, this rank's
     * place among them (its part of each unit), their number, the bytes of the secondary
     * shards now held; node_comm NULL: off */
    sharc_comm_h node_comm;
    int hpz; /* asked for (reshard_after_forward = node) */
    int node_rank, node_size;
    size_t secondary_bytes;
    sharc_op_t grad_op;
    /* the schedule and its decisions (shard_plan.c; shard_sched.c keeps its calls): the
     * prefetch depth in use (with auto, the adaptive one's current value), max_unsharded,
     * reshard_after_forward, the orders, the cursor, passes, units unsharded (alive) */
    sharc_shard_plan_t plan;
    int prefetch_auto; /* SHARC_SHARD_PREFETCH=auto: the depth follows the waits (shard_auto.c) */
    struct sharc_shard_auto *autop; /* its state, or NULL */
    int sync;                       /* backward_end reduces (set_sync) */
    int assign_grads; /* the caller writes fresh gradient buffers: only gaps are zeroed */

    int nparams;
    sharc_shard_param_info_t *params; /* names owned */
    int nunits;
    sharc_shard_unit_t *units;
    int nstates;
    char **state_names;

    sharc_shard_unit_t *rhead, *rtail; /* reductions in flight, in posting order */

    sharc_shard_buf_t *bufs; /* every unsharded buffer, at most pool_max of them pooled */
    int nbufs, npooled, pool_max;
    /* host: most buffers the group has had in use at once: the pool keeps that many, so that
     * a step does not allocate (and fault in) again what an earlier one freed */
    int buf_peak;
    uint64_t buf_clock;
    float *scratch; /* [max shard] f32, for bf16 gradients on their way into the shard */

    /* statistics (shard_stats.c) */
    double step_t0;
    sharc_shard_span_t *spans;
    size_t nspans, spans_cap;
    size_t unsharded_bytes;
    sharc_shard_stats_t stats, last;
    int have_last;
    /* CUDA: this step's event intervals and the last finished step's (resolved when its
     * statistics are read, or at the next step's end), each from its step's start event */
    sharc_shard_evspans_t ev, ev_last;
    void *step_ev, *step_ev_last;
    void **ev_free;
    size_t nev_free, ev_free_cap;

    /* where units' f32 state lives and the host's work on it (shard_offload.h): set for every
     * group; and the engine's AdamW (sharc_shard_adamw_create), or NULL */
    struct sharc_shard_off *off;
    struct sharc_shard_adamw *adamw;
    /*
     * Hooks of offload's host worker: set while the group has one (shard_host_sync.c starts
     * and stops it), else NULL. Failing the group (shard_op.c) and quiescing it (shard_mem.c)
     * sit below offload and reach the host's work only through these, not by calls:
     * host_abort drops the worker's queued tasks and waits for those running; host_quiesce
     * waits until the worker is idle (its first error) and offload's copy streams are done.
     */
    void (*host_abort)(struct sharc_shard_group *g);
    sharc_status_t (*host_quiesce)(struct sharc_shard_group *g);

    struct sharc_shard_trace *trace; /* SHARC_SHARD_TRACE: the timeline (shard_trace.c), or NULL */
    int step_no;                     /* steps finished */

    sharc_status_t failed; /* an error that ended the group's communication */
};

typedef struct sharc_shard_group sharc_shard_group_t;

/* ---- layout (shard_layout.c) ---------------------------------------------------------- */

/**
 * The padding rule, in one place: a unit of @p count elements (its last parameter's end)
 * sharded over @p nranks gives each rank ceil(count / nranks) elements rounded up to a
 * multiple of SHARC_SHARD_ALIGN; the unit is zero-padded to that times nranks, and rank r
 * owns elements [r * shard, (r + 1) * shard). Parameters sit in their unit in the order
 * given, each at the next multiple of SHARC_SHARD_ALIGN.
 */
SHARC_HIDDEN size_t sharc_shard_count(size_t count, int nranks);

/**
 * Check the caller's parameters and lay them out: params[] (names copied, offsets set) and
 * units[] (first_param, nparams, count, shard, padded). Logs and returns SHARC_ERR_INVALID
 * for what sharc_shard_create documents.
 */
SHARC_HIDDEN sharc_status_t sharc_shard_layout(const sharc_shard_param_t *in, int nparams,
                                               int num_units, size_t bucket_bytes, size_t pesize,
                                               int nranks, sharc_shard_param_info_t **params_p,
                                               sharc_shard_unit_t **units_p, int *nunits_p);

SHARC_HIDDEN void sharc_shard_layout_free(sharc_shard_param_info_t *params, int nparams);

/* ---- the ranks' vote (shard_exchange.c) ------------------------------------------------ */

/* What each rank tells the others when they must agree. */
typedef struct {
    int32_t status, pad;
    uint64_t a, b;
} sharc_shard_vote_t;

/*
 * Every rank's status and values (@p vote, into @p all[size]) through the bootstrap:
 * SHARC_OK when every rank is fine, else this rank's own error, or SHARC_ERR_REMOTE naming
 * the rank that failed at @p what. Collective over the group.
 */
SHARC_HIDDEN sharc_status_t sharc_shard_exchange(sharc_shard_group_t *g, sharc_status_t mine,
                                                 sharc_shard_vote_t *vote, sharc_shard_vote_t *all,
                                                 const char *what);

/* ---- the group's collectives (shard_op.c) ---------------------------------------------- */

/* For sharc_shard_enter: the call is about the whole group, not one unit. */
#define SHARC_SHARD_ALL INT_MIN

/* The group's entry check: NULL group, a unit out of range, a failed group. */
SHARC_HIDDEN sharc_status_t sharc_shard_enter(sharc_shard_group_t *g, int unit, const char *what);
/* sharc_shard_enter for one unit (not SHARC_SHARD_ALL), which *u_p names on success. */
SHARC_HIDDEN sharc_status_t sharc_shard_enter_unit(sharc_shard_group_t *g, int unit,
                                                   const char *what, sharc_shard_unit_t **u_p);

/* A collective of the group failed: the group stops communicating. Returns @p status. */
SHARC_HIDDEN sharc_status_t sharc_shard_fail(sharc_shard_group_t *g, sharc_status_t status,
                                             const sharc_shard_unit_t *u, const char *what);

/*
 * Post a collective of unit @p u into @p op on the communicator of @p queue; on CUDA it
 * follows the work queued on @p stream so far (ignored on the host), and its interval is
 * timed by events when it runs on the device.
 */
SHARC_HIDDEN sharc_status_t sharc_shard_post(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                             sharc_shard_op_t *op, sharc_shard_queue_t queue,
                                             sharc_coll_type_t type, const void *sendbuf,
                                             void *recvbuf, size_t count, sharc_dtype_t dtype,
                                             sharc_op_t rop, void *stream);

/*
 * The collective in @p op is done for whoever comes next: the host waits for it (@p block;
 * otherwise SHARC_INPROGRESS if it is not done), or on CUDA @p stream waits for it on the
 * device. Its statistics are counted and @p op is empty afterwards. A wait that blocks
 * counts as exposed time.
 */
SHARC_HIDDEN sharc_status_t sharc_shard_complete(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                 sharc_shard_op_t *op, sharc_coll_type_t type,
                                                 int block, void *stream);

/* CUDA: the last step's requests, waited for on the host (bounded by the timeout) and
 * freed; this step's become the last step's. @p all: this step's too (destroy). */
SHARC_HIDDEN sharc_status_t sharc_shard_inflight_retire(sharc_shard_group_t *g, int all);

/* Complete every outstanding operation, errors ignored (destroy). */
SHARC_HIDDEN void sharc_shard_drain(sharc_shard_group_t *g);

/* Free the requests seen complete since the last call (finish, destroy). */
SHARC_HIDDEN void sharc_shard_free_retired(sharc_shard_group_t *g);

/* ---- a unit's parameters (shard_unit.c) ----------------------------------------------- */

/* Post the unit's all-gather (it is SHARDED and a slot is free; @p prefetched: ahead of its
 * begin, along the schedule). */
SHARC_HIDDEN sharc_status_t sharc_shard_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                               int prefetched);

/* The unit's all-gather, done for @p stream (CUDA) or the host: it is GATHERED. */
SHARC_HIDDEN sharc_status_t sharc_shard_wait_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                    void *stream);

/* Release a unit's parameters (waiting for a gather in flight). */
SHARC_HIDDEN sharc_status_t sharc_shard_release(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/*
 * Make room for one more unsharded unit: when max_unsharded are out, release a unit that was
 * prefetched and not used yet (the last one issued: it is needed last).
 */
SHARC_HIDDEN sharc_status_t sharc_shard_make_room(sharc_shard_group_t *g,
                                                  const sharc_shard_unit_t *want);

/* Create the unit's zeroed unsharded gradient buffer (it has none). */
SHARC_HIDDEN sharc_status_t sharc_shard_open_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Complete the gathers that have completed, without blocking. */
SHARC_HIDDEN sharc_status_t sharc_shard_gathers_poll(sharc_shard_group_t *g);

/* ---- narrow wires and secondary shards (shard_wire.c) ------------------------------------ */

/*
 * The wires and hpZ from @p cfg's fields where set, else the knobs (shard_settings calls it):
 * SHARC_ERR_INVALID for a wire that is no sharc_wire_t, a block out of range, or a
 * reshard_after_forward other than 0, 1 and SHARC_SHARD_RESHARD_NODE.
 */
SHARC_HIDDEN sharc_status_t sharc_shard_wire_settings(sharc_shard_group_t *g,
                                                      const sharc_shard_params_t *cfg,
                                                      const sharc_shard_cfg_t *k, int *hpz_p);

/* hpZ: the node communicator of the shard group's ranks (every node as many, else hpZ is off,
 * warned); its release. */
SHARC_HIDDEN sharc_status_t sharc_shard_node_open(sharc_shard_group_t *g);
SHARC_HIDDEN void sharc_shard_node_close(sharc_shard_group_t *g);

/* hpZ, at a unit's forward end (it is gathered): keep this rank's part as its secondary. */
SHARC_HIDDEN sharc_status_t sharc_shard_node_keep(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* hpZ: post the unit's all-gather within the node from the secondary shards into its pbuf. */
SHARC_HIDDEN sharc_status_t sharc_shard_node_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* hpZ: drop the unit's secondary (its gather completed for @p stream; NULL: on the host). */
SHARC_HIDDEN void sharc_shard_node_drop(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                        void *stream);

/* hpZ: drop every secondary (finish: the masters are about to change). */
SHARC_HIDDEN void sharc_shard_node_drop_all(sharc_shard_group_t *g);

/* ---- reductions (shard_reduce.c) -------------------------------------------------------- */

/* Start reducing the unit's open gradients: on CUDA the whole chain is queued on the
 * device; on the host the reduce-scatter is posted and the unit joins the queue. */
SHARC_HIDDEN sharc_status_t sharc_shard_reduce_start(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Wait until the unit's reduction in flight, if any, has reached its gradient shard. */
SHARC_HIDDEN sharc_status_t sharc_shard_settle_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Advance the reductions in flight that are done, in posting order, without blocking. */
SHARC_HIDDEN sharc_status_t sharc_shard_reduce_poll(sharc_shard_group_t *g);

/* Complete every reduction in flight, in posting order (the host waits). */
SHARC_HIDDEN sharc_status_t sharc_shard_reduce_all(sharc_shard_group_t *g);

/* ---- driving (shard_calls.c) ------------------------------------------------------------ */

/* Complete what has completed, without blocking; chain HSDP all-reduces. */
SHARC_HIDDEN sharc_status_t sharc_shard_poll(sharc_shard_group_t *g);

/* ---- memory (shard_mem.c) -------------------------------------------------------------- */

/* A zeroed shard of @p count f32 (host: shareable when peers copy from it; or device). */
SHARC_HIDDEN sharc_status_t sharc_shard_alloc_shard(sharc_shard_group_t *g, size_t count,
                                                    int shareable, float **ptr_p);
SHARC_HIDDEN void sharc_shard_free_shard(sharc_shard_group_t *g, float *ptr, int shareable);

/* Zero @p bytes: at once on the host, queued on @p stream on CUDA. */
SHARC_HIDDEN sharc_status_t sharc_shard_zero(sharc_shard_group_t *g, void *ptr, size_t bytes,
                                             void *stream);

/* Copy between the caller's host memory and the group's, synchronously (after everything
 * queued on the engine's stream). */
SHARC_HIDDEN sharc_status_t sharc_shard_copy(sharc_shard_group_t *g, void *dst, const void *src,
                                             size_t bytes);

/* CUDA: @p waiting goes on only after what @p after has queued so far. */
SHARC_HIDDEN sharc_status_t sharc_shard_after(sharc_shard_group_t *g, void *waiting, void *after);

/* Wait on the host until the host's work on offloaded units is done (the host_quiesce hook)
 * and, on CUDA, the copy streams, the engine's and the caller's (destroy, checkpoints). */
SHARC_HIDDEN sharc_status_t sharc_shard_quiesce(sharc_shard_group_t *g);

/*
 * Unsharded buffers: pooled or new (shareable host memory; backend or device memory on
 * CUDA) for @p stream to write first: the engine's, which must follow the caller's by then,
 * or the caller's, which may be made to wait; back to the pool, its last users ending on
 * @p stream (the engine's, the caller's, offload's download stream; on the host, the pool is
 * cut to pool_max); all of them freed (destroy).
 */
SHARC_HIDDEN sharc_status_t sharc_shard_buf_get(sharc_shard_group_t *g, size_t bytes, void *stream,
                                                void **ptr_p);
SHARC_HIDDEN void sharc_shard_buf_put(sharc_shard_group_t *g, void *ptr, void *stream);
SHARC_HIDDEN void sharc_shard_buf_free_all(sharc_shard_group_t *g);

/* The unit's unsharded gradients are done with: gbuf back to the pool, its last use ending on
 * @p stream (CUDA); the unit has none. */
SHARC_HIDDEN void sharc_shard_grads_release(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                            void *stream);

/* ---- schedule (shard_sched.c) --------------------------------------------------------- */

/* A step ended: adopt the order seen this step where it differs from the schedule. Returns
 * whether a recorded order changed (the first recording does not count). */
SHARC_HIDDEN int sharc_shard_sched_step(sharc_shard_group_t *g);

/* A begin of (phase, unit): a forward after a backward starts the next pass; record it, and
 * move the cursor past its entry (or leave the schedule for the rest of the step when it is
 * not the next entry). */
SHARC_HIDDEN void sharc_shard_sched_begin(sharc_shard_group_t *g, int phase, int unit);

/* The schedule's arrays (room for every unit running a few times per phase). */
SHARC_HIDDEN sharc_status_t sharc_shard_sched_init(sharc_shard_group_t *g);
SHARC_HIDDEN void sharc_shard_sched_free(sharc_shard_group_t *g);

/* ---- statistics (shard_stats.c) ------------------------------------------------------- */

/* A collective of unit @p u ran from t0 to t1 (bytes: its unsharded buffer); t1 < 0: count
 * it only (CUDA: its interval comes from events). */
SHARC_HIDDEN void sharc_shard_stats_op(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                       sharc_coll_type_t type, double t0, double t1, size_t bytes);

/* An interval a collective of unit @p unit was in flight, for the union. */
SHARC_HIDDEN void sharc_shard_stats_span(sharc_shard_group_t *g, int unit, double t0, double t1);

/* The caller was blocked on a collective (@p type) of unit @p u (or NULL) from t0 to now:
 * exposed time (and, for a gather, the unit's gather wait, which adaptive prefetch reads). */
SHARC_HIDDEN void sharc_shard_stats_exposed(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                            sharc_coll_type_t type, double t0);

/* The caller spent from t0 to now in a step call of the engine. */
SHARC_HIDDEN void sharc_shard_stats_engine(sharc_shard_group_t *g, double t0);

/* Unit @p u's unsharded bytes went up or down by @p delta. */
SHARC_HIDDEN void sharc_shard_stats_mem(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                        long long delta);

/* The step ended: fold spans into comm/hidden time, keep it as the last step, reset. */
SHARC_HIDDEN void sharc_shard_stats_step(sharc_shard_group_t *g);

/*
 * CUDA: a timing event recorded on @p stream now, from the group's free list (NULL when
 * none can be made: the interval goes uncounted), and an interval of two of them.
 */
SHARC_HIDDEN void *sharc_shard_stats_mark(sharc_shard_group_t *g, void *stream);
SHARC_HIDDEN void sharc_shard_stats_evspan(sharc_shard_group_t *g, sharc_shard_unit_t *u, void *e0,
                                           void *e1, int comm);

/* CUDA: the group's events, at destroy. */
SHARC_HIDDEN void sharc_shard_stats_free(sharc_shard_group_t *g);

/* ---- adaptive prefetch (shard_auto.c) -------------------------------------------------- */

/* (The decision's types and its pure function are the planner's: shard_plan.h.) */

/* The group's adaptive prefetch: state and the agreement in flight (NULL: not auto). */
SHARC_HIDDEN sharc_status_t sharc_shard_auto_create(sharc_shard_group_t *g);
SHARC_HIDDEN void sharc_shard_auto_destroy(sharc_shard_group_t *g);

/* A step ended (finish; @p followed: it followed a recorded schedule; @p reset: the schedule
 * was recorded anew): post the all-reduce that agrees on its waits. */
SHARC_HIDDEN sharc_status_t sharc_shard_auto_step(sharc_shard_group_t *g, int followed, int reset);

/* Before a step's first begin (and before the next agreement): complete the agreement in
 * flight and set the depth from it. */
SHARC_HIDDEN sharc_status_t sharc_shard_auto_apply(sharc_shard_group_t *g);

/* A prefetch the memory bound held back this step (for the decision). */
SHARC_HIDDEN void sharc_shard_auto_deferred(sharc_shard_group_t *g);

/* ---- the timeline trace (shard_trace.c) -------------------------------------------------- */

/* What the caller was doing, for the trace's caller track. */
typedef enum {
    SHARC_SHARD_CALL_FORWARD_BEGIN,
    SHARC_SHARD_CALL_FORWARD_END,
    SHARC_SHARD_CALL_BACKWARD_BEGIN,
    SHARC_SHARD_CALL_BACKWARD_END,
    SHARC_SHARD_CALL_FINISH,
    SHARC_SHARD_CALL_LAST
} sharc_shard_call_t;

/* Open the trace of SHARC_SHARD_TRACE (rank 0 creates the file now, so that a path it cannot
 * write fails the group's creation with a clear error). Nothing when the knob is empty. */
SHARC_HIDDEN sharc_status_t sharc_shard_trace_open(sharc_shard_group_t *g);

/* The ranks are in step (after an exchange): this rank's time origin. */
SHARC_HIDDEN void sharc_shard_trace_origin(sharc_shard_group_t *g);

/* Every rank's events to rank 0, which writes the file (destroy; collective over the group's
 * ranks through the bootstrap). */
SHARC_HIDDEN void sharc_shard_trace_write(sharc_shard_group_t *g);

/* Free the trace (a file created and never written, as when the creation failed, goes). */
SHARC_HIDDEN void sharc_shard_trace_close(sharc_shard_group_t *g);

/* A collective of @p u completed, seen by the engine now (host: its times from the request). */
SHARC_HIDDEN void sharc_shard_trace_op(sharc_shard_group_t *g, const sharc_shard_unit_t *u,
                                       const sharc_shard_op_t *op, sharc_coll_type_t type,
                                       sharc_request_h req, size_t bytes);

/* A new unsharded buffer of @p bytes was made from @p t0 to @p t1 (the caller's time). */
SHARC_HIDDEN void sharc_shard_trace_alloc(sharc_shard_group_t *g, size_t bytes, double t0,
                                          double t1);

/* The caller waited for a collective (@p type) of unit @p unit from @p t0 to @p t1. */
SHARC_HIDDEN void sharc_shard_trace_wait(sharc_shard_group_t *g, int unit, sharc_coll_type_t type,
                                         double t0, double t1);

/* A step call from @p t0 to @p t1; for a begin, the caller's compute with the unit follows. */
SHARC_HIDDEN void sharc_shard_trace_call(sharc_shard_group_t *g, sharc_shard_call_t call, int unit,
                                         double t0, double t1);

/* Decisions of the schedule: a unit gathered @p ahead entries ahead, a prefetch held back by
 * the bound, a prefetched unit evicted. */
SHARC_HIDDEN void sharc_shard_trace_prefetch(sharc_shard_group_t *g, int unit, int ahead);
SHARC_HIDDEN void sharc_shard_trace_defer(sharc_shard_group_t *g, int unit);
SHARC_HIDDEN void sharc_shard_trace_evict(sharc_shard_group_t *g, int unit, int want);

/* The prefetch depth from now on (@p why: a sharc_shard_auto_why_t). */
SHARC_HIDDEN void sharc_shard_trace_depth(sharc_shard_group_t *g, int old_depth, int depth,
                                          int why);

/* A step ended (@p s: its statistics, exposed time final on the host). */
SHARC_HIDDEN void sharc_shard_trace_step(sharc_shard_group_t *g, const sharc_shard_stats_t *s,
                                         double t0, double t1);

#endif
