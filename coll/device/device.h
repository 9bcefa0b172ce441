/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.h: collectives, sends and receives on CUDA buffers: run whole by the communicator's
 * CUDA backend (NCCL), over a quantized wire with the quantizers on the device, or
 * staged through page-locked host memory and the host algorithms (algorithms.h).
 */
#ifndef SHARC_COLL_DEVICE_H
#define SHARC_COLL_DEVICE_H

#include "../algorithms/algorithms.h"

/* Collectives on CUDA buffers: through the CUDA backend (cuda_backend.c), or staged through
 * host memory (staged.c). */
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_cuda_backend;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_staged;
/* ... over a quantized wire: quantizers on the device, the bytes through the backend
 * (quant_device.c). */
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_quant_device;

/* ---- the public sends and receives on CUDA buffers (sendrecv_device.c) */

extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_p2p_device;

/* Issue @p n sends and receives on CUDA buffers together through the CUDA backend
 * (lock held). SHARC_OK: each task holds its request and event; else none was issued. */
SHARC_HIDDEN sharc_status_t sharc_coll_p2p_issue(sharc_coll_task_t *const *tasks, size_t n);

#endif
