/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_offload.h: what the files of test_shard_offload share (one program,
 * test_shard_offload.c's main): the communicator and this rank, the model and its
 * configurations, a group of it with the engine's AdamW, a step through it, this rank's shards
 * read back, the host worker's work in flight; and each file's tests.
 */
#ifndef SHARC_TEST_SHARD_OFFLOAD_H
#define SHARC_TEST_SHARD_OFFLOAD_H

#include <stddef.h>

#include <sharc/sharc.h>

#define SHARC_CHECK_SHARED /* one count of failed checks for every file of the program */
#include "../check.h"

#define NPARAMS 6
#define NUNITS  4
#define STEPS   20
#define MICRO   2

/* each parameter's elements, unit and dimensions (two: it takes weight decay) */
extern const size_t counts[NPARAMS];
extern const int units[NPARAMS];
extern const int ndims[NPARAMS];
extern sharc_comm_h comm;
extern int me, nranks;

typedef struct {
    const char *name;
    sharc_shard_offload_t offload;
    double fraction;
    int host_group; /* memtype host */
    sharc_dtype_t pdtype, rdtype;
    int shard_size; /* 0: every rank */
    float max_norm;
    int no_managed; /* SHARCTEST_EMU_NO_MANAGED */
    int slow_end;   /* the host worker pauses after each task it ends */
} config_t;

/* AdamW's settings (max_norm and step are each run's) */
extern const sharc_shard_adamw_t hp0;

/* ---- the model, its groups and steps (test_shard_offload.c) --------------------------------- */

/* Parameter @p p's initial element i. */
float init_value(int p, size_t i);
/* rank r's gradient of an element of value x in micro-batch k of step t */
float grad_value(float x, int r, int k, int t);
/* A group of the model in configuration @p c, with the engine's AdamW (NULL, a failed check,
 * if it cannot be made). */
sharc_shard_group_h make_group(const config_t *c);
/* One step through the engine: 2 micro-batches, the update armed before the last. */
sharc_status_t engine_step(sharc_shard_group_h g, const config_t *c, int t, float *norm_p);
/* This rank's master and moment shards of every unit, into @p out (3 arrays per unit): 0, or
 * -1 if the group would not give them. */
int read_shards(sharc_shard_group_h g, float *out[NUNITS][3], size_t n[NUNITS]);
void free_shards(float *s[NUNITS][3]);
/* Both sets of shards equal bit for bit (@p what: which). */
void same_bits(float *a[NUNITS][3], float *b[NUNITS][3], const size_t *n, const char *what);
/* The host worker's tasks queued or running and download slots in use: 0 when its side of the
 * group is idle (its state, shard/offload/shard_host.h). */
int host_inflight(sharc_shard_group_h g);

/* ---- the tests --------------------------------------------------------------------------------
 */

/* test_shard_offload_equal.c: every configuration against the reference and against offload
 * none; bad settings and a misuse of the update refused */
void test_equal(void);
void test_bad(void);
/* test_shard_offload_ckpt.c: checkpoints across offload host and none */
void test_ckpt(const char *dir);
/* test_shard_offload_die.c: a rank dies while its gradients are on their way to the host */
void test_die(void);

#endif
