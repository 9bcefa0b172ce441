/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/cuda.cu: the ops table of the CUDA kernels, and their error translation.
 */
#include "config.h"

#include "elem.cuh"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_KERN
extern "C" {
#include "../../base/log.h"
#include "cuda.h"
}

sharc_status_t sharc_cuda::check(cudaError_t err, const char *what)
{
    if (err == cudaSuccess) {
        return SHARC_OK;
    }
    sharc_error("cuda: %s failed: %s", what, cudaGetErrorString(err));
    return SHARC_ERR_BACKEND;
}

/* (C++17 has no designated initializers: the members in kernels.h's order) */
extern "C" const sharc_kern_ops_t sharc_kern_cuda_ops = {
    "cuda",
    sharc_kern_cuda_cast,
    sharc_kern_cuda_reduce,
    sharc_kern_cuda_scale,
    sharc_kern_cuda_pack,
    sharc_kern_cuda_unpack,
    sharc_kern_cuda_adamw,
    sharc_kern_cuda_sumsq,
    sharc_kern_cuda_quantize,
    sharc_kern_cuda_dequantize,
    sharc_kern_cuda_dequantize_sum,
};

extern "C" const sharc_kern_ops_t *sharc_kern_cuda(void)
{
    return &sharc_kern_cuda_ops;
}
