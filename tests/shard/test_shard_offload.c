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
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "shard/offload/shard_host.h"
#include "../check.h"

/* The host worker's tasks queued or running and download slots in use: 0 when its side of the
 * group is idle (its state, shard/offload/shard_host.h). */
static int host_inflight(sharc_shard_group_t *g)
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
/* emulated device memory in use and its peak (tests/gpu_emu.h) */
void gpu_emu_device_bytes(size_t *now_p, size_t *peak_p);

#define NPARAMS 6
#define NUNITS  4
#define STEPS   20
#define MICRO   2

static const size_t counts[NPARAMS] = {296, 192, 12, 231, 5, 90};
static const int units[NPARAMS] = {0, 1, 1, 2, 2, 3};
static const int ndims[NPARAMS] = {2, 2, 1, 2, 1, 2};
static sharc_comm_h comm;
static int me, nranks;

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

static const sharc_shard_adamw_t hp0 = {
    .lr = 2e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};

static float init_value(int p, size_t i)
{
    return 0.2f * sinf(0.37f * (float)i + 1.3f * (float)p);
}

/* rank r's gradient of an element of value x in micro-batch k of step t */
static float grad_value(float x, int r, int k, int t)
{
    return 0.05f * sinf(x * (1.0f + 0.25f * (float)r) + (float)k + 0.1f * (float)t);
}

static sharc_shard_group_h make_group(const config_t *c)
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

/* The host worker's pause after each task it ends: wide enough (3 ms) that the caller, woken by
 * the step's last end, looks at the worker's counts inside it every time. */
static void slow_end(void)
{
    nanosleep(&(struct timespec){.tv_nsec = 3000000}, NULL);
}

/* One step through the engine: 2 micro-batches, the update armed before the last. */
static sharc_status_t engine_step(sharc_shard_group_h g, const config_t *c, int t, float *norm_p)
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

/* ---- comparing ------------------------------------------------------------------------------ */

/* This rank's master and moment shards of every unit, into @p out (3 arrays per unit). */
static int read_shards(sharc_shard_group_h g, float *out[NUNITS][3], size_t n[NUNITS])
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

static void free_shards(float *s[NUNITS][3])
{
    for (int u = 0; u < NUNITS; u++) {
        for (int k = 0; k < 3; k++) {
            free(s[u][k]);
        }
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

static void same_bits(float *a[NUNITS][3], float *b[NUNITS][3], const size_t *n, const char *what)
{
    for (int u = 0; u < NUNITS; u++) {
        for (int k = 0; k < 3; k++) {
            CHECK_MSG(memcmp(a[u][k], b[u][k], n[u] * sizeof(float)) == 0,
                      "%s: rank %d: unit %d, %s differ", what, me, u,
                      k == 0 ? "masters" : "moments");
        }
    }
}

/* ---- the tests --------------------------------------------------------------------------------
 */

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

static void test_equal(void)
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
static void test_bad(void)
{
    config_t c = {"bad", SHARC_SHARD_OFFLOAD_HOST, 1, 1, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0, 0, 0};
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

static void test_ckpt(const char *dir)
{
    config_t host = {
        "host", SHARC_SHARD_OFFLOAD_HOST, 1, 0, SHARC_DTYPE_BF16, SHARC_DTYPE_F32, 0, 0, 0, 0};
    config_t none = host;
    char a[4096], b[4096];
    sharc_shard_group_h gh, gn;
    float *sh[NUNITS][3], *sn[NUNITS][3], norm;
    size_t n[NUNITS];
    uint64_t step = 0;

    none.name = "none";
    none.offload = SHARC_SHARD_OFFLOAD_NONE;
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    gh = make_group(&host);
    gn = make_group(&none);
    if (gh == NULL || gn == NULL) {
        return;
    }
    for (int t = 0; t < 3; t++) {
        CHECK(engine_step(gh, &host, t, &norm) == SHARC_OK);
    }
    CHECK(sharc_shard_save(gh, a, 3) == SHARC_OK);
    CHECK(sharc_shard_load(gn, a, &step) == SHARC_OK && step == 3);
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "saved with offload host, loaded without");
    free_shards(sh);
    free_shards(sn);
    for (int t = 3; t < 5; t++) { /* and they go on alike */
        CHECK(engine_step(gh, &host, t, &norm) == SHARC_OK);
        CHECK(engine_step(gn, &none, t, &norm) == SHARC_OK);
    }
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "two steps after the load");
    free_shards(sh);
    free_shards(sn);
    CHECK(engine_step(gn, &none, 5, &norm) == SHARC_OK);
    CHECK(sharc_shard_save(gn, b, 6) == SHARC_OK);
    CHECK(sharc_shard_load(gh, b, &step) == SHARC_OK && step == 6);
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "saved without offload, loaded with offload host");
    free_shards(sh);
    free_shards(sn);
    CHECK(engine_step(gh, &host, 6, &norm) == SHARC_OK); /* the load's masters went up */
    CHECK(engine_step(gn, &none, 6, &norm) == SHARC_OK);
    CHECK(read_shards(gh, sh, n) == 0 && read_shards(gn, sn, n) == 0);
    same_bits(sh, sn, n, "a step after loading into offload host");
    free_shards(sh);
    free_shards(sn);
    sharc_shard_destroy(gh);
    sharc_shard_destroy(gn);
    if (me == 0) {
        printf("checkpoints: offload host -> none -> offload host, bit for bit\n");
    }
}

/* The last rank exits right after its first reduction of step 2 went down to the host; the
 * others run on until a call fails. */
static void test_die(void)
{
    config_t c = {
        "host", SHARC_SHARD_OFFLOAD_HOST, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0.05f, 0, 0};
    sharc_shard_group_h g = make_group(&c);
    sharc_status_t s = SHARC_OK;
    unsigned long errs = sharc_log_errors(0, NULL, 0);
    char msg[4096], want[64];
    float norm;

    if (g == NULL) {
        return;
    }
    for (int t = 0; t < 2; t++) {
        CHECK(engine_step(g, &c, t, &norm) == SHARC_OK);
    }
    for (int u = 0; s == SHARC_OK && u < NUNITS; u++) {
        s = sharc_shard_forward_begin(g, u);
        s = (s == SHARC_OK) ? sharc_shard_forward_end(g, u) : s;
    }
    for (int u = NUNITS - 1; s == SHARC_OK && u >= 0; u--) {
        s = sharc_shard_backward_begin(g, u);
        s = (s == SHARC_OK) ? sharc_shard_backward_end(g, u) : s;
        if (me == nranks - 1 && u == NUNITS - 1) {
            fflush(stdout);
            _exit(0); /* dies with its download queued and the others' landings in flight */
        }
    }
    s = (s == SHARC_OK) ? sharc_shard_finish(g) : s;
    CHECK_MSG(s == SHARC_ERR_REMOTE, "rank %d: the step ended with %s", me, sharc_status_string(s));
    sharc_log_errors(errs, msg, sizeof(msg));
    snprintf(want, sizeof(want), "rank %d ", nranks - 1);
    CHECK_MSG(strstr(msg, want) != NULL, "rank %d: the errors do not name rank %d: %s", me,
              nranks - 1, msg);
    CHECK_MSG(host_inflight(g) == 0,
              "rank %d: %d of the host's tasks and slots "
              "left after the failure",
              me, host_inflight(g));
    sharc_shard_destroy(g);
    printf("rank %d: the step failed (%s) naming rank %d; nothing left in flight\n", me,
           sharc_status_string(s), nranks - 1);
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
