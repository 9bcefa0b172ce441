/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_offload_equal.c: test_shard_offload's equal: each configuration 20 steps against
 * an independent AdamW over the whole model (torch's formula after clip_grad_norm_, means over
 * the ranks), which this file holds; without clipping host and managed against none bit for
 * bit; offload host's device memory against none's; then bad settings and a misuse of the
 * update refused, saying why.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shard/offload/shard_host.h"
#include "test_shard_offload.h"

/* emulated device memory in use and its peak (tests/gpu_emu.h) */
void gpu_emu_device_bytes(size_t *now_p, size_t *peak_p);

/* The host worker's pause after each task it ends: wide enough (3 ms) that the caller, woken by
 * the step's last end, looks at the worker's counts inside it every time. */
static void slow_end(void)
{
    nanosleep(&(struct timespec){.tv_nsec = 3000000}, NULL);
}

/* ---- the reference: AdamW over the whole model, in this test ------------------------------- */

typedef struct {
    float *p[NPARAMS], *m[NPARAMS], *v[NPARAMS];
} model_t;

static void ref_init(model_t *r)
{
    for (int i = 0; i < NPARAMS; i++) {
        r->p[i] = malloc(counts[i] * sizeof(float));
        r->m[i] = calloc(counts[i], sizeof(float));
        r->v[i] = calloc(counts[i], sizeof(float));
        for (size_t x = 0; x < counts[i]; x++) {
            r->p[i][x] = init_value(i, x);
        }
    }
}

static void ref_free(model_t *r)
{
    for (int i = 0; i < NPARAMS; i++) {
        free(r->p[i]);
        free(r->m[i]);
        free(r->v[i]);
    }
}

/* torch.nn.utils.clip_grad_norm_ then torch.optim.AdamW, on the mean of every rank's sum of
 * its micro-batches' gradients */
static void ref_step(model_t *r, const config_t *c, int t, float *norm_p)
{
    float *gr[NPARAMS];
    double sq = 0.0;
    float clip = 1.0f, step = (float)(t + 1);
    float bc1 = 1.0f - powf(hp0.beta1, step), bc2 = sqrtf(1.0f - powf(hp0.beta2, step));

    for (int i = 0; i < NPARAMS; i++) {
        gr[i] = malloc(counts[i] * sizeof(float));
        for (size_t x = 0; x < counts[i]; x++) {
            double sum = 0.0;
            for (int rank = 0; rank < nranks; rank++) {
                float acc = 0.0f;
                for (int k = 0; k < MICRO; k++) {
                    acc += grad_value(r->p[i][x], rank, k, t);
                }
                sum += acc;
            }
            gr[i][x] = (float)(sum / nranks);
            sq += (double)gr[i][x] * gr[i][x];
        }
    }
    *norm_p = (float)sqrt(sq);
    if (c->max_norm > 0 && *norm_p > c->max_norm) {
        clip = c->max_norm / (*norm_p + 1e-6f);
    }
    for (int i = 0; i < NPARAMS; i++) {
        for (size_t x = 0; x < counts[i]; x++) {
            float g = gr[i][x] * clip;
            r->m[i][x] = hp0.beta1 * r->m[i][x] + (1.0f - hp0.beta1) * g;
            r->v[i][x] = hp0.beta2 * r->v[i][x] + (1.0f - hp0.beta2) * g * g;
            if (ndims[i] >= 2) {
                r->p[i][x] *= 1.0f - hp0.lr * hp0.weight_decay;
            }
            r->p[i][x] -= hp0.lr / bc1 * r->m[i][x] / (sqrtf(r->v[i][x]) / bc2 + hp0.eps);
        }
        free(gr[i]);
    }
}

/* Every element of this rank's shards against the reference's (within f32 rounding of the
 * different orders of summation); returns the largest difference. */
static double against_ref(sharc_shard_group_h g, const model_t *r, const char *name)
{
    double worst = 0.0;

    for (int i = 0; i < NPARAMS; i++) {
        sharc_shard_param_info_t pi;
        sharc_shard_unit_info_t ui;
        float *s[3];
        const float *ref[3] = {r->p[i], r->m[i], r->v[i]};

        sharc_shard_param_info(g, i, &pi);
        sharc_shard_unit_info(g, units[i], &ui);
        sharc_shard_local(g, units[i], &s[0], NULL, NULL);
        sharc_shard_state_ptr(g, 0, units[i], &s[1]);
        sharc_shard_state_ptr(g, 1, units[i], &s[2]);
        for (size_t e = ui.shard_offset; e < ui.shard_offset + ui.shard_count; e++) {
            if (e < pi.offset || e >= pi.offset + pi.count) {
                continue;
            }
            for (int k = 0; k < 3; k++) {
                double a = s[k][e - ui.shard_offset], b = ref[k][e - pi.offset];
                double d = fabs(a - b) / (k == 2 ? 1e-4 + fabs(b) : 1.0);
                worst = d > worst ? d : worst;
            }
        }
    }
    CHECK_MSG(worst < 2e-5, "%s: rank %d: %g off the reference", name, me, worst);
    return worst;
}

