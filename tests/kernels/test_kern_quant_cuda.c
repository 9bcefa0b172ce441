/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kern_quant_cuda.c: the CUDA quantizers (kernels/cuda/quant.cu) against the host ones
 * (kernels/cpu/quant.c, themselves checked against a scalar reference by test_kern_quant):
 * the same wire bytes, values and sums, bit for bit, for int8 and fp8, f32 / f16 / bf16,
 * block sizes below, at and above a warp and odd, odd lengths, several segments, with NaN,
 * infinities, zero and tiny blocks among the data; on a non-default stream. With
 * --bandwidth, each kernel's throughput beside a device copy (printed, not asserted).
 * Exits 77 (SKIP) when sharc was built without CUDA or no GPU is visible.
 */
#include "config.h"

#include <math.h>
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

#include <cuda_runtime.h>

#include "../../kernels/kernels.h"
#include "../gpu_check.h"
#include "../kern_ref.h"

static const sharc_dtype_t floats[] = {SHARC_DTYPE_F32, SHARC_DTYPE_F16, SHARC_DTYPE_BF16};
static const size_t blocks[] = {1, 7, 32, 33, 256, 1000, 4096};
static const size_t lengths[] = {0, 1, 31, 255, 257, 4099, 100003};
#define MAXLEN 100003
#define MAXSEG 3

static cudaStream_t stream;

static float load(const void *p, sharc_dtype_t dt, size_t i)
{
    switch (dt) {
    case SHARC_DTYPE_F16: return sharc_kern_f16_to_f32(((const uint16_t *)p)[i]);
    case SHARC_DTYPE_BF16: return sharc_kern_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* Elements that differ in their bits and are not both NaN. */
static size_t count_diff(const void *a, const void *b, sharc_dtype_t dt, size_t n)
{
    size_t sz = sharc_dtype_size(dt), bad = 0;

    for (size_t i = 0; i < n; i++) {
        bad += memcmp((const char *)a + i * sz, (const char *)b + i * sz, sz) != 0 &&
               !(isnan(load(a, dt, i)) && isnan(load(b, dt, i)));
    }
    return bad;
}

/* Values of many magnitudes, now and then a special one (NaN, infinities, subnormals). */
static void fill(void *p, sharc_dtype_t dt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = ((float)ref_rand32() / 4294967296.0f - 0.5f) * ldexpf(1.0f, (int)(i / 300 % 12));

        if (ref_rand32() % 512 == 0) {
            v = ref_rand_f32();
        }
        if (i / 300 % 17 == 5) {
            v = 0.0f; /* an all-zero stretch */
        }
        if (dt == SHARC_DTYPE_F32) {
            ((float *)p)[i] = v;
        } else {
            ((uint16_t *)p)[i] =
                dt == SHARC_DTYPE_BF16 ? sharc_kern_f32_to_bf16(v) : sharc_kern_f32_to_f16(v);
        }
    }
}

static void put(void *d, const void *h, size_t bytes)
{
    CHECK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream) == cudaSuccess);
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
}

static void get(void *h, const void *d, size_t bytes)
{
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
    CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
}

typedef struct {
    char *src, *seg, *out, *ref; /* host */
    float *base;
    void *dsrc, *dseg, *dout, *dbase; /* device */
} bufs_t;

static void test_case(bufs_t *b, sharc_kern_wire_t w, sharc_dtype_t dt, size_t n, int nseg)
{
    size_t esize = sharc_dtype_size(dt), bytes = sharc_wire_size(w.format, n, w.block, dt) * nseg;
    const sharc_kern_ops_t *cpu = &sharc_kern_cpu_ops, *gpu = &sharc_kern_cuda_ops;
    const char *name = sharc_wire_name(w.format), *dn = sharc_dtype_name(dt);

    fill(b->src, dt, n * nseg);
    put(b->dsrc, b->src, n * nseg * esize);
    CHECK(cudaMemsetAsync(b->dseg, 0xa5, bytes + 16, stream) == cudaSuccess);
    CHECK(cpu->quantize(b->seg, w, b->src, dt, n, nseg, NULL) == SHARC_OK);
    CHECK(gpu->quantize(b->dseg, w, b->dsrc, dt, n, nseg, stream) == SHARC_OK);
    get(b->out, b->dseg, bytes);
    CHECK_MSG(memcmp(b->out, b->seg, bytes) == 0, "%s block %zu %s n %zu nseg %d: wire", name,
              w.block, dn, n, nseg);
    /* back, from the host's wire (so a wire difference does not hide one here) */
    put(b->dseg, b->seg, bytes);
    CHECK(cpu->dequantize(b->ref, dt, b->seg, w, n, nseg, NULL) == SHARC_OK);
    CHECK(gpu->dequantize(b->dout, dt, b->dseg, w, n, nseg, stream) == SHARC_OK);
    get(b->out, b->dout, n * nseg * esize);
    CHECK_MSG(count_diff(b->out, b->ref, dt, n * nseg) == 0, "%s block %zu %s n %zu: values", name,
              w.block, dn, n);
    /* summed, skipping one, onto a base, scaled; then without a base, in place for f32 */
    for (size_t i = 0; i < n; i++) {
        b->base[i] = (float)(i % 5) - 2.0f;
    }
    put(b->dbase, b->base, n * sizeof(float));
    CHECK(cpu->dequantize_sum(b->ref, dt, b->base, b->seg, w, n, nseg, nseg - 1, 0.25, NULL) ==
          SHARC_OK);
    CHECK(gpu->dequantize_sum(b->dout, dt, b->dbase, b->dseg, w, n, nseg, nseg - 1, 0.25, stream) ==
          SHARC_OK);
    get(b->out, b->dout, n * esize);
    CHECK_MSG(count_diff(b->out, b->ref, dt, n) == 0, "%s block %zu %s n %zu: sum", name, w.block,
              dn, n);
    if (dt == SHARC_DTYPE_F32) {
        CHECK(cpu->dequantize_sum(b->base, dt, b->base, b->seg, w, n, nseg, -1, 1.0, NULL) ==
              SHARC_OK);
        CHECK(gpu->dequantize_sum(b->dbase, dt, b->dbase, b->dseg, w, n, nseg, -1, 1.0, stream) ==
              SHARC_OK);
        get(b->out, b->dbase, n * sizeof(float));
        CHECK_MSG(count_diff(b->out, b->base, dt, n) == 0, "%s block %zu n %zu: in-place sum", name,
                  w.block, n);
    }
}

