/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/optim.h: AdamW on each rank's f32 master shards (moments kept as sharc shard
 * states, so checkpoints carry them), global gradient-norm clipping, and a cosine learning
 * rate with linear warmup. With offload the shard engine's AdamW runs it (on the CPU, per
 * unit as its gradients arrive), with the same arithmetic and the same checkpoint states.
 */
#ifndef SHARC_LLAMA_OPTIM_H
#define SHARC_LLAMA_OPTIM_H

#include "llama.h"

typedef struct {
    float lr;     /**< peak learning rate */
    float min_lr; /**< reached at the last step */
    int warmup;   /**< steps of linear warmup */
    int steps;    /**< total steps (the cosine's length) */
    float beta1, beta2, eps;
    float weight_decay; /**< on matrices and embeddings; never on norms */
    float grad_clip;    /**< max global gradient norm; 0: no clipping */
} llama_optim_cfg_t;

typedef struct llama_optim llama_optim_t;

/** Add the moment states to the model's shard group (before a checkpoint is loaded). */
sharc_status_t llama_optim_create(llama_model_t *model, const llama_optim_cfg_t *cfg,
                                  llama_optim_t **optim_p);
void llama_optim_destroy(llama_optim_t *optim);

/** Learning rate at 0-based @p step: linear warmup to lr, cosine decay to min_lr. */
float llama_optim_lr(const llama_optim_cfg_t *cfg, int step);

/**
 * Before the backward of step @p step's last micro-batch: with the engine's AdamW, its
 * update is armed (each unit's next reduction is the one it takes). Nothing otherwise.
 */
sharc_status_t llama_optim_begin(llama_optim_t *optim, int step);

/**
 * One update from the reduced gradient shards (after sharc_shard_finish): clip by the global
 * norm (one all-reduce), AdamW with bias correction for update number step + 1. Outputs the
 * norm before clipping in *grad_norm_p; @p grad_norm_p NULL: the update is only queued (on
 * CUDA the host does not wait for the device) and llama_optim_norm reads the norm later.
 * Collective. (The engine's AdamW: done by then, or on its way; the norm is the engine's.)
 */
sharc_status_t llama_optim_step(llama_optim_t *optim, int step, float *grad_norm_p, float *lr_p);

/**
 * The gradient norm of the last llama_optim_step, before clipping: on CUDA this waits for the
 * device (the step's one wait, taken once everything of the step is queued).
 */
sharc_status_t llama_optim_norm(llama_optim_t *optim, float *grad_norm_p);

#endif
