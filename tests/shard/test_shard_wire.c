/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_wire.c: one rank of the multi-rank test of the engine's narrow wires and
 * node-local secondary shards (public API; the host kernels as the reference). Emulated
 * steps (forward, backward with known gradients, finish, an exact SGD) with param_wire and
 * reduce_wire int8 / fp8 / full, f32 and bf16 parameters, HSDP, gradient accumulation, and
 * reshard_after_forward = node: every rank's gathered parameters equal, bit for bit, each
 * shard quantized and dequantized by the kernels; the backward sees the forward's bits; the
 * secondary shards' peak is what the layout says; the gradient shards are within one
 * quantization per other node (or rank, where the nodes are uneven) of the exact mean; a
 * checkpoint saved from a quantized group loads into a full one with the same masters;
 * mismatched and bad settings are refused on every rank.
 *
 *   test_shard_wire [steps|errors]   (default: both)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../../kernels/kernels.h"
#include "../check.h"
#include "../elem.h"

#define NUNITS 3
#define NPER   3

static sharc_context_h ctx;
static sharc_comm_h comm;
static int me, nranks;

typedef struct {
    sharc_wire_t pwire, rwire;
    size_t block;
    sharc_dtype_t pdt, rdt;
    int shard_size, hpz, mbs;
} conf_t;

typedef struct {
    sharc_shard_param_t p[NUNITS * NPER];
    char names[NUNITS * NPER][32];
    float *init[NUNITS * NPER];
} model_t;

/* Values of many magnitudes (quantization must show), the same on every rank. */
static float init_value(int param, size_t j)
{
    return (float)(sin(0.7 * (double)j + param) * ldexp(1.0, (int)(j / 200 % 6) - 3));
}

static float grad_value(int r, int mb, int param, size_t j)
{
    return (float)(cos(0.3 * (double)j + r * 1.7 + mb + param) *
                   ldexp(1.0, (int)(j / 150 % 5) - 2));
}

static void model_make(model_t *m)
{
    static const size_t sizes[] = {1000, 37, 4097, 3, 2500, 129, 700, 64, 1};

    memset(m, 0, sizeof(*m));
    for (int k = 0; k < NUNITS * NPER; k++) {
        snprintf(m->names[k], sizeof(m->names[k]), "u%d.p%d", k / NPER, k % NPER);
        m->p[k].name = m->names[k];
        m->p[k].count = sizes[k];
        m->p[k].unit = k / NPER;
        m->init[k] = malloc(sizes[k] * sizeof(float));
        for (size_t j = 0; j < sizes[k]; j++) {
            m->init[k][j] = init_value(k, j);
        }
        m->p[k].init = m->init[k];
    }
}

static sharc_status_t make_group(model_t *m, const conf_t *c, sharc_shard_group_h *g_p)
{
    sharc_shard_params_t cfg = {
        .field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PARAM_DTYPE |
                      SHARC_SHARD_PARAM_REDUCE_DTYPE | SHARC_SHARD_PARAM_SHARD_SIZE |
                      SHARC_SHARD_PARAM_PARAM_WIRE | SHARC_SHARD_PARAM_REDUCE_WIRE |
                      SHARC_SHARD_PARAM_WIRE_BLOCK | SHARC_SHARD_PARAM_RESHARD_AFTER_FORWARD,
        .num_units = NUNITS,
        .param_dtype = c->pdt,
        .reduce_dtype = c->rdt,
        .shard_size = c->shard_size,
        .param_wire = c->pwire,
        .reduce_wire = c->rwire,
        .wire_block = c->block,
        .reshard_after_forward = c->hpz ? SHARC_SHARD_RESHARD_NODE : 1,
    };

    return sharc_shard_create(comm, m->p, NUNITS * NPER, &cfg, g_p);
}

/* Unit u's parameters as every rank must see them: each shard rank's block of the f32
 * unit, cast to the param dtype, quantized and dequantized by the kernels (full: cast). */
