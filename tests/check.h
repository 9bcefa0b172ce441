/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h: the assertion macro of sharc's C tests. A failed check prints where and what, and
 * the test goes on, so one run shows every failure; main returns check_result().
 */
#ifndef SHARC_TEST_CHECK_H
#define SHARC_TEST_CHECK_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

/* The checks that failed. A test program of several files defines SHARC_CHECK_SHARED before
 * including this in each, and `int check_failures;` once, beside its main: every file's
 * checks then count in the one main returns. */
#ifdef SHARC_CHECK_SHARED
extern int check_failures;
#else
static int check_failures;
#endif

#define CHECK(_cond)                                                                               \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #_cond);              \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(_cond, _fmt, ...)                                                                \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s: " _fmt "\n", __FILE__, __LINE__, #_cond,     \
                    ##__VA_ARGS__);                                                                \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* The relative error of @p a against the reference @p b: max |a - b| / max |b| (max |a - b|
 * where b is all zeros); NaN anywhere is infinite. */
static inline double check_rel_err(const float *a, const float *b, size_t n)
{
    double diff = 0.0, ref = 0.0;

    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (isnan(d)) {
            return INFINITY;
        }
        diff = d > diff ? d : diff;
        ref = fabs((double)b[i]) > ref ? fabs((double)b[i]) : ref;
    }
    return ref > 0 ? diff / ref : diff;
}

static inline int check_result(const char *name)
{
    if (check_failures != 0) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    return 0;
}

#endif
