/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf_util.h: what several of sharc-perf's subcommands (bench, check, tune, predict) use:
 * medians, the clock, size arguments, short messages. Public API only; the subcommands'
 * entry points are in sharc_perf.h.
 */
#ifndef SHARC_PERF_UTIL_H
#define SHARC_PERF_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/sharc.h>

#define SHARC_PERF_MAX(_a, _b) ((_a) > (_b) ? (_a) : (_b))

/* The collectives sharc-perf measures: sharc_coll_type_t's before the barrier. */
#define PERF_NCOLLS SHARC_COLL_BARRIER

/* The measured collective sharc_coll_name calls @p name, or -1. */
int perf_coll_index(const char *name);

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

/* A duration: "90", "90s", "2m", "2min", "1h" in seconds; -1 for garbage or none. */
double perf_parse_time(const char *s);

/* The program @p name in this program's folder (libtool keeps uninstalled programs in .libs/
 * behind a wrapper one level up, where their siblings are): 0, or -1 when this program's own
 * path is unknown. */
int perf_sibling(const char *name, char *out, size_t len);

/* The 64-bit FNV-1a hash of a string (the tools' twin of the library's sharc_hash64). */
uint64_t perf_fnv1a(const char *s);

/* gnuplot run on the script at @p script (a path without quotes): 0, or nonzero when there
 * is no gnuplot or it failed. */
int perf_gnuplot(const char *script);

/* A size with nccl-tests' suffixes K, M, G (powers of 1024): 0, or -1 for garbage. */
int perf_parse_size(const char *s, size_t *out);

#endif
