/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard.c: one rank of the multi-rank test of the sharding engine (public API only).
 * Emulated training steps (forward, backward with known gradients, finish) whose gathered
 * parameters and reduced gradient shards must equal, bit for bit, those of a plain
 * all-gather / all-reduce reference: flat and HSDP, f32 / bf16 / f16 parameters, f32 / bf16
 * reductions, averaged and summed, with and without gradient accumulation. Then the
 * schedule (recorded order, prefetch counts, the bound on unsharded units, re-recording when
 * the order changes), adaptive prefetch (results unchanged; the depth within the bound, the
 * same on every rank, settling), overlap with a sleeping "compute", the timeline trace's
 * steps (their statistics printed for tests/shard/check_trace.py), and bad input.
 *
 *   test_shard [steps|prefetch|auto|overlap|errors]   (default: all but overlap)
 *   test_shard trace [auto] [STEPS] [MAX_UNSHARDED]   (SHARC_SHARD_TRACE set by the caller)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../../kernels/kernels.h"
#include "../check.h"
#include "../elem.h"

#define MAX_PARAMS 32

static sharc_context_h ctx;
static sharc_comm_h comm;
static int me, nranks;
static int assign_grads; /* groups made with assign_grads: gradients written, then added */
static int config_prefetch = 1, config_steps = 2; /* test_config's groups and steps */

/* A model: units of parameters with odd sizes (some below the rank count), a few shaped. */
typedef struct {
    int nparams, nunits;
    sharc_shard_param_t p[MAX_PARAMS];
    char names[MAX_PARAMS][32];
    float *init[MAX_PARAMS];
} model_t;

static float init_value(int param, size_t j)
{
    return (float)((int)((param * 7 + j * 3) % 17) - 8);
}

/* Gradient element j of parameter @p param written by rank @p r in micro-batch @p mb. */
static float grad_value(int r, int mb, int param, size_t j)
{
    return (float)((int)(((size_t)(r + 1) * (j % 5 + 1) + (size_t)mb + (size_t)param) % 9) - 4);
}

static void model_make(model_t *m, int nunits, int auto_units)
{
    static const size_t sizes[] = {37, 1, 1000, 4097, 3, 250, 64, 129};
    int k = 0;

    memset(m, 0, sizeof(*m));
    m->nunits = nunits;
    for (int u = 0; u < nunits; u++) {
        for (int j = 0; j < 3; j++, k++) {
            sharc_shard_param_t *p = &m->p[k];

            snprintf(m->names[k], sizeof(m->names[k]), "unit%d.p%d", u, j);
            p->name = m->names[k];
            p->count = sizes[(u * 3 + j) % 8] + (size_t)u;
            if (j == 2 && p->count % 2 == 0) { /* a matrix */
                p->ndim = 2;
                p->shape[0] = 2;
                p->shape[1] = p->count / 2;
            }
            p->unit = auto_units ? SHARC_SHARD_UNIT_AUTO : u;
            m->init[k] = malloc(p->count * sizeof(float));
            for (size_t i = 0; i < p->count; i++) {
                m->init[k][i] = init_value(k, i);
            }
            p->init = m->init[k];
        }
    }
    m->nparams = k;
}

static void model_free(model_t *m)
{
    for (int i = 0; i < m->nparams; i++) {
        free(m->init[i]);
    }
}

static sharc_shard_group_h make_group(model_t *m, sharc_dtype_t pdt, sharc_dtype_t rdt,
                                      sharc_op_t op, int shard_size, int prefetch,
                                      int max_unsharded)
{
    sharc_shard_params_t cfg = {
        .field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PARAM_DTYPE |
                      SHARC_SHARD_PARAM_REDUCE_DTYPE | SHARC_SHARD_PARAM_GRAD_OP |
                      SHARC_SHARD_PARAM_SHARD_SIZE | SHARC_SHARD_PARAM_PREFETCH |
                      SHARC_SHARD_PARAM_MAX_UNSHARDED | SHARC_SHARD_PARAM_ASSIGN_GRADS,
        .num_units = m->nunits,
        .param_dtype = pdt,
        .reduce_dtype = rdt,
        .grad_op = op,
        .shard_size = shard_size,
        .prefetch = prefetch,
        .max_unsharded = max_unsharded,
        .assign_grads = assign_grads,
    };
    sharc_shard_group_h g = NULL;
    sharc_status_t status = sharc_shard_create(comm, m->p, m->nparams, &cfg, &g);

    CHECK_MSG(status == SHARC_OK, "create: %s", sharc_status_string(status));
    return g;
}

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