static char *want_unit(sharc_shard_group_h g, const conf_t *c, int u)
{
    sharc_shard_unit_info_t info;
    size_t es = sharc_dtype_size(c->pdt);
    float *full;
    char *cast, *out, *seg;
    sharc_kern_wire_t w = {c->pwire, c->block};

    CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
    full = calloc(info.padded_count, sizeof(float));
    cast = malloc(info.padded_count * es);
    out = malloc(info.padded_count * es);
    seg = malloc(sharc_wire_size(SHARC_WIRE_INT8, info.shard_count, 1, c->pdt) + 16);
    for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
        sharc_shard_param_info_t pi;

        CHECK(sharc_shard_param_info(g, i, &pi) == SHARC_OK);
        for (size_t j = 0; j < pi.count; j++) {
            full[pi.offset + j] = init_value(i, j);
        }
    }
    sharc_kern_cpu_ops.cast(cast, c->pdt, full, SHARC_DTYPE_F32, info.padded_count, NULL);
    for (size_t s = 0; s < info.padded_count / info.shard_count; s++) {
        char *blk = cast + s * info.shard_count * es;

        if (c->pwire == SHARC_WIRE_FULL) {
            memcpy(out + s * info.shard_count * es, blk, info.shard_count * es);
            continue;
        }
        sharc_kern_cpu_ops.quantize(seg, w, blk, c->pdt, info.shard_count, 1, NULL);
        sharc_kern_cpu_ops.dequantize(out + s * info.shard_count * es, c->pdt, seg, w,
                                      info.shard_count, 1, NULL);
    }
    free(full), free(cast), free(seg);
    return out;
}

/* The unit's parameters (the view of its first parameter is the unit's start). */
static const char *unit_view(sharc_shard_group_h g, int u)
{
    sharc_shard_unit_info_t info;
    void *ptr = NULL;

    CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
    CHECK(sharc_shard_param_ptr(g, info.first_param, &ptr) == SHARC_OK);
    return ptr;
}

/* Bytes of parameters of unit u (its last parameter's end) in the param dtype. */
static size_t unit_bytes(sharc_shard_group_h g, const conf_t *c, int u)
{
    sharc_shard_unit_info_t info;

    CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
    return info.count * sharc_dtype_size(c->pdt);
}

static void write_grads(sharc_shard_group_h g, const conf_t *c, int u, int mb)
{
    sharc_shard_unit_info_t info;

    CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
    for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
        sharc_shard_param_info_t pi;
        void *gp = NULL;

        CHECK(sharc_shard_param_info(g, i, &pi) == SHARC_OK);
        CHECK(sharc_shard_grad_ptr(g, i, &gp) == SHARC_OK);
        for (size_t j = 0; gp != NULL && j < pi.count; j++) {
            elem_put(gp, c->rdt, j, elem_get(gp, c->rdt, j) + grad_value(me, mb, i, j));
        }
    }
}

/* One step; the forward's and backward's parameters against the kernels' and each other. */
static void run_step(sharc_shard_group_h g, const conf_t *c, char **want)
{
    char *seen[NUNITS];

    for (int mb = 0; mb < c->mbs; mb++) {
        CHECK(sharc_shard_set_sync(g, mb == c->mbs - 1) == SHARC_OK);
        for (int u = 0; u < NUNITS; u++) {
            CHECK(sharc_shard_forward_begin(g, u) == SHARC_OK);
            seen[u] = malloc(unit_bytes(g, c, u));
            memcpy(seen[u], unit_view(g, u), unit_bytes(g, c, u));
            CHECK_MSG(want == NULL || memcmp(seen[u], want[u], unit_bytes(g, c, u)) == 0,
                      "rank %d: unit %d's gathered parameters are not the kernels' (%s wire)", me,
                      u, sharc_wire_name(c->pwire));
            CHECK(sharc_shard_forward_end(g, u) == SHARC_OK);
        }
        for (int u = NUNITS - 1; u >= 0; u--) {
            CHECK(sharc_shard_backward_begin(g, u) == SHARC_OK);
            CHECK_MSG(memcmp(seen[u], unit_view(g, u), unit_bytes(g, c, u)) == 0,
                      "rank %d: unit %d: the backward sees other parameters than the forward%s", me,
                      u, c->hpz ? " (secondary shards)" : "");
            write_grads(g, c, u, mb);
            CHECK(sharc_shard_backward_end(g, u) == SHARC_OK);
            free(seen[u]);
        }
    }
    CHECK(sharc_shard_finish(g) == SHARC_OK);
}

