/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h: sharc-perf's collective benchmarks as their files share them: the options, the
 * buffers of one size, the collective once on each side of a comparison (bench_coll.c; the
 * point-to-point exchange, sendrecv, in bench_sendrecv.c), the known inputs of -c
 * (bench_data.c) and the sweep over the sizes (bench_sweep.c); the command line is
 * bench_main.c's. The overlap benchmark (overlap.c) shares none of it. Public API only.
 */
#ifndef SHARC_PERF_BENCH_H
#define SHARC_PERF_BENCH_H

#include <stddef.h>

#include <sharc/sharc.h>

/* The benchmark beside the collectives: each rank sends to the next rank and receives from
 * the previous one (nccl-tests' sendrecv_perf); it takes the place of a collective in
 * perf_bench_opts_t.coll. */
#define PERF_SENDRECV SHARC_COLL_LAST

typedef struct {
    sharc_coll_type_t coll; /* or PERF_SENDRECV */
    size_t minbytes, maxbytes, stepbytes;
    double stepfactor;
    int iters, warmup, check, root, vs_mpi, vs_memcpy, vs_nccl;
    int registered; /* -R 1: buffers from sharc_mem_alloc */
    int cuda;       /* --device cuda: device buffers */
    sharc_dtype_t dtype;
    sharc_op_t op;
    const char *json;
    sharc_coll_opts_t wire; /* --wire, --wire-block, --wire-flat (allgather, reduce_scatter) */
} perf_bench_opts_t;

/*
 * Buffers for one size: "size" is nccl-tests' size (the larger side of the collective;
 * alltoall: the bytes each rank sends in all, n blocks of blockcount elements).
 */
typedef struct {
    size_t size, count; /* bytes and elements of the larger side */
    size_t sendcount, recvcount;
    size_t blockcount;   /* alltoall: elements per peer */
    size_t *vcounts;     /* the uneven collectives: [n] even blocks (their counts) */
    char *send, *recv;   /* what the collectives run on (host, or device with --device cuda) */
    char *hsend, *hrecv; /* host copies for -c (the same buffers on the host) */
} perf_bench_bufs_t;

/* ---- the collective once (bench_coll.c) */

/* The buffers of @p size bytes over @p n ranks (zeroed): 0, or -1 (nothing left allocated). */
int perf_bench_bufs_alloc(const perf_bench_opts_t *o, sharc_context_h ctx, int n, size_t size,
                          perf_bench_bufs_t *b);
void perf_bench_bufs_free(const perf_bench_opts_t *o, sharc_context_h ctx, perf_bench_bufs_t *b);

/* The collective once on one side of a comparison: 0, or -1 (a failure is said). */
typedef int (*perf_bench_run_fn_t)(const perf_bench_opts_t *o, sharc_comm_h comm,
                                   perf_bench_bufs_t *b, int inplace);
/* What lines the ranks up before the timed iterations of a side. */
typedef void (*perf_bench_barrier_fn_t)(sharc_comm_h comm);

int perf_bench_run_sharc(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                         int inplace);
/* --vs-nccl: NCCL called directly on the same device buffers (out of place). */
int perf_bench_run_nccl(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                        int inplace);
/* --vs-mpi (a build with MPI): MPI's collective on the same buffers, MPI's barrier. */
int perf_bench_run_mpi(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                       int inplace);
void perf_bench_barrier_mpi(sharc_comm_h comm);

/* --vs-mpi: MPI for the comparison (initialized here, finalized by perf_bench_mpi_fini).
 * 0, or 2 when MPI cannot run the comparison (said). */
int perf_bench_mpi_init(const perf_bench_opts_t *o, int *argc, char ***argv);
void perf_bench_mpi_fini(const perf_bench_opts_t *o);

/* -c: fill inputs whose result is known, run once, count the wrong elements (nccl-tests'). */
size_t perf_bench_check(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                        int inplace);

/* What is measured, by name: a collective's, or "sendrecv". */
const char *perf_bench_name(const perf_bench_opts_t *o);

/* ---- the point-to-point exchange (bench_sendrecv.c): as the collectives' calls above */
int perf_bench_sendrecv_sharc(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                              int inplace);
void perf_bench_sendrecv_mpi(const perf_bench_opts_t *o, perf_bench_bufs_t *b, void *dt);
size_t perf_bench_sendrecv_check(const perf_bench_opts_t *o, sharc_comm_h comm,
                                 perf_bench_bufs_t *b);
/* ---- --wire: the error against the full-precision collective (bench_wire.c) */

/* The largest and the root-mean-square error of the collective over the quantized wire
 * against the same collective at full precision, on the same inputs (values of many
 * magnitudes), each relative to the full result's largest and rms magnitude, over every
 * rank's output: 0, or -1 (said). */
int perf_bench_wire_error(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                          double *max_p, double *rms_p);

/* ---- known inputs and results for -c (bench_data.c) */

/* Rank r's input element i: small integers (1 or 2 for products), exact in every dtype. */
double perf_input(int r, size_t i, sharc_op_t op);

/* Element i of buf as dt stores it: set to @p v (f16: exact for values of 11 significant bits
 * in f16's normal range; bf16 rounded to nearest even), and read (f16 and bf16 exactly). */
void perf_put(void *buf, sharc_dtype_t dt, size_t i, double v);
double perf_get(const void *buf, sharc_dtype_t dt, size_t i);

/* buf[i] = perf_input(r, base + i, op), stored as dt. */
void perf_fill(void *buf, sharc_dtype_t dt, size_t count, int r, size_t base, sharc_op_t op);

/* Elements of buf (count, from global index base) that differ from the expected values:
 * with root >= 0 the inputs of rank root, else op over n ranks' inputs. */
size_t perf_wrong(const void *buf, sharc_dtype_t dt, size_t count, size_t base, int root, int n,
                  sharc_op_t op);

/* ---- the sweep (bench_sweep.c) */

/* Every size from -b to -e: measured, printed (rank 0) and written (-J); 1 when one failed or
 * was wrong, else 0. */
int perf_bench_sweep(const perf_bench_opts_t *o, sharc_context_h ctx, sharc_comm_h comm);

#endif
