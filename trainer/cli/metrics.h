/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/metrics.h: what sharc-llama measures: the peak rate that MFU is taken against (a
 * measured GEMM rate, or a GPU's data-sheet peak), memory (host and device), and the medians
 * of its summary. The log they are written to: io/jsonl.h.
 */
#ifndef SHARC_LLAMA_METRICS_H
#define SHARC_LLAMA_METRICS_H

#include <stdio.h>
#include <sharc/sharc.h>

#include "../ops/ops.h"

/** f32 GEMM rate of this process, in FLOP/s: the best of a few 1024^3 products through
 *  @p ops (its thread count already set), timed by its events; 0 without them. */
double llama_gemm_peak(const llama_ops_t *ops);

/**
 * The peak FLOP/s a rank's MFU is taken against: the ops' own figure where they have one (a
 * GPU's dense bf16 peak from its data sheet), else the GEMM rate measured through them;
 * @p what (len bytes) says which.
 */
double llama_peak_flops(const llama_ops_t *ops, char *what, size_t len);

/**
 * The profile's floors (cli/profile.c), measured through @p ops and timed by its events: the
 * rate of its own product in its act dtype, in FLOP/s (square, the size grown from 256 until
 * one takes 5 ms, at most 8192), and of its own copy (ops->cast between equal dtypes), in
 * bytes read + written per second (from 1 MiB until one takes 5 ms, at most 256 MiB); the
 * best of at least 5 runs. @p what (len bytes) says what was measured. 0 on failure.
 */
double llama_gemm_rate(const llama_ops_t *ops, char *what, size_t len);
double llama_copy_rate(const llama_ops_t *ops, char *what, size_t len);

/** Device memory in use under @p ops, in MiB; 0 for host ops (their RSS is the measure). */
double llama_device_mem_mib(const llama_ops_t *ops);

/** The most device memory in use so far (a sample now included), in MiB; 0 for host ops. */
double llama_device_mem_peak_mib(const llama_ops_t *ops);

/** Peak resident memory of this process in MiB. */
double llama_peak_rss_mib(void);

/** Median of @p n values (n > 0); sorts @p v. */
double llama_median(double *v, int n);

#endif