/* The gathered parameters of unit u against the reference, bit for bit. */
static void check_params(sharc_shard_group_h g, int u, const char *ref, sharc_dtype_t pdt)
{
    sharc_shard_unit_info_t info;
    size_t es = sharc_dtype_size(pdt);

    CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
    for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
        sharc_shard_param_info_t pi;
        void *ptr = NULL;

        CHECK(sharc_shard_param_info(g, i, &pi) == SHARC_OK);
        CHECK(pi.offset % SHARC_SHARD_ALIGN == 0);
        CHECK(sharc_shard_param_ptr(g, i, &ptr) == SHARC_OK);
        CHECK_MSG(ptr != NULL && memcmp(ptr, ref + pi.offset * es, pi.count * es) == 0,
                  "rank %d: parameter %s differs from the all-gather reference", me, pi.name);
    }
}

/*
 * One training step of @p mbs micro-batches: forward and backward through every unit in
 * order, gradients added from grad_value. @p nosync: reduce only in the last micro-batch.
 */
static void run_step(sharc_shard_group_h g, model_t *m, int mbs, int nosync, sharc_dtype_t pdt,
                     sharc_dtype_t rdt, char **ref, useconds_t compute_us)
{
    for (int mb = 0; mb < mbs; mb++) {
        CHECK(sharc_shard_set_sync(g, nosync ? mb == mbs - 1 : 1) == SHARC_OK);
        for (int u = 0; u < m->nunits; u++) {
            CHECK(sharc_shard_forward_begin(g, u) == SHARC_OK);
            if (ref != NULL) {
                check_params(g, u, ref[u], pdt);
            }
            if (compute_us > 0) {
                usleep(compute_us);
            }
            CHECK(sharc_shard_forward_end(g, u) == SHARC_OK);
        }
        for (int u = m->nunits - 1; u >= 0; u--) {
            sharc_shard_unit_info_t info;

            CHECK(sharc_shard_backward_begin(g, u) == SHARC_OK);
            if (ref != NULL) {
                check_params(g, u, ref[u], pdt);
            }
            CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
            for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
                void *gp = NULL;

                CHECK(sharc_shard_grad_ptr(g, i, &gp) == SHARC_OK);
                /* a fresh buffer (sync every micro-batch, or the first of an accumulation) is
                 * written, later micro-batches add */
                int assign = assign_grads && (!nosync || mb == 0);
                for (size_t j = 0; gp != NULL && j < m->p[i].count; j++) {
                    float old = assign ? 0.0f : elem_get(gp, rdt, j);
                    elem_put(gp, rdt, j, old + grad_value(me, mb, i, j));
                }
            }
            if (compute_us > 0) {
                usleep(compute_us);
            }
            CHECK(sharc_shard_backward_end(g, u) == SHARC_OK);
        }
    }
    CHECK(sharc_shard_finish(g) == SHARC_OK);
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

static void test_steps(void)
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
static void test_replica_init(void)
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

static void check_order(sharc_shard_group_h g, sharc_shard_phase_t ph, const int *want, int n)
{
    int got[MAX_PARAMS], k = -1;

    CHECK(sharc_shard_get_order(g, ph, got, MAX_PARAMS, &k) == SHARC_OK);
    CHECK_MSG(k == n && memcmp(got, want, sizeof(int) * (size_t)n) == 0,
              "rank %d: %s order of %d units, want %d", me,
              ph == SHARC_SHARD_FORWARD ? "forward" : "backward", k, n);
}