/* A configuration's run against the reference; its shards in @p out when asked. */
static void run_config(const config_t *c, float *out[NUNITS][3], size_t n[NUNITS],
                       size_t *dev_bytes_p)
{
    size_t dev0, dev1, peak, reported = 0;
    sharc_shard_group_h g;
    model_t ref;
    float norm = 0, ref_norm = 0;
    sharc_status_t s = SHARC_OK;
    int check_ref = c->pdtype == SHARC_DTYPE_F32 && c->rdtype == SHARC_DTYPE_F32;

    gpu_emu_device_bytes(&dev0, &peak);
    sharc_shard_host_ended_hook = c->slow_end ? slow_end : NULL;
    g = make_group(c);
    if (g == NULL) {
        return;
    }
    ref_init(&ref);
    for (int t = 0; s == SHARC_OK && t < STEPS; t++) {
        s = engine_step(g, c, t, &norm);
        ref_step(&ref, c, t, &ref_norm);
        CHECK_MSG(!check_ref || fabsf(norm - ref_norm) <= 1e-5f * ref_norm,
                  "%s: step %d: norm %.9g, the reference's %.9g", c->name, t, norm, ref_norm);
    }
    CHECK_MSG(s == SHARC_OK, "%s: rank %d: %s", c->name, me, sharc_status_string(s));
    if (s == SHARC_OK && check_ref) {
        double worst = against_ref(g, &ref, c->name);
        if (me == 0) {
            printf("%-44s %d steps: within %.1e of the reference, norm %.4f\n", c->name, STEPS,
                   worst, norm);
        }
    }
    if (c->offload != SHARC_SHARD_OFFLOAD_NONE) {
        sharc_memtype_t mt;
        sharc_shard_unit_memtype(g, NUNITS - 1, &mt);
        CHECK_MSG(mt == (c->offload == SHARC_SHARD_OFFLOAD_MANAGED && !c->no_managed
                             ? SHARC_MEMTYPE_CUDA_MANAGED
                             : SHARC_MEMTYPE_HOST),
                  "%s: the last unit lives in %s", c->name, sharc_memtype_name(mt));
    }
    if (out != NULL) {
        CHECK(read_shards(g, out, n) == 0);
    }
    /* what the group says it holds on the device is what it allocated there */
    gpu_emu_device_bytes(&dev1, &peak);
    sharc_shard_memory(g, &reported, NULL);
    CHECK_MSG(c->host_group || reported == dev1 - dev0,
              "%s: the group reports %zu bytes of device memory, it holds %zu", c->name, reported,
              dev1 - dev0);
    if (dev_bytes_p != NULL) {
        *dev_bytes_p = dev1 - dev0;
    }
    CHECK_MSG(host_inflight(g) == 0, "%s: host work left", c->name);
    ref_free(&ref);
    sharc_shard_destroy(g);
    sharc_shard_host_ended_hook = NULL;
}

void test_equal(void)
{
    int hsdp = nranks % 2 == 0 && nranks > 2 ? 2 : 0;
    const config_t cs[] = {
        {"offload none, clipping", SHARC_SHARD_OFFLOAD_NONE, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32,
         0, 0.05f, 0, 0},
        {"offload host, clipping", SHARC_SHARD_OFFLOAD_HOST, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32,
         0, 0.05f, 0, 0},
        {"offload managed, clipping", SHARC_SHARD_OFFLOAD_MANAGED, 1, 0, SHARC_DTYPE_F32,
         SHARC_DTYPE_F32, 0, 0.05f, 0, 0},
        {"offload host, half on the GPU, clipping", SHARC_SHARD_OFFLOAD_HOST, 0.5, 0,
         SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0.05f, 0, 0},
        {"offload host, HSDP", SHARC_SHARD_OFFLOAD_HOST, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32,
         hsdp, 0.05f, 0, 0},
        {"offload managed, no managed memory: host", SHARC_SHARD_OFFLOAD_MANAGED, 1, 0,
         SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0.05f, 1, 0},
        {"offload host, the worker slow after each task", SHARC_SHARD_OFFLOAD_HOST, 1, 0,
         SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0.05f, 0, 1},
        {"host group", SHARC_SHARD_OFFLOAD_NONE, 1, 1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0.05f,
         0, 0},
    };
    const sharc_shard_offload_t modes[] = {SHARC_SHARD_OFFLOAD_NONE, SHARC_SHARD_OFFLOAD_HOST,
                                           SHARC_SHARD_OFFLOAD_MANAGED};
    size_t dev[2] = {0}, n[NUNITS], elems = 0;
    float *ref[NUNITS][3], *got[NUNITS][3];

    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        run_config(&cs[i], NULL, NULL, i < 2 ? &dev[i] : NULL);
    }
    for (int u = 0; u < NUNITS; u++) { /* this rank's shard elements */
        size_t total = 0;
        for (int i = 0; i < NPARAMS; i++) {
            total += units[i] == u ? counts[i] + 16 : 0;
        }
        elems += (total + nranks - 1) / nranks;
    }
    /* the device keeps the f32 param shard of 4 bytes an element of the 16 (master, gradient,
     * two moments): 12 an element fewer, the unsharded buffers alike */
    CHECK_MSG(dev[0] >= dev[1] + 12 * elems,
              "offload host holds %zu bytes of device memory, none %zu (%zu shard elements)",
              dev[1], dev[0], elems);
    if (me == 0) {
        printf("device memory of the group: %zu bytes without offload, %zu with offload host\n",
               dev[0], dev[1]);
    }
    /* without clipping the same arithmetic in the same order wherever it runs: the same bits */
    for (int bf = 0; bf < 2; bf++) {
        for (int m = 0; m < 3; m++) {
            config_t c = {"",
                          modes[m],
                          1,
                          0,
                          bf ? SHARC_DTYPE_BF16 : SHARC_DTYPE_F32,
                          bf ? SHARC_DTYPE_BF16 : SHARC_DTYPE_F32,
                          0,
                          0,
                          0,
                          0};
            c.name = bf ? "bf16, no clipping" : "f32, no clipping";
            run_config(&c, m == 0 ? ref : got, n, NULL);
            if (m > 0) {
                same_bits(ref, got, n, c.name);
                free_shards(got);
            }
        }
        free_shards(ref);
        if (me == 0) {
            printf("%s: offload host and managed equal none bit for bit\n",
                   bf ? "bf16 gathers and reductions" : "f32");
        }
    }
}

