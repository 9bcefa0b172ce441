/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf_cuda_none.c: sharc-perf built without CUDA: --device cuda says so (the pair of
 * perf_cuda.c).
 */
#include "config.h"

#include <stdio.h>

#include "perf_cuda.h"

static int perf_no_cuda(void)
{
    fprintf(stderr, "sharc-perf: --device cuda needs sharc built with CUDA\n");
    return -1;
}

int perf_cuda_init(sharc_comm_h comm)
{
    return perf_no_cuda();
}

void perf_cuda_fini(void)
{
}

void *perf_cuda_stream(void)
{
    return NULL;
}

int perf_cuda_sync(void)
{
    return perf_no_cuda();
}

int perf_cuda_hold(double seconds)
{
    return perf_no_cuda();
}

int perf_cuda_gemm_init(int n)
{
    return perf_no_cuda();
}

int perf_cuda_gemm(int reps)
{
    return perf_no_cuda();
}

void perf_cuda_gemm_fini(void)
{
}

void *perf_cuda_alloc(size_t bytes)
{
    perf_no_cuda();
    return NULL;
}

void perf_cuda_free(void *p)
{
}

int perf_cuda_put(void *dst, const void *src, size_t bytes)
{
    return perf_no_cuda();
}

int perf_cuda_get(void *dst, const void *src, size_t bytes)
{
    return perf_no_cuda();
}

double perf_cuda_copy_bw(void *dst, const void *src, size_t bytes, int warmup, int iters)
{
    return 0;
}

int perf_nccl_version(void)
{
    return 0;
}

int perf_nccl_init(sharc_comm_h comm)
{
    return perf_no_cuda();
}

void perf_nccl_fini(void)
{
}

int perf_nccl_run(int coll, const void *send, void *recv, size_t count, sharc_dtype_t dtype,
                  sharc_op_t op, int root)
{
    return perf_no_cuda();
}
