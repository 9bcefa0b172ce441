/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/shard_state.h: what a shard group keeps across steps, beside its parameters
 * (sharc/shard.h, which includes this): the engine's AdamW over the master shards, per-element
 * optimizer states, and checkpoints of both, sharded and atomic, loadable at another
 * shard-group size.
 */
#ifndef SHARC_SHARD_STATE_H
#define SHARC_SHARD_STATE_H

#include <stdint.h>
#include <sharc/shard.h>

SHARC_BEGIN_DECLS

/* ---- the engine's optimizer ---------------------------------------------------------- */

/** One step of the engine's AdamW (sharc_shard_adamw_step), as torch.optim.AdamW computes it
 *  after torch.nn.utils.clip_grad_norm_. */
typedef struct {
    float lr;           /**< this step's learning rate, >= 0 */
    float beta1, beta2; /**< the moments' decay, in [0, 1) (torch: 0.9, 0.999) */
    float eps;          /**< > 0 (torch: 1e-8) */
    float weight_decay; /**< decoupled (p *= 1 - lr * weight_decay) where a parameter decays */
    /** Scale the gradients by max_norm / (norm + 1e-6) when their global norm exceeds it
     *  (0: no clipping). The norm is the whole model's: every unit's shard, every rank. */
    float max_norm;
    int64_t step; /**< the update's number, from 1 (bias correction) */
} sharc_shard_adamw_t;

/**
 * Let the engine run AdamW on the group's shards: each unit is updated where its state
 * lives (host units on the CPU's threads, device units on the engine's stream), as soon as
 * its gradient for the step is complete, overlapping the rest of the backward. Adds the
 * states "exp_avg" and "exp_avg_sq" (torch's names; checkpoints carry them). Not collective,
 * but every rank must call it alike; once per group, before the first step.
 * @param[in] decay  nparams flags, nonzero where a parameter takes weight decay; NULL: all.
 * @return SHARC_OK; SHARC_ERR_INVALID (a second call, a NULL group); SHARC_ERR_NOMEM.
 */
SHARC_API sharc_status_t sharc_shard_adamw_create(sharc_shard_group_h group,
                                                  const unsigned char *decay);

/**
 * Update the parameters with this step's gradients: from this call, each unit's next
 * reduction is the one its update takes (call it before the backward of the step's last
 * micro-batch, the one that reduces). A unit is updated as soon as that reduction has landed
 * in its shard (with max_norm: once sharc_shard_finish knows the global norm); units not
 * reduced after the call are updated at finish with the gradient they hold. Gathers wait for
 * their unit's update, so the next step sees the new parameters; sharc_shard_local,
 * sharc_shard_state_ptr and checkpoints wait for every update. Gradient shards are
 * sharc_shard_zero_grads's to clear, as usual.
 * @return SHARC_OK; SHARC_ERR_INVALID (no sharc_shard_adamw_create, settings out of range:
 *         the log says which); or the group's failure.
 */
SHARC_API sharc_status_t sharc_shard_adamw_step(sharc_shard_group_h group,
                                                const sharc_shard_adamw_t *hp);

/**
 * The global gradient norm (before clipping) of the last step whose update finished
 * (sharc_shard_finish after sharc_shard_adamw_step); the same on every rank.
 */
SHARC_API sharc_status_t sharc_shard_adamw_norm(sharc_shard_group_h group, float *norm_p);

/* ---- sharded state (checkpoints) ----------------------------------------------------- */

/**
 * Add a per-element f32 optimizer state (AdamW's "exp_avg", say) to every unit, shaped like
 * the master shard and zero-filled; it is saved and loaded with the masters. Not collective,
 * but every rank must add the same states in the same order. *index_p is its index for
 * sharc_shard_state_ptr. SHARC_ERR_INVALID for a NULL, empty or repeated name.
 */
SHARC_API sharc_status_t sharc_shard_state_add(sharc_shard_group_h group, const char *name,
                                               int *index_p);

/** This rank's shard of state @p index for @p unit (shard_count f32 elements). */
SHARC_API sharc_status_t sharc_shard_state_ptr(sharc_shard_group_h group, int index, int unit,
                                               float **ptr_p);

/**
 * Save every master shard and optimizer state into directory @p dir (created if needed),
 * one file per shard rank (written by the replica-0 copy) and a metadata file that makes the
 * set self-describing: world and shard-group size, units, parameters with their shapes, the
 * states, each file's size and checksum, and @p step. Collective over the group. Atomic: the
 * files of this save get a new generation, and the metadata file, replaced by rename once
 * every file is on disk, is what makes them the checkpoint; a save that dies or fails
 * leaves the previous checkpoint in @p dir loadable. Needs no reduction in flight.
 * @return SHARC_OK on every rank, or the same error on every rank (the log names the rank
 *         and file); SHARC_ERR_UNSUPPORTED when sharc was built without json-c.
 */
SHARC_API sharc_status_t sharc_shard_save(sharc_shard_group_h group, const char *dir,
                                          uint64_t step);

/**
 * Load a checkpoint written by sharc_shard_save into this group's master shards and states,
 * re-sharding when it was saved with another shard-group size. Collective over the group.
 * The parameters (names, counts, shapes, units) and states must match the group's; files
 * are checked against the metadata's sizes and checksums. *step_p (may be NULL) receives
 * the saved step.
 * @return SHARC_OK on every rank; SHARC_ERR_INVALID on every rank for a corrupt, truncated
 *         or mismatched checkpoint (the log says what and where), SHARC_ERR_IO for a missing
 *         one; nothing in the group changes on failure.
 */
SHARC_API sharc_status_t sharc_shard_load(sharc_shard_group_h group, const char *dir,
                                          uint64_t *step_p);

SHARC_END_DECLS

#endif
