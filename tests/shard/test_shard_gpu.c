/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_gpu.c: one rank of the test of the sharding engine on CUDA (memtype
 * SHARC_MEMTYPE_CUDA), against the same engine on the host, run side by side in one process
 * over one communicator: every gathered parameter, every gradient and master shard and
 * every optimizer state must match bit for bit (the values are small integers, exact in
 * every dtype and order of summation).
 *
 *   lockstep   each unit's begin and end on both groups in turn, the device group read
 *              back at every step (f32 / bf16 parameters, f32 / bf16 reductions, AVG /
 *              SUM, gradient accumulation, HSDP where the rank count allows)
 *   async      whole steps with no host synchronization on the device group: the caller's
 *              stream lags the host (host functions that sleep), parameters are snapshotted
 *              and gradients written by copies queued on it, the optimizer runs on it
 *              (sharc's CUDA kernels), buffers are reused and a prefetched unit is given up
 *              under a tight bound (a step off the schedule); f32 and bf16 reductions, HSDP
 *              where the rank count allows; checked once the stream is done
 *   checkpoint a device group's checkpoint loaded into a host group and back
 *
 *   test_shard_gpu [DIR]   (DIR: a directory every rank sees, for the checkpoint part)
 *
 * Built without CUDA it checks that CUDA groups are refused with SHARC_ERR_UNSUPPORTED.
 * Exits 77 without a GPU. This file holds the model, the groups and their comparison,
 * lockstep, checkpoint and main; async is test_shard_gpu_async.c's (test_shard_gpu.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../elem.h"
#include "test_shard_gpu.h"

int check_failures; /* every file's (../check.h) */

static sharc_context_h ctx;
sharc_comm_h comm;
int me, nranks;

void model_make(model_t *m, int nunits)
{
    static const size_t sizes[] = {37, 1, 1000, 300001, 3, 250, 64, 129, 4097};
    int k = 0;

    memset(m, 0, sizeof(*m));
    m->nunits = nunits;
    for (int u = 0; u < nunits; u++) {
        for (int j = 0; j < 3; j++, k++) {
            sharc_shard_param_t *p = &m->p[k];

            snprintf(m->names[k], sizeof(m->names[k]), "unit%d.p%d", u, j);
            p->name = m->names[k];
            p->count = sizes[k % 9] + (size_t)u;
            p->unit = u;
            m->init[k] = malloc(p->count * sizeof(float));
            for (size_t i = 0; i < p->count; i++) {
                m->init[k][i] = (float)((int)((k * 7 + i * 3) % 17) - 8);
            }
            p->init = m->init[k];
        }
    }
    m->nparams = k;
}

void model_free(model_t *m)
{
    for (int i = 0; i < m->nparams; i++) {
        free(m->init[i]);
    }
}

sharc_status_t try_group(model_t *m, const setup_t *s, sharc_memtype_t mt, void *caller_stream,
                         sharc_shard_group_h *g_p)
{
    sharc_shard_params_t cfg = {
        .field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PARAM_DTYPE |
                      SHARC_SHARD_PARAM_REDUCE_DTYPE | SHARC_SHARD_PARAM_GRAD_OP |
                      SHARC_SHARD_PARAM_SHARD_SIZE | SHARC_SHARD_PARAM_PREFETCH |
                      SHARC_SHARD_PARAM_MAX_UNSHARDED | SHARC_SHARD_PARAM_ASSIGN_GRADS |
                      SHARC_SHARD_PARAM_MEMTYPE | SHARC_SHARD_PARAM_STREAM,
        .num_units = m->nunits,
        .param_dtype = s->pdt,
        .reduce_dtype = s->rdt,
        .grad_op = s->op,
        .shard_size = s->shard_size,
        .prefetch = s->prefetch,
        .max_unsharded = s->max_unsharded,
        .assign_grads = s->assign_grads,
        .memtype = mt,
        .stream = caller_stream,
    };

    *g_p = NULL;
    return sharc_shard_create(comm, m->p, m->nparams, &cfg, g_p);
}

#ifndef HAVE_CUDA

int main(void)
{
    model_t m;
    setup_t s = {SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, 0, 1, 0, 0};
    sharc_shard_group_h g;

    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_shard_gpu: no communicator\n");
        return 1;
    }
    me = sharc_comm_rank(comm);
    nranks = sharc_comm_size(comm);
    s.shard_size = nranks;
    model_make(&m, 2);
    CHECK(try_group(&m, &s, SHARC_MEMTYPE_CUDA, NULL, &g) == SHARC_ERR_UNSUPPORTED && g == NULL);
    CHECK(try_group(&m, &s, (sharc_memtype_t)7, NULL, &g) == SHARC_ERR_INVALID && g == NULL);
    model_free(&m);
    printf("rank %d of %d: CUDA shard groups refused without CUDA: %s\n", me, nranks,
           check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_shard_gpu");
}

#else

#include "../gpu_check.h"

cudaStream_t stream;

float grad_value(int step, int mb, int i, size_t j)
{
    return (float)((int)(((size_t)(me + 1) * (j % 5 + 1) + (size_t)(mb + step + i)) % 9) - 4);
}

void dev_get(void *host, const void *dev, size_t bytes)
{
    CUDA_OK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
}

void dev_put(void *dev, const void *host, size_t bytes)
{
    CUDA_OK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
}

sharc_shard_group_h make_group(model_t *m, const setup_t *s, int cuda, int *state_p)
{
    sharc_shard_group_h g;
    sharc_status_t st =
        try_group(m, s, cuda ? SHARC_MEMTYPE_CUDA : SHARC_MEMTYPE_HOST, cuda ? stream : NULL, &g);

    CHECK_MSG(st == SHARC_OK, "create (%s): %s", cuda ? "cuda" : "host", sharc_status_string(st));
    if (st == SHARC_OK) {
        CHECK(sharc_shard_state_add(g, "exp_avg", state_p) == SHARC_OK);
    }
    return g;
}

void shard_read(sharc_shard_group_h g, int cuda, int u, int which, float *out, size_t n)
{
    float *w = NULL, *gr = NULL, *st = NULL, *src;
    size_t count = 0;

    CHECK(sharc_shard_local(g, u, &w, &gr, &count) == SHARC_OK && count == n);
    src = (which == -2) ? w : gr;
    if (which >= 0) {
        CHECK(sharc_shard_state_ptr(g, which, u, &st) == SHARC_OK);
        src = st;
    }
    if (cuda) {
        dev_get(out, src, n * sizeof(float));
    } else {
        memcpy(out, src, n * sizeof(float));
    }
}

void compare_shards(sharc_shard_group_h h, sharc_shard_group_h d, int state, const char *when)
{
    for (int u = 0; u < sharc_shard_num_units(h); u++) {
        sharc_shard_unit_info_t info;

        CHECK(sharc_shard_unit_info(h, u, &info) == SHARC_OK);
        float *a = malloc(info.shard_count * sizeof(float));
        float *b = malloc(info.shard_count * sizeof(float));
        for (int which = -2; which <= state; which++) {
            shard_read(h, 0, u, which, a, info.shard_count);
            shard_read(d, 1, u, which, b, info.shard_count);
            CHECK_MSG(memcmp(a, b, info.shard_count * sizeof(float)) == 0,
                      "rank %d, %s: unit %d's %s shard differs between device and host", me, when,
                      u,
                      which == -2   ? "master"
                      : which == -1 ? "gradient"
                                    : "state");
        }
        free(a);
        free(b);
    }
}

/* A unit's gathered parameters in both groups, equal. */
static void compare_params(sharc_shard_group_h h, sharc_shard_group_h d, int u, sharc_dtype_t pdt)
{
    sharc_shard_unit_info_t info;

    CHECK(sharc_shard_unit_info(h, u, &info) == SHARC_OK);
    for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
        sharc_shard_param_info_t pi;
        void *hp = NULL, *dp = NULL;

        CHECK(sharc_shard_param_info(h, i, &pi) == SHARC_OK);
        CHECK(sharc_shard_param_ptr(h, i, &hp) == SHARC_OK);
        CHECK(sharc_shard_param_ptr(d, i, &dp) == SHARC_OK);
        if (hp == NULL || dp == NULL) {
            continue;
        }
        size_t bytes = pi.count * sharc_dtype_size(pdt);
        char *got = malloc(bytes);
        dev_get(got, dp, bytes);
        CHECK_MSG(memcmp(got, hp, bytes) == 0,
                  "rank %d: '%s' gathered on the device differs from the host's", me, pi.name);
        free(got);
    }
}

