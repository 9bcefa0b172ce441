/*
 * sharc-perf: collective benchmarks in nccl-tests' language (same flags, same columns, same
 * bus-bandwidth formulas), on sharc's public API. It adds what a cluster check needs:
 * --vs-mpi runs the same sweep through MPI in the same job and prints sharc/MPI per size,
 * and --vs-memcpy measures this machine's single-thread copy bandwidth for the same sizes
 * in the same run. -J writes every iteration's time as JSON. Times are medians over the
 * iterations of the slowest rank's time per iteration. --device cuda runs on device buffers
 * (one GPU per rank, by local rank), --vs-nccl beside NCCL called directly on them.
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sharc/sharc.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "common/perf_cuda.h"
#include "common/perf_util.h"
#include "predict/predict.h"

/* The collectives measured: sharc_coll_type_t's before the barrier, named by sharc_coll_name. */
#define PERF_NCOLLS SHARC_COLL_BARRIER

typedef struct {
    sharc_coll_type_t coll;
    size_t minbytes, maxbytes, stepbytes;
    double stepfactor;
    int iters, warmup, check, root, vs_mpi, vs_memcpy, vs_nccl;
    int registered; /* -R 1: buffers from sharc_mem_alloc */
    int cuda;       /* --device cuda: device buffers */
    sharc_dtype_t dtype;
    sharc_op_t op;
    const char *json;
} perf_opts_t;

/* nccl-tests' bus bandwidth factors (alltoall: (n-1)/n, as all-gather). */
static double perf_bus_factor(sharc_coll_type_t coll, int n)
{
    switch (coll) {
    case SHARC_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case SHARC_COLL_BROADCAST: return 1.0;
    default: return (double)(n - 1) / n;
    }
}

/*
 * Buffers for one size: "size" is nccl-tests' size (the larger side of the collective;
 * alltoall: the bytes each rank sends in all, n blocks of blockcount elements).
 */
typedef struct {
    size_t size, count; /* bytes and elements of the larger side */
    size_t sendcount, recvcount;
    size_t blockcount;   /* alltoall: elements per peer */
    char *send, *recv;   /* what the collectives run on (host, or device with --device cuda) */
    char *hsend, *hrecv; /* host copies for -c (the same buffers on the host) */
} perf_bufs_t;

/* -c works on the host copies: these move them to the device and back. */
static int perf_push(const perf_opts_t *o, perf_bufs_t *b)
{
    return !o->cuda ? 0
                    : perf_cuda_put(b->send, b->hsend, b->size) |
                          perf_cuda_put(b->recv, b->hrecv, b->size);
}

static int perf_pull(const perf_opts_t *o, perf_bufs_t *b)
{
    return !o->cuda ? 0
                    : perf_cuda_get(b->hsend, b->send, b->size) |
                          perf_cuda_get(b->hrecv, b->recv, b->size);
}

static void perf_layout(const perf_opts_t *o, int n, size_t size, perf_bufs_t *b)
{
    size_t esize = sharc_dtype_size(o->dtype);

    b->count = size / esize;
    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
        b->sendcount = b->count / n;
        b->recvcount = b->sendcount * n;
        break;
    case SHARC_COLL_REDUCE_SCATTER:
        b->recvcount = b->count / n;
        b->sendcount = b->recvcount * n;
        break;
    case SHARC_COLL_ALLTOALL:
        b->blockcount = b->count / n;
        b->sendcount = b->recvcount = b->blockcount * n;
        break;
    default: b->sendcount = b->recvcount = b->count; break;
    }
    b->count = SHARC_PERF_MAX(b->sendcount, b->recvcount);
    b->size = b->count * esize;
}

