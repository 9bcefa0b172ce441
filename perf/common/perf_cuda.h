/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf_cuda.h: sharc-perf's GPU side (--device cuda): the device and stream each rank uses,
 * device buffers, the device-to-device copy bandwidth, and NCCL called directly on the same
 * buffers (--vs-nccl) to measure sharc's overhead over it, and compute for the overlap
 * benchmark. Built without CUDA (or NCCL, or cuBLAS), each call says so and fails.
 */
#ifndef SHARC_PERF_CUDA_H
#define SHARC_PERF_CUDA_H

#include <stddef.h>
#include <sharc/sharc.h>

/* Device local_rank % devices, a stream of its own set as @p comm's. 0, or -1 (printed). */
int perf_cuda_init(sharc_comm_h comm);
void perf_cuda_fini(void);

/* The stream (a cudaStream_t) and a wait until its work is done (0, or -1 printed). */
void *perf_cuda_stream(void);
int perf_cuda_sync(void);

/*
 * Compute queued on the stream, for `sharc-perf overlap --device cuda`: the stream held for
 * @p seconds by a host function (time on the stream that uses no SM), or @p reps BF16 GEMMs
 * of n x n x n through cuBLAS (f32 accumulation), after perf_cuda_gemm_init(n). 0 or -1.
 */
int perf_cuda_hold(double seconds);
int perf_cuda_gemm_init(int n);
int perf_cuda_gemm(int reps);
void perf_cuda_gemm_fini(void);

/* Device memory (zeroed), and copies to and from it (synchronous). */
void *perf_cuda_alloc(size_t bytes);
void perf_cuda_free(void *p);
int perf_cuda_put(void *dst, const void *src, size_t bytes);
int perf_cuda_get(void *dst, const void *src, size_t bytes);

/* Device-to-device copy of @p bytes: GB/s of the copy (bytes / time), median of @p iters. */
double perf_cuda_copy_bw(void *dst, const void *src, size_t bytes, int warmup, int iters);

/* NCCL's version code (ncclGetVersion; no GPU needed), 0 without NCCL. */
int perf_nccl_version(void);

/* A communicator of NCCL's own over @p comm's ranks (the id through a sharc broadcast). */
int perf_nccl_init(sharc_comm_h comm);
void perf_nccl_fini(void);

/*
 * The collective through ncclAllGather / ncclReduceScatter / ncclAllReduce / ncclBroadcast
 * (@p coll: 0, 1, 2, 3) on the perf stream, then a stream synchronize. @p count: per rank
 * for the first two, in all for the others. 0, or -1 (printed).
 */
int perf_nccl_run(int coll, const void *send, void *recv, size_t count, sharc_dtype_t dtype,
                  sharc_op_t op, int root);

#endif
