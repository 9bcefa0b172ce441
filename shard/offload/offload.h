/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * offload.h: where a group's f32 state lives (offload, sharc/shard.h) and the work the
 * host does on it: placement and memory (shard_offload.c), the host's worker and its tasks
 * (shard_host.c) over a pool of threads (shard_pool.c), and the engine's AdamW
 * (shard_adamw.c). A "host unit" is one whose master, gradient shard and states the CPU
 * reads: every unit of a host group, and those a CUDA group offloads (host or managed); the
 * others are "device units". Internal to shard/.
 */
#ifndef SHARC_SHARD_OFFLOAD_H
#define SHARC_SHARD_OFFLOAD_H

#include <pthread.h>

#include "shard/shard.h"

/* What a unit's f32 shard holds (its placement decides where each kind lives). */
typedef enum {
    SHARC_SHARD_MEM_MASTER,
    SHARC_SHARD_MEM_GRAD,
    SHARC_SHARD_MEM_STATE,
} sharc_shard_mem_t;

/* One unit's placement and its state on the host side. */
typedef struct {
    sharc_memtype_t where; /* HOST (a host group's, or offloaded), CUDA, CUDA_MANAGED */
    /* offload host: the unit's shard in the param dtype on the device (what gathers send), the
     * event after its last upload (the upload stream), and whether the master changed since */
    void *dparam, *up_ev;
    int dirty;
    /* the event after which the unit's reduced gradients are on their way to the host (the
     * download stream: offload host) or in its managed shard (the engine's stream: managed) */
    void *land_ev;
    /* this step: its reduction in flight was posted after sharc_shard_adamw_step (it is the
     * gradient the update takes), that gradient has landed (sumsq is its sum of squares), its
     * update was queued */
    int final, landed, updated;
    double sumsq;
    /* the gradient shard holds old values though it counts as zero (zero_grads skipped the
     * pass): the next landing writes instead of adding, a reader zeroes it first */
    int stale;
    int pending; /* tasks queued or running for it (the worker's lock) */
} sharc_shard_ounit_t;

/* What a task does to its unit, in this order. */
enum {
    SHARC_SHARD_TASK_LAND = 1u << 0,   /* its reduced gradient arrives: into the shard */
    SHARC_SHARD_TASK_SUMSQ = 1u << 1,  /* the shard's sum of squares (clipping, the norm) */
    SHARC_SHARD_TASK_UPDATE = 1u << 2, /* AdamW */
    SHARC_SHARD_TASK_UPLOAD = 1u << 3, /* offload host: the master to the device's copy */
};

typedef struct sharc_shard_task sharc_shard_task_t;

/*
 * What the worker runs of a task after its landing and sum of squares: its update and its
 * upload. Whoever queues the task sets it (shard_adamw.c, shard_offload_move.c), so that the
 * worker's loop (shard_host.c) calls no kind of task by name.
 */
typedef sharc_status_t (*sharc_shard_task_fn_t)(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                const sharc_shard_task_t *t);

struct sharc_shard_task {
    int unit;
    unsigned what;             /* SHARC_SHARD_TASK_* */
    int slot;                  /* LAND (offload host): the download slot its gradient arrives in */
    int overwrite;             /* LAND: the shard counts as zero: write it */
    double scale;              /* LAND: 1 / ranks for AVG, else 1 */
    sharc_kern_adamw_t a;      /* UPDATE: this step's AdamW (keep: the decayed ranges') */
    sharc_shard_task_fn_t run; /* UPDATE, UPLOAD: what does them (NULL without either) */
};

typedef struct sharc_shard_pool sharc_shard_pool_t;
typedef struct sharc_shard_host sharc_shard_host_t;

/* The group's offload: mode, placement, the copy streams and the host's worker. */
typedef struct sharc_shard_off {
    sharc_shard_offload_t mode; /* as run: managed may have fallen back to host */
    double fraction;            /* of the elements on the host (units kept on the GPU: the rest) */
    int threads;                /* the host's threads for its work (SHARC_SHARD_OFFLOAD_THREADS) */
    sharc_shard_ounit_t *units; /* [nunits] */
    /* offload host: the streams gradients go down to the host on and parameters come up on
     * (two: the link carries both ways at once) */
    void *down, *up;
    size_t max_shard;
    sharc_shard_host_t *host; /* the worker (NULL until one is needed) */
} sharc_shard_off_t;

/* A run of a unit's shard that takes weight decay or does not (shard-local elements). */
typedef struct {
    size_t start, count;
    int decay;
} sharc_shard_seg_t;

