/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h: the assertion macro of sharc's C tests. A failed check prints where and what, and
 * the test goes on, so one run shows every failure; main returns check_result().
 */
#ifndef SHARC_TEST_CHECK_H
#define SHARC_TEST_CHECK_H

#include <stdio.h>

static int check_failures;

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

static inline int check_result(const char *name)
{
    if (check_failures != 0) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    return 0;
}

#endif
