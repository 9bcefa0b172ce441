/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf_cuda.c: sharc-perf's GPU side (see perf_cuda.h). A tool, not the library: it calls
 * the CUDA runtime and NCCL directly, with one device, one stream and one NCCL communicator
 * per process. Built only with CUDA (perf_cuda_none.c otherwise).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <sharc/sharc_cuda.h>

#include "perf_cuda.h"
#include "perf_util.h"

static cudaStream_t perf_stream;

static int perf_cuda_ok(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "sharc-perf: %s: %s\n", what, cudaGetErrorString(err));
        return -1;
    }
    return 0;
}

int perf_cuda_init(sharc_comm_h comm)
{
    int ndev = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "sharc-perf: --device cuda, but no CUDA device is visible\n");
        return -1;
    }
    if (perf_cuda_ok(cudaSetDevice(sharc_comm_local_rank(comm) % ndev), "cudaSetDevice") != 0 ||
        perf_cuda_ok(cudaStreamCreateWithFlags(&perf_stream, cudaStreamNonBlocking),
                     "stream create") != 0) {
        return -1;
    }
    return sharc_comm_set_cuda_stream(comm, perf_stream) == SHARC_OK ? 0 : -1;
}

void perf_cuda_fini(void)
{
    cudaStreamDestroy(perf_stream);
}

void *perf_cuda_stream(void)
{
    return perf_stream;
}

int perf_cuda_sync(void)
{
    return perf_cuda_ok(cudaStreamSynchronize(perf_stream), "stream synchronize");
}

/* A host function on the stream: it holds the stream for its argument, in nanoseconds. */
static void CUDART_CB perf_cuda_sleep(void *arg)
{
    uint64_t ns = (uint64_t)(uintptr_t)arg;
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    while (nanosleep(&ts, &ts) != 0) {
    }
}

int perf_cuda_hold(double seconds)
{
    uintptr_t ns = (uintptr_t)(seconds * 1e9);

    return perf_cuda_ok(cudaLaunchHostFunc(perf_stream, perf_cuda_sleep, (void *)ns),
                        "cudaLaunchHostFunc");
}

#ifdef HAVE_CUBLAS
#include <cublas_v2.h>

static cublasHandle_t perf_blas;
static void *perf_gemm_buf;
static int perf_gemm_n;

int perf_cuda_gemm_init(int n)
{
    size_t bytes = (size_t)n * (size_t)n * 2; /* bf16 */

    if (cublasCreate(&perf_blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(perf_blas, perf_stream) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "sharc-perf: cuBLAS cannot start\n");
        return -1;
    }
    if (perf_cuda_ok(cudaMalloc(&perf_gemm_buf, 3 * bytes), "cudaMalloc") != 0 ||
        perf_cuda_ok(cudaMemset(perf_gemm_buf, 0x3c, 3 * bytes), "cudaMemset") != 0) {
        return -1;
    }
    perf_gemm_n = n;
    return 0;
}

int perf_cuda_gemm(int reps)
{
    int n = perf_gemm_n;
    size_t nn = (size_t)n * (size_t)n;
    char *a = perf_gemm_buf, *b = a + 2 * nn, *c = b + 2 * nn;
    float alpha = 1.0f, beta = 0.0f;

    for (int i = 0; i < reps; i++) {
        cublasStatus_t st = cublasGemmEx(perf_blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a,
                                         CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta, c, CUDA_R_16BF,
                                         n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);

        if (st != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "sharc-perf: cublasGemmEx: %s\n", cublasGetStatusString(st));
            return -1;
        }
    }
    return 0;
}

void perf_cuda_gemm_fini(void)
{
    if (perf_blas != NULL) {
        cublasDestroy(perf_blas);
        perf_blas = NULL;
    }
    cudaFree(perf_gemm_buf);
    perf_gemm_buf = NULL;
}
#else
int perf_cuda_gemm_init(int n)
{
    fprintf(stderr, "sharc-perf: GEMMs on the GPU need sharc built with cuBLAS\n");
    return -1;
}

int perf_cuda_gemm(int reps)
{
    return -1;
}

void perf_cuda_gemm_fini(void)
{
}
#endif

void *perf_cuda_alloc(size_t bytes)
{
    void *p = NULL;

    if (perf_cuda_ok(cudaMalloc(&p, bytes), "cudaMalloc") != 0 ||
        perf_cuda_ok(cudaMemset(p, 0, bytes), "cudaMemset") != 0) {
        return NULL;
    }
    return p;
}

void perf_cuda_free(void *p)
{
    cudaFree(p);
}