static sharc_status_t perf_call_sharc(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b,
                                      int inplace)
{
    int rank = sharc_comm_rank(comm);
    size_t esize = sharc_dtype_size(o->dtype);

    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
        return sharc_allgather(inplace ? b->recv + rank * b->sendcount * esize : b->send, b->recv,
                               b->sendcount, o->dtype, comm, NULL);
    case SHARC_COLL_REDUCE_SCATTER:
        return sharc_reduce_scatter(b->send,
                                    inplace ? b->send + rank * b->recvcount * esize : b->recv,
                                    b->recvcount, o->dtype, o->op, comm, NULL);
    case SHARC_COLL_ALLREDUCE:
        return sharc_allreduce(b->send, inplace ? b->send : b->recv, b->count, o->dtype, o->op,
                               comm, NULL);
    case SHARC_COLL_ALLTOALL:
        return sharc_alltoall(b->send, inplace ? b->send : b->recv, b->blockcount, o->dtype, comm,
                              NULL);
    default:
        return sharc_broadcast(b->send, inplace ? b->send : b->recv, b->count, o->dtype, o->root,
                               comm, NULL);
    }
}

/* The collective once; a failure says which and how (the library's log says why), so a job
 * that dies shows when each rank learned it. */
static sharc_status_t perf_run_sharc(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b,
                                     int inplace)
{
    sharc_status_t status = perf_call_sharc(o, comm, b, inplace);

    if (status != SHARC_OK) {
        fprintf(stderr, "sharc-perf: rank %d: %s of %zu bytes failed: %s\n",
                sharc_comm_rank(comm), sharc_coll_name(o->coll), b->size, sharc_status_string(status));
    }
    return status;
}

#ifdef HAVE_MPI
static int perf_mpi_types(const perf_opts_t *o, MPI_Datatype *dt_p, MPI_Op *op_p)
{
    switch (o->dtype) {
    case SHARC_DTYPE_F32: *dt_p = MPI_FLOAT; break;
    case SHARC_DTYPE_F64: *dt_p = MPI_DOUBLE; break;
    case SHARC_DTYPE_I32: *dt_p = MPI_INT32_T; break;
    case SHARC_DTYPE_I64: *dt_p = MPI_INT64_T; break;
    case SHARC_DTYPE_U8: *dt_p = MPI_UINT8_T; break;
    default: return -1; /* MPI has no f16 / bf16 */
    }
    switch (o->op) {
    case SHARC_OP_SUM: *op_p = MPI_SUM; break;
    case SHARC_OP_PROD: *op_p = MPI_PROD; break;
    case SHARC_OP_MIN: *op_p = MPI_MIN; break;
    case SHARC_OP_MAX: *op_p = MPI_MAX; break;
    default: /* MPI has no average: fine where nothing is reduced */
        return (o->coll == SHARC_COLL_ALLGATHER || o->coll == SHARC_COLL_BROADCAST ||
                o->coll == SHARC_COLL_ALLTOALL)
                   ? 0
                   : -1;
    }
    return 0;
}

static int perf_run_mpi(const perf_opts_t *o, perf_bufs_t *b)
{
    MPI_Datatype dt = MPI_BYTE;
    MPI_Op op = MPI_SUM;

    perf_mpi_types(o, &dt, &op);
    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
        return MPI_Allgather(b->send, (int)b->sendcount, dt, b->recv, (int)b->sendcount, dt,
                             MPI_COMM_WORLD);
    case SHARC_COLL_REDUCE_SCATTER:
        return MPI_Reduce_scatter_block(b->send, b->recv, (int)b->recvcount, dt, op,
                                        MPI_COMM_WORLD);
    case SHARC_COLL_ALLREDUCE:
        return MPI_Allreduce(b->send, b->recv, (int)b->count, dt, op, MPI_COMM_WORLD);
    case SHARC_COLL_ALLTOALL:
        return MPI_Alltoall(b->send, (int)b->blockcount, dt, b->recv, (int)b->blockcount, dt,
                            MPI_COMM_WORLD);
    default: return MPI_Bcast(b->send, (int)b->count, dt, o->root, MPI_COMM_WORLD);
    }
}
#endif

/* The collective once, on the inputs the host copies hold; the results back in them. */
static int perf_check_run(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b, int inplace)
{
    return (perf_push(o, b) != 0 || perf_run_sharc(o, comm, b, inplace) != SHARC_OK ||
            perf_pull(o, b) != 0)
               ? -1
               : 0;
}

