/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_coll.c: one rank of the test of collectives on CUDA buffers (public API and
 * sharc/sharc_cuda.h): every collective x dtype x in-place/out-of-place at odd counts, with
 * inputs whose exact result is known, through NCCL or staged through host memory
 * (SHARC_CUDA_BACKEND). The collective must follow the work queued on the caller's stream
 * before it (a memset right before it), and sharc_request_wait_stream must order the
 * stream after it without a host wait. Also a split's collective (ncclCommSplit), host and
 * device buffers mixed, and bad arguments. Exits 77 without CUDA or a GPU.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#ifndef HAVE_CUDA
int main(void)
{
    printf("SKIP: sharc was built without CUDA\n");
    return 77;
}
#else

#include <sharc/sharc_cuda.h>

#include "../elem.h"
#include "../gpu_check.h"

#include "../../kernels/kernels.h"

static sharc_comm_h comm;
static int me, n;
static cudaStream_t stream;

/* Rank r's input element i: small integers, exact in every dtype and sum. */
static double input(int r, size_t i)
{
    return 1.0 + (double)((r * 3 + i * 7) % 8);
}

static double sum_all(size_t i)
{
    double s = 0;

    for (int r = 0; r < n; r++) {
        s += input(r, i);
    }
    return s;
}

typedef enum { AG, RS, AR, BC, A2A, NCOLL } coll_t;
static const char *const coll_names[] = {"allgather", "reduce_scatter", "allreduce", "broadcast",
                                         "alltoall"};

/* One collective of @p count (per rank, per block, or in all) on device buffers. */
static void run_one(coll_t c, sharc_dtype_t dt, size_t count, int inplace)
{
    size_t es = sharc_dtype_size(dt), sn, rn, bad = 0;
    char *h, *out;
    void *dsend = NULL, *drecv = NULL;
    sharc_request_h req = NULL;
    sharc_status_t status;

    switch (c) {
    case AG: sn = count, rn = count * n; break;
    case RS: sn = count * n, rn = count; break;
    case A2A: sn = rn = count * n; break;
    default: sn = rn = count; break;
    }
    h = malloc((sn > rn ? sn : rn) * es + 1);
    out = malloc(rn * es + 1);
    /* in place as the contracts say: all-gather's input is its own block of the output,
     * reduce-scatter's output its own block of the input, the others share one buffer */
    if (inplace && c == RS) {
        CHECK(cudaMalloc(&dsend, sn * es + 16) == cudaSuccess);
        drecv = (char *)dsend + (size_t)me * count * es;
    } else if (inplace) {
        CHECK(cudaMalloc(&drecv, rn * es + 16) == cudaSuccess);
        dsend = (c == AG) ? (char *)drecv + (size_t)me * count * es : drecv;
    } else {
        CHECK(cudaMalloc(&dsend, sn * es + 16) == cudaSuccess);
        CHECK(cudaMalloc(&drecv, rn * es + 16) == cudaSuccess);
    }
    for (size_t i = 0; i < sn; i++) {
        size_t gi = (c == AG) ? (size_t)me * count + i : i;
        elem_put(h, dt, i,
                 c == A2A ? (double)((me * n + (int)(i / (count ? count : 1))) % 97)
                          : input(me, gi));
    }
    /* the input arrives on the caller's stream right before the collective: a memset first
     * (garbage) then the real copy, both queued, none waited for */
    CHECK(cudaMemsetAsync(dsend, 0x7f, sn * es, stream) == cudaSuccess);
    CHECK(cudaMemcpyAsync(dsend, h, sn * es, cudaMemcpyHostToDevice, stream) == cudaSuccess);
    switch (c) {
    case AG: status = sharc_allgather(dsend, drecv, count, dt, comm, &req); break;
    case RS:
        status = sharc_reduce_scatter(dsend, drecv, count, dt, SHARC_OP_SUM, comm, &req);
        break;
    case AR: status = sharc_allreduce(dsend, drecv, count, dt, SHARC_OP_SUM, comm, &req); break;
    case BC: status = sharc_broadcast(dsend, drecv, count, dt, n - 1, comm, &req); break;
    default: status = sharc_alltoall(dsend, drecv, count, dt, comm, &req); break;
    }
    CHECK_MSG(status == SHARC_OK, "%s %s %zu: %s", coll_names[c], sharc_dtype_name(dt), count,
              sharc_status_string(status));
    /* the result is read on the caller's stream after a stream-ordered wait, then the
     * request is freed at once */
    CHECK(sharc_request_wait_stream(req, stream) == SHARC_OK);
    sharc_request_free(req);
    CHECK(cudaMemcpyAsync(out, drecv, rn * es, cudaMemcpyDeviceToHost, stream) == cudaSuccess);
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
    for (size_t i = 0; i < rn; i++) {
        double want;
        switch (c) {
        case AG: want = input((int)(i / count), i); break;
        case RS: want = sum_all((size_t)me * count + i); break;
        case AR: want = sum_all(i); break;
        case BC: want = input(n - 1, i); break;
        default: want = (double)(((int)(i / count) * n + me) % 97); break;
        }
        if (dt == SHARC_DTYPE_U8) {
            want = (double)((int)want & 0xff);
        }
        bad += elem_get(out, dt, i) != want;
    }
    CHECK_MSG(bad == 0, "rank %d: %s %s %zu %s: %zu wrong", me, coll_names[c], sharc_dtype_name(dt),
              count, inplace ? "in place" : "out of place", bad);
    if (inplace) {
        cudaFree(c == RS ? dsend : drecv);
    } else {
        cudaFree(dsend);
        cudaFree(drecv);
    }
    free(h);
    free(out);
}