/* Finished on the device before return: a cudaMemcpy from pageable memory returns once its
 * data is staged, and the collectives' streams (non-blocking) would not wait for the rest. */
int perf_cuda_put(void *dst, const void *src, size_t bytes)
{
    if (perf_cuda_ok(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to device") != 0) {
        return -1;
    }
    return perf_cuda_ok(cudaDeviceSynchronize(), "device synchronize");
}

/* After everything queued on the device (the collectives' streams included). */
int perf_cuda_get(void *dst, const void *src, size_t bytes)
{
    if (perf_cuda_ok(cudaDeviceSynchronize(), "device synchronize") != 0) {
        return -1;
    }
    return perf_cuda_ok(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy from device");
}

double perf_cuda_copy_bw(void *dst, const void *src, size_t bytes, int warmup, int iters)
{
    double *t = malloc(sizeof(double) * (size_t)iters), bw;
    cudaEvent_t e0, e1;

    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i < warmup + iters; i++) {
        float ms = 0;

        cudaEventRecord(e0, perf_stream);
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, perf_stream);
        cudaEventRecord(e1, perf_stream);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        if (i >= warmup) {
            t[i - warmup] = ms * 1e-3;
        }
    }
    bw = bytes / perf_median(t, (size_t)iters) / 1e9;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    free(t);
    return bw;
}

#ifdef HAVE_NCCL
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

static ncclComm_t perf_nccl;

int perf_nccl_version(void)
{
    int version = 0;

    return ncclGetVersion(&version) == ncclSuccess ? version : 0;
}

int perf_nccl_init(sharc_comm_h comm)
{
    ncclUniqueId id;
    ncclResult_t res = ncclSuccess;

    if (sharc_comm_rank(comm) == 0) {
        res = ncclGetUniqueId(&id);
    }
    if (res != ncclSuccess ||
        sharc_broadcast(&id, &id, sizeof(id), SHARC_DTYPE_U8, 0, comm, NULL) != SHARC_OK) {
        fprintf(stderr, "sharc-perf: --vs-nccl: no NCCL unique id\n");
        return -1;
    }
    res = ncclCommInitRank(&perf_nccl, sharc_comm_size(comm), id, sharc_comm_rank(comm));
    if (res != ncclSuccess) {
        fprintf(stderr, "sharc-perf: --vs-nccl: ncclCommInitRank: %s\n", ncclGetErrorString(res));
        return -1;
    }
    return 0;
}

void perf_nccl_fini(void)
{
    if (perf_nccl != NULL) {
        ncclCommDestroy(perf_nccl);
    }
}

int perf_nccl_run(int coll, const void *send, void *recv, size_t count, sharc_dtype_t dtype,
                  sharc_op_t op, int root)
{
    static const ncclDataType_t types[] = {ncclFloat32, ncclFloat64, ncclFloat16, ncclBfloat16,
                                           ncclInt32,   ncclInt64,   ncclUint8};
    static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};
    ncclDataType_t dt = types[dtype];
    ncclResult_t res;

    switch (coll) {
    case SHARC_COLL_ALLGATHER:
        res = ncclAllGather(send, recv, count, dt, perf_nccl, perf_stream);
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        res = ncclReduceScatter(send, recv, count, dt, ops[op], perf_nccl, perf_stream);
        break;
    case SHARC_COLL_ALLREDUCE:
        res = ncclAllReduce(send, recv, count, dt, ops[op], perf_nccl, perf_stream);
        break;
    case SHARC_COLL_BROADCAST:
        res = ncclBroadcast(send, recv, count, dt, root, perf_nccl, perf_stream);
        break;
    case SHARC_COLL_REDUCE:
        res = ncclReduce(send, recv, count, dt, ops[op], root, perf_nccl, perf_stream);
        break;
    default:
        fprintf(stderr, "sharc-perf: NCCL has no %s of its own\n", sharc_coll_name(coll));
        return -1;
    }
    if (res != ncclSuccess) {
        fprintf(stderr, "sharc-perf: NCCL: %s\n", ncclGetErrorString(res));
        return -1;
    }
    return perf_cuda_ok(cudaStreamSynchronize(perf_stream), "stream synchronize");
}
#else
int perf_nccl_version(void)
{
    return 0;
}

int perf_nccl_init(sharc_comm_h comm)
{
    fprintf(stderr, "sharc-perf: --vs-nccl needs sharc built with NCCL\n");
    return -1;
}

void perf_nccl_fini(void)
{
}

int perf_nccl_run(int coll, const void *send, void *recv, size_t count, sharc_dtype_t dtype,
                  sharc_op_t op, int root)
{
    return -1;
}
#endif
