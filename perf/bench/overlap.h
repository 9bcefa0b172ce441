/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * overlap.h: `sharc-perf overlap` as its two files share it: the options (overlap_main.c
 * reads them from the command line and opens the job) and the benchmark over a communicator
 * (overlap.c). Public API only; nothing of the collective benchmarks (bench.h).
 */
#ifndef SHARC_PERF_OVERLAP_H
#define SHARC_PERF_OVERLAP_H

#include <sharc/sharc.h>

typedef enum { OVL_SLEEP, OVL_GEMM } ovl_compute_t;

typedef struct {
    int units, iters, warmup, prefetch, max_unsharded, progress_thread, gemm_n, cuda;
    size_t params;
    double factor, compute_us; /* compute_us 0: factor x the all-gather time of a unit */
    ovl_compute_t compute;
    sharc_dtype_t pdtype, rdtype;
    const char *json, *trace;
    int reduce_queue; /* SHARC_SHARD_REDUCE_QUEUE as configured, for the report */
} ovl_opts_t;

/* The benchmark on @p comm: measured, printed and written (rank 0). 0, or 1 (said). */
int perf_overlap_run(const ovl_opts_t *o, sharc_comm_h comm);

#endif
