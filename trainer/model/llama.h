/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/llama.h: the Llama 2/3 model of sharc-llama: its configuration (named configs, a
 * Hugging Face config.json), its parameters as sharc shard units (one unit per transformer
 * block, one for the embedding, one for the final norm and output head), and a training step
 * through the shard engine. The arithmetic is behind llama_ops_t (ops.h): f32 on the CPU, or
 * f32 / bf16 on one GPU per rank with the engine in its CUDA mode (ops/ops_cuda.h).
 */
#ifndef SHARC_LLAMA_H
#define SHARC_LLAMA_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/sharc.h>

#include "../ops/ops.h"
#include "prof.h"

/** Model shape. Names follow Hugging Face's LlamaConfig where one exists. */
typedef struct {
    char name[32];
    int dim;        /**< C: hidden_size */
    int n_layers;   /**< L */
    int n_heads;    /**< H */
    int n_kv_heads; /**< KV: grouped-query heads, a divisor of H */
    int head_dim;   /**< hd: dim / n_heads unless the config says otherwise */
    int hidden_dim; /**< F: intermediate_size of the SwiGLU MLP */
    int vocab;      /**< V */
    int max_seq;    /**< longest sequence the rope table covers */
    double rope_theta;
    double norm_eps;
    /** Llama 3 rope scaling (rope_type "llama3"); rope_factor 0: none. */
    double rope_factor, rope_low_freq, rope_high_freq;
    int rope_orig_max;
} llama_config_t;

/** Fill @p cfg with a named config (tiny, 15m, 42m, 110m, 1b, llama2-7b, llama2-13b,
 *  llama2-70b, llama3-8b, llama3.1-8b). SHARC_ERR_INVALID, listing the names, for another. */
sharc_status_t llama_config_named(const char *name, llama_config_t *cfg);
/** Print the named configs, one per line. */
void llama_config_list(FILE *stream);
/** Check a config's shapes (positive, H divisible by KV, even head_dim...). */
sharc_status_t llama_config_check(const llama_config_t *cfg);
/** Read a Hugging Face config.json (classic rope_theta / rope_scaling keys, or
 *  rope_parameters). */
sharc_status_t llama_config_load_hf(const char *path, llama_config_t *cfg);
/** Write @p cfg as a Hugging Face config.json (LlamaForCausalLM, float32). */
sharc_status_t llama_config_save_hf(const llama_config_t *cfg, const char *path);
/** Parameters in all, and those that do work per token (all but the embedding table). */
size_t llama_config_params(const llama_config_t *cfg);
size_t llama_config_params_nonembed(const llama_config_t *cfg);
/**
 * Training FLOPs per token at sequence length T, forward + backward (3x forward), without
 * recomputation: 6 * (non-embedding parameters) + 12 * L * H * hd * T (attention scores and
 * values, PaLM appendix B's formula counting the full T x T square).
 */
double llama_config_flops_per_token(const llama_config_t *cfg, int T);

/** Where the model computes. */
typedef enum {
    LLAMA_DEVICE_CPU = 0, /**< the host's cores (BLAS, OpenMP threads), f32 */
    LLAMA_DEVICE_CUDA,    /**< the GPU of the rank's local rank; shards and compute on it */
} llama_device_t;

/** How attention is computed. */
typedef enum {
    LLAMA_ATTENTION_AUTO = 0, /**< cudnn where it runs the model's shape (CUDA, bf16), else
                                   flash (CUDA, bf16), else gemm */
    LLAMA_ATTENTION_GEMM,     /**< the (B,H,T,T) probabilities materialized, products by BLAS */
    LLAMA_ATTENTION_FLASH,    /**< tiled, memory-efficient, on tensor cores (CUDA, bf16) */
    LLAMA_ATTENTION_CUDNN,    /**< cuDNN's fused attention (CUDA, bf16, head sizes 64 and 128;
                                   a build with cuDNN) */
} llama_attention_t;

/** What the engine keeps of a unit after its forward (sharc_shard_params_t). */
typedef enum {
    LLAMA_RESHARD_DEFAULT = 0, /**< sharc's (SHARC_SHARD_RESHARD_AFTER_FORWARD) */
    LLAMA_RESHARD_YES,         /**< nothing: the backward gathers again across every node */
    LLAMA_RESHARD_NO,          /**< every parameter */
    LLAMA_RESHARD_NODE,        /**< a node-local secondary shard (hpZ) */
} llama_reshard_t;

