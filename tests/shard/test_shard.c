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
 * steps (their statistics printed for tests/shard/check_trace.py), and bad input. This file
 * holds the model, its groups and steps, and main; the tests are in test_shard_steps.c,
 * test_shard_sched.c, test_shard_trace.c and test_shard_errors.c (test_shard.h).
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

#include "../elem.h"
#include "test_shard.h"

int check_failures; /* every file's (../check.h) */

static sharc_context_h ctx;
sharc_comm_h comm;
int me, nranks;
int assign_grads;

float init_value(int param, size_t j)
{
    return (float)((int)((param * 7 + j * 3) % 17) - 8);
}

float grad_value(int r, int mb, int param, size_t j)
{
    return (float)((int)(((size_t)(r + 1) * (j % 5 + 1) + (size_t)mb + (size_t)param) % 9) - 4);
}

void model_make(model_t *m, int nunits, int auto_units)
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

void model_free(model_t *m)
{
    for (int i = 0; i < m->nparams; i++) {
        free(m->init[i]);
    }
}

sharc_shard_group_h make_group(model_t *m, sharc_dtype_t pdt, sharc_dtype_t rdt, sharc_op_t op,
                               int shard_size, int prefetch, int max_unsharded)
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

void check_params(sharc_shard_group_h g, int u, const char *ref, sharc_dtype_t pdt)
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

void run_step(sharc_shard_group_h g, model_t *m, int mbs, int nosync, sharc_dtype_t pdt,
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
