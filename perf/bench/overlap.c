/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * overlap.c: `sharc-perf overlap`, how much of the sharding engine's communication
 * hides behind compute. A synthetic model of U units of P parameters runs forward and
 * backward steps through the engine with a compute per unit that is either simulated
 * accelerator time (the caller sleeps, as a host thread does while a GPU kernel runs) or
 * real CPU work (single-threaded SGEMMs). With --device cuda the group lives on the GPU and
 * the compute is queued on its stream: a host function that holds the stream (time that uses
 * no SM), or BF16 GEMMs through cuBLAS; a step ends when the stream is done. It times three
 * kinds of step, interleaved, each the median over iterations of the slowest rank:
 * communication only, compute only, and both; then exposed = overlapped - compute only, and
 * overlap efficiency = 1 - exposed / comm only. Backward compute per unit is twice the
 * forward's, as in a transformer. --trace writes the engine's timeline (SHARC_SHARD_TRACE).
 * The command line and the job are overlap_main.c's.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sharc/sharc.h>

#ifdef HAVE_BLAS
#include <cblas.h>
#endif

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "overlap.h"

typedef struct {
    sharc_shard_group_h g;
    sharc_comm_h comm;
    const ovl_opts_t *o;
    double unit_s; /* forward compute per unit; backward: twice */
    int gemm_reps; /* GEMMs of gemm_n x gemm_n per forward unit */
    float *a, *b, *c;
} ovl_t;

/* The compute of one unit: @p scale times the forward's (on CUDA: queued on the stream). */
static void ovl_compute(ovl_t *v, int scale)
{
    if (v->o->cuda) {
        if (v->o->compute == OVL_SLEEP) {
            perf_cuda_hold(v->unit_s * scale);
        } else {
            perf_cuda_gemm(v->gemm_reps * scale);
        }
        return;
    }
    if (v->o->compute == OVL_SLEEP) {
        double s = v->unit_s * scale;
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

        while (nanosleep(&ts, &ts) != 0) {
        }
        return;
    }
#ifdef HAVE_BLAS
    for (int i = 0; i < v->gemm_reps * scale; i++) {
        int n = v->o->gemm_n;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, v->a, n, v->b, n,
                    0.0f, v->c, n);
    }
#endif
}

/* One step: @p comm drives the engine, @p compute runs the units' compute. */
static sharc_status_t ovl_step(ovl_t *v, int comm, int compute)
{
    sharc_status_t status = SHARC_OK;
    int U = v->o->units;

    for (int u = 0; status == SHARC_OK && u < U; u++) {
        status = comm ? sharc_shard_forward_begin(v->g, u) : SHARC_OK;
        if (compute) {
            ovl_compute(v, 1);
        }
        status = (comm && status == SHARC_OK) ? sharc_shard_forward_end(v->g, u) : status;
    }
    for (int u = U - 1; status == SHARC_OK && u >= 0; u--) {
        status = comm ? sharc_shard_backward_begin(v->g, u) : SHARC_OK;
        if (compute) {
            ovl_compute(v, 2);
        }
        status = (comm && status == SHARC_OK) ? sharc_shard_backward_end(v->g, u) : status;
    }
    if (comm && status == SHARC_OK) {
        status = sharc_shard_finish(v->g);
    }
    if (v->o->cuda && status == SHARC_OK && perf_cuda_sync() != 0) { /* the device's step */
        status = SHARC_ERR_BACKEND;
    }
    return status;
}

/*
 * The three kinds of step side by side: each iteration runs a communication-only, a
 * compute-only and an overlapped step, so that the machine's drift hits all three alike.
 * Each step's time is the slowest rank's; t[k][i] is kind k's in iteration i.
 */
static int ovl_time(ovl_t *v, double *t[3])
{
    static const int comm[3] = {1, 0, 1}, compute[3] = {0, 1, 1};

    for (int i = 0; i < v->o->warmup; i++) {
        for (int k = 0; k < 3; k++) {
            if (ovl_step(v, comm[k], compute[k]) != SHARC_OK ||
                (comm[k] && sharc_shard_zero_grads(v->g) != SHARC_OK)) {
                return -1;
            }
        }
    }
    for (int i = 0; i < v->o->iters; i++) {
        for (int k = 0; k < 3; k++) {
            double t0;

            sharc_barrier(v->comm, NULL);
            t0 = perf_now();
            if (ovl_step(v, comm[k], compute[k]) != SHARC_OK) {
                return -1;
            }
            t[k][i] = perf_now() - t0;
            /* the optimizer's part, untimed: fresh gradient shards for the next step */
            if (comm[k] && sharc_shard_zero_grads(v->g) != SHARC_OK) {
                return -1;
            }
        }
    }
    for (int k = 0; k < 3; k++) {
        sharc_allreduce(t[k], t[k], (size_t)v->o->iters, SHARC_DTYPE_F64, SHARC_OP_MAX, v->comm,
                        NULL);
    }
    return 0;
}