/* The shard group's ranks on this rank's node (what a secondary shard divides by). */
static int node_ranks(int shard_size)
{
    int n = 0, first = me / shard_size * shard_size;

    for (int r = first; r < first + shard_size; r++) {
        n += sharc_comm_node_of(comm, r) == sharc_comm_node(comm);
    }
    return n;
}

/* Whether every node holds as many of the shard group's ranks. */
static int nodes_even(int shard_size)
{
    int first = me / shard_size * shard_size, per = node_ranks(shard_size);

    for (int r = first; r < first + shard_size; r++) {
        int n = 0;

        for (int q = first; q < first + shard_size; q++) {
            n += sharc_comm_node_of(comm, q) == sharc_comm_node_of(comm, r);
        }
        if (n != per) {
            return 0;
        }
    }
    return 1;
}

/* The secondary shards' peak in a step after the first (which records the schedule, and
 * releases even the forward's last unit): every unit but that one, 1/node_ranks each. */
static void check_secondary(sharc_shard_group_h g, const conf_t *c)
{
    sharc_shard_stats_t st;
    size_t want = 0;
    int per = node_ranks(c->shard_size);

    for (int u = 0; c->hpz && nodes_even(c->shard_size) && u < NUNITS - 1; u++) {
        sharc_shard_unit_info_t info;

        CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
        want += info.padded_count / (size_t)per * sharc_dtype_size(c->pdt);
    }
    CHECK(sharc_shard_stats(g, -1, &st) == SHARC_OK);
    CHECK_MSG(st.peak_secondary_bytes == want, "rank %d: secondary shards peaked at %zu B, not %zu",
              me, st.peak_secondary_bytes, want);
}

/* Which quantized contribution rank r's gradients are part of: its node's (hierarchical),
 * or its own (flat: uneven nodes, or one rank per node). */
static int group_of(int r, int flat)
{
    return flat ? r : sharc_comm_node_of(comm, r);
}

/* The bound of one quantization of @p v, in a block of largest magnitude @p amax. */
static double quant_bound(sharc_wire_t wire, double amax, double v)
{
    return wire == SHARC_WIRE_FP8 ? fmax(fabs(v) / 16, amax * 0x1p-18) : amax / 254;
}

/*
 * Unit u's gradient shard against the exact mean of every rank's gradients: within one
 * quantization of each contribution other than the destination's own (per replica), plus
 * the reduce dtype's rounding. Returns the elements beyond.
 */
