/*
 * perf_util.h: what sharc-perf needs besides timing: inputs with a known result for -c,
 * their expected values, element access by dtype, medians. Public API only.
 */
#ifndef SHARC_PERF_UTIL_H
#define SHARC_PERF_UTIL_H

#include <stddef.h>
#include <sharc/sharc.h>

#define SHARC_PERF_MAX(_a, _b) ((_a) > (_b) ? (_a) : (_b))

/* Rank r's input element i: small integers (1 or 2 for products), exact in every dtype. */
double perf_input(int r, size_t i, sharc_op_t op);

/* buf[i] = perf_input(r, base + i, op), stored as dt. */
void perf_fill(void *buf, sharc_dtype_t dt, size_t count, int r, size_t base, sharc_op_t op);

/* Elements of buf (count, from global index base) that differ from the expected values:
 * with root >= 0 the inputs of rank root, else op over n ranks' inputs. */
size_t perf_wrong(const void *buf, sharc_dtype_t dt, size_t count, size_t base, int root, int n,
                  sharc_op_t op);

/* Median of n values (sorts them). */
double perf_median(double *v, size_t n);

/* sharc-perf overlap (perf_overlap.c): argv[1] is "overlap". */
int perf_overlap_main(int argc, char **argv);

/* sharc-perf tune (tune_main.c): argv[1] is "tune". */
int perf_tune_main(int argc, char **argv);

/* sharc-perf check (check_main.c): argv[1] is "check". */
int perf_check_main(int argc, char **argv);

/* snprintf for messages and names where cutting a long value short is fine (so the
 * compiler's truncation warnings do not apply); returns vsnprintf's value. */
int perf_snprintf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Seconds on the monotonic clock. */
double perf_now(void);

/* A size with nccl-tests' suffixes K, M, G (powers of 1024): 0, or -1 for garbage. */
int perf_parse_size(const char *s, size_t *out);

#endif
