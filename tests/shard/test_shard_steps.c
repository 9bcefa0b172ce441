/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_steps.c: test_shard's steps against plain references: the gathered parameters
 * against an all-gather of every rank's master shard, the reduced gradient shards against an
 * all-reduce of every rank's gradients, bit for bit; flat and HSDP, f32 / bf16 / f16
 * parameters, f32 / bf16 reductions, averaged and summed, with and without gradient
 * accumulation, gradients added or written, adaptive prefetch; and HSDP's initial values.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../elem.h"
#include "test_shard.h"

/* test_config's groups and steps (adaptive prefetch: more steps, for the depth to move) */
static int config_prefetch = 1, config_steps = 2;

/*
 * The reference unsharded parameters of every unit: each rank's master shard cast to the
 * param dtype, all-gathered over a shard communicator of the test's own.
 */
static char **reference_params(sharc_shard_group_h g, sharc_dtype_t pdt, int shard_size)
{
    int nunits = sharc_shard_num_units(g);
    char **ref = calloc((size_t)nunits, sizeof(*ref));
    size_t es = sharc_dtype_size(pdt);
    sharc_comm_h sc = NULL;

    CHECK(sharc_comm_split(comm, me / shard_size, me, &sc) == SHARC_OK);
    for (int u = 0; u < nunits; u++) {
        sharc_shard_unit_info_t info;
        float *master;
        char *mine;

        CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
        CHECK(sharc_shard_local(g, u, &master, NULL, NULL) == SHARC_OK);
        mine = malloc(info.shard_count * es);
        for (size_t i = 0; i < info.shard_count; i++) {
            elem_put(mine, pdt, i, master[i]);
        }
        ref[u] = malloc(info.padded_count * es);
        CHECK(sharc_allgather(mine, ref[u], info.shard_count, pdt, sc, NULL) == SHARC_OK);
        free(mine);
    }
    sharc_comm_destroy(sc);
    return ref;
}

static void free_refs(char **ref, int n)
{
    for (int i = 0; i < n; i++) {
        free(ref[i]);
    }
    free(ref);
}

/*
 * The gradient shards against a plain all-reduce of each rank's unsharded gradients over
 * every data-parallel rank, one all-reduce per reduction the engine made (per micro-batch,
 * or one for the sum), each scaled for AVG, summed in f32 in the same order.
 */
static void check_grads(sharc_shard_group_h g, model_t *m, int mbs, int nosync, sharc_dtype_t rdt,
                        sharc_op_t op)
{
    size_t es = sharc_dtype_size(rdt);
    int rounds = nosync ? 1 : mbs;

    for (int u = 0; u < m->nunits; u++) {
        sharc_shard_unit_info_t info;
        float *grad, *want;

        CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
        CHECK(sharc_shard_local(g, u, NULL, &grad, NULL) == SHARC_OK);
        want = calloc(info.shard_count, sizeof(float));
        for (int r = 0; r < rounds; r++) {
            char *full = calloc(info.padded_count, es);

            for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
                sharc_shard_param_info_t pi;

                CHECK(sharc_shard_param_info(g, i, &pi) == SHARC_OK);
                for (size_t j = 0; j < pi.count; j++) {
                    float v = 0;
                    for (int mb = nosync ? 0 : r; mb < (nosync ? mbs : r + 1); mb++) {
                        v += grad_value(me, mb, i, j);
                    }
                    elem_put(full, rdt, pi.offset + j, v);
                }
            }
            CHECK(sharc_allreduce(full, full, info.padded_count, rdt, SHARC_OP_SUM, comm, NULL) ==
                  SHARC_OK);
            for (size_t k = 0; k < info.shard_count; k++) {
                float x = elem_get(full, rdt, info.shard_offset + k);
                if (op == SHARC_OP_AVG) {
                    x *= (float)(1.0 / nranks);
                }
                want[k] += x;
            }
            free(full);
        }
        CHECK_MSG(memcmp(grad, want, info.shard_count * sizeof(float)) == 0,
                  "rank %d: unit %d's gradient shard differs from the all-reduce reference", me, u);
        free(want);
    }
}

/* A step of an optimizer whose result is exact: master -= grad / 4. */
static void sgd(sharc_shard_group_h g)
{
    for (int u = 0; u < sharc_shard_num_units(g); u++) {
        float *w, *gr;
        size_t n;

        CHECK(sharc_shard_local(g, u, &w, &gr, &n) == SHARC_OK);
        for (size_t i = 0; i < n; i++) {
            w[i] -= 0.25f * gr[i];
        }
    }
    CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
}

/* Every element of every unit owned by exactly one rank of its shard group. */
static void check_layout(sharc_shard_group_h g, int shard_size)
{
    for (int u = 0; u < sharc_shard_num_units(g); u++) {
        sharc_shard_unit_info_t info;
        uint64_t mine[2], *all = calloc((size_t)nranks * 2, sizeof(uint64_t));
        size_t end = 0;

        CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
        CHECK(info.shard_count % SHARC_SHARD_ALIGN == 0 && info.shard_count > 0);
        CHECK(info.padded_count == info.shard_count * (size_t)shard_size);
        CHECK(info.padded_count >= info.count);
        CHECK(info.padded_count - info.count < (size_t)shard_size * SHARC_SHARD_ALIGN);
        for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
            sharc_shard_param_info_t pi;
            CHECK(sharc_shard_param_info(g, i, &pi) == SHARC_OK);
            CHECK(pi.unit == u && pi.offset >= end); /* in order, no overlap */
            end = pi.offset + pi.count;
        }
        CHECK(end == info.count);
        mine[0] = info.shard_offset;
        mine[1] = info.shard_count;
        CHECK(sharc_allgather(mine, all, 2, SHARC_DTYPE_I64, comm, NULL) == SHARC_OK);
        /* the ranks of my shard group tile [0, padded) in rank order */
        for (int r = 0; r < shard_size; r++) {
            int peer = (me / shard_size) * shard_size + r;
            CHECK(all[2 * peer] == (uint64_t)r * info.shard_count);
            CHECK(all[2 * peer + 1] == info.shard_count);
        }
        free(all);
    }
}

