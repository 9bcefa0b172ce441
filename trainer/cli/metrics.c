/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/metrics.c: what sharc-llama measures besides the step times: the peak rate MFU
 * is taken against, memory, medians. The JSONL log they go to is io/jsonl.c.
 */
#include "metrics.h"
#include "../util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

double llama_gemm_peak(const llama_ops_t *ops)
{
    const int n = 1024;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a = ops->alloc(bytes), *b = ops->alloc(bytes), *c = ops->alloc(bytes);
    double best = 0.0;

    /* the ops' own product on the compute threads, as the model runs it (zero-filled inputs:
     * BLAS takes no shortcut on zeros). The best of at least 8 products over at least 0.5 s,
     * after 2 that warm caches, threads and clocks: a short measurement on a busy or
     * throttling machine reads low, and MFU above 100% would follow */
    if (a != NULL && b != NULL && c != NULL) {
        double start = llama_now();
        for (int r = 0; r < 2 + 8 || llama_now() - start < 0.5; r++) {
            double t0 = llama_now();
            ops->matmul_fwd(c, a, b, n, n, n);
            double rate = 2.0 * n * n * (double)n / (llama_now() - t0);
            best = r >= 2 && rate > best ? rate : best;
            if (r > 1000) {
                break;
            }
        }
    }
    if (a != NULL) {
        ops->free(a);
    }
    if (b != NULL) {
        ops->free(b);
    }
    if (c != NULL) {
        ops->free(c);
    }
    return best;
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