void optimizer(sharc_shard_group_h g, int cuda, int state)
{
    for (int u = 0; u < sharc_shard_num_units(g); u++) {
        sharc_shard_unit_info_t info;
        float *w, *gr, *m;

        CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
        size_t n = info.shard_count, bytes = n * sizeof(float);
        float *hw = malloc(bytes), *hg = malloc(bytes), *hm = malloc(bytes);
        CHECK(sharc_shard_local(g, u, &w, &gr, NULL) == SHARC_OK);
        CHECK(sharc_shard_state_ptr(g, state, u, &m) == SHARC_OK);
        shard_read(g, cuda, u, -2, hw, n);
        shard_read(g, cuda, u, -1, hg, n);
        shard_read(g, cuda, u, state, hm, n);
        for (size_t k = 0; k < n; k++) {
            hm[k] = hm[k] * 0.5f + hg[k];
            hw[k] -= 0.25f * hm[k];
        }
        if (cuda) {
            dev_put(w, hw, bytes);
            dev_put(m, hm, bytes);
        } else {
            memcpy(w, hw, bytes);
            memcpy(m, hm, bytes);
        }
        free(hw);
        free(hg);
        free(hm);
    }
    CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
}

void write_grad(sharc_shard_group_h g, int cuda, int i, size_t count, sharc_dtype_t rdt, int assign,
                int step, int mb)
{
    size_t bytes = count * sharc_dtype_size(rdt);
    void *gp = NULL;
    char *buf;

    CHECK(sharc_shard_grad_ptr(g, i, &gp) == SHARC_OK);
    if (gp == NULL) {
        return;
    }
    buf = cuda ? malloc(bytes) : gp;
    if (cuda) {
        dev_get(buf, gp, bytes);
    }
    for (size_t j = 0; j < count; j++) {
        elem_put(buf, rdt, j, (assign ? 0.0f : elem_get(buf, rdt, j)) + grad_value(step, mb, i, j));
    }
    if (cuda) {
        dev_put(gp, buf, bytes);
        free(buf);
    }
}

