/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/ops_cuda.h: the ops table on one GPU (its kernels and products are in cuda/):
 * cuBLAS products with f32 accumulation, CUDA kernels for the rest, everything queued on one
 * stream per process, in f32 (checked against the CPU table) or bf16 (for speed). A build
 * without CUDA has cuda_none.c, whose open says so.
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

/**
 * Open the CUDA table computing in @p act_dtype (f32 or bf16): the GPU of @p comm's local rank
 * (modulo the visible devices; device 0 for a NULL comm), a non-blocking stream on it, cuBLAS
 * on the stream; @p comm's collectives on device buffers follow the stream. One GPU per
 * process: every open must name the same device (reference-counted; llama_cuda_close undoes
 * one open). *stream_p: the stream (a cudaStream_t), for the shard engine.
 * @p tiled: the attention of the bf16 table is the memory-efficient tiled kernel (no T x T
 * buffers; for head sizes 32, 64 and 128 whose tiles fit the GPU's shared memory, others
 * materialize the probabilities); 0: it materializes them with cuBLAS, as the f32 table
 * always does. The device llama_cuda_pick_device chose must be the one of @p comm's local
 * rank (modulo the devices): it is, unless the launcher set none of those variables and
 * several GPUs are visible; llama_cuda_open then fails, saying so.
 * @return SHARC_OK; SHARC_ERR_UNSUPPORTED without CUDA or without a usable device (logged:
 *         which); SHARC_ERR_INVALID for another dtype; SHARC_ERR_BACKEND.
 */
sharc_status_t llama_cuda_open(sharc_comm_h comm, sharc_dtype_t act_dtype, int tiled,
                               const llama_ops_t **ops_p, void **stream_p);
void llama_cuda_close(void);

#ifdef __cplusplus
}
#endif

#endif