/* The engine's AdamW (sharc_shard_adamw_create; shard_adamw.c). */
typedef struct sharc_shard_adamw {
    int exp_avg, exp_avg_sq; /* state indices */
    sharc_shard_seg_t *segs; /* every unit's runs: unit u's are segs[first[u] .. first[u+1]) */
    int *first;
    int armed; /* sharc_shard_adamw_step was called this step */
    sharc_shard_adamw_t hp;
    float norm; /* the last finished step's global gradient norm */
    /* device units: the sum of their squares and its scratch (1 + SHARC_KERN_SUMSQ_SCRATCH
     * doubles of device memory), and its copy on the host */
    double *dsum, hsum;
} sharc_shard_adamw_state_t;

/* ---- placement and memory (shard_offload.c) ------------------------------------------- */

/* The group's settings of offload (cfg's, else the knobs'); checked. */
SHARC_HIDDEN sharc_status_t sharc_shard_offload_settings(sharc_shard_group_t *g,
                                                         const sharc_shard_params_t *cfg);

/* Where each unit lives, the streams, managed memory's check (falling back to host, logged);
 * before the shards are allocated. Nothing for a group without offload (host units of a
 * host group still get their placement). */
SHARC_HIDDEN sharc_status_t sharc_shard_offload_setup(sharc_shard_group_t *g);
SHARC_HIDDEN void sharc_shard_offload_free(sharc_shard_group_t *g);

/* Where unit @p u's master, gradient shard and states live (placed by offload_setup). */
static inline sharc_memtype_t sharc_shard_unit_where(const sharc_shard_group_t *g,
                                                     const sharc_shard_unit_t *u)
{
    return (g->off != NULL && g->off->units != NULL)
               ? g->off->units[u->id].where
               : (g->cuda ? SHARC_MEMTYPE_CUDA : SHARC_MEMTYPE_HOST);
}

/* The unit's state is read by the CPU (a host unit). */
static inline int sharc_shard_host_unit(const sharc_shard_group_t *g, const sharc_shard_unit_t *u)
{
    return sharc_shard_unit_where(g, u) != SHARC_MEMTYPE_CUDA;
}

/* The unit is offloaded to page-locked host memory from a CUDA group (gathers read dparam). */
static inline int sharc_shard_pinned_unit(const sharc_shard_group_t *g, const sharc_shard_unit_t *u)
{
    return g->cuda && sharc_shard_unit_where(g, u) == SHARC_MEMTYPE_HOST;
}

/* A zeroed f32 shard of unit @p u of a @p kind, where the unit's placement says (offloaded:
 * master and gradient page-locked, states pageable; or managed); and its release. */
SHARC_HIDDEN sharc_status_t sharc_shard_unit_alloc(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                   sharc_shard_mem_t kind, float **ptr_p);
SHARC_HIDDEN void sharc_shard_unit_free(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                        sharc_shard_mem_t kind, float *ptr);

/*
 * Before unit @p u's gather: its update done on the host, its master uploaded where it
 * changed, and the engine's stream after the upload. *own_p: what the gather sends (the
 * master, or dparam for an offloaded unit); *stage_p: whether it goes into the unit's own
 * block of the buffer first (a cast to the param dtype, or out of managed memory), the
 * all-gather then running in place.
 */
SHARC_HIDDEN sharc_status_t sharc_shard_offload_gather(sharc_shard_group_t *g,
                                                       sharc_shard_unit_t *u, const void **own_p,
                                                       int *stage_p);

/*
 * The unit's reduced part (in its gradient buffer, the engine's stream after it) goes to its
 * host shard: offload host downloads it and queues its landing (the buffer is given back with
 * its last use on the download stream); managed adds it on the device first. Returns
 * SHARC_ERR_UNSUPPORTED for a device unit (the caller accumulates as usual).
 */
SHARC_HIDDEN sharc_status_t sharc_shard_offload_reduced(sharc_shard_group_t *g,
                                                        sharc_shard_unit_t *u);

/* The unit's gradient landed in its shard (host groups: accumulated on the host; device units
 * of a CUDA group: on the engine's stream): the optimizer's turn. */
SHARC_HIDDEN sharc_status_t sharc_shard_offload_landed(sharc_shard_group_t *g,
                                                       sharc_shard_unit_t *u);

/* zero_grads of a host unit: it counts as zero, the pass is skipped (stale). Returns
 * SHARC_ERR_UNSUPPORTED where zeroing stays the caller's (device units; host groups without
 * the engine's optimizer). */
