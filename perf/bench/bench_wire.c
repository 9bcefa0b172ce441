/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_wire.c: what --wire costs in accuracy: the collective over the quantized wire and the
 * same collective at full precision, on the same inputs, compared on every rank; printed
 * beside the bandwidth by bench_sweep.c. Public API only.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/perf_cuda.h"
#include "bench.h"

/* Inputs of many magnitudes (a block's scale follows its largest value), multiples of
 * 2^-6 of their power of two, so that f16 and bf16 hold them exactly. */
static void wire_fill(void *p, sharc_dtype_t dt, size_t n, int rank)
{
    for (size_t i = 0; i < n; i++) {
        double m = nearbyint(64 * sin(0.61 * (double)i + 1.7 * rank)) / 64;

        perf_put(p, dt, i, ldexp(m, (int)(i / 512 % 8) - 4));
    }
}

/* Run once on the inputs of the host copies (out of place), results into the host copy. */
static int wire_run(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b)
{
    if (o->cuda && perf_cuda_put(b->send, b->hsend, b->size) != 0) {
        return -1;
    }
    if (perf_bench_run_sharc(o, comm, b, 0) != 0) {
        return -1;
    }
    return o->cuda ? perf_cuda_get(b->hrecv, b->recv, b->size) : 0;
}

int perf_bench_wire_error(const perf_bench_opts_t *o, sharc_comm_h comm, perf_bench_bufs_t *b,
                          double *max_p, double *rms_p)
{
    perf_bench_opts_t full = *o;
    size_t n = b->recvcount, esize = sharc_dtype_size(o->dtype);
    char *ref;
    /* [0] max |error|, [1] max |ref|; then sums of error^2, ref^2 */
    double mx[2] = {0, 0}, sq[2] = {0, 0};
    int ret = -1;

    full.wire.wire = SHARC_WIRE_FULL;
    wire_fill(b->hsend, o->dtype, b->sendcount, sharc_comm_rank(comm));
    ref = malloc(b->size + 1);
    if (ref != NULL && wire_run(&full, comm, b) == 0) {
        memcpy(ref, b->hrecv, n * esize);
        ret = wire_run(o, comm, b);
    }
    for (size_t i = 0; ret == 0 && i < n; i++) {
        double want = perf_get(ref, o->dtype, i), got = perf_get(b->hrecv, o->dtype, i);

        mx[0] = fmax(mx[0], fabs(got - want));
        mx[1] = fmax(mx[1], fabs(want));
        sq[0] += (got - want) * (got - want);
        sq[1] += want * want;
    }
    free(ref);
    if (sharc_allreduce(&ret, &ret, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, comm, NULL) != SHARC_OK ||
        ret != 0) {
        return -1;
    }
    sharc_allreduce(mx, mx, 2, SHARC_DTYPE_F64, SHARC_OP_MAX, comm, NULL);
    sharc_allreduce(sq, sq, 2, SHARC_DTYPE_F64, SHARC_OP_SUM, comm, NULL);
    *max_p = mx[1] > 0 ? mx[0] / mx[1] : 0;
    *rms_p = sq[1] > 0 ? sqrt(sq[0] / sq[1]) : 0;
    return 0;
}