/* The all-gather of one unit alone (gather, wait, release): median of the slowest rank. */
static double ovl_allgather_time(ovl_t *v)
{
    int n = v->o->iters + v->o->warmup;
    double *t = calloc((size_t)n, sizeof(double)), med;

    for (int i = 0; i < n; i++) {
        double t0;

        sharc_barrier(v->comm, NULL);
        t0 = perf_now();
        if (sharc_shard_unshard(v->g, 0) != SHARC_OK || sharc_shard_wait(v->g, 0) != SHARC_OK ||
            (v->o->cuda && perf_cuda_sync() != 0)) {
            free(t);
            return -1;
        }
        t[i] = perf_now() - t0;
        sharc_shard_reshard(v->g, 0);
    }
    sharc_allreduce(t, t, (size_t)n, SHARC_DTYPE_F64, SHARC_OP_MAX, v->comm, NULL);
    med = perf_median(t + v->o->warmup, (size_t)v->o->iters);
    free(t);
    return med;
}

/* How many GEMMs make @p seconds of compute (at least one). */
static int ovl_calibrate_gemm(ovl_t *v, double seconds)
{
    double t0, one, best = 1e30;

    for (int i = 0; i < 5; i++) {
        v->gemm_reps = 1;
        t0 = perf_now();
        ovl_compute(v, 1);
        if (v->o->cuda) {
            perf_cuda_sync();
        }
        one = perf_now() - t0;
        best = one < best ? one : best;
    }
    /* every rank computes the same: take the slowest rank's GEMM time */
    sharc_allreduce(&best, &best, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, v->comm, NULL);
    v->unit_s = best;
    return SHARC_PERF_MAX(1, (int)(seconds / best + 0.5));
}

static sharc_shard_group_h ovl_group(const ovl_opts_t *o, sharc_comm_h comm)
{
    sharc_shard_param_t *p = calloc((size_t)o->units, sizeof(*p));
    char(*names)[24] = calloc((size_t)o->units, sizeof(*names));
    sharc_shard_params_t cfg = {
        .field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_PARAM_DTYPE |
                      SHARC_SHARD_PARAM_REDUCE_DTYPE | SHARC_SHARD_PARAM_PREFETCH |
                      SHARC_SHARD_PARAM_MAX_UNSHARDED | SHARC_SHARD_PARAM_ASSIGN_GRADS |
                      SHARC_SHARD_PARAM_MEMTYPE | SHARC_SHARD_PARAM_STREAM,
        .num_units = o->units,
        .param_dtype = o->pdtype,
        .reduce_dtype = o->rdtype,
        .prefetch = o->prefetch,
        .max_unsharded = o->max_unsharded,
        /* the simulated backward writes each gradient as a real one would: no zeroing pass */
        .assign_grads = 1,
        .memtype = o->cuda ? SHARC_MEMTYPE_CUDA : SHARC_MEMTYPE_HOST,
        .stream = o->cuda ? perf_cuda_stream() : NULL,
    };
    sharc_shard_group_h g = NULL;

    for (int u = 0; u < o->units; u++) {
        snprintf(names[u], sizeof(names[u]), "unit%d.weight", u);
        p[u] = (sharc_shard_param_t){.name = names[u], .count = o->params, .unit = u};
    }
    if (sharc_shard_create(comm, p, o->units, &cfg, &g) != SHARC_OK) {
        g = NULL;
    }
    free(p);
    free(names);
    return g;
}

static void ovl_json_times(FILE *f, const char *name, const double *t, int n, int last)
{
    fprintf(f, "    \"%s\": [", name);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s%.6f", i ? ", " : "", t[i]);
    }
    fprintf(f, "]%s\n", last ? "" : ",");
}

/* What a run measured: the unit's all-gather alone, the three kinds of step (medians, and
 * every iteration's in t[]), and the engine's own figures of the last step. */
typedef struct {
    double ag, comm_only, compute_only, both, exposed, eff;
    double *t[3]; /* comm only, compute only, overlapped */
    sharc_shard_stats_t st;
} ovl_result_t;