SHARC_HIDDEN sharc_status_t sharc_shard_offload_zero(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Before the caller reads a host unit's shards (@p write: it may change the master): its
 * tasks done, a stale gradient zeroed, and the master marked to be uploaded again. */
SHARC_HIDDEN sharc_status_t sharc_shard_offload_touch(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                      int write);

/* Every unit's master may have changed (load, sync_replicas): upload them again before use. */
SHARC_HIDDEN void sharc_shard_offload_dirty_all(sharc_shard_group_t *g);

/* Page-locked bytes of the host worker's slots. */
SHARC_HIDDEN size_t sharc_shard_host_slot_bytes(const sharc_shard_group_t *g);

/* Bytes of the group's memory on the device and in host memory (sharc_shard_memory). */
SHARC_HIDDEN void sharc_shard_offload_bytes(const sharc_shard_group_t *g, size_t *device_p,
                                            size_t *host_p);

/* ---- the host's worker: the caller's side (shard_host_sync.c) ----------------------------- */

/* Start the worker (its thread and pool) if the group has none; the group's host_abort and
 * host_quiesce hooks reach it from then on. */
SHARC_HIDDEN sharc_status_t sharc_shard_host_start(sharc_shard_group_t *g);
/* Cancel what is queued, wait for what runs, stop the thread, unset the hooks (destroy). */
SHARC_HIDDEN void sharc_shard_host_stop(sharc_shard_group_t *g);

/* Queue a task (its unit's pending count goes up). */
SHARC_HIDDEN sharc_status_t sharc_shard_host_queue(sharc_shard_group_t *g,
                                                   const sharc_shard_task_t *t);
/* Wait until unit @p u has no task queued or running (@p u NULL: every unit), bounded by the
 * collective timeout; the time counts as exposed, waiting for a collective of @p type (an
 * all-gather: the unit's parameters). The worker's first error, if any. */
SHARC_HIDDEN sharc_status_t sharc_shard_host_wait(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                  sharc_coll_type_t type);
/* Wait until every host unit's gradient has landed (its sum of squares is known). */
SHARC_HIDDEN sharc_status_t sharc_shard_host_wait_landed(sharc_shard_group_t *g);

/* A download slot for unit @p u's gradient part (waiting for the worker to free one). */
SHARC_HIDDEN sharc_status_t sharc_shard_host_slot(sharc_shard_group_t *g, int *slot_p,
                                                  void **ptr_p);
/* A download slot back unused (its download could not be queued). */
SHARC_HIDDEN void sharc_shard_host_slot_put(sharc_shard_group_t *g, int slot);

/* ---- the host's worker: its thread (shard_host.c) ----------------------------------------- */

/* The worker: whether the group failed and what is left should stop. */
SHARC_HIDDEN int sharc_shard_host_cancelled(sharc_shard_group_t *g);

/* The worker's upload of a pinned unit's master to its dparam (a task's run: UPLOAD only). */
SHARC_HIDDEN sharc_status_t sharc_shard_task_upload(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                                    const sharc_shard_task_t *t);

/* The pool's parallel loop, for the task's pieces: fn over [0, n) in chunks of @p grain
 * elements (chunk index, its range), on every thread of the worker. */
typedef void (*sharc_shard_chunk_fn_t)(void *arg, size_t chunk, size_t lo, size_t hi);
SHARC_HIDDEN void sharc_shard_host_for(sharc_shard_group_t *g, size_t n, size_t grain,
                                       sharc_shard_chunk_fn_t fn, void *arg);

/* ---- the pool (shard_pool.c) -------------------------------------------------------------- */

/* @p nthreads threads in all: the caller of sharc_shard_pool_for and nthreads - 1 helpers. */
SHARC_HIDDEN sharc_status_t sharc_shard_pool_create(int nthreads, sharc_shard_pool_t **pool_p);
SHARC_HIDDEN void sharc_shard_pool_destroy(sharc_shard_pool_t *pool);
/* fn over [0, n) in chunks of @p grain, on the caller and the helpers; returns when all are
 * done. One caller at a time. */
SHARC_HIDDEN void sharc_shard_pool_for(sharc_shard_pool_t *pool, size_t n, size_t grain,
                                       sharc_shard_chunk_fn_t fn, void *arg);

/* ---- the engine's AdamW (shard_adamw.c) --------------------------------------------------- */

/* The step ends (finish, after the reductions landed on the device): the global norm from
 * every unit's sum of squares, then the updates not queued yet, in forward order. */
SHARC_HIDDEN sharc_status_t sharc_shard_adamw_finish(sharc_shard_group_t *g);

/* A reduction of unit @p u is posted: it is the step's last if the update is armed (a second
 * one after that is the caller's mistake: SHARC_ERR_INVALID). */
SHARC_HIDDEN sharc_status_t sharc_shard_adamw_posted(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* A host unit's landing is queued as @p t: what follows it in the same task (its sum of
 * squares once its gradient is the step's; without clipping, its update and upload). */
SHARC_HIDDEN void sharc_shard_adamw_task(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                         sharc_shard_task_t *t);

/* A device unit landed (on the engine's stream): its sum of squares and update there. */
SHARC_HIDDEN sharc_status_t sharc_shard_adamw_device(sharc_shard_group_t *g, sharc_shard_unit_t *u);

SHARC_HIDDEN void sharc_shard_adamw_free(sharc_shard_group_t *g);

#endif
