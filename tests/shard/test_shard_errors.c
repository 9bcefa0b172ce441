/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_errors.c: test_shard's bad input: groups that every rank must fail to make (bad
 * parameters, units, dtypes, settings; a rank that disagrees), calls out of order on a group
 * that works, a group destroyed with collectives in flight; and automatic packing by bucket
 * size.
 */
#include <stdio.h>

#include "test_shard.h"

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

/* Groups that must not be made: every rank fails alike. @p cfg: their settings, the mask back
 * to NUM_UNITS alone at the end. */
static void errors_create(model_t *m, sharc_shard_params_t *cfg)
{
    m->p[4].name = m->p[1].name;
    expect_create(m, cfg, SHARC_ERR_INVALID, "a parameter twice");
    m->p[4].name = m->names[4];
    m->p[2].unit = 7;
    expect_create(m, cfg, SHARC_ERR_INVALID, "a unit id out of range");
    m->p[2].unit = 0;
    cfg->num_units = 4;
    expect_create(m, cfg, SHARC_ERR_INVALID, "a unit without parameters");
    cfg->num_units = 3;
    m->p[4].unit = 0; /* unit 0's parameters apart */
    expect_create(m, cfg, SHARC_ERR_INVALID, "a unit's parameters apart");
    m->p[4].unit = 1;
    m->p[5].unit = SHARC_SHARD_UNIT_AUTO;
    expect_create(m, cfg, SHARC_ERR_INVALID, "unit ids mixed with AUTO");
    m->p[5].unit = 1;
    size_t count6 = m->p[6].count;
    m->p[6].count = 0;
    expect_create(m, cfg, SHARC_ERR_INVALID, "a parameter without elements");
    m->p[6].count = count6;
    m->p[2].ndim = 2;
    m->p[2].shape[0] = 3;
    m->p[2].shape[1] = 3;
    expect_create(m, cfg, SHARC_ERR_INVALID, "a shape that does not multiply to the count");
    m->p[2].ndim = 0;
    cfg->field_mask |= SHARC_SHARD_PARAM_PARAM_DTYPE;
    cfg->param_dtype = SHARC_DTYPE_I32;
    expect_create(m, cfg, SHARC_ERR_INVALID, "an integer param dtype");
    cfg->field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PREFETCH;
    cfg->prefetch = -2;
    expect_create(m, cfg, SHARC_ERR_INVALID, "a negative prefetch other than auto");
    cfg->field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_SHARD_SIZE;
    cfg->shard_size = nranks + 1;
    expect_create(m, cfg, SHARC_ERR_INVALID, "a shard size that does not divide the ranks");
    cfg->field_mask = SHARC_SHARD_PARAM_NUM_UNITS;
    if (nranks > 1) { /* one rank disagrees: every rank fails */
        m->p[0].count += (me == 1);
        expect_create(m, cfg, SHARC_ERR_REMOTE, "rank 1 passes another count");
        m->p[0].count -= (me == 1);
    }
}

/* A group that works, then calls out of order; destroyed with a gather and a reduction in
 * flight. */
static void errors_calls(model_t *m, sharc_shard_params_t *cfg)
{
    sharc_shard_group_h g = NULL;
    void *ptr;

    cfg->field_mask |= SHARC_SHARD_PARAM_MAX_UNSHARDED;
    cfg->max_unsharded = 1;
    CHECK(sharc_shard_create(comm, m->p, m->nparams, cfg, &g) == SHARC_OK);
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
}

/* Automatic packing by bucket size. */
static void errors_bucket(void)
{
    sharc_shard_group_h g = NULL;
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
    CHECK(sharc_shard_create(comm, p, 5, &acfg, &g) == SHARC_OK);
    CHECK(sharc_shard_num_units(g) == 3 && sharc_shard_num_params(g) == 5);
    CHECK(sharc_shard_unit_info(g, 1, &info) == SHARC_OK && info.first_param == 2 &&
          info.nparams == 1 && info.count == 5000);
    CHECK(sharc_shard_unit_info(g, 2, &info) == SHARC_OK && info.nparams == 2 &&
          info.count == 16 + 10);
    sharc_shard_destroy(g);
}

void test_errors(void)
{
    sharc_shard_params_t cfg = {.field_mask = SHARC_SHARD_PARAM_NUM_UNITS, .num_units = 3};
    model_t m;

    model_make(&m, 3, 0);
    errors_create(&m, &cfg);
    errors_calls(&m, &cfg);
    errors_bucket();
    model_free(&m);
    printf("rank %d: errors ok\n", me);
}
