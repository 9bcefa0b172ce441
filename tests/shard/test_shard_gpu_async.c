/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_gpu_async.c: test_shard_gpu's async test: whole steps on the device group with no
 * host synchronization: the caller's stream lags the host (host functions that sleep),
 * parameters are snapshotted and gradients written by copies queued on it, the optimizer runs
 * on it (sharc's CUDA kernels), buffers are reused and a prefetched unit is given up under a
 * tight bound (a step off the schedule); checked once the stream is done, against a host
 * group run alongside. CUDA builds only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../elem.h"
#include "test_shard_gpu.h"

#ifdef HAVE_CUDA

/* The caller's stream falls behind the host: the engine must not rely on it being done. */
static void CUDART_CB lag(void *arg)
{
    (void)arg;
    usleep(2000);
}

/* Every parameter of unit @p u, packed, from the host group. */
static char *unit_params(sharc_shard_group_h h, int u, sharc_dtype_t pdt, size_t *bytes_p)
{
    sharc_shard_unit_info_t info;
    size_t es = sharc_dtype_size(pdt), off = 0;
    char *out;

    CHECK(sharc_shard_unit_info(h, u, &info) == SHARC_OK);
    out = malloc(info.padded_count * es);
    for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
        sharc_shard_param_info_t pi;
        void *p = NULL;

        CHECK(sharc_shard_param_info(h, i, &pi) == SHARC_OK);
        CHECK(sharc_shard_param_ptr(h, i, &p) == SHARC_OK);
        if (p != NULL) {
            memcpy(out + off, p, pi.count * es);
        }
        off += pi.count * es;
    }
    *bytes_p = off;
    return out;
}

/* The test's optimizer on the stream (sharc's CUDA kernels), the same arithmetic as
 * optimizer(): exp_avg = exp_avg / 2 + grad; master += -exp_avg / 4. */
