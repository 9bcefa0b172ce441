/*
 * trainer/cli/metrics.h: what sharc-llama measures: the peak rate that MFU is taken against (a
 * measured GEMM rate, or a GPU's data-sheet peak), memory (host and device), and a JSONL log
 * (one JSON object per line, written by rank 0).
 */
#ifndef SHARC_LLAMA_METRICS_H
#define SHARC_LLAMA_METRICS_H

#include <stdio.h>
#include <sharc/sharc.h>

#include "../ops/ops.h"

/** f32 GEMM rate of this process, in FLOP/s: the best of a few 1024^3 products through
 *  @p ops (its thread count already set). */
double llama_gemm_peak(const llama_ops_t *ops);

/**
 * The peak FLOP/s a rank's MFU is taken against: the ops' own figure where they have one (a
 * GPU's dense bf16 peak from its data sheet), else the GEMM rate measured through them;
 * @p what (len bytes) says which.
 */
double llama_peak_flops(const llama_ops_t *ops, char *what, size_t len);

/** Device memory in use under @p ops, in MiB; 0 for host ops (their RSS is the measure). */
double llama_device_mem_mib(const llama_ops_t *ops);

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
