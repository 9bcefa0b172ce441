/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard.h: what the files of test_shard share (one program, tests/shard/test_shard.c's
 * main): the communicator and this rank, the emulated model, a group of it and a training
 * step through it; and each file's tests. Public API only.
 */
#ifndef SHARC_TEST_SHARD_H
#define SHARC_TEST_SHARD_H

#include <stddef.h>
#include <unistd.h>

#include <sharc/sharc.h>

#define SHARC_CHECK_SHARED /* one count of failed checks for every file of the program */
#include "../check.h"

#define MAX_PARAMS 32

extern sharc_comm_h comm;
extern int me, nranks;
extern int assign_grads; /* groups made with assign_grads: gradients written, then added */

/* A model: units of parameters with odd sizes (some below the rank count), a few shaped. */
typedef struct {
    int nparams, nunits;
    sharc_shard_param_t p[MAX_PARAMS];
    char names[MAX_PARAMS][32];
    float *init[MAX_PARAMS];
} model_t;

/* ---- the model and its steps (test_shard.c) ------------------------------------------------ */

/* Parameter @p param's initial element j. */
float init_value(int param, size_t j);
/* Gradient element j of parameter @p param written by rank @p r in micro-batch @p mb. */
float grad_value(int r, int mb, int param, size_t j);
void model_make(model_t *m, int nunits, int auto_units);
void model_free(model_t *m);
/* A group of @p m with these settings (NULL, a failed check, if it cannot be made). */
sharc_shard_group_h make_group(model_t *m, sharc_dtype_t pdt, sharc_dtype_t rdt, sharc_op_t op,
                               int shard_size, int prefetch, int max_unsharded);
/* The gathered parameters of unit u against the reference, bit for bit. */
void check_params(sharc_shard_group_h g, int u, const char *ref, sharc_dtype_t pdt);
/*
 * One training step of @p mbs micro-batches: forward and backward through every unit in
 * order, gradients added from grad_value. @p nosync: reduce only in the last micro-batch.
 * @p ref: each unit's reference parameters, checked at every begin (NULL: not checked);
 * @p compute_us: a sleeping "compute" in every unit's forward and backward.
 */
void run_step(sharc_shard_group_h g, model_t *m, int mbs, int nosync, sharc_dtype_t pdt,
              sharc_dtype_t rdt, char **ref, useconds_t compute_us);

/* ---- the tests ------------------------------------------------------------------------------ */

/* test_shard_steps.c: steps against all-gather / all-reduce references; HSDP's initial values */
void test_steps(void);
void test_replica_init(void);
/* test_shard_sched.c: the schedule, prefetch and the bound; adaptive prefetch between ranks */
void test_prefetch(void);
void test_auto(void);
/* test_shard_trace.c: steps with a sleeping compute, for the timeline trace and for overlap */
void test_trace(int autop, int steps, int max_unsharded);
void test_overlap(void);
/* test_shard_errors.c: bad input and calls out of order */
void test_errors(void);

#endif