/* Both groups through @p steps steps of @p mbs micro-batches, unit by unit in turn. */
static void lockstep(const setup_t *s, int mbs, int nosync)
{
    model_t m;
    int hs = -1, ds = -1;
    char when[64];

    model_make(&m, 4);
    sharc_shard_group_h h = make_group(&m, s, 0, &hs), d = make_group(&m, s, 1, &ds);
    if (h == NULL || d == NULL) {
        sharc_shard_destroy(h);
        sharc_shard_destroy(d);
        model_free(&m);
        return;
    }
    compare_shards(h, d, ds, "after creation");
    for (int step = 0; step < 3; step++) {
        for (int mb = 0; mb < mbs; mb++) {
            int sync = nosync ? mb == mbs - 1 : 1;

            CHECK(sharc_shard_set_sync(h, sync) == SHARC_OK);
            CHECK(sharc_shard_set_sync(d, sync) == SHARC_OK);
            for (int u = 0; u < m.nunits; u++) {
                CHECK(sharc_shard_forward_begin(h, u) == SHARC_OK);
                CHECK(sharc_shard_forward_begin(d, u) == SHARC_OK);
                compare_params(h, d, u, s->pdt);
                CHECK(sharc_shard_forward_end(h, u) == SHARC_OK);
                CHECK(sharc_shard_forward_end(d, u) == SHARC_OK);
            }
            for (int u = m.nunits - 1; u >= 0; u--) {
                CHECK(sharc_shard_backward_begin(h, u) == SHARC_OK);
                CHECK(sharc_shard_backward_begin(d, u) == SHARC_OK);
                compare_params(h, d, u, s->pdt);
                for (int i = 3 * u; i < 3 * u + 3; i++) {
                    int assign = s->assign_grads && (!nosync || mb == 0);

                    write_grad(h, 0, i, m.p[i].count, s->rdt, assign, step, mb);
                    write_grad(d, 1, i, m.p[i].count, s->rdt, assign, step, mb);
                }
                CHECK(sharc_shard_backward_end(h, u) == SHARC_OK);
                CHECK(sharc_shard_backward_end(d, u) == SHARC_OK);
            }
        }
        CHECK(sharc_shard_finish(h) == SHARC_OK);
        CHECK(sharc_shard_finish(d) == SHARC_OK);
        snprintf(when, sizeof(when), "step %d reduced", step);
        compare_shards(h, d, ds, when);
        optimizer(h, 0, hs);
        optimizer(d, 1, ds);
        snprintf(when, sizeof(when), "step %d updated", step);
        compare_shards(h, d, ds, when);
    }
    sharc_shard_destroy(h);
    sharc_shard_destroy(d);
    model_free(&m);
}