/* Fill inputs whose result is known, run once, count wrong elements (nccl-tests' -c). */
static size_t perf_check(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b, int inplace)
{
    int n = sharc_comm_size(comm), rank = sharc_comm_rank(comm);
    size_t esize = sharc_dtype_size(o->dtype);
    char *mine;

    switch (o->coll) {
    case SHARC_COLL_ALLGATHER:
        mine = inplace ? b->hrecv + rank * b->sendcount * esize : b->hsend;
        perf_fill(mine, o->dtype, b->sendcount, rank, (size_t)rank * b->sendcount, o->op);
        if (perf_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        {
            size_t wrong = 0;
            for (int r = 0; r < n; r++) {
                wrong += perf_wrong(b->hrecv + r * b->sendcount * esize, o->dtype, b->sendcount,
                                    (size_t)r * b->sendcount, r, n, o->op);
            }
            return wrong;
        }
    case SHARC_COLL_REDUCE_SCATTER:
        /* block i of every rank holds the elements i * recvcount .. of the vector */
        perf_fill(b->hsend, o->dtype, b->sendcount, rank, 0, o->op);
        if (perf_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return perf_wrong(inplace ? b->hsend + rank * b->recvcount * esize : b->hrecv, o->dtype,
                          b->recvcount, (size_t)rank * b->recvcount, -1, n, o->op);
    case SHARC_COLL_ALLREDUCE:
        perf_fill(b->hsend, o->dtype, b->count, rank, 0, o->op);
        if (perf_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return perf_wrong(inplace ? b->hsend : b->hrecv, o->dtype, b->count, 0, -1, n, o->op);
    case SHARC_COLL_ALLTOALL:
        /* block j of rank r's sendbuf holds perf_input(r, j * (blockcount + 1) + k): the
         * sender and the destination both show in the values (perf_input has period 4) */
        for (int j = 0; j < n; j++) {
            perf_fill(b->hsend + j * b->blockcount * esize, o->dtype, b->blockcount, rank,
                      (size_t)j * (b->blockcount + 1), o->op);
        }
        if (perf_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        {
            size_t wrong = 0;
            for (int r = 0; r < n; r++) {
                wrong += perf_wrong((inplace ? b->hsend : b->hrecv) + r * b->blockcount * esize,
                                    o->dtype, b->blockcount, (size_t)rank * (b->blockcount + 1), r,
                                    n, o->op);
            }
            return wrong;
        }
    default:
        perf_fill(b->hsend, o->dtype, b->count, rank, 0, o->op);
        if (perf_check_run(o, comm, b, inplace) != 0) {
            return b->count;
        }
        return perf_wrong(inplace ? b->hsend : b->hrecv, o->dtype, b->count, 0, o->root, n, o->op);
    }
}

/* Per-iteration times (seconds) of one series, the slowest rank's each iteration. */
typedef struct {
    double *t;
    double median;
    size_t wrong;
} perf_series_t;

/* Make every rank's per-iteration times the slowest rank's (max over ranks). */
static void perf_max_over_ranks(sharc_comm_h comm, double *t, int iters)
{
    sharc_allreduce(t, t, (size_t)iters, SHARC_DTYPE_F64, SHARC_OP_MAX, comm, NULL);
}

static int perf_time_sharc(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b, int inplace,
                           perf_series_t *out)
{
    double *sorted = malloc(sizeof(double) * (size_t)o->iters);

    for (int i = 0; i < o->warmup; i++) {
        if (perf_run_sharc(o, comm, b, inplace) != SHARC_OK) {
            return -1;
        }
    }
    sharc_barrier(comm, NULL);
    for (int i = 0; i < o->iters; i++) {
        double t0 = perf_now();
        if (perf_run_sharc(o, comm, b, inplace) != SHARC_OK) {
            free(sorted);
            return -1;
        }
        out->t[i] = perf_now() - t0;
    }
    perf_max_over_ranks(comm, out->t, o->iters);
    memcpy(sorted, out->t, sizeof(double) * (size_t)o->iters);
    out->median = perf_median(sorted, (size_t)o->iters);
    free(sorted);
    out->wrong = o->check ? perf_check(o, comm, b, inplace) : 0;
    sharc_allreduce(&out->wrong, &out->wrong, 1, SHARC_DTYPE_I64, SHARC_OP_SUM, comm, NULL);
    return 0;
}

#ifdef HAVE_MPI
static void perf_time_mpi(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b,
                          perf_series_t *out)
{
    double *sorted = malloc(sizeof(double) * (size_t)o->iters);

    for (int i = 0; i < o->warmup; i++) {
        perf_run_mpi(o, b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < o->iters; i++) {
        double t0 = perf_now();
        perf_run_mpi(o, b);
        out->t[i] = perf_now() - t0;
    }
    perf_max_over_ranks(comm, out->t, o->iters);
    memcpy(sorted, out->t, sizeof(double) * (size_t)o->iters);
    out->median = perf_median(sorted, (size_t)o->iters);
    free(sorted);
}
#endif

/* --vs-nccl: the same collective through NCCL directly, on the same device buffers. */
static int perf_time_nccl(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b,
                          perf_series_t *out)
{
    double *sorted = malloc(sizeof(double) * (size_t)o->iters);
    int coll = (int)o->coll;
    size_t count = (o->coll == SHARC_COLL_ALLGATHER)        ? b->sendcount
                   : (o->coll == SHARC_COLL_REDUCE_SCATTER) ? b->recvcount
                                                            : b->count;

    for (int i = 0; i < o->warmup + o->iters; i++) {
        double t0 = perf_now();

        if (i == o->warmup) {
            sharc_barrier(comm, NULL);
            t0 = perf_now();
        }
        if (perf_nccl_run(coll, b->send, b->recv, count, o->dtype, o->op, o->root) != 0) {
            free(sorted);
            return -1;
        }
        if (i >= o->warmup) {
            out->t[i - o->warmup] = perf_now() - t0;
        }
    }
    perf_max_over_ranks(comm, out->t, o->iters);
    memcpy(sorted, out->t, sizeof(double) * (size_t)o->iters);
    out->median = perf_median(sorted, (size_t)o->iters);
    free(sorted);
    return 0;
}

/* Single-thread copy of `size` bytes on rank 0 while the others wait: this machine's
 * memcpy bandwidth in the same run (GB/s, median); with --device cuda a device-to-device
 * copy of the same size. */
static double perf_memcpy_bw(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b)
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

static void perf_json_series(FILE *f, const char *name, const perf_series_t *s, int iters,
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

/* A zeroed buffer of @p bytes: on the device with --device cuda, from sharc_mem_alloc with
 * -R 1, else from the heap. */
static char *perf_alloc(const perf_opts_t *o, sharc_context_h ctx, size_t bytes)
{
    void *p = NULL;

    if (o->cuda) {
        return perf_cuda_alloc(bytes);
    }
    if (!o->registered) {
        return calloc(1, bytes);
    }
    return sharc_mem_alloc(ctx, bytes, &p) == SHARC_OK ? p : NULL;
}

static void perf_free(const perf_opts_t *o, sharc_context_h ctx, char *p)
{
    if (o->cuda) {
        perf_cuda_free(p);
    } else if (o->registered) {
        sharc_mem_free(ctx, p);
    } else {
        free(p);
    }
}

static void perf_free_bufs(const perf_opts_t *o, sharc_context_h ctx, perf_bufs_t *b)
{
    if (o->cuda) {
        free(b->hsend);
        free(b->hrecv);
    }
    perf_free(o, ctx, b->send);
    perf_free(o, ctx, b->recv);
}

/* The series of one sweep, and what one size measured. */
typedef struct {
    perf_series_t oop, ip, mpi, nccl;
} perf_sweep_t;

typedef struct {
    double alg_oop, alg_ip, bus_oop, bus_ip, bus_mpi, bus_nccl, memcpy_bw;
} perf_row_t;

/* The JSON file's opening and the table's header (rank 0). */
static void perf_sweep_header(const perf_opts_t *o, int n, FILE *json)
{
    if (json != NULL) {
        fprintf(json,
                "{\n  \"collective\": \"%s\", \"nranks\": %d, \"dtype\": \"%s\", "
                "\"op\": \"%s\", \"root\": %d, \"iters\": %d, \"warmup\": %d, "
                "\"registered\": %d, \"device\": \"%s\",\n"
                "  \"results\": [\n",
                sharc_coll_name(o->coll), n, sharc_dtype_name(o->dtype), sharc_op_name(o->op),
                o->root, o->iters, o->warmup, o->registered, o->cuda ? "cuda" : "host");
    }
    printf("# sharc-perf %s: %d ranks, %s, %s, %d iterations (+%d warmup), median of the "
           "slowest rank per iteration; buffers from %s\n",
           sharc_coll_name(o->coll), n, sharc_dtype_name(o->dtype), sharc_op_name(o->op), o->iters,
           o->warmup,
           o->cuda         ? "the device (--device cuda)"
           : o->registered ? "sharc_mem_alloc (-R 1)"
                           : "the heap");
    printf("#%62s%32s%s%s%s\n", "out-of-place", "in-place", o->vs_mpi ? "               MPI" : "",
           o->vs_nccl ? "              NCCL" : "",
           o->vs_memcpy ? (o->cuda ? "  d2d copy" : "  memcpy") : "");
    printf("#%12s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s%s%s%s\n", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong", o->vs_mpi ? "      time   busbw  sharc/mpi" : "",
           o->vs_nccl ? "      time   busbw sharc/nccl" : "",
           o->vs_memcpy ? (o->cuda ? "  GB/s  busbw/copy" : "  GB/s  busbw/memcpy") : "");
    printf("#%12s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s%s%s\n", "(B)", "(elements)", "",
           "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
           o->vs_mpi ? "      (us)  (GB/s)" : "", o->vs_nccl ? "      (us)  (GB/s)" : "");
}

/* Time one size on every side asked for into @p s, and its figures into @p row. 0 or 1. */
static int perf_measure(const perf_opts_t *o, sharc_comm_h comm, perf_bufs_t *b, perf_sweep_t *s,
                        perf_row_t *row)
{
    double factor = perf_bus_factor(o->coll, sharc_comm_size(comm));

    memset(row, 0, sizeof(*row));
    if (perf_time_sharc(o, comm, b, 0, &s->oop) != 0 ||
        perf_time_sharc(o, comm, b, 1, &s->ip) != 0 ||
        (o->vs_nccl && perf_time_nccl(o, comm, b, &s->nccl) != 0)) {
        return 1;
    }
    row->bus_nccl =
        (o->vs_nccl && s->nccl.median > 0) ? b->size / s->nccl.median / 1e9 * factor : 0;
#ifdef HAVE_MPI
    if (o->vs_mpi) {
        perf_time_mpi(o, comm, b, &s->mpi);
        row->bus_mpi = s->mpi.median > 0 ? b->size / s->mpi.median / 1e9 * factor : 0;
    }
#endif
    if (o->vs_memcpy) {
        row->memcpy_bw = perf_memcpy_bw(o, comm, b);
    }
    row->alg_oop = s->oop.median > 0 ? b->size / s->oop.median / 1e9 : 0;
    row->alg_ip = s->ip.median > 0 ? b->size / s->ip.median / 1e9 : 0;
    row->bus_oop = row->alg_oop * factor;
    row->bus_ip = row->alg_ip * factor;
    return 0;
}

/* One size's line of the table (rank 0). */
static void perf_print_row(const perf_opts_t *o, const perf_bufs_t *b, const perf_sweep_t *s,
                           const perf_row_t *r)
{
    printf(" %12zu %12zu %8s %6s %6d %9.1f %7.3f %7.3f %6zu %9.1f %7.3f %7.3f %6zu", b->size,
           b->count, sharc_dtype_name(o->dtype),
           (o->coll == SHARC_COLL_REDUCE_SCATTER || o->coll == SHARC_COLL_ALLREDUCE)
               ? sharc_op_name(o->op)
               : "none",
           o->coll == SHARC_COLL_BROADCAST ? o->root : -1, s->oop.median * 1e6, r->alg_oop,
           r->bus_oop, s->oop.wrong, s->ip.median * 1e6, r->alg_ip, r->bus_ip, s->ip.wrong);
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
    printf("\n");
    fflush(stdout);
}

/* One size's entry of the JSON file. */
static void perf_json_row(const perf_opts_t *o, const perf_bufs_t *b, const perf_sweep_t *s,
                          const perf_row_t *r, int first, FILE *json)
{
    fprintf(json, "%s    {\"size\": %zu, \"count\": %zu,\n", first ? "" : ",\n", b->size, b->count);
    perf_json_series(json, "out_of_place", &s->oop, o->iters, r->alg_oop, r->bus_oop, 0);
    if (o->vs_mpi) {
        perf_json_series(json, "mpi", &s->mpi, o->iters, b->size / s->mpi.median / 1e9, r->bus_mpi,
                         0);
    }
    if (o->vs_nccl) {
        perf_json_series(json, "nccl", &s->nccl, o->iters, b->size / s->nccl.median / 1e9,
                         r->bus_nccl, 0);
    }
    if (o->vs_memcpy) {
        fprintf(json, "      \"memcpy_gbps\": %.4f,\n", r->memcpy_bw);
    }
    perf_json_series(json, "in_place", &s->ip, o->iters, r->alg_ip, r->bus_ip, 1);
    fprintf(json, "    }");
}

/* Every size from -b to -e: measured, printed and written; 1 when one failed or was wrong. */
static int perf_sweep(const perf_opts_t *o, sharc_context_h ctx, sharc_comm_h comm)
{
    int n = sharc_comm_size(comm), rank = sharc_comm_rank(comm), ret = 0, first = 1;
    FILE *json = NULL;
    perf_sweep_t s;

    memset(&s, 0, sizeof(s));
    s.oop.t = calloc((size_t)o->iters, sizeof(double));
    s.ip.t = calloc((size_t)o->iters, sizeof(double));
    s.mpi.t = calloc((size_t)o->iters, sizeof(double));
    s.nccl.t = calloc((size_t)o->iters, sizeof(double));
    if (rank == 0 && o->json != NULL && (json = fopen(o->json, "w")) == NULL) {
        fprintf(stderr, "sharc-perf: cannot write %s\n", o->json);
    }
    if (rank == 0) {
        perf_sweep_header(o, n, json);
    }
    for (size_t size = o->minbytes; size <= o->maxbytes;
         size = (o->stepbytes ? size + o->stepbytes : (size_t)(size * o->stepfactor))) {
        perf_bufs_t b;
        perf_row_t row;

        perf_layout(o, n, size, &b);
        b.send = perf_alloc(o, ctx, b.size + 64);
        b.recv = perf_alloc(o, ctx, b.size + 64);
        b.hsend = o->cuda ? calloc(1, b.size + 64) : b.send;
        b.hrecv = o->cuda ? calloc(1, b.size + 64) : b.recv;
        if (b.send == NULL || b.recv == NULL || b.hsend == NULL || b.hrecv == NULL ||
            perf_measure(o, comm, &b, &s, &row) != 0) {
            ret = 1;
            perf_free_bufs(o, ctx, &b);
            break;
        }
        if (rank == 0) {
            perf_print_row(o, &b, &s, &row);
        }
        if (json != NULL) {
            perf_json_row(o, &b, &s, &row, first, json);
            first = 0;
        }
        ret |= (s.oop.wrong != 0 || s.ip.wrong != 0);
        perf_free_bufs(o, ctx, &b);
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

static void perf_usage(FILE *out)
{
    fprintf(out,
            "usage: sharc-perf allgather|reduce_scatter|allreduce|broadcast|alltoall [options]\n"
            "       sharc-perf overlap [options]   (the sharding engine; overlap -h)\n"
            "       sharc-perf tune [options]      (search the settings; tune -h)\n"
            "       sharc-perf check [options]     (find the slow node or link; check -h)\n"
            "       sharc-perf predict [options]   (what-if scaling of a step; predict -h)\n"
            "  -b, --minbytes N     smallest size (default 32M); K, M, G suffixes\n"
            "  -e, --maxbytes N     largest size (default 32M)\n"
            "                       a size is a rank's larger buffer, as in nccl-tests (alltoall:\n"
            "                       all n blocks a rank sends)\n"
            "  -i, --stepbytes N    step between sizes (default: use -f)\n"
            "  -f, --stepfactor F   factor between sizes (default 2)\n"
            "  -n, --iters N        timed iterations per size (default 20)\n"
            "  -w, --warmup_iters N untimed iterations first (default 5)\n"
            "  -c, --check 0|1      check results like nccl-tests (default 1)\n"
            "  -d, --datatype T     f32 f64 f16 bf16 i32 i64 u8 (or float, half, ...)\n"
            "  -o, --op OP          sum prod min max avg (default sum)\n"
            "  -r, --root N         broadcast root (default 0)\n"
            "  -R, --registered 0|1 1: buffers from sharc_mem_alloc, which peers on the node\n"
            "                       map and copy from directly (default 0: the heap)\n"
            "  -J, --json FILE      write every iteration's time as JSON\n"
            "      --vs-mpi         the same sweep through MPI in this job, and sharc/MPI\n"
            "      --vs-memcpy      single-thread memcpy bandwidth for each size, same run\n"
            "                       (--device cuda: a device-to-device copy)\n"
            "      --device host|cuda  buffers in host memory (default) or on the GPU of each\n"
            "                       rank's local rank (through NCCL, else staged)\n"
            "      --vs-nccl        --device cuda: NCCL called directly on the same buffers, and\n"
            "                       sharc/NCCL\n"
            "Run it under the job's launcher: mpirun -np 2 sharc-perf allgather -b 1M -e 256M\n");
}

/* The collective and its options; 0, or 2 for bad arguments (said), or -1 for -h (done). */
static int perf_parse_args(int argc, char **argv, perf_opts_t *o)
{
    static const struct option opts[] = {
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepbytes", required_argument, NULL, 'i'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"datatype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},
        {"root", required_argument, NULL, 'r'},
        {"json", required_argument, NULL, 'J'},
        {"registered", required_argument, NULL, 'R'},
        {"vs-mpi", no_argument, NULL, 'M'},
        {"vs-memcpy", no_argument, NULL, 'C'},
        {"vs-nccl", no_argument, NULL, 'N'},
        {"device", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    for (c = 0; c < PERF_NCOLLS && strcmp(argv[1], sharc_coll_name((sharc_coll_type_t)c)) != 0;
         c++) {
    }
    if (c == PERF_NCOLLS) {
        fprintf(stderr, "sharc-perf: unknown collective '%s'\n", argv[1]);
        perf_usage(stderr);
        return 2;
    }
    o->coll = (sharc_coll_type_t)c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:c:d:o:r:R:J:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': bad |= perf_parse_size(optarg, &o->minbytes); break;
        case 'e': bad |= perf_parse_size(optarg, &o->maxbytes); break;
        case 'i': bad |= perf_parse_size(optarg, &o->stepbytes); break;
        case 'f':
            o->stepfactor = atof(optarg);
            bad |= o->stepfactor <= 0;
            break;
        case 'n':
            o->iters = atoi(optarg);
            bad |= o->iters < 1;
            break;
        case 'w':
            o->warmup = atoi(optarg);
            bad |= o->warmup < 0;
            break;
        case 'c': o->check = atoi(optarg); break;
        case 'd': bad |= sharc_dtype_from_name(optarg, &o->dtype) != SHARC_OK; break;
        case 'o': bad |= sharc_op_from_name(optarg, &o->op) != SHARC_OK; break;
        case 'r': o->root = atoi(optarg); break;
        case 'R':
            o->registered = atoi(optarg);
            bad |= o->registered != 0 && o->registered != 1;
            break;
        case 'J': o->json = optarg; break;
        case 'M': o->vs_mpi = 1; break;
        case 'C': o->vs_memcpy = 1; break;
        case 'N': o->vs_nccl = 1; break;
        case 'D':
            o->cuda = strcmp(optarg, "cuda") == 0;
            bad |= !o->cuda && strcmp(optarg, "host") != 0;
            break;
        case 'h': perf_usage(stdout); return -1;
        default: bad = 1; break;
        }
    }
    if (bad || optind < argc || o->minbytes > o->maxbytes ||
        (o->cuda && (o->vs_mpi || o->registered)) || (o->vs_nccl && !o->cuda)) {
        fprintf(stderr, "sharc-perf: bad arguments\n");
        perf_usage(stderr);
        return 2;
    }
    return 0;
}

/* --vs-mpi: MPI for the comparison (initialized here, finalized by perf_mpi_fini). 0 or 2. */
static int perf_mpi_init(const perf_opts_t *o, int *argc, char ***argv)
{
#ifdef HAVE_MPI
    if (o->vs_mpi) {
        MPI_Datatype dt = MPI_BYTE;
        MPI_Op op = MPI_SUM;
        int provided;

        if (perf_mpi_types(o, &dt, &op) != 0) {
            fprintf(stderr, "sharc-perf: --vs-mpi: MPI has no %s or no %s reduction\n",
                    sharc_dtype_name(o->dtype), sharc_op_name(o->op));
            return 2;
        }
        MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    }
#else
    if (o->vs_mpi) {
        fprintf(stderr, "sharc-perf: --vs-mpi needs sharc built with MPI\n");
        return 2;
    }
#endif
    return 0;
}

static void perf_mpi_fini(const perf_opts_t *o)
{
#ifdef HAVE_MPI
    if (o->vs_mpi) {
        MPI_Finalize();
    }
#endif
}

int main(int argc, char **argv)
{
    perf_opts_t o = {.minbytes = 32u << 20,
                     .maxbytes = 32u << 20,
                     .stepfactor = 2.0,
                     .iters = 20,
                     .warmup = 5,
                     .check = 1,
                     .dtype = SHARC_DTYPE_F32,
                     .op = SHARC_OP_SUM};
    sharc_context_h ctx;
    sharc_comm_h comm;
    int ret;

    if (argc >= 2 && strcmp(argv[1], "overlap") == 0) {
        return perf_overlap_main(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "tune") == 0) {
        return perf_tune_main(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "check") == 0) {
        return perf_check_main(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "predict") == 0) {
        return perf_predict_main(argc, argv);
    }
    if (argc < 2 || argv[1][0] == '-') {
        perf_usage(argc >= 2 && strcmp(argv[1], "-h") == 0 ? stdout : stderr);
        return argc >= 2 && strcmp(argv[1], "-h") == 0 ? 0 : 2;
    }
    ret = perf_parse_args(argc, argv, &o);
    if (ret == 0) {
        ret = perf_mpi_init(&o, &argc, &argv);
    }
    if (ret != 0) {
        return ret < 0 ? 0 : ret;
    }
    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "sharc-perf: cannot create the communicator (see the log above)\n");
        return 1;
    }
    if (o.cuda && (perf_cuda_init(comm) != 0 || (o.vs_nccl && perf_nccl_init(comm) != 0))) {
        sharc_comm_destroy(comm);
        sharc_context_destroy(ctx);
        return 1;
    }
    ret = perf_sweep(&o, ctx, comm);
    if (o.cuda) {
        perf_nccl_fini();
        perf_cuda_fini();
    }
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    perf_mpi_fini(&o);
    return ret;
}
