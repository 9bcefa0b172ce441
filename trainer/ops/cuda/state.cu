/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/state.cu: what every file of the GPU ops shares: the process's GPU state
 * (g: device, stream, cuBLAS handle, buffers), and the first-error rule (the first failed
 * CUDA, cuBLAS or cuDNN call is logged; every later call sees g.failed and does nothing).
 */
#include "cuda.cuh"

extern "C" {
#include "../../util.h"
}

namespace llama_cuda
{

state_t g;

/* a failed call of @p lib: the first failure is logged, every later call sees g.failed */
bool failed_call(const char *lib, const char *what, const char *why)
{
    if (!g.failed) {
        llama_err("%s: %s failed on GPU %d: %s", lib, what, g.device, why);
    }
    g.failed = 1;
    return false;
}

bool ok(cudaError_t err, const char *what)
{
    return err == cudaSuccess || failed_call("cuda", what, cudaGetErrorString(err));
}

bool ok_blas(cublasStatus_t st, const char *what)
{
    return st == CUBLAS_STATUS_SUCCESS || failed_call("cuBLAS", what, cublasGetStatusString(st));
}

} /* namespace llama_cuda */