static void optimizer_async(sharc_shard_group_h g, int state, float *tmp)
{
    const sharc_kern_ops_t *k = &sharc_kern_cuda_ops;

    for (int u = 0; u < sharc_shard_num_units(g); u++) {
        float *w, *gr, *m;
        size_t n;

        CHECK(sharc_shard_local(g, u, &w, &gr, &n) == SHARC_OK);
        CHECK(sharc_shard_state_ptr(g, state, u, &m) == SHARC_OK);
        CHECK(k->scale(m, n, SHARC_DTYPE_F32, 0.5, stream) == SHARC_OK);
        CHECK(k->reduce(m, m, gr, n, SHARC_DTYPE_F32, SHARC_OP_SUM, stream) == SHARC_OK);
        CUDA_OK(cudaMemcpyAsync(tmp, m, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
        CHECK(k->scale(tmp, n, SHARC_DTYPE_F32, -0.25, stream) == SHARC_OK);
        CHECK(k->reduce(w, w, tmp, n, SHARC_DTYPE_F32, SHARC_OP_SUM, stream) == SHARC_OK);
    }
    CHECK(sharc_shard_zero_grads(g) == SHARC_OK);
}

#define ASYNC_STEPS 3
#define ASYNC_UNITS 5

/* A begin or an end of a unit, in one phase of a step. */
typedef struct {
    int begin, unit;
} act_t;

/*
 * Step @p step's actions in phase @p ph: every unit in order, begun and ended; in step 2
 * the forward leaves the schedule, unit 3 begun inside unit 0 while units 1 and 2 are
 * prefetched up to the bound (one of them is given up for it).
 */
static int step_acts(int step, int ph, act_t *acts)
{
    static const act_t odd[] = {{1, 0}, {1, 3}, {0, 3}, {0, 0}, {1, 1},
                                {0, 1}, {1, 2}, {0, 2}, {1, 4}, {0, 4}};
    int n = 0;

    if (step == 2 && ph == 0) {
        memcpy(acts, odd, sizeof(odd));
        return (int)(sizeof(odd) / sizeof(odd[0]));
    }
    for (int k = 0; k < ASYNC_UNITS; k++) {
        int u = ph ? ASYNC_UNITS - 1 - k : k;

        acts[n++] = (act_t){1, u};
        acts[n++] = (act_t){0, u};
    }
    return n;
}

static sharc_status_t act_call(sharc_shard_group_h g, int ph, const act_t *a)
{
    if (a->begin) {
        return ph ? sharc_shard_backward_begin(g, a->unit) : sharc_shard_forward_begin(g, a->unit);
    }
    return ph ? sharc_shard_backward_end(g, a->unit) : sharc_shard_forward_end(g, a->unit);
}

/* One run of async_steps: both groups, what each step read and wrote, and the last step's
 * statistics. */
typedef struct {
    const setup_t *s;
    model_t m;
    sharc_shard_group_h h, d; /* the host group, the device group */
    int hs, ds;               /* their optimizer states */
    /* per step, phase and unit: the host group's parameters at the begin, and the device
     * group's, copied out on the lagging stream into page-locked memory */
    char *ref[ASYNC_STEPS][2][ASYNC_UNITS], *snap[ASYNC_STEPS][2][ASYNC_UNITS];
    /* per step and unit: the gradient shards after finish, the host's and the device's */
    float *gref[ASYNC_STEPS][ASYNC_UNITS], *gsnap[ASYNC_STEPS][ASYNC_UNITS];
    /* per step and parameter: the gradient, page-locked, copied in on the stream */
    float *gsrc[ASYNC_STEPS][MAX_PARAMS];
    float *tmp; /* the device optimizer's scratch */
    size_t bytes[ASYNC_UNITS], shard[ASYNC_UNITS], max_shard;
    sharc_shard_stats_t hst, dst;
} async_t;

/* The shard sizes, the optimizer's scratch, and the page-locked snapshots and gradients
 * (first: allocating page-locked memory synchronizes with the device). */
static void async_alloc(async_t *a)
{
    const setup_t *s = a->s;

    for (int u = 0; u < ASYNC_UNITS; u++) {
        sharc_shard_unit_info_t info;

        CHECK(sharc_shard_unit_info(a->h, u, &info) == SHARC_OK);
        a->shard[u] = info.shard_count;
        a->max_shard = a->shard[u] > a->max_shard ? a->shard[u] : a->max_shard;
    }
    CUDA_OK(cudaMalloc((void **)&a->tmp, a->max_shard * sizeof(float)));
    for (int step = 0; step < ASYNC_STEPS; step++) {
        for (int u = 0; u < ASYNC_UNITS; u++) {
            a->bytes[u] = 0;
            for (int i = 3 * u; i < 3 * u + 3; i++) {
                a->bytes[u] += a->m.p[i].count * sharc_dtype_size(s->pdt);
            }
            for (int ph = 0; ph < 2; ph++) {
                CUDA_OK(cudaMallocHost((void **)&a->snap[step][ph][u], a->bytes[u]));
                memset(a->snap[step][ph][u], 0xee, a->bytes[u]);
            }
            CUDA_OK(cudaMallocHost((void **)&a->gsnap[step][u], a->shard[u] * sizeof(float)));
        }
        for (int i = 0; i < a->m.nparams; i++) {
            CUDA_OK(cudaMallocHost((void **)&a->gsrc[step][i],
                                   a->m.p[i].count * sharc_dtype_size(s->rdt)));
            for (size_t j = 0; j < a->m.p[i].count; j++) {
                elem_put(a->gsrc[step][i], s->rdt, j, grad_value(step, 0, i, j));
            }
        }
    }
}

/* The host group's step: its parameters and gradient shards are the reference. */
static void async_host_step(async_t *a, int step)
{
    act_t acts[2 * ASYNC_UNITS];
    size_t unused;

    for (int ph = 0; ph < 2; ph++) {
        int n = step_acts(step, ph, acts);

        for (int k = 0; k < n; k++) {
            int u = acts[k].unit;

            CHECK(act_call(a->h, ph, &acts[k]) == SHARC_OK);
            if (!acts[k].begin) {
                continue;
            }
            a->ref[step][ph][u] = unit_params(a->h, u, a->s->pdt, &unused);
            for (int i = 3 * u; ph && i < 3 * u + 3; i++) {
                write_grad(a->h, 0, i, a->m.p[i].count, a->s->rdt, 1, step, 0);
            }
        }
    }
    CHECK(sharc_shard_finish(a->h) == SHARC_OK);
    for (int u = 0; u < ASYNC_UNITS; u++) {
        a->gref[step][u] = malloc(a->shard[u] * sizeof(float));
        shard_read(a->h, 0, u, -1, a->gref[step][u], a->shard[u]);
    }
    optimizer(a->h, 0, a->hs);
}

/* A phase of the device group's step: at each begin the stream lags, the unit's parameters
 * are copied out on it and (backward) its gradients copied in. */
static void async_device_phase(async_t *a, int step, int ph)
{
    const setup_t *s = a->s;
    act_t acts[2 * ASYNC_UNITS];
    int n = step_acts(step, ph, acts);

    for (int k = 0; k < n; k++) {
        int u = acts[k].unit;
        size_t off = 0;

        CHECK(act_call(a->d, ph, &acts[k]) == SHARC_OK);
        if (!acts[k].begin) {
            continue;
        }
        CUDA_OK(cudaLaunchHostFunc(stream, lag, NULL));
        for (int i = 3 * u; i < 3 * u + 3; i++) {
            size_t pb = a->m.p[i].count * sharc_dtype_size(s->pdt);
            void *p = NULL, *gp = NULL;

            CHECK(sharc_shard_param_ptr(a->d, i, &p) == SHARC_OK);
            if (p != NULL) {
                CUDA_OK(cudaMemcpyAsync(a->snap[step][ph][u] + off, p, pb, cudaMemcpyDeviceToHost,
                                        stream));
            }
            off += pb;
            if (ph) {
                CHECK(sharc_shard_grad_ptr(a->d, i, &gp) == SHARC_OK);
                if (gp != NULL) {
                    CUDA_OK(cudaMemcpyAsync(gp, a->gsrc[step][i],
                                            a->m.p[i].count * sharc_dtype_size(s->rdt),
                                            cudaMemcpyHostToDevice, stream));
                }
            }
        }
    }
}

/* The device group's step: nothing on the host waits for the device. */
static void async_device_step(async_t *a, int step, int staged)
{
    for (int ph = 0; ph < 2; ph++) {
        async_device_phase(a, step, ph);
    }
    CHECK(sharc_shard_finish(a->d) == SHARC_OK);
    if (step == ASYNC_STEPS - 1 && !staged) {
        /* the host got here while the stream still sleeps through the step: nothing
         * waited for it (staged collectives do wait, on the host) */
        CHECK_MSG(cudaStreamQuery(stream) == cudaErrorNotReady,
                  "rank %d: the caller's stream is done at the last finish: something in "
                  "the step waited for it on the host",
                  me);
    }
    for (int u = 0; u < ASYNC_UNITS; u++) {
        float *gr = NULL;

        CHECK(sharc_shard_local(a->d, u, NULL, &gr, NULL) == SHARC_OK);
        CUDA_OK(cudaMemcpyAsync(a->gsnap[step][u], gr, a->shard[u] * sizeof(float),
                                cudaMemcpyDeviceToHost, stream));
    }
    if (step == ASYNC_STEPS - 1) { /* read before the optimizer: the last step's */
        CHECK(sharc_shard_stats(a->h, -1, &a->hst) == SHARC_OK);
        CHECK(sharc_shard_stats(a->d, -1, &a->dst) == SHARC_OK);
    }
    optimizer_async(a->d, a->ds, a->tmp);
}

/* Once the stream is done: every snapshot against the host group's, freed; the shards; the
 * last step's decisions and the device's timings. */
static void async_check(async_t *a)
{
    const sharc_shard_stats_t *hst = &a->hst, *dst = &a->dst;

    for (int step = 0; step < ASYNC_STEPS; step++) {
        for (int ph = 0; ph < 2; ph++) {
            for (int u = 0; u < ASYNC_UNITS; u++) {
                CHECK_MSG(memcmp(a->ref[step][ph][u], a->snap[step][ph][u], a->bytes[u]) == 0,
                          "rank %d, step %d: unit %d's %s parameters, read on the lagging "
                          "stream, differ from the host's",
                          me, step, u, ph ? "backward" : "forward");
                free(a->ref[step][ph][u]);
                cudaFreeHost(a->snap[step][ph][u]);
            }
        }
        for (int u = 0; u < ASYNC_UNITS; u++) {
            CHECK_MSG(memcmp(a->gref[step][u], a->gsnap[step][u], a->shard[u] * sizeof(float)) == 0,
                      "rank %d, step %d: unit %d's gradient shard on the device differs from "
                      "the host's",
                      me, step, u);
            free(a->gref[step][u]);
            cudaFreeHost(a->gsnap[step][u]);
        }
        for (int i = 0; i < a->m.nparams; i++) {
            cudaFreeHost(a->gsrc[step][i]);
        }
    }
    compare_shards(a->h, a->d, a->ds, "after the asynchronous steps");
    /* the last step (off the schedule): the same decisions on both, and device timings */
    CHECK_MSG(dst->allgathers == hst->allgathers && dst->reduce_scatters == hst->reduce_scatters &&
                  dst->allreduces == hst->allreduces && dst->prefetches == hst->prefetches &&
                  dst->evictions == hst->evictions && hst->evictions >= 1 &&
                  dst->peak_units_alive <= a->s->max_unsharded,
              "rank %d: the device group's last step differs from the host's: %llu/%llu "
              "all-gathers, %llu/%llu reduce-scatters, %llu/%llu evictions",
              me, (unsigned long long)dst->allgathers, (unsigned long long)hst->allgathers,
              (unsigned long long)dst->reduce_scatters, (unsigned long long)hst->reduce_scatters,
              (unsigned long long)dst->evictions, (unsigned long long)hst->evictions);
    CHECK_MSG(dst->step_s > 0 && dst->comm_s > 0 && dst->exposed_s >= 0 && dst->hidden_s >= 0,
              "rank %d: device statistics: step %.3f ms, comm %.3f ms, exposed %.3f ms", me,
              dst->step_s * 1e3, dst->comm_s * 1e3, dst->exposed_s * 1e3);
    if (me == 0) {
        sharc_shard_stats_print(a->d, stdout);
    }
}

/*
 * The device group with no host synchronization for whole steps: the stream lags (host
 * functions that sleep), parameters are copied out and gradients in by copies queued on
 * it, the optimizer runs on it, and buffers are reused and given up under a tight bound.
 * Everything is checked once the stream is done, against a host group run alongside.
 */
void async_steps(const setup_t *s)
{
    const char *backend = getenv("SHARC_CUDA_BACKEND");
    int staged = backend != NULL && strcmp(backend, "staged") == 0;
    async_t a = {.s = s, .hs = -1, .ds = -1};

    model_make(&a.m, ASYNC_UNITS);
    a.h = make_group(&a.m, s, 0, &a.hs);
    a.d = make_group(&a.m, s, 1, &a.ds);
    if (a.h == NULL || a.d == NULL) {
        sharc_shard_destroy(a.h);
        sharc_shard_destroy(a.d);
        model_free(&a.m);
        return;
    }
    async_alloc(&a);
    for (int step = 0; step < ASYNC_STEPS; step++) {
        async_host_step(&a, step);
        async_device_step(&a, step, staged);
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    async_check(&a);
    cudaFree(a.tmp);
    sharc_shard_destroy(a.h);
    sharc_shard_destroy(a.d);
    model_free(&a.m);
}

#endif