static void test_prefetch(void)
{
    static const struct {
        int prefetch, max_unsharded;
    } cases[] = {{1, 0}, {2, 3}, {3, 2}, {0, 1}};
    model_t m;

    model_make(&m, 6, 0);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int k = cases[c].prefetch, bound = cases[c].max_unsharded ? cases[c].max_unsharded : k + 1;
        int U = m.nunits, fwd[MAX_PARAMS], bwd[MAX_PARAMS];
        sharc_shard_group_h g = make_group(&m, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG,
                                           nranks, k, cases[c].max_unsharded);
        sharc_shard_stats_t st;

        if (g == NULL) {
            continue;
        }
        for (int u = 0; u < U; u++) {
            fwd[u] = u;
            bwd[u] = U - 1 - u;
        }
        run_step(g, &m, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, NULL, 0); /* records */
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        CHECK(st.prefetches == 0 && st.allgathers == (uint64_t)(2 * U));
        check_order(g, SHARC_SHARD_FORWARD, fwd, U);
        check_order(g, SHARC_SHARD_BACKWARD, bwd, U);
        run_step(g, &m, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, NULL, 0);
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        /* the forward's last unit is kept for the backward: one gather fewer */
        CHECK_MSG(st.allgathers == (uint64_t)(2 * U - 1), "allgathers %llu",
                  (unsigned long long)st.allgathers);
        CHECK_MSG(st.prefetches == (k > 0 ? (uint64_t)(2 * U - 2) : 0), "prefetches %llu (k %d)",
                  (unsigned long long)st.prefetches, k);
        CHECK(st.evictions == 0);
        CHECK_MSG(st.peak_units_alive <= bound && st.peak_units_alive >= SHARC_MIN(bound, k + 1),
                  "peak %d units alive, bound %d", st.peak_units_alive, bound);
        CHECK(st.reduce_scatters == (uint64_t)U && st.allreduces == 0);
        CHECK(st.units_alive == 0);
        if (c == 0) {
            /* the order changes: followed without prefetch, then re-recorded */
            int swapped[MAX_PARAMS];

            memcpy(swapped, fwd, sizeof(int) * (size_t)U);
            swapped[1] = 2;
            swapped[2] = 1;
            for (int step = 0; step < 3; step++) {
                for (int u = 0; u < U; u++) {
                    CHECK(sharc_shard_forward_begin(g, swapped[u]) == SHARC_OK);
                    if (step == 2 && u == 0) {
                        /* a unit out of schedule at the bound: the prefetched one goes */
                        CHECK(sharc_shard_unshard(g, 4) == SHARC_OK);
                        CHECK(sharc_shard_reshard(g, 4) == SHARC_OK);
                    }
                    CHECK(sharc_shard_forward_end(g, swapped[u]) == SHARC_OK);
                }
                for (int u = U - 1; u >= 0; u--) {
                    CHECK(sharc_shard_backward_begin(g, u) == SHARC_OK);
                    CHECK(sharc_shard_backward_end(g, u) == SHARC_OK);
                }
                CHECK(sharc_shard_finish(g) == SHARC_OK);
                CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
                check_order(g, SHARC_SHARD_FORWARD, swapped, U);
                CHECK(st.peak_units_alive <= bound);
                if (step == 1) { /* the new schedule is followed */
                    CHECK(st.evictions == 0 && st.prefetches == (uint64_t)(2 * U - 2));
                }
                if (step == 2) {
                    CHECK_MSG(st.evictions == 1, "evictions %llu",
                              (unsigned long long)st.evictions);
                }
            }
        }
        if (me == 0 && c == 0) {
            sharc_shard_schedule_print(g, stdout);
            sharc_shard_stats_print(g, stdout);
        }
        sharc_shard_destroy(g);
    }
    /* an order set by the caller is followed from the first step, and never re-recorded */
    {
        sharc_shard_group_h g =
            make_group(&m, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 1, 0);
        int fwd[] = {0, 1, 2, 3, 4, 5}, bwd[] = {5, 4, 3, 2, 1, 0};
        sharc_shard_stats_t st;

        CHECK(sharc_shard_set_order(g, SHARC_SHARD_FORWARD, fwd, 6) == SHARC_OK);
        CHECK(sharc_shard_set_order(g, SHARC_SHARD_BACKWARD, bwd, 6) == SHARC_OK);
        run_step(g, &m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        CHECK(st.prefetches == 10 && st.allgathers == 11);
        sharc_shard_destroy(g);
    }
    /* micro-batches accumulated without communication: the schedule is one pass's, and
     * every pass follows it from its start */
    {
        sharc_shard_group_h g =
            make_group(&m, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks, 1, 0);
        int fwd[] = {0, 1, 2, 3, 4, 5}, U = m.nunits;
        sharc_shard_stats_t st;

        run_step(g, &m, 3, 1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0); /* records */
        run_step(g, &m, 3, 1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        check_order(g, SHARC_SHARD_FORWARD, fwd, U);
        CHECK_MSG(st.allgathers == (uint64_t)(3 * (2 * U - 1)) &&
                      st.prefetches == (uint64_t)(3 * (2 * U - 2)) &&
                      st.reduce_scatters == (uint64_t)U,
                  "3 micro-batches: %llu all-gathers, %llu prefetched, %llu reduce-scatters",
                  (unsigned long long)st.allgathers, (unsigned long long)st.prefetches,
                  (unsigned long long)st.reduce_scatters);
        sharc_shard_destroy(g);
    }
    /* reshard_after_forward off: every unit stays gathered from forward to backward */
    {
        sharc_shard_params_t cfg = {
            .field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_RESHARD_AFTER_FORWARD,
            .num_units = m.nunits,
            .reshard_after_forward = 0,
        };
        sharc_shard_group_h g = NULL;
        sharc_shard_stats_t st;

        CHECK(sharc_shard_create(comm, m.p, m.nparams, &cfg, &g) == SHARC_OK);
        run_step(g, &m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
        run_step(g, &m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, 0);
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        CHECK(st.allgathers == (uint64_t)m.nunits && st.peak_units_alive == m.nunits);
        sharc_shard_destroy(g);
    }
    model_free(&m);
    printf("rank %d: prefetch ok\n", me);
}

/* Every rank's value of @p v is the same. */
static int same_everywhere(int v)
{
    int lo = v, hi = v;

    CHECK(sharc_allreduce(&v, &lo, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, comm, NULL) == SHARC_OK);
    CHECK(sharc_allreduce(&v, &hi, 1, SHARC_DTYPE_I32, SHARC_OP_MAX, comm, NULL) == SHARC_OK);
    return lo == hi;
}

/*
 * Adaptive prefetch between ranks: steps whose gathers the caller waits for (no compute).
 * The depth is the same on every rank after every step, within the bound (max_unsharded - 1,
 * 3 when derived), never evicts, and settles: it goes up one at a time, and a raise taken
 * back is the last change, so it changes at most bound - 1 times (when, depends on timing;
 * tests/shard/test_shard_auto.c holds the decision to exact schedules).
 */
static void test_auto(void)
{
    static const int bounds[] = {0, 3, 2};
    model_t m;

    model_make(&m, 6, 0);
    for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
        int bound = bounds[b] ? bounds[b] : 4, depth[16], steps = 14;
        sharc_shard_group_h g = make_group(&m, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, SHARC_OP_AVG,
                                           nranks, SHARC_SHARD_PREFETCH_AUTO, bounds[b]);
        sharc_shard_stats_t st;

        if (g == NULL) {
            continue;
        }
        for (int step = 0; step < steps; step++) {
            run_step(g, &m, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, NULL, 0);
            CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
            CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
            depth[step] = st.prefetch_depth;
            CHECK_MSG(same_everywhere(depth[step]),
                      "rank %d step %d: depth %d differs between "
                      "ranks",
                      me, step, depth[step]);
            CHECK_MSG(depth[step] >= 1 && depth[step] <= bound - 1,
                      "rank %d step %d: depth %d, bound %d", me, step, depth[step], bound);
            CHECK_MSG(st.peak_units_alive <= bound && st.evictions == 0,
                      "rank %d step %d: peak %d units, bound %d, %llu evictions", me, step,
                      st.peak_units_alive, bound, (unsigned long long)st.evictions);
            CHECK(st.gather_wait_s <= st.exposed_s + 1e-9);
        }
        /* it settles: up one at a time, and once taken back never up again, so at most
         * bound - 1 changes */
        for (int step = 1, changes = 0, down = 0; step < steps; step++) {
            changes += depth[step] != depth[step - 1];
            CHECK_MSG(!down || depth[step] <= depth[step - 1],
                      "rank %d: depth up to %d at step %d after it was taken back", me, depth[step],
                      step);
            CHECK_MSG(depth[step] <= depth[step - 1] + 1, "rank %d: depth %d -> %d at step %d", me,
                      depth[step - 1], depth[step], step);
            down |= depth[step] < depth[step - 1];
            CHECK_MSG(changes <= bound - 1, "rank %d: %d depth changes by step %d", me, changes,
                      step);
        }
        if (me == 0) {
            printf("auto prefetch, bound %d: depths", bound);
            for (int step = 0; step < steps; step++) {
                printf(" %d", depth[step]);
            }
            printf("\n");
            sharc_shard_schedule_print(g, stdout);
        }
        sharc_shard_destroy(g);
    }
    model_free(&m);
    printf("rank %d: auto ok\n", me);
}

/*
 * Steps for the timeline trace (SHARC_SHARD_TRACE set by the caller) with a short sleeping
 * compute; each step's statistics go to stdout as "stats RANK STEP EXPOSED_S GATHER_WAIT_S
 * DEPTH", which tests/shard/check_trace.py holds the trace's waits against.
 */
static void test_trace(int autop, int steps, int max_unsharded)
{
    model_t m;
    sharc_shard_group_h g;
    sharc_shard_stats_t st;

    model_make(&m, 6, 0);
    g = make_group(&m, SHARC_DTYPE_F32, SHARC_DTYPE_F32, SHARC_OP_AVG, nranks,
                   autop ? SHARC_SHARD_PREFETCH_AUTO : 1, max_unsharded);
    for (int step = 0; g != NULL && step < steps; step++) {
        run_step(g, &m, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, NULL, step % 2 ? 300 : 0);
        CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
        CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
        printf("stats %d %d %.9f %.9f %d\n", me, step, st.exposed_s, st.gather_wait_s,
               st.prefetch_depth);
    }
    sharc_shard_destroy(g); /* rank 0 writes the trace */
    model_free(&m);
    printf("rank %d: trace steps ok\n", me);
}

/* Overlap: with a progress thread, communication runs while the caller "computes" (sleeps). */
static void test_overlap(void)
{
    sharc_shard_param_t p[4];
    char names[4][16];
    sharc_shard_params_t cfg = {.field_mask = SHARC_SHARD_PARAM_NUM_UNITS, .num_units = 4};
    sharc_shard_group_h g = NULL;
    sharc_shard_stats_t st;

    for (int u = 0; u < 4; u++) {
        snprintf(names[u], sizeof(names[u]), "w%d", u);
        p[u] = (sharc_shard_param_t){.name = names[u], .count = 2u << 20, .unit = u};
    }
    CHECK(sharc_shard_create(comm, p, 4, &cfg, &g) == SHARC_OK);
    for (int step = 0; g != NULL && step < 3; step++) {
        for (int u = 0; u < 4; u++) {
            CHECK(sharc_shard_forward_begin(g, u) == SHARC_OK);
            usleep(30000);
            CHECK(sharc_shard_forward_end(g, u) == SHARC_OK);
        }
        for (int u = 3; u >= 0; u--) {
            CHECK(sharc_shard_backward_begin(g, u) == SHARC_OK);
            usleep(30000);
            CHECK(sharc_shard_backward_end(g, u) == SHARC_OK);
        }
        CHECK(sharc_shard_finish(g) == SHARC_OK);
    }
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    CHECK_MSG(st.comm_s > 0 && st.hidden_s > 0 && st.exposed_s < st.comm_s,
              "rank %d: comm %.3f s, exposed %.3f s, hidden %.3f s", me, st.comm_s, st.exposed_s,
              st.hidden_s);
    if (me == 0) {
        sharc_shard_stats_print(g, stdout);
    }
    sharc_shard_destroy(g);
    printf("rank %d: overlap ok (comm %.1f ms, hidden %.1f ms)\n", me, st.comm_s * 1e3,
           st.hidden_s * 1e3);
}

/* A group from @p m with @p cfg must fail with @p want on every rank. */
static void expect_create(model_t *m, const sharc_shard_params_t *cfg, sharc_status_t want,
                          const char *what)
{
    sharc_shard_group_h g = NULL;
    sharc_status_t status = sharc_shard_create(comm, m->p, m->nparams, cfg, &g);

    CHECK_MSG(status == want, "rank %d: %s: %s, want %s", me, what, sharc_status_string(status),
              sharc_status_string(want));
    CHECK(g == NULL);
    sharc_shard_destroy(g);
}

static void test_errors(void)
{
    sharc_shard_params_t cfg = {.field_mask = SHARC_SHARD_PARAM_NUM_UNITS, .num_units = 3};
    sharc_shard_group_h g = NULL;
    model_t m;
    void *ptr;

    model_make(&m, 3, 0);
    m.p[4].name = m.p[1].name;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a parameter twice");
    m.p[4].name = m.names[4];
    m.p[2].unit = 7;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a unit id out of range");
    m.p[2].unit = 0;
    cfg.num_units = 4;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a unit without parameters");
    cfg.num_units = 3;
    m.p[4].unit = 0; /* unit 0's parameters apart */
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a unit's parameters apart");
    m.p[4].unit = 1;
    m.p[5].unit = SHARC_SHARD_UNIT_AUTO;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "unit ids mixed with AUTO");
    m.p[5].unit = 1;
    size_t count6 = m.p[6].count;
    m.p[6].count = 0;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a parameter without elements");
    m.p[6].count = count6;
    m.p[2].ndim = 2;
    m.p[2].shape[0] = 3;
    m.p[2].shape[1] = 3;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a shape that does not multiply to the count");
    m.p[2].ndim = 0;
    cfg.field_mask |= SHARC_SHARD_PARAM_PARAM_DTYPE;
    cfg.param_dtype = SHARC_DTYPE_I32;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "an integer param dtype");
    cfg.field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PREFETCH;
    cfg.prefetch = -2;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a negative prefetch other than auto");
    cfg.field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_SHARD_SIZE;
    cfg.shard_size = nranks + 1;
    expect_create(&m, &cfg, SHARC_ERR_INVALID, "a shard size that does not divide the ranks");
    cfg.field_mask = SHARC_SHARD_PARAM_NUM_UNITS;
    if (nranks > 1) { /* one rank disagrees: every rank fails */
        m.p[0].count += (me == 1);
        expect_create(&m, &cfg, SHARC_ERR_REMOTE, "rank 1 passes another count");
        m.p[0].count -= (me == 1);
    }

    /* a group that works, then calls out of order */
    cfg.field_mask |= SHARC_SHARD_PARAM_MAX_UNSHARDED;
    cfg.max_unsharded = 1;
    CHECK(sharc_shard_create(comm, m.p, m.nparams, &cfg, &g) == SHARC_OK);
    CHECK(sharc_shard_reduce_grads(g, 0) == SHARC_ERR_INVALID);    /* before unshard */
    CHECK(sharc_shard_wait(g, 0) == SHARC_ERR_INVALID);            /* nothing in flight */
    CHECK(sharc_shard_param_ptr(g, 0, &ptr) == SHARC_ERR_INVALID); /* not gathered */
    CHECK(sharc_shard_grad_ptr(g, 0, &ptr) == SHARC_ERR_INVALID);
    CHECK(sharc_shard_unshard(g, 3) == SHARC_ERR_INVALID);
    CHECK(sharc_shard_unshard(g, -1) == SHARC_ERR_INVALID);
    CHECK(sharc_shard_forward_end(g, 0) == SHARC_ERR_INVALID); /* no begin */
    CHECK(sharc_shard_forward_begin(g, 0) == SHARC_OK);
    CHECK(sharc_shard_forward_begin(g, 0) == SHARC_ERR_INVALID); /* twice */
    CHECK(sharc_shard_unshard(g, 1) == SHARC_ERR_INVALID);       /* bound 1, unit 0 in use */
    CHECK(sharc_shard_forward_end(g, 0) == SHARC_OK);
    CHECK(sharc_shard_param_info(g, 99, NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_shard_set_order(g, SHARC_SHARD_FORWARD, (int[]){0, 0}, 2) == SHARC_ERR_INVALID);
    CHECK(sharc_shard_state_add(g, "master", NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_shard_state_add(g, "m", NULL) == SHARC_OK);
    CHECK(sharc_shard_state_add(g, "m", NULL) == SHARC_ERR_INVALID);
    /* destroyed with a gather and a reduction in flight: completed, no crash */
    CHECK(sharc_shard_unshard(g, 2) == SHARC_OK);
    CHECK(sharc_shard_wait(g, 2) == SHARC_OK);
    CHECK(sharc_shard_grad_ptr(g, 6, &ptr) == SHARC_OK);
    CHECK(sharc_shard_reduce_grads(g, 2) == SHARC_OK);
    CHECK(sharc_shard_reduce_grads(g, 2) == SHARC_ERR_INVALID); /* in flight already */
    CHECK(sharc_shard_reshard(g, 2) == SHARC_OK);
    CHECK(sharc_shard_unshard(g, 1) == SHARC_OK);
    sharc_shard_destroy(g);
    sharc_shard_destroy(NULL);

    /* automatic packing by bucket size */
    {
        sharc_shard_param_t p[5];
        static const size_t counts[] = {1000, 1000, 5000, 10, 10};
        char names[5][8];
        sharc_shard_params_t acfg = {.field_mask = SHARC_SHARD_PARAM_BUCKET_BYTES,
                                     .bucket_bytes = 16384};
        sharc_shard_unit_info_t info;

        for (int i = 0; i < 5; i++) {
            snprintf(names[i], sizeof(names[i]), "a%d", i);
            p[i] = (sharc_shard_param_t){
                .name = names[i], .count = counts[i], .unit = SHARC_SHARD_UNIT_AUTO};
        }
        g = NULL;
        CHECK(sharc_shard_create(comm, p, 5, &acfg, &g) == SHARC_OK);
        CHECK(sharc_shard_num_units(g) == 3 && sharc_shard_num_params(g) == 5);
        CHECK(sharc_shard_unit_info(g, 1, &info) == SHARC_OK && info.first_param == 2 &&
              info.nparams == 1 && info.count == 5000);
        CHECK(sharc_shard_unit_info(g, 2, &info) == SHARC_OK && info.nparams == 2 &&
              info.count == 16 + 10);
        sharc_shard_destroy(g);
    }
    model_free(&m);
    printf("rank %d: errors ok\n", me);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_shard: no communicator\n");
        return 1;
    }
    me = sharc_comm_rank(comm);
    nranks = sharc_comm_size(comm);
    if (strcmp(mode, "all") == 0 || strcmp(mode, "steps") == 0) {
        test_steps();
        test_replica_init();
    }
    if (strcmp(mode, "all") == 0 || strcmp(mode, "prefetch") == 0) {
        test_prefetch();
    }
    if (strcmp(mode, "all") == 0 || strcmp(mode, "auto") == 0) {
        test_auto();
    }
    if (strcmp(mode, "overlap") == 0) {
        test_overlap();
    }
    if (strcmp(mode, "trace") == 0) {
        int autop = argc > 2 && strcmp(argv[2], "auto") == 0, k = 2 + autop;

        test_trace(autop, argc > k ? atoi(argv[k]) : 8, argc > k + 1 ? atoi(argv[k + 1]) : 0);
    }
    if (strcmp(mode, "all") == 0 || strcmp(mode, "errors") == 0) {
        test_errors();
    }
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_shard");
}
