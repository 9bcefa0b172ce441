/*
 * shard.h: the sharding engine's internals (public contract in sharc/shard.h). A group holds
 * units; a unit holds its rank's f32 master and gradient shards for good, and, for a while,
 * an unsharded parameter buffer (param dtype) and an unsharded gradient buffer (reduce
 * dtype). The schedule (shard_sched.c) decides when buffers are gathered; shard_unit.c moves
 * them; shard_stats.c accounts for time and memory; shard_state.c saves and loads shards.
 */
#ifndef SHARC_SHARD_INT_H
#define SHARC_SHARD_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sharc/coll.h>
#include <sharc/shard.h>

#include "../coll/coll.h"
#include "../kernels/kernels.h"
#include "../src/comm.h"

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

/* A collective the group posted, for completion and time accounting. */
typedef struct {
    sharc_request_h req;
    double t_post;
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
    void *pbuf; /* [padded] param dtype, while not SHARDED */
    sharc_shard_op_t ag;
    int prefetched; /* gathered ahead of its begin, and not used yet */
    int in_use;     /* between a begin and its end */

    sharc_shard_gstate_t gstate;
    void *gbuf; /* [padded] reduce dtype, while not NONE */
    sharc_shard_op_t rs, ar;
    int rs_direct; /* the reduce-scatter writes the gradient shard itself */
    struct sharc_shard_unit *next_reduction; /* the group's queue of reductions in flight */

    size_t unsharded_bytes;          /* pbuf and gbuf */
    sharc_shard_stats_t stats, last; /* this step's and the last finished step's */
} sharc_shard_unit_t;

/* A released unsharded buffer kept for reuse (each comes from sharc_mem_alloc). */
typedef struct {
    void *ptr;
    size_t bytes;
} sharc_shard_buf_t;

/* One interval [t0, t1] a collective was in flight, for the union in the statistics. */
typedef struct {
    double t0, t1;
    int unit;
} sharc_shard_span_t;

struct sharc_shard_group {
    sharc_comm_h comm;         /* the caller's, not owned */
    sharc_comm_h shard_comm;   /* ranks sharing one copy of the model: split of comm, owned */
    sharc_comm_h replica_comm; /* HSDP: the same shard rank in every shard group, or NULL */
    sharc_context_h ctx;
    int rank, size; /* in comm */
    int shard_rank, shard_size;
    int replica_rank, replicas;
    const sharc_kern_ops_t *kern;

    sharc_dtype_t pdtype, rdtype;
    size_t pesize, resize;
    sharc_op_t grad_op;
    int prefetch, max_unsharded, reshard_after_forward;
    int sync;         /* backward_end reduces (set_sync) */
    int assign_grads; /* the caller writes fresh gradient buffers: only gaps are zeroed */

    int nparams;
    sharc_shard_param_info_t *params; /* names owned */
    int nunits;
    sharc_shard_unit_t *units;
    int nstates;
    char **state_names;

    /* the schedule (shard_sched.c): per phase, the order in use and the one being seen */
    int *order[SHARC_SHARD_PHASE_LAST], norder[SHARC_SHARD_PHASE_LAST];
    int order_set[SHARC_SHARD_PHASE_LAST]; /* set by the caller: never re-recorded */
    int *seen[SHARC_SHARD_PHASE_LAST], nseen[SHARC_SHARD_PHASE_LAST];
    int cursor;   /* entries of forward-then-backward begun this step */
    int sched_ok; /* this step has followed the schedule so far: prefetch along it */

    int alive;                         /* units not SHARDED */
    sharc_shard_unit_t *rhead, *rtail; /* reductions in flight, in posting order */

    sharc_shard_buf_t *pool; /* released buffers, at most pool_max */
    int npool, pool_max;
    float *scratch; /* [max shard] f32, for bf16 gradients on their way into the shard */

    /* statistics (shard_stats.c) */
    double step_t0;
    sharc_shard_span_t *spans;
    size_t nspans, spans_cap;
    size_t unsharded_bytes;
    sharc_shard_stats_t stats, last;
    int have_last;

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

/* ---- the group (shard_group.c) --------------------------------------------------------- */

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

/* ---- units (shard_unit.c) ------------------------------------------------------------- */

/* For sharc_shard_enter: the call is about the whole group, not one unit. */
#define SHARC_SHARD_ALL INT_MIN

/* The group's entry check: NULL group, a unit out of range, a failed group. */
SHARC_HIDDEN sharc_status_t sharc_shard_enter(sharc_shard_group_t *g, int unit, const char *what);

/* Post the unit's all-gather (it is SHARDED and a slot is free). */
SHARC_HIDDEN sharc_status_t sharc_shard_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Create the unit's zeroed unsharded gradient buffer (it has none). */
SHARC_HIDDEN sharc_status_t sharc_shard_open_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Wait until the unit's reduction in flight, if any, has reached its gradient shard. */
SHARC_HIDDEN sharc_status_t sharc_shard_settle_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Complete what has completed, without blocking; chain HSDP all-reduces. */
SHARC_HIDDEN sharc_status_t sharc_shard_poll(sharc_shard_group_t *g);

/* Release a unit's parameters (waiting for a gather in flight). */
SHARC_HIDDEN sharc_status_t sharc_shard_release(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Complete every outstanding operation, errors ignored (destroy). */
SHARC_HIDDEN void sharc_shard_drain(sharc_shard_group_t *g);

/* Unsharded buffers: from the pool or sharc_mem_alloc; back to the pool. */
SHARC_HIDDEN void *sharc_shard_buf_get(sharc_shard_group_t *g, size_t bytes);
SHARC_HIDDEN void sharc_shard_buf_put(sharc_shard_group_t *g, void *ptr, size_t bytes);

/* ---- schedule (shard_sched.c) --------------------------------------------------------- */

/* A step ended: adopt the order seen this step where it differs from the schedule. */
SHARC_HIDDEN void sharc_shard_sched_step(sharc_shard_group_t *g);

/* Gather the next units of the schedule ahead of use, within max_unsharded. */
SHARC_HIDDEN sharc_status_t sharc_shard_sched_prefetch(sharc_shard_group_t *g);

/* The schedule's arrays (room for every unit running a few times per phase). */
SHARC_HIDDEN sharc_status_t sharc_shard_sched_init(sharc_shard_group_t *g);
SHARC_HIDDEN void sharc_shard_sched_free(sharc_shard_group_t *g);

/* ---- statistics (shard_stats.c) ------------------------------------------------------- */

/* A collective of unit @p u ran from t0 to t1 (bytes: its unsharded buffer). */
SHARC_HIDDEN void sharc_shard_stats_op(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                       sharc_coll_type_t type, double t0, double t1, size_t bytes);

/* The caller was blocked on communication for unit @p u (or -1) from t0 to now. */
SHARC_HIDDEN void sharc_shard_stats_exposed(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                            double t0);

/* The caller spent from t0 to now in a step call of the engine. */
SHARC_HIDDEN void sharc_shard_stats_engine(sharc_shard_group_t *g, double t0);

/* Unit @p u's unsharded bytes went up or down by @p delta. */
SHARC_HIDDEN void sharc_shard_stats_mem(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                        long long delta);

/* The step ended: fold spans into comm/hidden time, keep it as the last step, reset. */
SHARC_HIDDEN void sharc_shard_stats_step(sharc_shard_group_t *g);

#endif
