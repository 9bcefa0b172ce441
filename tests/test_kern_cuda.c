/*
 * test_kern_cuda.c: the CUDA cast kernels checked element by element against the CPU
 * reference on random data, for every pair of f32 / f16 / bf16, at lengths that are not
 * multiples of the block or vector size, on a non-default stream. Exits 77 (SKIP) when sharc
 * was built without CUDA or no GPU is visible.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifndef HAVE_CUDA
int main(void)
{
    printf("SKIP: sharc was built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime.h>

#include "../kernels/kernels.h"
#include "kern_ref.h"

static const sharc_dtype_t dtypes[] = {SHARC_DTYPE_F32, SHARC_DTYPE_F16, SHARC_DTYPE_BF16};

static int same_element(const void *a, const void *b, sharc_dtype_t dt, size_t i)
{
    size_t sz = sharc_dtype_size(dt);
    float fa, fb;

    if (memcmp((const char *)a + i * sz, (const char *)b + i * sz, sz) == 0) {
        return 1;
    }
    /* NaN payloads may differ between CUDA's intrinsics and the reference: NaN is enough */
    fa = dt == SHARC_DTYPE_F32   ? ((const float *)a)[i]
         : dt == SHARC_DTYPE_F16 ? sharc_kern_f16_to_f32(((const uint16_t *)a)[i])
                                 : sharc_kern_bf16_to_f32(((const uint16_t *)a)[i]);
    fb = dt == SHARC_DTYPE_F32   ? ((const float *)b)[i]
         : dt == SHARC_DTYPE_F16 ? sharc_kern_f16_to_f32(((const uint16_t *)b)[i])
                                 : sharc_kern_bf16_to_f32(((const uint16_t *)b)[i]);
    return isnan(fa) && isnan(fb);
}

int main(void)
{
    static const size_t lengths[] = {0, 1, 7, 255, 256, 257, 1000, (1u << 20) + 3};
    size_t max = (1u << 20) + 3;
    cudaStream_t stream;
    void *d_src, *d_dst, *src, *gpu, *cpu;
    float *f32;
    int ndev = 0;
    cudaError_t err = cudaGetDeviceCount(&ndev);

    if (err != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device (%s)\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return 77;
    }
    f32 = malloc(max * 4);
    src = malloc(max * 4);
    gpu = malloc(max * 4);
    cpu = malloc(max * 4);
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaMalloc(&d_src, max * 4) == cudaSuccess);
    CHECK(cudaMalloc(&d_dst, max * 4) == cudaSuccess);
    for (size_t i = 0; i < max; i++) {
        f32[i] = ref_rand_f32();
    }
    for (size_t s = 0; s < 3; s++) {
        for (size_t d = 0; d < 3; d++) {
            sharc_dtype_t st = dtypes[s], dt = dtypes[d];
            for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
                size_t n = lengths[l], bad = 0;

                /* source values in the source type, made by the CPU reference */
                CHECK(sharc_kern_cpu_ops.cast(src, st, f32, SHARC_DTYPE_F32, n, NULL) == SHARC_OK);
                CHECK(sharc_kern_cpu_ops.cast(cpu, dt, src, st, n, NULL) == SHARC_OK);
                CHECK(cudaMemcpy(d_src, src, n * sharc_dtype_size(st), cudaMemcpyHostToDevice) ==
                      cudaSuccess);
                CHECK(sharc_kern_cuda_ops.cast(d_dst, dt, d_src, st, n, stream) == SHARC_OK);
                CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
                CHECK(cudaMemcpy(gpu, d_dst, n * sharc_dtype_size(dt), cudaMemcpyDeviceToHost) ==
                      cudaSuccess);
                for (size_t i = 0; i < n; i++) {
                    bad += !same_element(gpu, cpu, dt, i);
                }
                CHECK_MSG(bad == 0, "%s -> %s, %zu elements: %zu differ from the CPU",
                          sharc_dtype_name(st), sharc_dtype_name(dt), n, bad);
            }
        }
    }
    CHECK(sharc_kern_cuda_ops.cast(d_dst, SHARC_DTYPE_I32, d_src, SHARC_DTYPE_F32, 1, stream) ==
          SHARC_ERR_UNSUPPORTED);
    cudaFree(d_src);
    cudaFree(d_dst);
    cudaStreamDestroy(stream);
    free(f32);
    free(src);
    free(gpu);
    free(cpu);
    return check_result("test_kern_cuda");
}
#endif
