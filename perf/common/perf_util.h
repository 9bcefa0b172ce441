/*
 * perf_util.h: what several of sharc-perf's subcommands (bench, check, tune, predict) use:
 * medians, the clock, size arguments, short messages. Public API only; the subcommands'
 * entry points are in sharc_perf.h.
 */
#ifndef SHARC_PERF_UTIL_H
#define SHARC_PERF_UTIL_H

#include <stddef.h>
#include <sharc/sharc.h>

#define SHARC_PERF_MAX(_a, _b) ((_a) > (_b) ? (_a) : (_b))

/* Median of n values (sorts them). */
double perf_median(double *v, size_t n);

/* Median of n values, which stay as they are. */
double perf_median_of(const double *v, size_t n);

/* snprintf for messages and names where cutting a long value short is fine (so the
 * compiler's truncation warnings do not apply); returns vsnprintf's value. */
int perf_snprintf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Seconds on the monotonic clock. */
double perf_now(void);

/* A size with nccl-tests' suffixes K, M, G (powers of 1024): 0, or -1 for garbage. */
int perf_parse_size(const char *s, size_t *out);

#endif