static size_t grads_beyond(sharc_shard_group_h g, const conf_t *c, int u, int flat)
{
    sharc_shard_unit_info_t info;
    size_t n, far = 0;
    float *grad;
    double *exact, *bound, *part, *mag, tol = c->rdt == SHARC_DTYPE_BF16 ? 0x1p-6 : 1e-5;

    CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
    CHECK(sharc_shard_local(g, u, NULL, &grad, NULL) == SHARC_OK);
    n = info.shard_count;
    exact = calloc(n, sizeof(double)), bound = calloc(n, sizeof(double));
    part = calloc(n, sizeof(double)), mag = calloc(n, sizeof(double));
    for (int q = 0; q < nranks; q++) { /* the partial sums of q's group, if q leads it */
        int dest = q / c->shard_size * c->shard_size + me % c->shard_size, lead = 1;

        for (int r = q / c->shard_size * c->shard_size; r < q; r++) {
            lead &= group_of(r, flat) != group_of(q, flat);
        }
        if (!lead) {
            continue;
        }
        memset(part, 0, n * sizeof(double));
        for (int r = q / c->shard_size * c->shard_size; r < (q / c->shard_size + 1) * c->shard_size;
             r++) {
            for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
                sharc_shard_param_info_t pi;

                CHECK(sharc_shard_param_info(g, i, &pi) == SHARC_OK);
                for (size_t j = 0; group_of(r, flat) == group_of(q, flat) && j < pi.count; j++) {
                    size_t k = pi.offset + j;

                    for (int mb = 0;
                         k >= info.shard_offset && k < info.shard_offset + n && mb < c->mbs; mb++) {
                        part[k - info.shard_offset] += grad_value(r, mb, i, j);
                        mag[k - info.shard_offset] += fabs(grad_value(r, mb, i, j)) / nranks;
                    }
                }
            }
        }
        for (size_t k = 0, b = 0; k < n; k++) {
            double amax = 0;

            exact[k] += part[k] / nranks;
            for (b = k / c->block * c->block; b < (k / c->block + 1) * c->block && b < n; b++) {
                amax = fmax(amax, fabs(part[b]));
            }
            if (c->rwire != SHARC_WIRE_FULL && group_of(q, flat) != group_of(dest, flat)) {
                bound[k] += quant_bound(c->rwire, amax, part[k]) / nranks;
            }
        }
    }
    for (size_t k = 0; k < n; k++) {
        /* (the rounding of the dtype's sums scales with the values summed, not their sum) */
        far += fabs(grad[k] - exact[k]) > bound[k] * 1.01 + tol * (mag[k] + 1e-6);
    }
    free(exact), free(bound), free(part), free(mag);
    return far;
}

static void check_grads(sharc_shard_group_h g, const conf_t *c)
{
    int flat = !nodes_even(c->shard_size) || node_ranks(c->shard_size) == 1;
    size_t far = 0;

    for (int u = 0; u < NUNITS; u++) {
        far += grads_beyond(g, c, u, flat);
    }
    CHECK_MSG(far == 0, "rank %d: %zu gradient elements beyond the bound (%s wire, %s)", me, far,
              sharc_wire_name(c->rwire), sharc_dtype_name(c->rdt));
}

/* An exact optimizer step: master -= grad / 4; then the gradients go. */
static void sgd(sharc_shard_group_h g)
{
    for (int u = 0; u < NUNITS; u++) {
        float *w, *gr;
        size_t n;

        CHECK(sharc_shard_local(g, u, &w, &gr, &n) == SHARC_OK);
        for (size_t i = 0; i < n; i++) {
            w[i] -= 0.25f * gr[i];
        }
    }
    CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
}

/* Two steps of one configuration; a checkpoint of it loads into a full-wire group. */
static void test_conf(model_t *m, const conf_t *c, const char *dir)
{
    sharc_shard_group_h g = NULL, h = NULL;
    char *want[NUNITS];
    conf_t plain = *c;

    CHECK(make_group(m, c, &g) == SHARC_OK);
    if (g == NULL) {
        return;
    }
    for (int u = 0; u < NUNITS; u++) {
        want[u] = want_unit(g, c, u);
    }
    run_step(g, c, want);
    check_grads(g, c);
    sgd(g);
    run_step(g, c, NULL); /* from the new masters: the backward still sees the forward's */
    check_secondary(g, c);
    for (int u = 0; u < NUNITS; u++) {
        free(want[u]);
    }
    plain.pwire = plain.rwire = SHARC_WIRE_FULL;
    plain.hpz = 0;
    if (dir != NULL && sharc_shard_save(g, dir, 7) == SHARC_OK) {
        uint64_t step = 0;

        CHECK(make_group(m, &plain, &h) == SHARC_OK);
        CHECK(h != NULL && sharc_shard_load(h, dir, &step) == SHARC_OK && step == 7);
        for (int u = 0; h != NULL && u < NUNITS; u++) {
            float *a, *b;
            size_t n;

            CHECK(sharc_shard_local(g, u, &a, NULL, &n) == SHARC_OK);
            CHECK(sharc_shard_local(h, u, &b, NULL, NULL) == SHARC_OK);
            CHECK_MSG(memcmp(a, b, n * sizeof(float)) == 0, "rank %d: unit %d: checkpoint", me, u);
        }
        sharc_shard_destroy(h);
    }
    sharc_shard_destroy(g);
}

