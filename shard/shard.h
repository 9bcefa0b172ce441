/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard.h: what every part of the sharding engine shares (public contract in sharc/shard.h).
 * A group holds units; a unit holds its rank's f32 master and gradient shards for good, and,
 * for a while, an unsharded parameter buffer (param dtype) and an unsharded gradient buffer
 * (reduce dtype). Here: those types, the group's collectives and buffers as data, its knobs.
 * Each folder declares its own functions, from the bottom: plan/shard_plan.h (the schedule's
 * decisions, pure, which sharc-perf predict replays too), trace/shard_record.h (statistics and
 * the timeline), engine/shard_engine.h (the engine: its low level, then its top),
 * offload/offload.h (where f32 state lives, the host's worker, AdamW: above the engine's
 * low level, below its top), checkpoint/ckpt.h (the files save and load share).
 */
#ifndef SHARC_SHARD_INT_H
#define SHARC_SHARD_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/coll.h>
#include <sharc/shard.h>

#include "coll/api.h"
#include "comm/comm.h"
#include "kernels/kernels.h"
#include "shard/plan/shard_plan.h"

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
} sharc_shard_coll_t;

typedef struct sharc_shard_unit {
    int id, first_param, nparams;
    size_t count;         /* end of the last parameter, elements */
    size_t padded;        /* shard * shard_size */
    size_t shard;         /* elements per rank */
    float *master, *grad; /* [shard] each, f32 */
    int grad_zero;        /* grad is all zeros (sharc_shard_zero_grads, creation, load) */
    float **state;        /* [group->nstates][shard] */

    sharc_shard_pstate_t pstate;
    void *pbuf;            /* [padded] param dtype, while not SHARDED */
    sharc_shard_coll_t ag; /* (prefetched, in use: the group's plan says, g->plan.units[id]) */
    void *sbuf;            /* hpZ: this rank's part of the forward's parameters, or NULL */
    double t_begun;        /* trace: when its last begin returned */

    sharc_shard_gstate_t gstate;
    void *gbuf; /* [padded] reduce dtype, while not NONE */
    sharc_shard_coll_t rs, ar;
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
    sharc_coll_step_metrics_t *metrics; /* shard_comm's step figures, or NULL: metrics off */
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

    /* where units' f32 state lives and the host's work on it (offload.h): set for every
     * group; and the engine's AdamW (sharc_shard_adamw_create), or NULL */
    struct sharc_shard_off *off;
    struct sharc_shard_adamw *adamw;
    /*
     * Hooks of offload's host worker: set while the group has one (shard_host_sync.c starts
     * and stops it), else NULL. Failing the group (shard_coll.c) and quiescing it (shard_mem.c)
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

#endif