static void test_all(bufs_t *b)
{
    for (int f = SHARC_WIRE_INT8; f <= SHARC_WIRE_FP8; f++) {
        for (size_t k = 0; k < sizeof(blocks) / sizeof(blocks[0]); k++) {
            for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
                for (size_t d = 0; d < 3; d++) {
                    sharc_kern_wire_t w = {(sharc_wire_t)f, blocks[k]};

                    test_case(b, w, floats[d], lengths[l], 1 + (int)(l % MAXSEG));
                }
            }
        }
    }
    CHECK(sharc_kern_cuda_ops.quantize(b->dseg, (sharc_kern_wire_t){SHARC_WIRE_INT8, 0}, b->dsrc,
                                       SHARC_DTYPE_F32, 4, 1, stream) == SHARC_ERR_INVALID);
    CHECK(sharc_kern_cuda_ops.quantize(b->dseg, (sharc_kern_wire_t){SHARC_WIRE_INT8, 4}, b->dsrc,
                                       SHARC_DTYPE_I32, 4, 1, stream) == SHARC_ERR_UNSUPPORTED);
}

/* Median of 11 timings (ms) of quantize or dequantize of 64 M f32, and of a copy. */
static void bandwidth(void)
{
    size_t n = 64u << 20;
    sharc_kern_wire_t w = {SHARC_WIRE_INT8, 256};
    void *x, *y, *seg;
    cudaEvent_t e0, e1;

    if (cudaMalloc(&x, n * 4) != cudaSuccess || cudaMalloc(&y, n * 4) != cudaSuccess ||
        cudaMalloc(&seg, n * 2) != cudaSuccess) {
        printf("bandwidth: not enough device memory, skipped\n");
        return;
    }
    cudaMemset(x, 0x3c, n * 4);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int k = 0; k < 5; k++) {
        float t[11], tmp;

        w.format = (k >= 3) ? SHARC_WIRE_FP8 : SHARC_WIRE_INT8;
        for (int r = 0; r < 12; r++) {
            cudaEventRecord(e0, stream);
            if (k == 0) {
                cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice, stream);
            } else if (k % 2 == 1) {
                sharc_kern_cuda_ops.quantize(seg, w, x, SHARC_DTYPE_F32, n, 1, stream);
            } else {
                sharc_kern_cuda_ops.dequantize(y, SHARC_DTYPE_F32, seg, w, n, 1, stream);
            }
            cudaEventRecord(e1, stream);
            cudaEventSynchronize(e1);
            cudaEventElapsedTime(r ? &t[r - 1] : &tmp, e0, e1); /* the first is a warm-up */
        }
        for (int i = 1; i < 11; i++) {
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
                tmp = t[j], t[j] = t[j - 1], t[j - 1] = tmp;
            }
        }
        printf("%s: %.0f GB/s (bytes read + written)\n",
               k == 0 ? "copy f32" : (k % 2 ? "quantize f32" : "dequantize f32"),
               (k == 0 ? n * 8.0 : n * 5.0 + n / 64.0) / (t[5] * 1e-3) / 1e9);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(x);
    cudaFree(y);
    cudaFree(seg);
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)MAXLEN * MAXSEG * 4 + 4096;
    bufs_t b = {.src = malloc(bytes),
                .seg = malloc(bytes),
                .out = malloc(bytes),
                .ref = malloc(bytes),
                .base = malloc(bytes)};

    if (gpu_check_devices() == 0) {
        return 77;
    }
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaMalloc(&b.dsrc, bytes) == cudaSuccess);
    CHECK(cudaMalloc(&b.dseg, bytes) == cudaSuccess);
    CHECK(cudaMalloc(&b.dout, bytes) == cudaSuccess);
    CHECK(cudaMalloc(&b.dbase, bytes) == cudaSuccess);
    test_all(&b);
    printf("quantizers match the CPU: %s\n", check_failures ? "NO" : "yes");
    if (argc > 1 && strcmp(argv[1], "--bandwidth") == 0) {
        bandwidth();
    }
    cudaFree(b.dsrc);
    cudaFree(b.dseg);
    cudaFree(b.dout);
    cudaFree(b.dbase);
    cudaStreamDestroy(stream);
    free(b.src), free(b.seg), free(b.out), free(b.ref), free(b.base);
    return check_result("test_kern_quant_cuda");
}
#endif