static void test_steps(void)
{
    static const conf_t confs[] = {
        {SHARC_WIRE_INT8, SHARC_WIRE_INT8, 256, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 1, 1},
        {SHARC_WIRE_FP8, SHARC_WIRE_FP8, 64, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, 0, 0, 2},
        {SHARC_WIRE_INT8, SHARC_WIRE_INT8, 100, SHARC_DTYPE_BF16, SHARC_DTYPE_BF16, 0, 1, 2},
        {SHARC_WIRE_FULL, SHARC_WIRE_INT8, 256, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 1, 1},
        {SHARC_WIRE_INT8, SHARC_WIRE_FULL, 7, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0, 1},
        {SHARC_WIRE_INT8, SHARC_WIRE_INT8, 256, SHARC_DTYPE_F32, SHARC_DTYPE_F32, -2, 1, 2},
    };
    const char *dir = getenv("SHARCTEST_CKPT_DIR");
    model_t m;

    model_make(&m);
    for (size_t i = 0; i < sizeof(confs) / sizeof(confs[0]); i++) {
        conf_t c = confs[i];

        c.shard_size = c.shard_size == 0 ? nranks : (nranks % 2 == 0 ? nranks / 2 : nranks);
        test_conf(&m, &c, i == 0 ? dir : NULL);
    }
    for (int k = 0; k < NUNITS * NPER; k++) {
        free(m.init[k]);
    }
}

static void test_errors(void)
{
    conf_t c = {SHARC_WIRE_INT8, SHARC_WIRE_INT8, 256, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0, 1};
    sharc_shard_group_h g = NULL;
    model_t m;

    model_make(&m);
    c.shard_size = nranks;
    c.pwire = (sharc_wire_t)7;
    CHECK(make_group(&m, &c, &g) != SHARC_OK && g == NULL);
    c.pwire = SHARC_WIRE_INT8;
    c.block = 0;
    CHECK(make_group(&m, &c, &g) != SHARC_OK && g == NULL);
    c.block = 256;
    /* ranks that disagree on a wire: every rank fails, none waits */
    if (nranks > 1) {
        c.rwire = me == 1 ? SHARC_WIRE_FP8 : SHARC_WIRE_INT8;
        CHECK(make_group(&m, &c, &g) == SHARC_ERR_REMOTE && g == NULL);
    }
    for (int k = 0; k < NUNITS * NPER; k++) {
        free(m.init[k]);
    }
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";

    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    CHECK(sharc_comm_create(ctx, NULL, &comm) == SHARC_OK);
    if (check_failures != 0) {
        return check_result("test_shard_wire");
    }
    me = sharc_comm_rank(comm);
    nranks = sharc_comm_size(comm);
    if (!strcmp(what, "all") || !strcmp(what, "steps")) {
        test_steps();
    }
    if (!strcmp(what, "all") || !strcmp(what, "errors")) {
        test_errors();
    }
    printf("rank %d of %d (%d nodes): wires and secondary shards %s\n", me, nranks,
           sharc_comm_nnodes(comm), check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_shard_wire");
}