/** How the model is sharded and computed. */
typedef struct {
    int batch;                   /**< B: sequences per micro-batch on this rank */
    int seq;                     /**< T */
    int recompute;               /**< recompute each block's activations in backward */
    int head_rows;               /**< rows of (N, V) logits the head computes at once;
                                      0: as many as fit 256 MiB (model_int.h) */
    sharc_dtype_t param_dtype;   /**< f32 or bf16: the gathered parameters */
    sharc_dtype_t reduce_dtype;  /**< f32 or bf16: gradient reduction */
    int shard_size;              /**< HSDP shard group size; 0: every rank */
    int prefetch;                /**< units gathered ahead; 0: sharc's default;
                                      SHARC_SHARD_PREFETCH_AUTO: adaptive */
    llama_device_t device;       /**< CPU (0, the default) or CUDA */
    sharc_dtype_t compute_dtype; /**< f32 (0, the default) or bf16 (CUDA): activations and
                                      the products' inputs; products accumulate in f32 */
    llama_attention_t attention; /**< AUTO (0, the default), GEMM, FLASH or CUDNN */
    /** CUDA: where the shard engine keeps the f32 masters, gradient shards and AdamW's
     *  moments (none: on the GPU); with offload the engine's AdamW updates them on the CPU */
    sharc_shard_offload_t offload;
    double offload_fraction;  /**< the share of elements offloaded, (0, 1]; 0: all */
    sharc_wire_t param_wire;  /**< the gathers' wire: FULL (0, the default), INT8, FP8 */
    sharc_wire_t reduce_wire; /**< the reductions' wire */
    int wire_block;           /**< values per scale of a quantized wire; 0: sharc's */
    llama_reshard_t reshard;  /**< what a unit keeps after its forward */
} llama_run_t;

/** Where parameters come from at creation. */
typedef enum {
    LLAMA_INIT_RANDOM, /**< normal(0, 0.02), output projections scaled by 1/sqrt(2L); norms 1 */
    LLAMA_INIT_HF,     /**< a Hugging Face safetensors checkpoint */
} llama_init_t;

typedef struct llama_model llama_model_t;

/**
 * Build the model's shard group over @p comm and set its parameters: each rank computes or
 * reads only the slices of its own shards. @p hf_path: a safetensors file, index or directory
 * (LLAMA_INIT_HF); @p seed for LLAMA_INIT_RANDOM. Collective.
 */
sharc_status_t llama_model_create(sharc_comm_h comm, const llama_config_t *cfg,
                                  const llama_run_t *run, llama_init_t init, const char *hf_path,
                                  uint64_t seed, llama_model_t **model_p);
void llama_model_destroy(llama_model_t *model);

sharc_shard_group_h llama_model_group(llama_model_t *model);
/** The ops table the model computes with (its memory is where the shards live). */
const llama_ops_t *llama_model_ops(const llama_model_t *model);

/**
 * One micro-batch: forward, loss, backward; gradients are reduced (or, with @p sync 0,
 * accumulated unsharded) by the shard engine. @p tokens and @p targets are (B, T). The loss's
 * gradient is scaled by @p grad_scale (1 / micro-batches for accumulation). *loss_p: the mean
 * cross-entropy over this rank's tokens of the micro-batches since the last read, this one
 * included; @p loss_p NULL: not read yet (on CUDA the host then does not wait for the device,
 * so accumulation's micro-batches follow each other without a host sync).
 */
sharc_status_t llama_model_step(llama_model_t *model, const int32_t *tokens, const int32_t *targets,
                                float grad_scale, int sync, float *loss_p);

/**
 * The mean cross-entropy over this rank's tokens of the micro-batches since the last read (at
 * least one): on CUDA the host waits for the compute queued so far, so a trainer reads it at
 * the end of a step, after the optimizer is queued, rather than between backward and update.
 */
sharc_status_t llama_model_loss(llama_model_t *model, float *loss_p);

/**
 * Forward only (evaluation, or a check against a reference): mean loss over this rank's
 * tokens; with @p logits non-NULL, the (B, T, V) logits are copied there. Uses the engine's
 * primitives, so it leaves the training schedule alone.
 */
sharc_status_t llama_model_eval(llama_model_t *model, const int32_t *tokens, const int32_t *targets,
                                float *loss_p, float *logits);

/**
 * Profile the model's steps with @p prof (model/prof.h; NULL: no profile, the default): each op
 * site of llama_model_step and the optimizer marks it. The caller keeps @p prof, and
 * releases it before the model's ops close.
 */
void llama_model_set_prof(llama_model_t *model, llama_prof_t *prof);

/**
 * What each op site of a training step of @p accum micro-batches must do at least on this
 * rank, from the shapes (prof_cost.c): @p flops and @p bytes, LLAMA_SITE_LAST each (0 where
 * none is counted: the waits, and sites that do not run).
 */
void llama_model_site_costs(const llama_model_t *model, int accum, double *flops, double *bytes);

/**
 * Export the f32 master weights as a Hugging Face checkpoint in directory @p dir
 * (config.json + model.safetensors in @p dtype: f32 or bf16), written by rank 0. Collective.
 */
sharc_status_t llama_model_export(llama_model_t *model, sharc_comm_h comm, const char *dir,
                                  sharc_dtype_t dtype);

#endif
