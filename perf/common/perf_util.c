/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf_util.c: what several of sharc-perf's subcommands use: medians, the clock, size
 * arguments, short messages. The benchmarks' known inputs for -c are bench/bench_data.c's.
 */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf_util.h"

static int perf_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double perf_median(double *v, size_t n)
{
    if (n == 0) {
        return 0;
    }
    qsort(v, n, sizeof(*v), perf_cmp);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double perf_median_of(const double *v, size_t n)
{
    double *sorted = malloc(sizeof(double) * (n + 1)), med;

    memcpy(sorted, v, sizeof(double) * n);
    med = perf_median(sorted, n);
    free(sorted);
    return med;
}

int perf_coll_index(const char *name)
{
    for (int c = 0; c < PERF_NCOLLS; c++) {
        if (strcmp(name, sharc_coll_name((sharc_coll_type_t)c)) == 0) {
            return c;
        }
    }
    return -1;
}

double perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int perf_parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double mult = 1;

    switch (*end) {
    case 'k':
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        end++;
        break;
    default: break;
    }
    if (end == s || *end != '\0' || v < 0 || !isfinite(v)) {
        return -1;
    }
    *out = (size_t)(v * mult);
    return 0;
}

double perf_parse_time(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || !(v > 0)) {
        return -1;
    }
    if (*end == '\0' || strcmp(end, "s") == 0) {
        return v;
    }
    if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0) {
        return v * 60;
    }
    return strcmp(end, "h") == 0 ? v * 3600 : -1;
}

int perf_sibling(const char *name, char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n <= 0) {
        return -1;
    }
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    /* libtool's uninstalled programs live in .libs/ as lt-<name> behind a wrapper one up */
    if (strlen(exe) >= 6 && strcmp(exe + strlen(exe) - 6, "/.libs") == 0) {
        exe[strlen(exe) - 6] = '\0';
    }
    perf_snprintf(out, len, "%s/%s", exe, name);
    return 0;
}

uint64_t perf_fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

int perf_gnuplot(const char *script)
{
    char cmd[PATH_MAX + 64];

    perf_snprintf(cmd, sizeof(cmd), "command -v gnuplot >/dev/null 2>&1 && gnuplot '%s'", script);
    return system(cmd);
}

int perf_snprintf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n;
}
