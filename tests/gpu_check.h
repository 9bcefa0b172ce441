/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_check.h: the start of sharc's GPU tests (CUDA builds only): SKIP without a device,
 * a context and a communicator from the launch environment, one device per local rank and a
 * non-blocking stream on it.
 */
#ifndef SHARC_TEST_GPU_CHECK_H
#define SHARC_TEST_GPU_CHECK_H

#include <stdio.h>

#include <cuda_runtime.h>
#include <sharc/sharc.h>

/* The number of devices, or 0 with SKIP printed. */
static inline int gpu_check_devices(void)
{
    int ndev = 0;
    cudaError_t err = cudaGetDeviceCount(&ndev);

    if (err != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device (%s)\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return 0;
    }
    return ndev;
}

/* 0, 77 (no device: SKIP printed) or 1 (no communicator: printed), as main returns. */
static inline int gpu_check_start(const char *name, sharc_context_h *ctx_p, sharc_comm_h *comm_p,
                                  cudaStream_t *stream_p)
{
    int ndev = gpu_check_devices();

    if (ndev == 0) {
        return 77;
    }
    if (sharc_context_create(NULL, ctx_p) != SHARC_OK ||
        sharc_comm_create(*ctx_p, NULL, comm_p) != SHARC_OK) {
        fprintf(stderr, "%s: no communicator\n", name);
        return 1;
    }
    if (cudaSetDevice(sharc_comm_local_rank(*comm_p) % ndev) != cudaSuccess ||
        cudaStreamCreateWithFlags(stream_p, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "%s: no device or stream\n", name);
        return 1;
    }
    return 0;
}

#endif
