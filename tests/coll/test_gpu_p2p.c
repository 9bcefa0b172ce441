/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_p2p.c: one rank of the test of sends and receives on CUDA buffers (public API and
 * sharc/sharc_cuda.h): through NCCL, a ring exchange in a group (to self on one rank) of every
 * dtype at counts 0 .. 1M + 3, ordered after the work queued on the caller's stream (a memset
 * right before the send) and before the work queued after sharc_request_wait_stream (a copy to
 * the host, no host wait); what NCCL cannot do refused (a receive from any rank, a request
 * waited for inside its group); with SHARC_CUDA_BACKEND=staged, CUDA buffers refused with a
 * message (they are not staged). Exits 77 without CUDA or a GPU.
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

static sharc_comm_h comm;
static int me, n;
static cudaStream_t stream;

static double value(int src, size_t i)
{
    return (double)((src * 13 + (int)(i % 89)) % 97);
}

/* Send to the next rank, receive from the previous one, in a group; the send buffer is
 * written on the caller's stream just before, the result read on it just after. */
static void run_ring(sharc_dtype_t dt, size_t count)
{
    size_t es = sharc_dtype_size(dt), bytes = count * es, bad = 0;
    int left = (me + n - 1) % n, right = (me + 1) % n;
    char *h = malloc(bytes + 1), *out = malloc(bytes + 1);
    void *dsend = NULL, *drecv = NULL;
    sharc_request_h req[2] = {NULL, NULL};

    for (size_t i = 0; i < count; i++) {
        elem_put(h, dt, i, value(me, i));
    }
    CHECK(cudaMalloc(&dsend, bytes + 16) == cudaSuccess);
    CHECK(cudaMalloc(&drecv, bytes + 16) == cudaSuccess);
    CHECK(cudaMemcpy(dsend, h, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemsetAsync(drecv, 0xff, bytes, stream) == cudaSuccess);
    CHECK(sharc_p2p_group_start(comm) == SHARC_OK);
    CHECK(sharc_recv(drecv, count, dt, left, 0, comm, &req[0]) == SHARC_OK);
    CHECK(sharc_request_wait(req[0]) == SHARC_ERR_INVALID); /* not issued yet */
    CHECK(sharc_send(dsend, count, dt, right, 0, comm, &req[1]) == SHARC_OK);
    CHECK(sharc_p2p_group_end(comm) == SHARC_OK);
    for (int k = 0; k < 2; k++) {
        CHECK(sharc_request_wait_stream(req[k], stream) == SHARC_OK);
    }
    CHECK(cudaMemcpyAsync(out, drecv, bytes, cudaMemcpyDeviceToHost, stream) == cudaSuccess);
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
    for (size_t i = 0; i < count; i++) {
        bad += elem_get(out, dt, i) != value(left, i);
    }
    CHECK_MSG(bad == 0, "ring %s %zu: %zu wrong", sharc_dtype_name(dt), count, bad);
    for (int k = 0; k < 2; k++) {
        sharc_recv_info_t info;

        if (k == 0 && sharc_request_recv_info(req[k], &info) == SHARC_OK) {
            CHECK_MSG(info.source == left && info.count == count, "recv info %d %zu", info.source,
                      info.count);
        }
        sharc_request_free(req[k]);
    }
    cudaFree(dsend);
    cudaFree(drecv);
    free(h);
    free(out);
}

static void run_refusals(void)
{
    void *d = NULL;

    CHECK(cudaMalloc(&d, 64) == cudaSuccess);
    CHECK(sharc_recv(d, 16, SHARC_DTYPE_F32, SHARC_ANY_SOURCE, 0, comm, NULL) ==
          SHARC_ERR_UNSUPPORTED);
    cudaFree(d);
}

/* SHARC_CUDA_BACKEND=staged: no NCCL, and CUDA buffers are refused, saying so. */
static void run_staged(void)
{
    void *d = NULL;

    CHECK(cudaMalloc(&d, 64) == cudaSuccess);
    CHECK(sharc_send(d, 16, SHARC_DTYPE_F32, me, 0, comm, NULL) == SHARC_ERR_UNSUPPORTED);
    CHECK(sharc_recv(d, 16, SHARC_DTYPE_F32, me, 0, comm, NULL) == SHARC_ERR_UNSUPPORTED);
    cudaFree(d);
}

int main(void)
{
    static const size_t counts[] = {0, 1, 7, 4097};
    const char *backend = getenv("SHARC_CUDA_BACKEND");
    sharc_context_h ctx;
    int st = gpu_check_start("test_gpu_p2p", &ctx, &comm, &stream);

    if (st != 0) {
        return st;
    }
    me = sharc_comm_rank(comm);
    n = sharc_comm_size(comm);
    CHECK(sharc_comm_set_cuda_stream(comm, stream) == SHARC_OK);
    if (backend != NULL && strcmp(backend, "staged") == 0) {
        run_staged();
    } else {
        for (int dt = 0; dt < SHARC_DTYPE_LAST; dt++) {
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                run_ring((sharc_dtype_t)dt, counts[c]);
            }
        }
        run_ring(SHARC_DTYPE_F32, (1u << 20) + 3);
        run_refusals();
    }
    printf("rank %d of %d: GPU point-to-point %s\n", me, n, check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_gpu_p2p");
}
#endif