int main(int argc, char **argv)
{
    static const sharc_dtype_t dts[] = {SHARC_DTYPE_F32, SHARC_DTYPE_BF16, SHARC_DTYPE_F16,
                                        SHARC_DTYPE_F64, SHARC_DTYPE_I32,  SHARC_DTYPE_I64,
                                        SHARC_DTYPE_U8};
    static const size_t counts[] = {0, 1, 7, 4097, (1u << 20) + 3};
    sharc_context_h ctx;
    sharc_comm_h single = NULL;
    int start = gpu_check_start("test_gpu_coll", &ctx, &comm, &stream);

    if (start != 0) {
        return start;
    }
    me = sharc_comm_rank(comm);
    n = sharc_comm_size(comm);
    CHECK(sharc_comm_set_cuda_stream(comm, stream) == SHARC_OK);
    for (int c = 0; c < NCOLL; c++) {
        for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
            for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
                /* the largest count for f32 and bf16 only: time matters on small GPUs */
                if (k == 4 && dts[d] != SHARC_DTYPE_F32 && dts[d] != SHARC_DTYPE_BF16) {
                    continue;
                }
                run_one((coll_t)c, dts[d], counts[k], 0);
                run_one((coll_t)c, dts[d], counts[k], 1);
            }
        }
    }
    /* a split's collective: NCCL splits its communicator too */
    CHECK(sharc_comm_split(comm, me % 2, me, &single) == SHARC_OK);
    if (single != NULL) {
        float h[5] = {1, 2, 3, 4, 5}, o[5];
        void *d;
        int sn = sharc_comm_size(single);

        CHECK(cudaMalloc(&d, sizeof(h)) == cudaSuccess);
        /* on the stream the split inherited: a plain cudaMemcpy from pageable memory may
         * still be on its way when a collective on that (non-blocking) stream starts */
        CHECK(cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, stream) == cudaSuccess);
        CHECK(sharc_allreduce(d, d, 5, SHARC_DTYPE_F32, SHARC_OP_SUM, single, NULL) == SHARC_OK);
        CHECK(cudaMemcpy(o, d, sizeof(o), cudaMemcpyDeviceToHost) == cudaSuccess);
        CHECK_MSG(o[0] == (float)sn && o[4] == 5.0f * (float)sn,
                  "all-reduce on a split of %d rank(s): %g %g %g %g %g", sn, o[0], o[1], o[2], o[3],
                  o[4]);
        cudaFree(d);
        sharc_comm_destroy(single);
    }
    /* host send buffer, device receive buffer: staged or refused, never wrong */
    {
        float h[3] = {1, 2, 3}, o[3];
        void *d;
        sharc_status_t st;

        CHECK(cudaMalloc(&d, sizeof(h)) == cudaSuccess);
        st = sharc_allreduce(h, d, 3, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
        /* (NCCL refuses the host side at once, naming it: SHARC_ERR_INVALID) */
        CHECK_MSG(st == SHARC_OK || st == SHARC_ERR_INVALID, "mixed buffers: %s",
                  sharc_status_string(st));
        if (st == SHARC_OK) {
            CHECK(cudaMemcpy(o, d, sizeof(o), cudaMemcpyDeviceToHost) == cudaSuccess);
            CHECK(o[0] == (float)n && o[2] == 3.0f * (float)n);
        }
        CHECK(sharc_allgather(NULL, d, 3, SHARC_DTYPE_F32, comm, NULL) == SHARC_ERR_INVALID);
        cudaFree(d);
    }
    printf("rank %d of %d: GPU collectives %s\n", me, n, check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    cudaStreamDestroy(stream);
    return check_result("test_gpu_coll");
}
#endif
