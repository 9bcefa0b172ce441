/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_engine.h: the sharding engine (engine/), which offload (offload/offload.h) and
 * the group's top (shard/, shard_group.h) build on: the layout, memory and unsharded buffers,
 * the group's collectives, the wires and hpZ, the schedule and adaptive prefetch. Where it
 * must reach offload's host worker it goes through the group's hooks (shard.h), not calls.
 */
#ifndef SHARC_SHARD_ENGINE_H
#define SHARC_SHARD_ENGINE_H

#include <limits.h>

#include "shard/shard.h"

/* ---- layout (shard_layout.c) ------------------------------------------------------------- */

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

/* ---- memory (shard_mem.c) ---------------------------------------------------------------- */

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

/* ---- the group's collectives (shard_coll.c) ------------------------------------------------ */

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
                                             sharc_shard_coll_t *op, sharc_shard_queue_t queue,
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
                                                 sharc_shard_coll_t *op, sharc_coll_type_t type,
                                                 int block, void *stream);

/* CUDA: the last step's requests, waited for on the host (bounded by the timeout) and
 * freed; this step's become the last step's. @p all: this step's too (destroy). */
SHARC_HIDDEN sharc_status_t sharc_shard_inflight_retire(sharc_shard_group_t *g, int all);

/* Complete every outstanding operation, errors ignored (destroy). */
SHARC_HIDDEN void sharc_shard_drain(sharc_shard_group_t *g);

/* Free the requests seen complete since the last call (finish, destroy). */
SHARC_HIDDEN void sharc_shard_free_retired(sharc_shard_group_t *g);

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

/* ---- schedule (shard_sched.c) ------------------------------------------------------------ */

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

/* ---- adaptive prefetch (shard_auto.c) ---------------------------------------------------- */

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

/* ======== the top: above offload ========================================================== */

#endif