/* A device group's checkpoint into a host group, and that one's into a new device group. */
static void checkpoint(const char *dir)
{
    setup_t s = {SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 1, 0, 0};
    model_t m;
    int ds = -1, hs = -1, ds2 = -1;
    uint64_t step = 0;
    sharc_status_t st;

    model_make(&m, 3);
    sharc_shard_group_h d = make_group(&m, &s, 1, &ds);
    if (d == NULL) {
        model_free(&m);
        return;
    }
    optimizer(d, 1, ds); /* states and masters that differ from the initial values */
    for (int i = 0; i < m.nparams; i++) {
        for (size_t j = 0; j < m.p[i].count; j++) {
            m.init[i][j] = 0.0f;
        }
    }
    st = sharc_shard_save(d, dir, 7);
    if (st == SHARC_ERR_UNSUPPORTED) {
        printf("rank %d: checkpoints not built in; skipped\n", me);
    } else {
        CHECK(st == SHARC_OK);
        sharc_shard_group_h h = make_group(&m, &s, 0, &hs);
        CHECK(h != NULL && sharc_shard_load(h, dir, &step) == SHARC_OK && step == 7);
        compare_shards(h, d, ds, "checkpoint loaded on the host");
        CHECK(sharc_shard_save(h, dir, 8) == SHARC_OK);
        sharc_shard_group_h d2 = make_group(&m, &s, 1, &ds2);
        CHECK(d2 != NULL && sharc_shard_load(d2, dir, &step) == SHARC_OK && step == 8);
        compare_shards(h, d2, ds2, "checkpoint loaded on the device");
        sharc_shard_destroy(d2);
        sharc_shard_destroy(h);
    }
    sharc_shard_destroy(d);
    model_free(&m);
}

int main(int argc, char **argv)
{
    int st = gpu_check_start("test_shard_gpu", &ctx, &comm, &stream);

    if (st != 0) {
        return st;
    }
    me = sharc_comm_rank(comm);
    nranks = sharc_comm_size(comm);

    const setup_t setups[] = {
        {SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 1, 0, 0},
        {SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 1, 0, 1},
        {SHARC_DTYPE_BF16, SHARC_DTYPE_BF16, SHARC_OP_SUM, nranks, 2, 0, 0},
        {SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_SUM, nranks, 1, 0, 0},
    };
    for (size_t k = 0; k < sizeof(setups) / sizeof(setups[0]); k++) {
        lockstep(&setups[k], 1, 0);
    }
    lockstep(&setups[1], 3, 1); /* gradient accumulation without communication */
    lockstep(&setups[0], 2, 0); /* a reduction per micro-batch, accumulated into the shard */
    if (nranks % 2 == 0) {      /* HSDP: two replicas */
        setup_t hsdp = setups[1];

        hsdp.shard_size = nranks / 2;
        lockstep(&hsdp, 2, 0);
    }
    {
        /* prefetch 2 at a bound of 3: eviction; bf16 reductions (HSDP where it can) */
        setup_t a = {SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 2, 3, 1};
        setup_t b = {SHARC_DTYPE_BF16,
                     SHARC_DTYPE_BF16,
                     SHARC_OP_AVG,
                     nranks % 2 == 0 ? nranks / 2 : nranks,
                     2,
                     3,
                     0};

        async_steps(&a);
        async_steps(&b);
    }
    if (argc > 1) {
        checkpoint(argv[1]);
    }
    printf("rank %d of %d: shard engine on CUDA %s\n", me, nranks,
           check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    cudaStreamDestroy(stream);
    return check_result("test_shard_gpu");
}

#endif
