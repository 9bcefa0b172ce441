/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sweep.c: the collective benchmarks' sweep over the sizes: each side of the comparison
 * timed (median over the iterations of the slowest rank's time per iteration), the memcpy
 * bandwidth of the same run, and the results as nccl-tests' table (rank 0) and as JSON (-J).
 * Not the collectives' calls (bench_coll.c) nor the command line (bench_main.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "bench.h"

/* Per-iteration times (seconds) of one series, the slowest rank's each iteration. */
typedef struct {
    double *t;
    double median;
    size_t wrong;
} bench_series_t;

/* The series of one sweep, and what one size measured. */
typedef struct {
    bench_series_t oop, ip, mpi, nccl;
} bench_sweep_t;

typedef struct {
    double alg_oop, alg_ip, bus_oop, bus_ip, bus_mpi, bus_nccl, memcpy_bw;
    double err_max, err_rms; /* --wire: against the full-precision collective */
} bench_row_t;

/* A quantized wire: -c's exact results do not apply, the error against full precision does. */
static int bench_quantized(const perf_bench_opts_t *o)
{
    return o->wire.wire != SHARC_WIRE_FULL;
}

/* nccl-tests' bus bandwidth factors (alltoall: (n-1)/n, as all-gather). */
static double bench_bus_factor(sharc_coll_type_t coll, int n)
{
    switch (coll) {
    case SHARC_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case SHARC_COLL_BROADCAST:
    case SHARC_COLL_REDUCE:
    case PERF_SENDRECV: return 1.0;
    default: return (double)(n - 1) / n;
    }
}

/* ---- timing ------------------------------------------------------------------------------ */

static void bench_barrier_sharc(sharc_comm_h comm)
{
    sharc_barrier(comm, NULL);
}

/* One side: warm-up, the ranks lined up, the timed iterations; each iteration's time made the
 * slowest rank's, and their median. 0, or -1 when a run failed. */
static int bench_time(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                      int inplace, perf_bench_run_fn_t run, perf_bench_barrier_fn_t barrier,
                      bench_series_t *out)
{
    for (int i = 0; i < o->warmup; i++) {
        if (run(o, comm, b, inplace) != 0) {
            return -1;
        }
    }
    barrier(comm);
    for (int i = 0; i < o->iters; i++) {
        double t0 = perf_now();

        if (run(o, comm, b, inplace) != 0) {
            return -1;
        }
        out->t[i] = perf_now() - t0;
    }
    sharc_allreduce(out->t, out->t, (size_t)o->iters, SHARC_DTYPE_F64, SHARC_OP_MAX, comm, NULL);
    out->median = perf_median_of(out->t, (size_t)o->iters);
    return 0;
}

/* sharc's side, then -c on it (the wrong elements summed over the ranks). */
static int bench_time_sharc(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                            int inplace, bench_series_t *out)
{
    if (bench_time(o, comm, b, inplace, perf_bench_run_sharc, bench_barrier_sharc, out) != 0) {
        return -1;
    }
    out->wrong = (o->check && !bench_quantized(o)) ? perf_bench_check(o, comm, b, inplace) : 0;
    sharc_allreduce(&out->wrong, &out->wrong, 1, SHARC_DTYPE_I64, SHARC_OP_SUM, comm, NULL);
    return 0;
}

/* Single-thread copy of `size` bytes on rank 0 while the others wait: this machine's
 * memcpy bandwidth in the same run (GB/s, median); with --device cuda a device-to-device
 * copy of the same size. */
static double bench_memcpy_bw(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b)
{
    double *t = malloc(sizeof(double) * (size_t)o->iters), bw = 0;

    sharc_barrier(comm, NULL);
    if (sharc_comm_rank(comm) == 0 && b->size > 0 && o->cuda) {
        bw = perf_cuda_copy_bw(b->recv, b->send, b->size, o->warmup, o->iters);
    } else if (sharc_comm_rank(comm) == 0 && b->size > 0) {
        for (int i = 0; i < o->warmup; i++) {
            memcpy(b->recv, b->send, b->size);
        }
        for (int i = 0; i < o->iters; i++) {
            double t0 = perf_now();
            memcpy(b->recv, b->send, b->size);
            t[i] = perf_now() - t0;
        }
        bw = b->size / perf_median(t, (size_t)o->iters) / 1e9;
    }
    sharc_barrier(comm, NULL);
    sharc_broadcast(&bw, &bw, 1, SHARC_DTYPE_F64, 0, comm, NULL);
    free(t);
    return bw;
}

/* Time one size on every side asked for into @p s, and its figures into @p row. 0 or 1. */
static int bench_measure(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                         bench_sweep_t *s, bench_row_t *row)
{
    double factor = bench_bus_factor(o->coll, sharc_comm_size(comm));

    memset(row, 0, sizeof(*row));
    if (bench_time_sharc(o, comm, b, 0, &s->oop) != 0 ||
        bench_time_sharc(o, comm, b, 1, &s->ip) != 0 ||
        (o->vs_nccl &&
         bench_time(o, comm, b, 0, perf_bench_run_nccl, bench_barrier_sharc, &s->nccl) != 0)) {
        return 1;
    }
    row->bus_nccl =
        (o->vs_nccl && s->nccl.median > 0) ? b->size / s->nccl.median / 1e9 * factor : 0;
#ifdef HAVE_MPI
    if (o->vs_mpi) {
        bench_time(o, comm, b, 0, perf_bench_run_mpi, perf_bench_barrier_mpi, &s->mpi);
        row->bus_mpi = s->mpi.median > 0 ? b->size / s->mpi.median / 1e9 * factor : 0;
    }
#endif
    if (o->vs_memcpy) {
        row->memcpy_bw = bench_memcpy_bw(o, comm, b);
    }
    if (bench_quantized(o) &&
        perf_bench_wire_error(o, comm, b, &row->err_max, &row->err_rms) != 0) {
        return 1;
    }
    row->alg_oop = s->oop.median > 0 ? b->size / s->oop.median / 1e9 : 0;
    row->alg_ip = s->ip.median > 0 ? b->size / s->ip.median / 1e9 : 0;
    row->bus_oop = row->alg_oop * factor;
    row->bus_ip = row->alg_ip * factor;
    return 0;
}

/* ---- output ------------------------------------------------------------------------------ */

/* The JSON file's opening (rank 0). */
static void bench_json_header(const perf_bench_opts_t *o, int n, FILE *json)
{
    fprintf(json,
            "{\n  \"collective\": \"%s\", \"nranks\": %d, \"dtype\": \"%s\", "
            "\"op\": \"%s\", \"root\": %d, \"iters\": %d, \"warmup\": %d, "
            "\"registered\": %d, \"device\": \"%s\", \"wire\": \"%s\", \"wire_block\": %zu,\n"
            "  \"results\": [\n",
            perf_bench_name(o), n, sharc_dtype_name(o->dtype), sharc_op_name(o->op), o->root,
            o->iters, o->warmup, o->registered, o->cuda ? "cuda" : "host",
            sharc_wire_name(o->wire.wire), o->wire.block);
}

/* The table's header (rank 0). */
static void bench_table_header(const perf_bench_opts_t *o, int n)
{
    printf("# sharc-perf %s: %d ranks, %s, %s, %d iterations (+%d warmup), median of the "
           "slowest rank per iteration; buffers from %s\n",
           perf_bench_name(o), n, sharc_dtype_name(o->dtype), sharc_op_name(o->op), o->iters,
           o->warmup,
           o->cuda         ? "the device (--device cuda)"
           : o->registered ? "sharc_mem_alloc (-R 1)"
                           : "the heap");
    if (bench_quantized(o)) {
        printf("# over a %s wire, %zu values per scale: sizes and bandwidths count %s bytes "
               "delivered; err: max |x - x_full| / max |x_full| and rms(x - x_full) / rms(x_full) "
               "against the full-precision %s on the same inputs\n",
               sharc_wire_name(o->wire.wire), o->wire.block, sharc_dtype_name(o->dtype),
               sharc_coll_name(o->coll));
    }
    printf("#%62s%32s%s%s%s\n", "out-of-place", "in-place", o->vs_mpi ? "               MPI" : "",
           o->vs_nccl ? "              NCCL" : "",
           o->vs_memcpy ? (o->cuda ? "  d2d copy" : "  memcpy") : "");
    printf("#%12s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s%s%s%s%s\n", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong", o->vs_mpi ? "      time   busbw  sharc/mpi" : "",
           o->vs_nccl ? "      time   busbw sharc/nccl" : "",
           o->vs_memcpy ? (o->cuda ? "  GB/s  busbw/copy" : "  GB/s  busbw/memcpy") : "",
           bench_quantized(o) ? "   err max   err rms" : "");
    printf("#%12s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s%s%s\n", "(B)", "(elements)", "",
           "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
           o->vs_mpi ? "      (us)  (GB/s)" : "", o->vs_nccl ? "      (us)  (GB/s)" : "");
    fflush(stdout); /* (shown before the first size's figures: a file or pipe too) */
}

/* One size's line of the table (rank 0). */
static void bench_print_row(const perf_bench_opts_t *o, const perf_bench_bufs_t *b,
                            const bench_sweep_t *s, const bench_row_t *r)
{
    char wrong[2][24]; /* (-c does not apply over a quantized wire: "-") */

    for (int k = 0; k < 2; k++) {
        snprintf(wrong[k], sizeof(wrong[k]), bench_quantized(o) ? "-" : "%zu",
                 k ? s->ip.wrong : s->oop.wrong);
    }
    if (o->coll == PERF_SENDRECV) { /* in place: sent from the buffer it fills, unchecked */
        snprintf(wrong[1], sizeof(wrong[1]), "N/A");
    }
    printf(" %12zu %12zu %8s %6s %6d %9.1f %7.3f %7.3f %6s %9.1f %7.3f %7.3f %6s", b->size,
           b->count, sharc_dtype_name(o->dtype),
           (o->coll == SHARC_COLL_REDUCE_SCATTER || o->coll == SHARC_COLL_ALLREDUCE)
               ? sharc_op_name(o->op)
               : "none",
           o->coll == SHARC_COLL_BROADCAST ? o->root : -1, s->oop.median * 1e6, r->alg_oop,
           r->bus_oop, wrong[0], s->ip.median * 1e6, r->alg_ip, r->bus_ip, wrong[1]);
    if (o->vs_mpi) {
        printf(" %9.1f %7.3f %10.2f", s->mpi.median * 1e6, r->bus_mpi,
               r->bus_mpi > 0 ? r->bus_oop / r->bus_mpi : 0);
    }
    if (o->vs_nccl) {
        printf(" %9.1f %7.3f %10.3f", s->nccl.median * 1e6, r->bus_nccl,
               r->bus_nccl > 0 ? r->bus_oop / r->bus_nccl : 0);
    }
    if (o->vs_memcpy) {
        printf(" %6.2f %13.2f", r->memcpy_bw, r->memcpy_bw > 0 ? r->bus_oop / r->memcpy_bw : 0);
    }
    if (bench_quantized(o)) {
        printf(" %9.2e %9.2e", r->err_max, r->err_rms);
    }
    printf("\n");
    fflush(stdout);
}

static void bench_json_series(FILE *f, const char *name, const bench_series_t *s, int iters,
                              double algbw, double busbw, int last)
{
    fprintf(f,
            "      \"%s\": {\"median_us\": %.3f, \"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f, "
            "\"wrong\": %zu, \"times_us\": [",
            name, s->median * 1e6, algbw, busbw, s->wrong);
    for (int i = 0; i < iters; i++) {
        fprintf(f, "%s%.3f", i ? ", " : "", s->t[i] * 1e6);
    }
    fprintf(f, "]}%s\n", last ? "" : ",");
}

/* One size's entry of the JSON file. */
static void bench_json_row(const perf_bench_opts_t *o, const perf_bench_bufs_t *b,
                           const bench_sweep_t *s, const bench_row_t *r, int first, FILE *json)
{
    fprintf(json, "%s    {\"size\": %zu, \"count\": %zu,\n", first ? "" : ",\n", b->size, b->count);
    bench_json_series(json, "out_of_place", &s->oop, o->iters, r->alg_oop, r->bus_oop, 0);
    if (o->vs_mpi) {
        bench_json_series(json, "mpi", &s->mpi, o->iters, b->size / s->mpi.median / 1e9, r->bus_mpi,
                          0);
    }
    if (o->vs_nccl) {
        bench_json_series(json, "nccl", &s->nccl, o->iters, b->size / s->nccl.median / 1e9,
                          r->bus_nccl, 0);
    }
    if (o->vs_memcpy) {
        fprintf(json, "      \"memcpy_gbps\": %.4f,\n", r->memcpy_bw);
    }
    if (bench_quantized(o)) {
        fprintf(json, "      \"err_max_rel\": %.4e, \"err_rms_rel\": %.4e,\n", r->err_max,
                r->err_rms);
    }
    bench_json_series(json, "in_place", &s->ip, o->iters, r->alg_ip, r->bus_ip, 1);
    fprintf(json, "    }");
}

/* ---- the sweep --------------------------------------------------------------------------- */

/* One size: measured, printed and written; 0, 1 when a figure was wrong, -1 when it failed. */
static int bench_size(const perf_bench_opts_t *o, sharc_context_h ctx, sharc_comm_h comm,
                      size_t size, bench_sweep_t *s, FILE *json, int *first_p)
{
    perf_bench_bufs_t b;
    bench_row_t row;
    int ret;

    if (perf_bench_bufs_alloc(o, ctx, sharc_comm_size(comm), size, &b) != 0) {
        return -1;
    }
    if (bench_measure(o, comm, &b, s, &row) != 0) {
        perf_bench_bufs_free(o, ctx, &b);
        return -1;
    }
    if (sharc_comm_rank(comm) == 0) {
        bench_print_row(o, &b, s, &row);
    }
    if (json != NULL) {
        bench_json_row(o, &b, s, &row, *first_p, json);
        *first_p = 0;
    }
    ret = (s->oop.wrong != 0 || s->ip.wrong != 0);
    perf_bench_bufs_free(o, ctx, &b);
    return ret;
}

int perf_bench_sweep(const perf_bench_opts_t *o, sharc_context_h ctx, sharc_comm_h comm)
{
    int rank = sharc_comm_rank(comm), ret = 0, first = 1;
    FILE *json = NULL;
    bench_sweep_t s;

    memset(&s, 0, sizeof(s));
    s.oop.t = calloc((size_t)o->iters, sizeof(double));
    s.ip.t = calloc((size_t)o->iters, sizeof(double));
    s.mpi.t = calloc((size_t)o->iters, sizeof(double));
    s.nccl.t = calloc((size_t)o->iters, sizeof(double));
    if (rank == 0 && o->json != NULL && (json = fopen(o->json, "w")) == NULL) {
        fprintf(stderr, "sharc-perf: cannot write %s\n", o->json);
    }
    if (json != NULL) {
        bench_json_header(o, sharc_comm_size(comm), json);
    }
    if (rank == 0) {
        bench_table_header(o, sharc_comm_size(comm));
    }
    for (size_t size = o->minbytes; size <= o->maxbytes;
         size = (o->stepbytes ? size + o->stepbytes : (size_t)(size * o->stepfactor))) {
        int one = bench_size(o, ctx, comm, size, &s, json, &first);

        if (one < 0) {
            ret = 1;
            break;
        }
        ret |= one;
        if (o->stepbytes == 0 && o->stepfactor <= 1.0) {
            break;
        }
    }
    if (json != NULL) {
        fprintf(json, "\n  ]\n}\n");
        fclose(json);
    }
    free(s.oop.t);
    free(s.ip.t);
    free(s.mpi.t);
    free(s.nccl.t);
    return ret;
}
