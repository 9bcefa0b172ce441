/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_gpu.h: what the files of test_shard_gpu share (one program, test_shard_gpu.c's
 * main): the communicator and this rank, the model, a group of it on either memory and, on
 * CUDA, the caller's stream, copies through it, the comparison of a device group with a host
 * group run beside it, the test's optimizer and gradients; and the async test
 * (test_shard_gpu_async.c).
 */
#ifndef SHARC_TEST_SHARD_GPU_H
#define SHARC_TEST_SHARD_GPU_H

#include <stddef.h>

#include <sharc/sharc.h>

#define SHARC_CHECK_SHARED /* one count of failed checks for every file of the program */
#include "../check.h"

#define MAX_PARAMS 16

extern sharc_comm_h comm;
extern int me, nranks;

typedef struct {
    int nparams, nunits;
    sharc_shard_param_t p[MAX_PARAMS];
    char names[MAX_PARAMS][32];
    float *init[MAX_PARAMS];
} model_t;

/* A group's settings (memory and stream aside). */
typedef struct {
    sharc_dtype_t pdt, rdt;
    sharc_op_t op;
    int shard_size, prefetch, max_unsharded, assign_grads;
} setup_t;

/* Units of three parameters with odd sizes (some below the rank count), one of them large. */
void model_make(model_t *m, int nunits);
void model_free(model_t *m);
/* A group of @p m with @p s on memory @p mt, after @p caller_stream (CUDA); *g_p NULL on
 * failure. */
sharc_status_t try_group(model_t *m, const setup_t *s, sharc_memtype_t mt, void *caller_stream,
                         sharc_shard_group_h *g_p);

#ifdef HAVE_CUDA

#include <cuda_runtime.h>

extern cudaStream_t stream; /* the caller's */

#define CUDA_OK(_call) CHECK((_call) == cudaSuccess)

/* Gradient element j of parameter @p i on this rank in step @p step, micro-batch @p mb. */
float grad_value(int step, int mb, int i, size_t j);
/* Copies between host and device memory through the stream, done on return. */
void dev_get(void *host, const void *dev, size_t bytes);
void dev_put(void *dev, const void *host, size_t bytes);
/* A host (@p cuda 0) or device group with one optimizer state (its index in *state_p). */
sharc_shard_group_h make_group(model_t *m, const setup_t *s, int cuda, int *state_p);
/* A shard of the group (master -2, gradient -1 or state @p which >= 0) into @p out, on the
 * host. */
void shard_read(sharc_shard_group_h g, int cuda, int u, int which, float *out, size_t n);
/* Master (-2), gradient (-1) and state shards of both groups, equal bit for bit. */
void compare_shards(sharc_shard_group_h h, sharc_shard_group_h d, int state, const char *when);
/*
 * An optimizer with exact results: exp_avg = exp_avg / 2 + grad; master -= exp_avg / 4. On
 * the device group through host copies (its streams are the engine's concern, not this).
 */
void optimizer(sharc_shard_group_h g, int cuda, int state);
/* Parameter @p i's gradient of this micro-batch, added (or assigned) into the group's buffer. */
void write_grad(sharc_shard_group_h g, int cuda, int i, size_t count, sharc_dtype_t rdt, int assign,
                int step, int mb);

/* Whole steps of a device group without host synchronization, against a host group
 * (test_shard_gpu_async.c). */
void async_steps(const setup_t *s);

#endif

#endif
