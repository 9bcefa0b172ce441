/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu/adamw.c: the optimizer's loops on host memory: AdamW over f32 shards and the f64 sum of
 * squares that gradient clipping needs. Plain C the compiler vectorizes (built for AVX-512,
 * AVX2 and baseline x86-64, picked at load time); the library builds kernels/cpu without
 * fused multiply-add and without errno on sqrt (Makefile.am), so every width rounds each
 * operation as the scalar formula does and gives the same bits. Single-threaded: the
 * sharding engine splits a shard over its threads (shard/offload/shard_pool.c).
 * Floor: AdamW reads p, g, m, v and writes p, m, v: 28 bytes an element of memory traffic.
 */
#include "config.h"

#include <math.h>

#include "cpu.h"

SHARC_KERN_CLONES static void sharc_kern_adamw_loop(float *restrict p, const float *restrict g,
                                                    float *restrict m, float *restrict v, size_t n,
                                                    float beta1, float beta2, float eps, float keep,
                                                    float step_size, float bc2_sqrt, float clip)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * clip;
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        float pi = p[i] * keep;

        pi -= step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
    }
}

sharc_status_t sharc_kern_cpu_adamw(const sharc_kern_adamw_t *a, float *p, const float *g, float *m,
                                    float *v, size_t count, void *stream)
{
    (void)stream;
    sharc_kern_adamw_loop(p, g, m, v, count, a->beta1, a->beta2, a->eps, a->keep, a->step_size,
                          a->bc2_sqrt, a->clip);
    return SHARC_OK;
}

/* 8 running sums, element i into sum i % 8, then added in order: a fixed order the vectorizer
 * keeps (lanes), so the result depends on the input alone */
SHARC_KERN_CLONES static double sharc_kern_sumsq_loop(const float *x, size_t n)
{
    double s[8] = {0}, total = 0.0;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; k++) {
            s[k] += (double)x[i + k] * (double)x[i + k];
        }
    }
    for (int k = 0; i < n; i++, k++) {
        s[k] += (double)x[i] * (double)x[i];
    }
    for (int k = 0; k < 8; k++) {
        total += s[k];
    }
    return total;
}

sharc_status_t sharc_kern_cpu_sumsq(double *acc, const float *x, size_t count, void *stream)
{
    (void)stream;
    acc[0] += sharc_kern_sumsq_loop(x, count);
    return SHARC_OK;
}
