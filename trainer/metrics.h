/*
 * trainer/metrics.h: what sharc-llama measures: the GEMM rate that MFU is taken against,
 * peak memory, and a JSONL log (one JSON object per line, written by rank 0).
 */
#ifndef SHARC_LLAMA_METRICS_H
#define SHARC_LLAMA_METRICS_H

#include <stdio.h>
#include <sharc/sharc.h>

#include "ops.h"

/** f32 GEMM rate of this process, in FLOP/s: the best of a few 1024^3 products through
 *  @p ops (its thread count already set). */
double llama_gemm_peak(const llama_ops_t *ops);

/** Peak resident memory of this process in MiB. */
double llama_peak_rss_mib(void);

typedef struct llama_jsonl llama_jsonl_t;

/** Open @p path for appending (NULL path: a log that writes nothing). */
sharc_status_t llama_jsonl_open(const char *path, llama_jsonl_t **log_p);
void llama_jsonl_close(llama_jsonl_t *log);
/**
 * One line: begin, add members, end (which writes it). Without a file (NULL path, or a rank
 * that does not log) every call does nothing.
 */
void llama_jsonl_begin(llama_jsonl_t *log, const char *event);
void llama_jsonl_int(llama_jsonl_t *log, const char *key, long long value);
void llama_jsonl_num(llama_jsonl_t *log, const char *key, double value);
void llama_jsonl_str(llama_jsonl_t *log, const char *key, const char *value);
void llama_jsonl_end(llama_jsonl_t *log);

/** Median of @p n values (n > 0); sorts @p v. */
double llama_median(double *v, int n);

#endif