/* The compute's inputs: cuBLAS's with --device cuda, else the host SGEMM's. 0 or -1. */
static int ovl_gemm_init(ovl_t *v)
{
    size_t nn = (size_t)v->o->gemm_n * (size_t)v->o->gemm_n;

    if (v->o->cuda) {
        return perf_cuda_gemm_init(v->o->gemm_n) != 0 ? -1 : 0;
    }
    v->a = malloc(nn * sizeof(float));
    v->b = malloc(nn * sizeof(float));
    v->c = malloc(nn * sizeof(float));
    for (size_t i = 0; i < nn; i++) {
        v->a[i] = (float)(i % 7) * 0.25f;
        v->b[i] = (float)(i % 5) * 0.5f;
    }
    return 0;
}

/* The unit's all-gather alone, the compute it sets, the three kinds of step. 0 or -1. */
static int ovl_measure(ovl_t *v, ovl_result_t *r)
{
    const ovl_opts_t *o = v->o;

    r->ag = ovl_allgather_time(v);
    if (r->ag < 0) {
        return -1;
    }
    v->unit_s = (o->compute_us > 0) ? o->compute_us * 1e-6 : o->factor * r->ag;
    if (o->compute == OVL_GEMM) {
        v->gemm_reps = ovl_calibrate_gemm(v, v->unit_s);
    }
    if (ovl_time(v, r->t) != 0) {
        return -1;
    }
    r->comm_only = perf_median_of(r->t[0], (size_t)o->iters);
    r->compute_only = perf_median_of(r->t[1], (size_t)o->iters);
    r->both = perf_median_of(r->t[2], (size_t)o->iters);
    sharc_shard_stats(v->g, -1, &r->st);
    r->exposed = SHARC_PERF_MAX(0.0, r->both - r->compute_only);
    r->eff = (r->comm_only > 0) ? 1.0 - r->exposed / r->comm_only : 0;
    return 0;
}

/* Forward compute per unit in seconds: the calibrated GEMMs', or the time asked for. */
static double ovl_unit_s(const ovl_t *v)
{
    return v->o->compute == OVL_GEMM ? v->unit_s * v->gemm_reps : v->unit_s;
}

/* The setup: the model, the memory, the engine's settings and the compute. */
static void ovl_print_setup(const ovl_t *v, const ovl_result_t *r)
{
    const ovl_opts_t *o = v->o;
    double unit_ms = ovl_unit_s(v) * 1e3;

    printf("# sharc-perf overlap: %d ranks, %d units x %zu %s parameters (%.1f MiB gathered "
           "per unit), reduce %s\n",
           sharc_comm_size(v->comm), o->units, o->params, sharc_dtype_name(o->pdtype),
           (double)o->params * (double)sharc_dtype_size(o->pdtype) / 1048576.0,
           sharc_dtype_name(o->rdtype));
    if (o->prefetch == SHARC_SHARD_PREFETCH_AUTO) {
        printf("# %s memory; prefetch auto (depth %d in the last step)", o->cuda ? "CUDA" : "host",
               r->st.prefetch_depth);
    } else {
        printf("# %s memory; prefetch %d", o->cuda ? "CUDA" : "host", o->prefetch);
    }
    printf(", at most %d unsharded (0: derived), progress thread %s, reductions %s\n",
           o->max_unsharded, o->progress_thread ? "on" : "off",
           o->reduce_queue ? "on a queue of their own" : "behind gathers (one queue)");
    if (o->compute == OVL_GEMM) {
        printf("# compute: %d %s %dx%dx%d per forward unit, twice per backward unit "
               "(%.2f ms forward)\n",
               v->gemm_reps, o->cuda ? "cuBLAS BF16 GEMM" : "SGEMM", o->gemm_n, o->gemm_n,
               o->gemm_n, unit_ms);
    } else {
        printf("# compute: %s %.2f ms per forward unit, %.2f ms per backward unit\n",
               o->cuda ? "stream held" : "sleep", unit_ms, 2 * unit_ms);
    }
}

/* The report (rank 0): the setup, the steps and what the engine saw. */
static void ovl_print(const ovl_t *v, const ovl_result_t *r)
{
    const sharc_shard_stats_t *st = &r->st;

    ovl_print_setup(v, r);
    printf("# all-gather of one unit alone: %.2f ms\n", r->ag * 1e3);
    printf("%-22s %10s\n", "# step (median, ms)", "");
    printf("%-22s %10.2f\n", "comm only", r->comm_only * 1e3);
    printf("%-22s %10.2f\n", "compute only", r->compute_only * 1e3);
    printf("%-22s %10.2f\n", "overlapped", r->both * 1e3);
    printf("%-22s %10.2f\n", "exposed comm", r->exposed * 1e3);
    printf("%-22s %9.1f%%\n", "overlap efficiency", r->eff * 100);
    printf("# engine, last step on rank 0: comm %.2f ms, waited %.2f ms (%.2f ms of it for "
           "gathers), hidden %.2f ms; %.2f ms in its calls; %llu prefetched, depth %d; peak "
           "%d units, %.1f MiB unsharded\n",
           st->comm_s * 1e3, st->exposed_s * 1e3, st->gather_wait_s * 1e3, st->hidden_s * 1e3,
           st->engine_s * 1e3, (unsigned long long)st->prefetches, st->prefetch_depth,
           st->peak_units_alive, st->peak_unsharded_bytes / 1048576.0);
}

