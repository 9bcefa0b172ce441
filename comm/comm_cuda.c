/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_cuda.c: the calls of sharc/sharc_cuda.h: the stream a communicator's collectives on
 * CUDA buffers follow, and a stream's wait for a request. Below the public API a stream is
 * a void pointer (base/gpu.h); only here does it have CUDA's type. Built with or
 * without CUDA (without, config/cuda_none gives the header its one type).
 */
#include "config.h"

#include <sharc/sharc_cuda.h>

#include "comm.h"

sharc_status_t sharc_comm_set_cuda_stream(sharc_comm_h comm, cudaStream_t stream)
{
    return sharc_comm_stream_set(comm, (void *)stream);
}

sharc_status_t sharc_request_wait_stream(sharc_request_h req, cudaStream_t stream)
{
    return sharc_coll_request_wait_stream(req, (void *)stream);
}
