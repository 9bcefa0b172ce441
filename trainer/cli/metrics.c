/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/metrics.c: what sharc-llama measures besides the step times: the peak rate MFU
 * is taken against and the profile's floors (the table's product and copy, timed by its
 * events), memory, medians. The JSONL log they go to is io/jsonl.c.
 */
#include "metrics.h"
#include "../util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/* ---- rates of the table's own product and copy, timed by its events ------------------------ */

typedef void (*llama_run_fn_t)(const llama_ops_t *ops, void **bufs, size_t n);

/* How a rate is measured: @p warm runs first, then the best of at least @p runs over at least
 * @p seconds (1000 runs at most): a short measurement on a busy or throttling machine reads
 * low. */
typedef struct {
    int warm, runs;
    double seconds;
} llama_rounds_t;

/* Seconds of the best run of @p run; 0 when the events fail. */
static double best_of(const llama_ops_t *ops, void *e0, void *e1, llama_run_fn_t run, void **bufs,
                      size_t n, const llama_rounds_t *rd)
{
    double best = 0.0, start = llama_now();

    for (int r = 0; r < rd->warm + rd->runs || (llama_now() - start < rd->seconds && r < 1000);
         r++) {
        ops->event_record(e0);
        run(ops, bufs, n);
        ops->event_record(e1);
        double s = ops->event_elapsed(e0, e1);
        best = r >= rd->warm && s > 0 && (best == 0 || s < best) ? s : best;
    }
    return best;
}

/* Grow @p n (doubling from *n_p, up to @p max) until one run takes @p enough seconds, then
 * the best of @p rd's runs at that size; the size in *n_p. 0 when memory or events fail. */
static double measure(const llama_ops_t *ops, llama_run_fn_t run,
                      size_t (*bytes)(const llama_ops_t *, size_t), int nbufs, size_t *n_p,
                      size_t max, double enough, const llama_rounds_t *rd)
{
    void *bufs[3] = {NULL, NULL, NULL};
    void *e0 = ops->event_create != NULL ? ops->event_create() : NULL;
    void *e1 = e0 != NULL ? ops->event_create() : NULL;
    size_t n = *n_p;
    double s = 0.0;
    int grow = e1 != NULL;

    while (grow) {
        int ok = 1;
        for (int i = 0; i < nbufs; i++) {
            bufs[i] = ops->alloc(bytes(ops, n));
            ok &= bufs[i] != NULL;
        }
        s = 0.0;
        if (ok) {
            run(ops, bufs, n); /* (first touches, a library's first call at this size) */
            ops->event_record(e0);
            run(ops, bufs, n);
            ops->event_record(e1);
            s = ops->event_elapsed(e0, e1);
        }
        grow = s > 0 && s < enough && 2 * n <= max;
        if (s > 0 && !grow) {
            s = best_of(ops, e0, e1, run, bufs, n, rd);
        }
        for (int i = 0; i < nbufs; i++) {
            if (bufs[i] != NULL) {
                ops->free(bufs[i]);
            }
        }
        n = grow ? 2 * n : n;
    }
    if (e0 != NULL) {
        ops->event_destroy(e0);
    }
    if (e1 != NULL) {
        ops->event_destroy(e1);
    }
    *n_p = n;
    return s;
}

/* the ops' own product, as the model runs it (zero-filled inputs: BLAS takes no shortcut on
 * zeros) */
static void run_gemm(const llama_ops_t *ops, void **bufs, size_t n)
{
    ops->matmul_fwd(bufs[2], bufs[0], bufs[1], (int)n, (int)n, (int)n);
}

static size_t gemm_bytes(const llama_ops_t *ops, size_t n)
{
    return n * n * sharc_dtype_size(ops->act_dtype);
}

static void run_copy(const llama_ops_t *ops, void **bufs, size_t n)
{
    ops->cast(bufs[1], ops->act_dtype, bufs[0], ops->act_dtype, n);
}

static size_t copy_bytes(const llama_ops_t *ops, size_t n)
{
    return n * sharc_dtype_size(ops->act_dtype);
}

static double gemm_flops(size_t n, double s)
{
    return s > 0 ? 2.0 * (double)n * (double)n * (double)n / s : 0.0;
}

double llama_gemm_peak(const llama_ops_t *ops)
{
    /* on the compute threads; at least 8 products over at least 0.5 s after 2 that warm
     * caches, threads and clocks, or MFU above 100% would follow */
    const llama_rounds_t rd = {.warm = 2, .runs = 8, .seconds = 0.5};
    size_t n = 1024;

    return gemm_flops(n, measure(ops, run_gemm, gemm_bytes, 3, &n, n, 0.0, &rd));
}

double llama_gemm_rate(const llama_ops_t *ops, char *what, size_t len)
{
    const llama_rounds_t rd = {.warm = 1, .runs = 5, .seconds = 0.25};
    size_t n = 256;
    double s = measure(ops, run_gemm, gemm_bytes, 3, &n, 8192, 5e-3, &rd);

    snprintf(what, len, "%s GEMM %zu^3 measured at start", sharc_dtype_name(ops->act_dtype), n);
    return gemm_flops(n, s);
}

double llama_copy_rate(const llama_ops_t *ops, char *what, size_t len)
{
    const llama_rounds_t rd = {.warm = 1, .runs = 5, .seconds = 0.25};
    size_t a = sharc_dtype_size(ops->act_dtype), n = ((size_t)1 << 20) / a;
    double s = measure(ops, run_copy, copy_bytes, 2, &n, ((size_t)256 << 20) / a, 5e-3, &rd);

    snprintf(what, len, "copy of %zu MiB measured at start, bytes read + written", n * a >> 20);
    return s > 0 ? 2.0 * (double)(n * a) / s : 0.0;
}

double llama_peak_flops(const llama_ops_t *ops, char *what, size_t len)
{
    if (ops->peak_flops != NULL) {
        return ops->peak_flops(what, len);
    }
    snprintf(what, len, "f32 GEMM rate measured at start");
    return llama_gemm_peak(ops);
}

double llama_device_mem_mib(const llama_ops_t *ops)
{
    return ops->mem_used_mib != NULL ? ops->mem_used_mib() : 0.0;
}

double llama_device_mem_peak_mib(const llama_ops_t *ops)
{
    return ops->mem_peak_mib != NULL ? ops->mem_peak_mib() : llama_device_mem_mib(ops);
}

double llama_peak_rss_mib(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double llama_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
