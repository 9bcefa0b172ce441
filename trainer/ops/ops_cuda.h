/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/ops_cuda.h: the ops table on one GPU (its kernels and products are in cuda/):
 * cuBLAS products with f32 accumulation, cuDNN's fused attention where the build has it, CUDA
 * kernels for the rest, everything queued on one stream per process, in f32 (checked against
 * the CPU table) or bf16 (for speed). A build without CUDA has cuda_none.c, whose open says so.
 */
#ifndef SHARC_LLAMA_OPS_CUDA_H
#define SHARC_LLAMA_OPS_CUDA_H

#include <sharc/sharc.h>

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Make the GPU of this process's local rank the current device, before the communicator is
 * created: sharc opens NCCL on the current device when it creates one. The local rank is the
 * launcher's (LOCAL_RANK as torchrun sets it, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
 * MPI_LOCALRANKID), 0 without one, modulo the visible devices.
 * @return SHARC_OK; SHARC_ERR_UNSUPPORTED (logged) without CUDA or without a device.
 */
sharc_status_t llama_cuda_pick_device(void);

/** The attention of a CUDA table (--attention; model/llama.h's choice, named for the tables). */
typedef enum {
    LLAMA_CUDA_ATTENTION_AUTO = 0, /**< bf16: cuDNN's where it runs the shape, else the tiled
                                        kernel; f32: gemm */
    LLAMA_CUDA_ATTENTION_GEMM,     /**< the probabilities materialized, products by cuBLAS */
    LLAMA_CUDA_ATTENTION_FLASH,    /**< the tiled kernel of cuda/flash.cu (bf16) */
    LLAMA_CUDA_ATTENTION_CUDNN,    /**< cuDNN's fused attention (bf16; a build with cuDNN) */
} llama_cuda_attention_t;

/** The shape the model's attention runs at: B sequences of T tokens, H query heads and KV kv
 *  heads of hd elements. */
typedef struct {
    int B, T, H, KV, hd;
} llama_cuda_attn_shape_t;

/**
 * Open the CUDA table computing in @p act_dtype (f32 or bf16): the GPU of @p comm's local rank
 * (modulo the visible devices; device 0 for a NULL comm), a non-blocking stream on it, cuBLAS
 * on the stream; @p comm's collectives on device buffers follow the stream. One GPU per
 * process: every open must name the same device (reference-counted; llama_cuda_close undoes
 * one open). *stream_p: the stream (a cudaStream_t), for the shard engine.
 * @p attention: how the table computes attention. GEMM materializes the probabilities with
 * cuBLAS, as the f32 table always does; FLASH (bf16) is the memory-efficient tiled kernel (no
 * T x T buffers; head sizes 32, 64 and 128 whose tiles fit the GPU's shared memory, others
 * materialize the probabilities); CUDNN (bf16) is cuDNN's fused attention (head sizes 64 and
 * 128; a build with cuDNN whose library opens here; other shapes take the tiled kernel's
 * path); AUTO takes CUDNN where it runs @p shape, else FLASH in bf16, else GEMM.
 * @p shape: the shape attention will run at (cuDNN's plans for it are built and kept at the
 * open, so that a shape cuDNN does not take is known before training); NULL: not known (the
 * CUDNN table then takes the tiled kernel's path for a shape its plans do not build for).
 * The device llama_cuda_pick_device chose must be the one of @p comm's local rank (modulo the
 * devices): it is, unless the launcher set none of those variables and several GPUs are
 * visible; llama_cuda_open then fails, saying so.
 * @return SHARC_OK; SHARC_ERR_UNSUPPORTED without CUDA or without a usable device, or an
 *         attention that cannot run here (logged: which, and why); SHARC_ERR_INVALID for
 *         another dtype; SHARC_ERR_BACKEND.
 */
sharc_status_t llama_cuda_open(sharc_comm_h comm, sharc_dtype_t act_dtype,
                               llama_cuda_attention_t attention,
                               const llama_cuda_attn_shape_t *shape, const llama_ops_t **ops_p,
                               void **stream_p);
/** NULL where this build's CUDA table has cuDNN's attention, else why not (a sentence). */
const char *llama_cuda_cudnn_missing(void);
void llama_cuda_close(void);

#ifdef __cplusplus
}
#endif

#endif
