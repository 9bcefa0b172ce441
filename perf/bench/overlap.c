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
 */
#include "config.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sharc/sharc.h>

#ifdef HAVE_BLAS
#include <cblas.h>
#endif

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "../sharc_perf.h"

typedef enum { OVL_SLEEP, OVL_GEMM } ovl_compute_t;

typedef struct {
    int units, iters, warmup, prefetch, max_unsharded, progress_thread, gemm_n, cuda;
    size_t params;
    double factor, compute_us; /* compute_us 0: factor x the all-gather time of a unit */
    ovl_compute_t compute;
    sharc_dtype_t pdtype, rdtype;
    const char *json, *trace;
    int reduce_queue; /* SHARC_SHARD_REDUCE_QUEUE as configured, for the report */
} ovl_opts_t;

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

static double ovl_median(const double *t, int n)
{
    double *sorted = malloc(sizeof(double) * (size_t)n), med;

    memcpy(sorted, t, sizeof(double) * (size_t)n);
    med = perf_median(sorted, (size_t)n);
    free(sorted);
    return med;
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

static int ovl_run(const ovl_opts_t *o, sharc_comm_h comm)
{
    ovl_t v = {.comm = comm, .o = o};
    int me = sharc_comm_rank(comm), ret = 1;
    double *tc = calloc((size_t)o->iters, sizeof(double));
    double *tk = calloc((size_t)o->iters, sizeof(double));
    double *to = calloc((size_t)o->iters, sizeof(double));
    double ag, comm_only, compute_only, both, exposed, eff;
    sharc_shard_stats_t st;

    v.g = ovl_group(o, comm);
    if (v.g == NULL || tc == NULL || tk == NULL || to == NULL) {
        fprintf(stderr, "sharc-perf overlap: cannot create the shard group (see the log)\n");
        goto out;
    }
    if (o->compute == OVL_GEMM && o->cuda) {
        if (perf_cuda_gemm_init(o->gemm_n) != 0) {
            goto out;
        }
    } else if (o->compute == OVL_GEMM) {
        size_t nn = (size_t)o->gemm_n * (size_t)o->gemm_n;
        v.a = malloc(nn * sizeof(float));
        v.b = malloc(nn * sizeof(float));
        v.c = malloc(nn * sizeof(float));
        for (size_t i = 0; i < nn; i++) {
            v.a[i] = (float)(i % 7) * 0.25f;
            v.b[i] = (float)(i % 5) * 0.5f;
        }
    }
    ag = ovl_allgather_time(&v);
    if (ag < 0) {
        goto out;
    }
    v.unit_s = (o->compute_us > 0) ? o->compute_us * 1e-6 : o->factor * ag;
    if (o->compute == OVL_GEMM) {
        v.gemm_reps = ovl_calibrate_gemm(&v, v.unit_s);
    }
    if (ovl_time(&v, (double *[3]){tc, tk, to}) != 0) {
        goto out;
    }
    comm_only = ovl_median(tc, o->iters);
    compute_only = ovl_median(tk, o->iters);
    both = ovl_median(to, o->iters);
    sharc_shard_stats(v.g, -1, &st);
    exposed = SHARC_PERF_MAX(0.0, both - compute_only);
    eff = (comm_only > 0) ? 1.0 - exposed / comm_only : 0;
    if (me == 0) {
        double unit_ms = (o->compute == OVL_GEMM) ? v.unit_s * v.gemm_reps * 1e3 : v.unit_s * 1e3;

        printf("# sharc-perf overlap: %d ranks, %d units x %zu %s parameters (%.1f MiB gathered "
               "per unit), reduce %s\n",
               sharc_comm_size(comm), o->units, o->params, sharc_dtype_name(o->pdtype),
               (double)o->params * (double)sharc_dtype_size(o->pdtype) / 1048576.0,
               sharc_dtype_name(o->rdtype));
        if (o->prefetch == SHARC_SHARD_PREFETCH_AUTO) {
            printf("# %s memory; prefetch auto (depth %d in the last step)",
                   o->cuda ? "CUDA" : "host", st.prefetch_depth);
        } else {
            printf("# %s memory; prefetch %d", o->cuda ? "CUDA" : "host", o->prefetch);
        }
        printf(", at most %d unsharded (0: derived), progress thread %s, reductions %s\n",
               o->max_unsharded, o->progress_thread ? "on" : "off",
               o->reduce_queue ? "on a queue of their own" : "behind gathers (one queue)");
        if (o->compute == OVL_GEMM) {
            printf("# compute: %d %s %dx%dx%d per forward unit, twice per backward unit "
                   "(%.2f ms forward)\n",
                   v.gemm_reps, o->cuda ? "cuBLAS BF16 GEMM" : "SGEMM", o->gemm_n, o->gemm_n,
                   o->gemm_n, unit_ms);
        } else {
            printf("# compute: %s %.2f ms per forward unit, %.2f ms per backward unit\n",
                   o->cuda ? "stream held" : "sleep", unit_ms, 2 * unit_ms);
        }
        printf("# all-gather of one unit alone: %.2f ms\n", ag * 1e3);
        printf("%-22s %10s\n", "# step (median, ms)", "");
        printf("%-22s %10.2f\n", "comm only", comm_only * 1e3);
        printf("%-22s %10.2f\n", "compute only", compute_only * 1e3);
        printf("%-22s %10.2f\n", "overlapped", both * 1e3);
        printf("%-22s %10.2f\n", "exposed comm", exposed * 1e3);
        printf("%-22s %9.1f%%\n", "overlap efficiency", eff * 100);
        printf("# engine, last step on rank 0: comm %.2f ms, waited %.2f ms (%.2f ms of it for "
               "gathers), hidden %.2f ms; %.2f ms in its calls; %llu prefetched, depth %d; peak "
               "%d units, %.1f MiB unsharded\n",
               st.comm_s * 1e3, st.exposed_s * 1e3, st.gather_wait_s * 1e3, st.hidden_s * 1e3,
               st.engine_s * 1e3, (unsigned long long)st.prefetches, st.prefetch_depth,
               st.peak_units_alive, st.peak_unsharded_bytes / 1048576.0);
    }
    if (me == 0 && o->json != NULL) {
        FILE *f = fopen(o->json, "w");

        if (f == NULL) {
            perror(o->json);
            goto out;
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
                sharc_comm_size(comm), o->units, o->params, o->cuda ? "cuda" : "host",
                sharc_dtype_name(o->pdtype), sharc_dtype_name(o->rdtype),
                o->compute == OVL_GEMM ? "gemm" : "sleep", o->prefetch,
                o->prefetch == SHARC_SHARD_PREFETCH_AUTO, st.prefetch_depth, o->max_unsharded,
                o->progress_thread, o->reduce_queue,
                o->compute == OVL_GEMM ? v.unit_s * v.gemm_reps : v.unit_s,
                o->compute == OVL_GEMM ? v.gemm_reps : 0, o->gemm_n, ag, comm_only, compute_only,
                both, exposed, eff, st.comm_s, st.exposed_s, st.hidden_s, st.engine_s,
                st.gather_wait_s);
        ovl_json_times(f, "comm_only", tc, o->iters, 0);
        ovl_json_times(f, "compute_only", tk, o->iters, 0);
        ovl_json_times(f, "overlapped", to, o->iters, 1);
        fprintf(f, "  }\n}\n");
        fclose(f);
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
    free(tc);
    free(tk);
    free(to);
    return ret;
}

static void ovl_usage(FILE *f)
{
    fprintf(f, "usage: sharc-perf overlap [options]\n"
               "  -u, --units U          units of the synthetic model (default 8)\n"
               "  -p, --params N         parameters per unit (default 4M); K, M, G suffixes\n"
               "      --compute sleep|gemm  simulated accelerator time (the caller sleeps), or\n"
               "                         real single-threaded SGEMMs on the CPU (default sleep)\n"
               "      --compute-factor F forward compute per unit = F x one unit's all-gather\n"
               "                         time, measured first (default 1); backward: twice\n"
               "      --compute-us N     forward compute per unit in microseconds instead\n"
               "      --gemm-n N         GEMM size for --compute gemm (default 256; 4096 with\n"
               "                         --device cuda)\n"
               "      --device host|cuda where the group lives (default host); cuda: the\n"
               "                         compute is queued on the rank's stream (sleep holds\n"
               "                         the stream, gemm runs cuBLAS BF16 GEMMs)\n"
               "  -d, --datatype T       dtype of the gathered parameters: f32 bf16 f16 (f32)\n"
               "      --reduce-dtype T   dtype of the gradient reduction: f32 bf16 (f32)\n"
               "      --prefetch K|auto  units gathered ahead (default 1); auto: the engine sets\n"
               "                         the depth from the waits (SHARC_SHARD_PREFETCH=auto)\n"
               "      --max-unsharded M  bound on gathered units (default 0: derived)\n"
               "      --progress-thread 0|1  progress from a thread per communicator (default 1;\n"
               "                         without it nothing moves while the caller computes)\n"
               "  -n, --iters N          timed steps per measurement (default 10)\n"
               "  -w, --warmup_iters N   untimed steps first (default 2)\n"
               "  -J, --json FILE        results and every step's time as JSON\n"
               "      --trace FILE       the engine's timeline of the last steps as Chrome trace\n"
               "                         JSON (SHARC_SHARD_TRACE; tools/trace-plot draws it)\n"
               "Run it under the job's launcher: mpirun -np 2 sharc-perf overlap\n");
}

int perf_overlap_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"units", required_argument, NULL, 'u'},
        {"params", required_argument, NULL, 'p'},
        {"compute", required_argument, NULL, 'k'},
        {"compute-factor", required_argument, NULL, 'F'},
        {"compute-us", required_argument, NULL, 'U'},
        {"gemm-n", required_argument, NULL, 'G'},
        {"device", required_argument, NULL, 'V'},
        {"datatype", required_argument, NULL, 'd'},
        {"reduce-dtype", required_argument, NULL, 'D'},
        {"prefetch", required_argument, NULL, 'K'},
        {"max-unsharded", required_argument, NULL, 'm'},
        {"progress-thread", required_argument, NULL, 'T'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"json", required_argument, NULL, 'J'},
        {"trace", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    ovl_opts_t o = {.units = 8,
                    .params = 4u << 20,
                    .iters = 10,
                    .warmup = 2,
                    .prefetch = 1,
                    .progress_thread = 1,
                    .gemm_n = 0,
                    .factor = 1.0,
                    .pdtype = SHARC_DTYPE_F32,
                    .rdtype = SHARC_DTYPE_F32};
    sharc_config_h config = NULL;
    sharc_context_h ctx;
    sharc_comm_h comm;
    char value[16];
    int c, bad = 0, ret;

    optind = 2;
    while ((c = getopt_long(argc, argv, "u:p:d:n:w:J:h", opts, NULL)) != -1) {
        switch (c) {
        case 'u': bad |= (o.units = atoi(optarg)) < 1; break;
        case 'p': bad |= perf_parse_size(optarg, &o.params) != 0 || o.params == 0; break;
        case 'k':
            o.compute = strcmp(optarg, "gemm") == 0 ? OVL_GEMM : OVL_SLEEP;
            bad |= strcmp(optarg, "gemm") != 0 && strcmp(optarg, "sleep") != 0;
            break;
        case 'F': bad |= (o.factor = atof(optarg)) <= 0; break;
        case 'U': bad |= (o.compute_us = atof(optarg)) <= 0; break;
        case 'G': bad |= (o.gemm_n = atoi(optarg)) < 1; break;
        case 'V':
            o.cuda = strcmp(optarg, "cuda") == 0;
            bad |= !o.cuda && strcmp(optarg, "host") != 0;
            break;
        case 'd': bad |= sharc_dtype_from_name(optarg, &o.pdtype) != SHARC_OK; break;
        case 'D': bad |= sharc_dtype_from_name(optarg, &o.rdtype) != SHARC_OK; break;
        case 'K':
            if (strcmp(optarg, "auto") == 0) {
                o.prefetch = SHARC_SHARD_PREFETCH_AUTO;
            } else {
                bad |= (o.prefetch = atoi(optarg)) < 0;
            }
            break;
        case 'm': bad |= (o.max_unsharded = atoi(optarg)) < 0; break;
        case 'T': o.progress_thread = atoi(optarg) != 0; break;
        case 'n': bad |= (o.iters = atoi(optarg)) < 1; break;
        case 'w': bad |= (o.warmup = atoi(optarg)) < 0; break;
        case 'J': o.json = optarg; break;
        case 'R': o.trace = optarg; break;
        case 'h': ovl_usage(stdout); return 0;
        default: bad = 1; break;
        }
    }
    if (bad || optind < argc) {
        fprintf(stderr, "sharc-perf overlap: bad arguments\n");
        ovl_usage(stderr);
        return 2;
    }
    if (o.gemm_n == 0) {
        o.gemm_n = o.cuda ? 4096 : 256;
    }
#ifndef HAVE_BLAS
    if (o.compute == OVL_GEMM && !o.cuda) {
        fprintf(stderr, "sharc-perf overlap: --compute gemm needs sharc built with a CBLAS\n");
        return 2;
    }
#else
    openblas_set_num_threads(1); /* one core per rank: ranks share the node's cores */
#endif
    /* the progress thread is what lets host collectives run while the caller computes */
    if (sharc_config_create(0, &config) != SHARC_OK ||
        sharc_config_set(config, "PROGRESS_THREAD", o.progress_thread ? "yes" : "no") != SHARC_OK ||
        (o.trace != NULL && sharc_config_set(config, "SHARD_TRACE", o.trace) != SHARC_OK) ||
        sharc_config_get(config, "SHARD_REDUCE_QUEUE", value, sizeof(value)) != SHARC_OK ||
        sharc_context_create(config, &ctx) != SHARC_OK) {
        sharc_config_destroy(config);
        fprintf(stderr, "sharc-perf overlap: bad configuration (see the log)\n");
        return 1;
    }
    o.reduce_queue =
        (value[0] != '\0' && strchr("yY1tT", value[0]) != NULL) || strcasecmp(value, "on") == 0;
    sharc_config_destroy(config);
    if (sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        sharc_context_destroy(ctx);
        fprintf(stderr, "sharc-perf overlap: cannot create the communicator (see the log)\n");
        return 1;
    }
    ret = (o.cuda && perf_cuda_init(comm) != 0) ? 1 : ovl_run(&o, comm);
    if (o.cuda) {
        perf_cuda_fini();
    }
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return ret;
}