/* Two steps (the second after an optimizer update) of one configuration. */
static void test_config(int shard_size, sharc_dtype_t pdt, sharc_dtype_t rdt, sharc_op_t op,
                        int mbs, int nosync)
{
    model_t m;
    sharc_shard_group_h g;
    char **ref;

    model_make(&m, 4, 0);
    g = make_group(&m, pdt, rdt, op, shard_size, config_prefetch, 0);
    if (g == NULL) {
        model_free(&m);
        return;
    }
    check_layout(g, shard_size);
    for (int step = 0; step < config_steps; step++) {
        ref = reference_params(g, pdt, shard_size);
        run_step(g, &m, mbs, nosync, pdt, rdt, ref, 0);
        check_grads(g, &m, mbs, nosync, rdt, op);
        free_refs(ref, m.nunits);
        sgd(g);
    }
    sharc_shard_destroy(g);
    model_free(&m);
}

void test_steps(void)
{
    static const struct {
        sharc_dtype_t pdt, rdt;
        sharc_op_t op;
        int mbs, nosync;
    } cases[] = {
        {SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, 1, 0},
        {SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_SUM, 1, 0},
        {SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG, 1, 0},
        {SHARC_DTYPE_F16, SHARC_DTYPE_BF16, SHARC_OP_AVG, 1, 0},
        {SHARC_DTYPE_BF16, SHARC_DTYPE_BF16, SHARC_OP_SUM, 1, 0},
        {SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, 3, 0}, /* reduce every micro-batch */
        {SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, 3, 1}, /* accumulate, reduce once */
        {SHARC_DTYPE_BF16, SHARC_DTYPE_BF16, SHARC_OP_AVG, 2, 1},
    };
    int hsdp = 0;

    for (int d = 2; d < nranks; d++) { /* a shard group smaller than the world, if any */
        if (nranks % d == 0) {
            hsdp = d;
            break;
        }
    }
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        test_config(nranks, cases[c].pdt, cases[c].rdt, cases[c].op, cases[c].mbs, cases[c].nosync);
        if (hsdp > 0) {
            test_config(hsdp, cases[c].pdt, cases[c].rdt, cases[c].op, cases[c].mbs,
                        cases[c].nosync);
        }
    }
    /* gradients written rather than added: buffers are not zeroed, and reused dirty */
    assign_grads = 1;
    test_config(nranks, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, 3, 0);
    test_config(nranks, SHARC_DTYPE_BF16, SHARC_DTYPE_BF16, SHARC_OP_AVG, 3, 1);
    if (hsdp > 0) {
        test_config(hsdp, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_SUM, 2, 1);
    }
    assign_grads = 0;
    if (nranks > 1) { /* every rank its own shard group: pure replication */
        test_config(1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, 2, 0);
    }
    /* adaptive prefetch changes when gathers are posted, never what they compute: bit for
     * bit the same, over enough steps for the depth to move */
    config_prefetch = SHARC_SHARD_PREFETCH_AUTO;
    config_steps = 8;
    test_config(nranks, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG, 1, 0);
    if (hsdp > 0) {
        test_config(hsdp, SHARC_DTYPE_F32, SHARC_DTYPE_BF16, SHARC_OP_AVG, 2, 1);
    }
    config_prefetch = 1;
    config_steps = 2;
    printf("rank %d: steps ok (HSDP shard size %d)\n", me, hsdp);
}

/* HSDP: replica 0's initial values win, whatever the other replicas passed. */
void test_replica_init(void)
{
    model_t m;
    sharc_shard_group_h g;

    if (nranks < 2) {
        return;
    }
    model_make(&m, 2, 0);
    for (int i = 0; i < m.nparams; i++) {
        for (size_t j = 0; j < m.p[i].count; j++) {
            m.init[i][j] += (float)me; /* every rank starts from other values */
        }
    }
    g = make_group(&m, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, 1, 1, 0);
    for (int u = 0; g != NULL && u < m.nunits; u++) {
        sharc_shard_unit_info_t info;
        CHECK(sharc_shard_forward_begin(g, u) == SHARC_OK);
        CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
        for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
            float *p = NULL;
            CHECK(sharc_shard_param_ptr(g, i, (void **)&p) == SHARC_OK);
            for (size_t j = 0; p != NULL && j < m.p[i].count; j++) {
                CHECK_MSG(p[j] == init_value(i, j), "rank %d: %s[%zu] = %g, not rank 0's %g", me,
                          m.p[i].name, j, p[j], init_value(i, j));
            }
        }
        CHECK(sharc_shard_forward_end(g, u) == SHARC_OK);
    }
    sharc_shard_destroy(g);
    model_free(&m);
}