/* -J: the results and every step's time. 0, or -1 (said). */
static int ovl_write_json(const ovl_t *v, const ovl_result_t *r)
{
    const ovl_opts_t *o = v->o;
    const sharc_shard_stats_t *st = &r->st;
    FILE *f = fopen(o->json, "w");

    if (f == NULL) {
        perror(o->json);
        return -1;
    }
    fprintf(f,
            "{\n  \"benchmark\": \"overlap\", \"nranks\": %d, \"units\": %d, \"params\": %zu,\n"
            "  \"device\": \"%s\", \"param_dtype\": \"%s\", \"reduce_dtype\": \"%s\",\n"
            "  \"compute\": \"%s\",\n"
            "  \"prefetch\": %d, \"prefetch_auto\": %d, \"prefetch_depth\": %d,\n"
            "  \"max_unsharded\": %d, \"progress_thread\": %d, \"reduce_queue\": %d,\n"
            "  \"compute_forward_unit_s\": %.6f, \"gemm_reps\": %d, \"gemm_n\": %d,\n"
            "  \"allgather_unit_s\": %.6f, \"comm_only_s\": %.6f, \"compute_only_s\": %.6f,\n"
            "  \"overlapped_s\": %.6f, \"exposed_s\": %.6f, \"overlap_efficiency\": %.4f,\n"
            "  \"engine\": {\"comm_s\": %.6f, \"exposed_s\": %.6f, \"hidden_s\": %.6f, "
            "\"calls_s\": %.6f, \"gather_wait_s\": %.6f},\n"
            "  \"times_s\": {\n",
            sharc_comm_size(v->comm), o->units, o->params, o->cuda ? "cuda" : "host",
            sharc_dtype_name(o->pdtype), sharc_dtype_name(o->rdtype),
            o->compute == OVL_GEMM ? "gemm" : "sleep", o->prefetch,
            o->prefetch == SHARC_SHARD_PREFETCH_AUTO, st->prefetch_depth, o->max_unsharded,
            o->progress_thread, o->reduce_queue, ovl_unit_s(v),
            o->compute == OVL_GEMM ? v->gemm_reps : 0, o->gemm_n, r->ag, r->comm_only,
            r->compute_only, r->both, r->exposed, r->eff, st->comm_s, st->exposed_s, st->hidden_s,
            st->engine_s, st->gather_wait_s);
    ovl_json_times(f, "comm_only", r->t[0], o->iters, 0);
    ovl_json_times(f, "compute_only", r->t[1], o->iters, 0);
    ovl_json_times(f, "overlapped", r->t[2], o->iters, 1);
    fprintf(f, "  }\n}\n");
    fclose(f);
    return 0;
}

int perf_overlap_run(const ovl_opts_t *o, sharc_comm_h comm)
{
    ovl_t v = {.comm = comm, .o = o};
    ovl_result_t r = {.ag = 0};
    int me = sharc_comm_rank(comm), ret = 1;

    for (int k = 0; k < 3; k++) {
        r.t[k] = calloc((size_t)o->iters, sizeof(double));
    }
    v.g = ovl_group(o, comm);
    if (v.g == NULL || r.t[0] == NULL || r.t[1] == NULL || r.t[2] == NULL) {
        fprintf(stderr, "sharc-perf overlap: cannot create the shard group (see the log)\n");
        goto out;
    }
    if ((o->compute == OVL_GEMM && ovl_gemm_init(&v) != 0) || ovl_measure(&v, &r) != 0) {
        goto out;
    }
    if (me == 0) {
        ovl_print(&v, &r);
    }
    if (me == 0 && o->json != NULL && ovl_write_json(&v, &r) != 0) {
        goto out;
    }
    ret = 0;
out:
    sharc_shard_destroy(v.g);
    if (o->cuda) {
        perf_cuda_gemm_fini();
    }
    free(v.a);
    free(v.b);
    free(v.c);
    for (int k = 0; k < 3; k++) {
        free(r.t[k]);
    }
    return ret;
}
