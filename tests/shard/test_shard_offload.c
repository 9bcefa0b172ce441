/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_offload.c: one rank of the tests of offload and the engine's AdamW, on the
 * emulated CUDA runtime (tests/gpu_emu.h: device memory is host memory this test may read
 * and write through the engine's device pointers). A small model of odd-sized units runs 20
 * steps of 2 micro-batches (gradients accumulated unsharded, reduced by the last); each
 * gradient depends on the gathered parameters, so a wrong update shows in every later step.
 *
 *   equal       each configuration against an independent AdamW over the whole model in
 *               this test (torch's formula after clip_grad_norm_, means over the ranks):
 *               offload none (the device's update), host, managed, host with half the
 *               elements kept on the GPU (Twin-Flow), HSDP where the rank count allows,
 *               managed falling back to host (SHARCTEST_EMU_NO_MANAGED), a host group; and
 *               without clipping host and managed equal none bit for bit (bf16 gathers and
 *               reductions too); offload host holds less device memory than none
 *   ckpt DIR    a checkpoint saved with offload host loads into a group without offload
 *               and the reverse, bit for bit, and the two go on alike
 *   die         the last rank dies while its gradients are on their way to the host: the
 *               others' step fails with SHARC_ERR_REMOTE naming it, and nothing of the
 *               host's work is left in flight
 * (equal also checks that bad settings and a misuse of the update are refused, saying why)
 * This file holds the model, its groups and steps, reading shards, and main; the tests are
 * in test_shard_offload_equal.c, test_shard_offload_ckpt.c and test_shard_offload_die.c
 * (test_shard_offload.h).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "shard/offload/shard_host.h"
#include "test_shard_offload.h"

int check_failures; /* every file's (../check.h) */

const size_t counts[NPARAMS] = {296, 192, 12, 231, 5, 90};
const int units[NPARAMS] = {0, 1, 1, 2, 2, 3};
const int ndims[NPARAMS] = {2, 2, 1, 2, 1, 2};
sharc_comm_h comm;
int me, nranks;

const sharc_shard_adamw_t hp0 = {
    .lr = 2e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};

int host_inflight(sharc_shard_group_h g)
{
    sharc_shard_host_t *h = (g->off != NULL) ? g->off->host : NULL;
    int n;

    if (h == NULL) {
        return 0;
    }
    pthread_mutex_lock(&h->lock);
    n = (int)(h->land.n + h->rest.n) + h->running;
    for (int i = 0; i < SHARC_SHARD_DOWN_SLOTS; i++) {
        n += h->down_busy[i];
    }
    for (int i = 0; i < g->nunits; i++) {
        n += g->off->units[i].pending;
    }
    pthread_mutex_unlock(&h->lock);
    return n;
}

float init_value(int p, size_t i)
{
    return 0.2f * sinf(0.37f * (float)i + 1.3f * (float)p);
}

/* rank r's gradient of an element of value x in micro-batch k of step t */
float grad_value(float x, int r, int k, int t)
{
    return 0.05f * sinf(x * (1.0f + 0.25f * (float)r) + (float)k + 0.1f * (float)t);
}

sharc_shard_group_h make_group(const config_t *c)
{
    sharc_shard_param_t p[NPARAMS];
    char names[NPARAMS][16];
    float *init[NPARAMS];
    unsigned char decay[NPARAMS];
    sharc_shard_params_t sp = {.field_mask =
                                   SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PARAM_DTYPE |
                                   SHARC_SHARD_PARAM_REDUCE_DTYPE | SHARC_SHARD_PARAM_SHARD_SIZE |
                                   SHARC_SHARD_PARAM_OFFLOAD | SHARC_SHARD_PARAM_OFFLOAD_FRACTION,
                               .num_units = NUNITS,
                               .param_dtype = c->pdtype,
                               .reduce_dtype = c->rdtype,
                               .shard_size = c->shard_size > 0 ? c->shard_size : nranks,
                               .offload = c->offload,
                               .offload_fraction = c->fraction > 0 ? c->fraction : 1.0};
    sharc_shard_group_h g = NULL;
    sharc_status_t status;

    if (!c->host_group) {
        sp.field_mask |= SHARC_SHARD_PARAM_MEMTYPE;
        sp.memtype = SHARC_MEMTYPE_CUDA;
    }
    for (int i = 0; i < NPARAMS; i++) {
        init[i] = malloc(counts[i] * sizeof(float));
        for (size_t x = 0; x < counts[i]; x++) {
            init[i][x] = init_value(i, x);
        }
        snprintf(names[i], sizeof(names[i]), "u%d.p%d", units[i], i);
        p[i] = (sharc_shard_param_t){
            .name = names[i], .count = counts[i], .unit = units[i], .init = init[i]};
        decay[i] = ndims[i] >= 2;
    }
    if (c->no_managed) {
        setenv("SHARCTEST_EMU_NO_MANAGED", "1", 1);
    }
    status = sharc_shard_create(comm, p, NPARAMS, &sp, &g);
    unsetenv("SHARCTEST_EMU_NO_MANAGED");
    for (int i = 0; i < NPARAMS; i++) {
        free(init[i]);
    }
    CHECK_MSG(status == SHARC_OK, "%s: create: %s", c->name, sharc_status_string(status));
    if (status == SHARC_OK) {
        status = sharc_shard_adamw_create(g, decay);
        CHECK_MSG(status == SHARC_OK, "%s: adamw: %s", c->name, sharc_status_string(status));
    }
    return g;
}

/* The gathered parameter i as f32 (bf16 widened). */
static float param_at(const void *w, sharc_dtype_t dt, size_t x)
{
    if (dt == SHARC_DTYPE_BF16) {
        uint32_t u = (uint32_t)((const uint16_t *)w)[x] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return ((const float *)w)[x];
}

static void grad_add(void *gp, sharc_dtype_t dt, size_t x, float v)
{
    if (dt == SHARC_DTYPE_BF16) { /* the caller adds in f32 and stores bf16 */
        uint16_t *h = gp;
        uint32_t u = (uint32_t)h[x] << 16, r;
        float f;
        memcpy(&f, &u, 4);
        f += v;
        memcpy(&r, &f, 4);
        h[x] = (uint16_t)((r + 0x7fffu + ((r >> 16) & 1u)) >> 16);
        return;
    }
    ((float *)gp)[x] += v;
}

sharc_status_t engine_step(sharc_shard_group_h g, const config_t *c, int t, float *norm_p)
{
    sharc_shard_adamw_t hp = hp0;
    sharc_status_t s = SHARC_OK;

    hp.max_norm = c->max_norm;
    hp.step = t + 1;
    for (int k = 0; s == SHARC_OK && k < MICRO; k++) {
        s = sharc_shard_set_sync(g, k == MICRO - 1);
        if (s == SHARC_OK && k == MICRO - 1) {
            s = sharc_shard_adamw_step(g, &hp);
        }
        for (int u = 0; s == SHARC_OK && u < NUNITS; u++) {
            s = sharc_shard_forward_begin(g, u);
            s = (s == SHARC_OK) ? sharc_shard_forward_end(g, u) : s;
        }
        for (int u = NUNITS - 1; s == SHARC_OK && u >= 0; u--) {
            s = sharc_shard_backward_begin(g, u);
            for (int i = 0; s == SHARC_OK && i < NPARAMS; i++) {
                void *w, *gp;
                if (units[i] != u) {
                    continue;
                }
                s = sharc_shard_param_ptr(g, i, &w);
                s = (s == SHARC_OK) ? sharc_shard_grad_ptr(g, i, &gp) : s;
                for (size_t x = 0; s == SHARC_OK && x < counts[i]; x++) {
                    grad_add(gp, c->rdtype, x, grad_value(param_at(w, c->pdtype, x), me, k, t));
                }
            }
            s = (s == SHARC_OK) ? sharc_shard_backward_end(g, u) : s;
        }
    }
    s = (s == SHARC_OK) ? sharc_shard_finish(g) : s;
    s = (s == SHARC_OK) ? sharc_shard_adamw_norm(g, norm_p) : s;
    return (s == SHARC_OK) ? sharc_shard_zero_grads(g) : s;
}

int read_shards(sharc_shard_group_h g, float *out[NUNITS][3], size_t n[NUNITS])
{
    for (int u = 0; u < NUNITS; u++) {
        float *s[3];
        int ok = sharc_shard_local(g, u, &s[0], NULL, &n[u]) == SHARC_OK &&
                 sharc_shard_state_ptr(g, 0, u, &s[1]) == SHARC_OK &&
                 sharc_shard_state_ptr(g, 1, u, &s[2]) == SHARC_OK;
        if (!ok) {
            return -1;
        }
        for (int k = 0; k < 3; k++) { /* (emulated device memory is host memory) */
            out[u][k] = malloc(n[u] * sizeof(float));
            memcpy(out[u][k], s[k], n[u] * sizeof(float));
        }
    }
    return 0;
}

void free_shards(float *s[NUNITS][3])
{
    for (int u = 0; u < NUNITS; u++) {
        for (int k = 0; k < 3; k++) {
            free(s[u][k]);
        }
    }
}

void same_bits(float *a[NUNITS][3], float *b[NUNITS][3], const size_t *n, const char *what)
{
    for (int u = 0; u < NUNITS; u++) {
        for (int k = 0; k < 3; k++) {
            CHECK_MSG(memcmp(a[u][k], b[u][k], n[u] * sizeof(float)) == 0,
                      "%s: rank %d: unit %d, %s differ", what, me, u,
                      k == 0 ? "masters" : "moments");
        }
    }
}

int main(int argc, char **argv)
{
    sharc_context_h ctx;

    if (argc < 2) {
        fprintf(stderr, "usage: test_shard_offload equal|ckpt DIR|die\n");
        return 2;
    }
    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_shard_offload: no communicator\n");
        return 1;
    }
    me = sharc_comm_rank(comm);
    nranks = sharc_comm_size(comm);
    if (strcmp(argv[1], "equal") == 0) {
        test_equal();
        test_bad();
    } else if (strcmp(argv[1], "ckpt") == 0 && argc > 2) {
        test_ckpt(argv[2]);
    } else if (strcmp(argv[1], "die") == 0) {
        test_die();
    } else {
        fprintf(stderr, "test_shard_offload: unknown test %s\n", argv[1]);
        return 2;
    }
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_shard_offload");
}
