/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/sharc_cuda.h: the CUDA side of sharc's API, opt-in: it includes the CUDA runtime's
 * header, which <sharc/sharc.h> never does. Collectives take CUDA device buffers like host
 * ones (sharc finds out which they are); on CUDA buffers they run through NCCL on a
 * communication stream of the communicator's own, ordered after the work on the caller's
 * stream and before what the caller queues there after sharc_request_wait_stream, with no
 * host synchronization. Without NCCL (or where it cannot run) CUDA buffers are staged
 * through page-locked host memory over the host transports.
 */
#ifndef SHARC_CUDA_H
#define SHARC_CUDA_H

#include <cuda_runtime_api.h>
#include <sharc/sharc.h>

SHARC_BEGIN_DECLS

/**
 * The stream the caller's work on @p comm's CUDA buffers runs on: a collective posted after
 * this reads its buffers once the work queued on @p stream before the post is done. Default:
 * the legacy default stream (0); a communicator made by sharc_comm_split takes its parent's.
 * NCCL runs on the current CUDA device of the first collective on CUDA buffers (set it with
 * cudaSetDevice first, one device per rank).
 * Thread safety: not with collectives being posted on @p comm.
 */
SHARC_API sharc_status_t sharc_comm_set_cuda_stream(sharc_comm_h comm, cudaStream_t stream);

/**
 * Make @p stream wait, on the device, until @p req's collective is done, and return at once:
 * work queued on @p stream afterwards sees its results. For a request that runs on the host
 * (host buffers, or CUDA buffers staged through host memory) this blocks as
 * sharc_request_wait does. A request waited for this way may be freed at once: sharc
 * releases it when it completes.
 * @return SHARC_OK, or the error that ended the collective already.
 */
SHARC_API sharc_status_t sharc_request_wait_stream(sharc_request_h req, cudaStream_t stream);

SHARC_END_DECLS

#endif