/* Refused, with the reason in the log: offload on a host group, a fraction out of (0, 1],
 * AdamW's settings out of range, a second reduction of a unit after the update was armed. */
void test_bad(void)
{
    config_t c = {"bad", SHARC_SHARD_OFFLOAD_HOST, 1, 1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0, 0,
                  0};
    sharc_shard_param_t p = {.name = "w", .count = 64, .unit = 0};
    sharc_shard_params_t sp = {.field_mask =
                                   SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_OFFLOAD,
                               .num_units = 1,
                               .offload = SHARC_SHARD_OFFLOAD_HOST};
    unsigned long errs = sharc_log_errors(0, NULL, 0);
    sharc_shard_adamw_t hp = hp0;
    sharc_shard_group_h g = NULL;
    char msg[4096];

    CHECK(sharc_shard_create(comm, &p, 1, &sp, &g) == SHARC_ERR_INVALID && g == NULL);
    sp.field_mask |= SHARC_SHARD_PARAM_MEMTYPE | SHARC_SHARD_PARAM_OFFLOAD_FRACTION;
    sp.memtype = SHARC_MEMTYPE_CUDA;
    sp.offload_fraction = 1.5;
    CHECK(sharc_shard_create(comm, &p, 1, &sp, &g) == SHARC_ERR_INVALID && g == NULL);
    sharc_log_errors(errs, msg, sizeof(msg));
    CHECK_MSG(strstr(msg, "offload host is for groups on CUDA") != NULL &&
                  strstr(msg, "offload_fraction must be a number in (0, 1]") != NULL,
              "the errors do not say why: %s", msg);
    c.host_group = 0;
    g = make_group(&c);
    if (g == NULL) {
        return;
    }
    hp.beta1 = 1.0f;
    hp.step = 1;
    CHECK(sharc_shard_adamw_step(g, &hp) == SHARC_ERR_INVALID);
    hp = hp0;
    hp.step = 1;
    CHECK(sharc_shard_adamw_step(g, &hp) == SHARC_OK); /* armed before the first micro-batch */
    errs = sharc_log_errors(0, NULL, 0);
    for (int k = 0; k < 2; k++) { /* ... and both reduce: the second one is refused */
        sharc_status_t s;
        for (int u = 0; u < NUNITS; u++) {
            sharc_shard_forward_begin(g, u);
            sharc_shard_forward_end(g, u);
        }
        sharc_shard_backward_begin(g, NUNITS - 1);
        s = sharc_shard_backward_end(g, NUNITS - 1);
        CHECK_MSG(s == (k == 0 ? SHARC_OK : SHARC_ERR_INVALID), "micro-batch %d: %s", k,
                  sharc_status_string(s));
        for (int u = NUNITS - 2; k == 0 && u >= 0; u--) {
            sharc_shard_backward_begin(g, u);
            sharc_shard_backward_end(g, u);
        }
    }
    sharc_log_errors(errs, msg, sizeof(msg));
    CHECK_MSG(strstr(msg, "unit 3 is reduced twice after sharc_shard_adamw_step") != NULL, "%s",
              msg);
    sharc_shard_destroy(g);
}
