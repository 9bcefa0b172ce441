/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_group.h: the top of the sharding engine (shard/), over the engine and offload: a
 * unit's parameters (shard_unit.c), its reductions (shard_reduce.c), the calls that drive them
 * (shard_calls.c, shard_step.c), and a group's life and queries (shard_group.c,
 * shard_query.c: sharc/shard.h declares those). Checkpoints (checkpoint/) build on it.
 */
#ifndef SHARC_SHARD_GROUP_H
#define SHARC_SHARD_GROUP_H

#include "shard/engine/shard_engine.h"
#include "shard/offload/offload.h"
#include "shard/trace/shard_record.h"

/* ---- a unit's parameters (shard_unit.c) -------------------------------------------------- */

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

/* ---- reductions (shard_reduce.c) --------------------------------------------------------- */

/* Start reducing the unit's open gradients: on CUDA the whole chain is queued on the
 * device; on the host the reduce-scatter is posted and the unit joins the queue. */
SHARC_HIDDEN sharc_status_t sharc_shard_reduce_start(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Wait until the unit's reduction in flight, if any, has reached its gradient shard. */
SHARC_HIDDEN sharc_status_t sharc_shard_settle_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u);

/* Advance the reductions in flight that are done, in posting order, without blocking. */
SHARC_HIDDEN sharc_status_t sharc_shard_reduce_poll(sharc_shard_group_t *g);

/* Complete every reduction in flight, in posting order (the host waits). */
SHARC_HIDDEN sharc_status_t sharc_shard_reduce_all(sharc_shard_group_t *g);

/* ---- driving (shard_calls.c) ------------------------------------------------------------- */

/* Complete what has completed, without blocking; chain HSDP all-reduces. */
SHARC_HIDDEN sharc_status_t sharc_shard_poll(sharc_shard_group_t *g);

#endif
