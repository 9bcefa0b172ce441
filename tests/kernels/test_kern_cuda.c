/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kern_cuda.c: every CUDA kernel checked element by element against the CPU kernels on
 * random data, at lengths that are not multiples of the block or vector size, on a
 * non-default stream: casts between f32 / f16 / bf16, reductions (every dtype and op, the
 * output apart from and equal to an input), scaling, packing many tensors into a bucket
 * and back (unaligned offsets, more tensors than one launch takes), AdamW bit for bit and
 * the sum of squares (another order of summation: within f64 rounding). Then each kernel's
 * bandwidth against a device-to-device copy in the same run (printed, not asserted: speed
 * is for benchmarks). Exits 77 (SKIP) when sharc was built without CUDA or no GPU is visible.
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
#include "../kern_ref.h"

static const sharc_dtype_t floats[] = {SHARC_DTYPE_F32, SHARC_DTYPE_F16, SHARC_DTYPE_BF16};
static const size_t lengths[] = {0, 1, 3, 7, 255, 256, 257, 1000, 4099, (1u << 20) + 3};
#define MAXLEN           ((1u << 20) + 3)

static cudaStream_t stream;

static float to_f32(const void *p, sharc_dtype_t dt, size_t i)
{
    switch (dt) {
    case SHARC_DTYPE_F16: return sharc_kern_f16_to_f32(((const uint16_t *)p)[i]);
    case SHARC_DTYPE_BF16: return sharc_kern_bf16_to_f32(((const uint16_t *)p)[i]);
    case SHARC_DTYPE_F64: return (float)((const double *)p)[i];
    default: return ((const float *)p)[i];
    }
}

/* Equal bits, or both NaN (CUDA's NaN payloads may differ from the CPU's). */
static int same_element(const void *a, const void *b, sharc_dtype_t dt, size_t i)
{
    size_t sz = sharc_dtype_size(dt);
    int is_float = dt == SHARC_DTYPE_F32 || dt == SHARC_DTYPE_F64 || dt == SHARC_DTYPE_F16 ||
                   dt == SHARC_DTYPE_BF16;

    if (memcmp((const char *)a + i * sz, (const char *)b + i * sz, sz) == 0) {
        return 1;
    }
    return is_float && isnan(to_f32(a, dt, i)) && isnan(to_f32(b, dt, i));
}

static size_t count_diff(const void *a, const void *b, sharc_dtype_t dt, size_t n)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; i++) {
        bad += !same_element(a, b, dt, i);
    }
    return bad;
}

/* Random values: floats from the reference's generator (NaN, infinities and subnormals
 * among them for the 16-bit types, whose every bit pattern is drawn), integers from bits. */
static void fill(void *p, sharc_dtype_t dt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case SHARC_DTYPE_F32: ((float *)p)[i] = ref_rand_f32(); break;
        case SHARC_DTYPE_F64: ((double *)p)[i] = (double)ref_rand_f32() * 1.25; break;
        case SHARC_DTYPE_F16:
        case SHARC_DTYPE_BF16: ((uint16_t *)p)[i] = (uint16_t)ref_rand32(); break;
        case SHARC_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)ref_rand32(); break;
        case SHARC_DTYPE_I64:
            ((int64_t *)p)[i] = (int64_t)(((uint64_t)ref_rand32() << 32) | ref_rand32());
            break;
        default: ((uint8_t *)p)[i] = (uint8_t)ref_rand32(); break;
        }
    }
}

/* On the test's stream, and finished before the next kernel: a cudaMemcpy from pageable
 * memory returns once the data is staged, and the stream (non-blocking) would not wait for
 * the rest of its copy on the legacy stream. */
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

static void test_cast(char *a, char *b, char *out, void *da, void *db)
{
    for (size_t s = 0; s < 3; s++) {
        for (size_t d = 0; d < 3; d++) {
            sharc_dtype_t st = floats[s], dt = floats[d];

            for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
                size_t n = lengths[l];

                fill(a, st, n);
                CHECK(sharc_kern_cpu_ops.cast(b, dt, a, st, n, NULL) == SHARC_OK);
                put(da, a, n * sharc_dtype_size(st));
                CHECK(sharc_kern_cuda_ops.cast(db, dt, da, st, n, stream) == SHARC_OK);
                get(out, db, n * sharc_dtype_size(dt));
                CHECK_MSG(count_diff(out, b, dt, n) == 0, "cast %s -> %s, %zu elements",
                          sharc_dtype_name(st), sharc_dtype_name(dt), n);
            }
        }
    }
    /* misaligned by one element: the scalar path */
    fill(a, SHARC_DTYPE_F32, 1001);
    CHECK(sharc_kern_cpu_ops.cast(b, SHARC_DTYPE_BF16, a + 4, SHARC_DTYPE_F32, 1000, NULL) ==
          SHARC_OK);
    put(da, a, 1001 * 4);
    CHECK(sharc_kern_cuda_ops.cast((char *)db + 2, SHARC_DTYPE_BF16, (char *)da + 4,
                                   SHARC_DTYPE_F32, 1000, stream) == SHARC_OK);
    get(out, (char *)db + 2, 2000);
    CHECK(count_diff(out, b, SHARC_DTYPE_BF16, 1000) == 0);
    CHECK(sharc_kern_cuda_ops.cast(db, SHARC_DTYPE_I32, da, SHARC_DTYPE_F32, 1, stream) ==
          SHARC_ERR_UNSUPPORTED);
}

static void test_reduce(char *a, char *b, char *out, char *ref, void *da, void *db, void *dc)
{
    for (int dt = 0; dt < SHARC_DTYPE_LAST; dt++) {
        size_t sz = sharc_dtype_size((sharc_dtype_t)dt);

        for (int op = 0; op < SHARC_OP_LAST; op++) {
            if (!sharc_kern_op_valid((sharc_dtype_t)dt, (sharc_op_t)op)) {
                CHECK(sharc_kern_cuda_ops.reduce(dc, da, db, 1, (sharc_dtype_t)dt, (sharc_op_t)op,
                                                 stream) == SHARC_ERR_INVALID);
                continue;
            }
            for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
                size_t n = lengths[l];

                fill(a, (sharc_dtype_t)dt, n);
                fill(b, (sharc_dtype_t)dt, n);
                CHECK(sharc_kern_cpu_ops.reduce(ref, a, b, n, (sharc_dtype_t)dt, (sharc_op_t)op,
                                                NULL) == SHARC_OK);
                put(da, a, n * sz);
                put(db, b, n * sz);
                /* apart from both inputs, then in place on the first */
                CHECK(sharc_kern_cuda_ops.reduce(dc, da, db, n, (sharc_dtype_t)dt, (sharc_op_t)op,
                                                 stream) == SHARC_OK);
                get(out, dc, n * sz);
                CHECK_MSG(count_diff(out, ref, (sharc_dtype_t)dt, n) == 0, "reduce %s %s, %zu",
                          sharc_dtype_name(dt), sharc_op_name(op), n);
                CHECK(sharc_kern_cuda_ops.reduce(da, da, db, n, (sharc_dtype_t)dt, (sharc_op_t)op,
                                                 stream) == SHARC_OK);
                get(out, da, n * sz);
                CHECK_MSG(count_diff(out, ref, (sharc_dtype_t)dt, n) == 0,
                          "reduce in place %s %s, %zu", sharc_dtype_name(dt), sharc_op_name(op), n);
            }
        }
    }
    for (size_t f = 0; f < 4; f++) {
        sharc_dtype_t dt = f < 3 ? floats[f] : SHARC_DTYPE_F64;
        size_t n = 4099, sz = sharc_dtype_size(dt);

        fill(a, dt, n);
        put(da, a, n * sz);
        CHECK(sharc_kern_cpu_ops.scale(a, n, dt, 1.0 / 3, NULL) == SHARC_OK);
        CHECK(sharc_kern_cuda_ops.scale(da, n, dt, 1.0 / 3, stream) == SHARC_OK);
        get(out, da, n * sz);
        CHECK_MSG(count_diff(out, a, dt, n) == 0, "scale %s", sharc_dtype_name(dt));
    }
    CHECK(sharc_kern_cuda_ops.scale(da, 1, SHARC_DTYPE_I32, 2.0, stream) == SHARC_ERR_INVALID);
}

/*
 * @p n pieces of odd lengths at unaligned bucket offsets, packed from piece_dtype into a
 * bucket of bucket_dtype and unpacked back, against the CPU kernels.
 */
static void test_pack_case(sharc_dtype_t bdt, sharc_dtype_t pdt, int n, char *host, char *ref,
                           char *out, char *dbucket, char *dpieces)
{
    sharc_kern_piece_t *hp = calloc((size_t)n, sizeof(*hp)), *dp = calloc((size_t)n, sizeof(*dp));
    size_t bsz = sharc_dtype_size(bdt), psz = sharc_dtype_size(pdt), off = 0, poff = 0;

    for (int i = 0; i < n; i++) {
        size_t count = (size_t)(ref_rand32() % 3000) + (i % 7 == 0 ? 70000 : 1);

        off += ref_rand32() % 5; /* gaps, so offsets are not aligned */
        hp[i] = (sharc_kern_piece_t){host + poff * psz, off, count};
        dp[i] = (sharc_kern_piece_t){dpieces + poff * psz, off, count};
        off += count;
        poff += count;
    }
    fill(host, pdt, poff);
    memset(ref, 0, off * bsz);
    CHECK(sharc_kern_cpu_ops.pack(ref, bdt, hp, n, pdt, NULL) == SHARC_OK);
    put(dpieces, host, poff * psz);
    CHECK(cudaMemset(dbucket, 0, off * bsz) == cudaSuccess);
    CHECK(sharc_kern_cuda_ops.pack(dbucket, bdt, dp, n, pdt, stream) == SHARC_OK);
    get(out, dbucket, off * bsz);
    CHECK_MSG(count_diff(out, ref, bdt, off) == 0, "pack %d pieces %s -> %s", n,
              sharc_dtype_name(pdt), sharc_dtype_name(bdt));
    /* and back out: each piece gets the bucket's values, cast to the piece type */
    CHECK(cudaMemset(dpieces, 0, poff * psz) == cudaSuccess);
    CHECK(sharc_kern_cuda_ops.unpack(dbucket, bdt, dp, n, pdt, stream) == SHARC_OK);
    CHECK(sharc_kern_cpu_ops.unpack(ref, bdt, hp, n, pdt, NULL) == SHARC_OK);
    get(out, dpieces, poff * psz);
    CHECK_MSG(count_diff(out, host, pdt, poff) == 0, "unpack %d pieces %s -> %s", n,
              sharc_dtype_name(bdt), sharc_dtype_name(pdt));
    free(hp);
    free(dp);
}

static void test_pack(char *host, char *ref, char *out, char *dbucket, char *dpieces)
{
    static const int counts[] = {0, 1, 5, 64, 70};

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        test_pack_case(SHARC_DTYPE_BF16, SHARC_DTYPE_F32, counts[c], host, ref, out, dbucket,
                       dpieces);
        test_pack_case(SHARC_DTYPE_F32, SHARC_DTYPE_BF16, counts[c], host, ref, out, dbucket,
                       dpieces);
        test_pack_case(SHARC_DTYPE_F32, SHARC_DTYPE_F32, counts[c], host, ref, out, dbucket,
                       dpieces);
        test_pack_case(SHARC_DTYPE_I32, SHARC_DTYPE_I32, counts[c], host, ref, out, dbucket,
                       dpieces);
        test_pack_case(SHARC_DTYPE_F16, SHARC_DTYPE_F32, counts[c], host, ref, out, dbucket,
                       dpieces);
    }
    CHECK(sharc_kern_cuda_ops.pack(dbucket, SHARC_DTYPE_I32, NULL, 0, SHARC_DTYPE_F32, stream) ==
          SHARC_ERR_UNSUPPORTED);
    CHECK(sharc_kern_cuda_ops.pack(dbucket, SHARC_DTYPE_F32, NULL, -1, SHARC_DTYPE_F32, stream) ==
          SHARC_ERR_INVALID);
}

/* Median of @p reps timings (ms) of @p fn on the stream, after a warm-up. */
typedef void (*bench_fn_t)(void *arg);

static float bench(bench_fn_t fn, void *arg)
{
    cudaEvent_t e0, e1;
    float t[11];

    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    fn(arg);
    for (int r = 0; r < 11; r++) {
        cudaEventRecord(e0, stream);
        fn(arg);
        cudaEventRecord(e1, stream);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&t[r], e0, e1);
    }
    for (int i = 1; i < 11; i++) { /* insertion sort, then the middle */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            float x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return t[5];
}

typedef struct {
    void *a, *b;
    size_t n; /* f32 elements */
    sharc_kern_piece_t pieces[SHARC_KERN_MAX_PIECES];
} bench_arg_t;

static void b_copy(void *p)
{
    bench_arg_t *a = p;
    cudaMemcpyAsync(a->b, a->a, a->n * 4, cudaMemcpyDeviceToDevice, stream);
}
static void b_cast(void *p)
{
    bench_arg_t *a = p;
    sharc_kern_cuda_ops.cast(a->b, SHARC_DTYPE_BF16, a->a, SHARC_DTYPE_F32, a->n, stream);
}
static void b_cast_up(void *p)
{
    bench_arg_t *a = p;
    sharc_kern_cuda_ops.cast(a->a, SHARC_DTYPE_F32, a->b, SHARC_DTYPE_BF16, a->n, stream);
}
static void b_pack(void *p)
{
    bench_arg_t *a = p;
    sharc_kern_cuda_ops.pack(a->b, SHARC_DTYPE_BF16, a->pieces, SHARC_KERN_MAX_PIECES,
                             SHARC_DTYPE_F32, stream);
}
static void b_unpack(void *p)
{
    bench_arg_t *a = p;
    sharc_kern_cuda_ops.unpack(a->b, SHARC_DTYPE_BF16, a->pieces, SHARC_KERN_MAX_PIECES,
                               SHARC_DTYPE_F32, stream);
}
static void b_reduce(void *p)
{
    bench_arg_t *a = p;
    sharc_kern_cuda_ops.reduce(a->a, a->a, a->b, a->n / 2, SHARC_DTYPE_F32, SHARC_OP_SUM, stream);
}

/* AdamW on the device against the host's, bit for bit (both round each operation as the
 * scalar formula; no fused multiply-add), and the sum of squares within f64 rounding. */
static void test_adamw(void)
{
    const size_t n = 300001;
    sharc_kern_adamw_t a = {.beta1 = 0.9f,
                            .beta2 = 0.95f,
                            .eps = 1e-8f,
                            .keep = 0.9999f,
                            .step_size = 1e-3f / 0.271f,
                            .bc2_sqrt = sqrtf(0.143f),
                            .clip = 0.61f};
    float *h = malloc(n * 4 * sizeof(float)), *back = malloc(n * 3 * sizeof(float)), *d;
    double *dsum, hs = 0, ds = 0;
    size_t bad = 0;

    for (size_t i = 0; i < 4 * n; i++) {
        h[i] = (float)(ref_rand32() % 20001) / 1e4f - (i >= 3 * n ? 0.0f : 1.0f);
    }
    for (size_t i = 0; i < n; i++) { /* v (the fourth array) >= 0 */
        h[3 * n + i] = fabsf(h[3 * n + i]) * 1e-3f;
    }
    CHECK(cudaMalloc((void **)&d, n * 4 * sizeof(float)) == cudaSuccess);
    CHECK(cudaMalloc((void **)&dsum, (1 + SHARC_KERN_SUMSQ_SCRATCH) * sizeof(double)) ==
          cudaSuccess);
    cudaMemcpy(d, h, n * 4 * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dsum, 0, sizeof(double));
    CHECK(sharc_kern_cuda_ops.adamw(&a, d, d + n, d + 2 * n, d + 3 * n, n, stream) == SHARC_OK);
    CHECK(sharc_kern_cuda_ops.sumsq(dsum, d + n, n, stream) == SHARC_OK);
    cudaStreamSynchronize(stream);
    sharc_kern_cpu_ops.adamw(&a, h, h + n, h + 2 * n, h + 3 * n, n, NULL);
    sharc_kern_cpu_ops.sumsq(&hs, h + n, n, NULL);
    cudaMemcpy(back, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(back + n, d + 2 * n, n * 2 * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(&ds, dsum, sizeof(double), cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; i++) {
        bad += back[i] != h[i] || back[n + i] != h[2 * n + i] || back[2 * n + i] != h[3 * n + i];
    }
    CHECK_MSG(bad == 0, "adamw: %zu of %zu elements differ from the host's", bad, n);
    CHECK_MSG(fabs(ds - hs) <= 1e-12 * hs, "sumsq: device %.17g, host %.17g", ds, hs);
    cudaFree(d);
    cudaFree(dsum);
    free(h);
    free(back);
}

static void b_adamw(void *p)
{
    bench_arg_t *a = p;
    sharc_kern_adamw_t h = {.beta1 = 0.9f,
                            .beta2 = 0.95f,
                            .eps = 1e-8f,
                            .keep = 1,
                            .step_size = 1e-3f,
                            .bc2_sqrt = 1,
                            .clip = 1};
    size_t q = a->n / 4;
    float *x = a->a;

    sharc_kern_cuda_ops.adamw(&h, x, x + q, x + 2 * q, x + 3 * q, q, stream);
}

/* Bandwidth (bytes read + written per second) of each kernel against a copy of the same run. */
static void bandwidth(void)
{
    bench_arg_t arg = {.n = 64u << 20}; /* 256 MiB of f32 */
    size_t per = arg.n / SHARC_KERN_MAX_PIECES;
    float copy, cast, up, pack, unpack, red;

    if (cudaMalloc(&arg.a, arg.n * 4) != cudaSuccess ||
        cudaMalloc(&arg.b, arg.n * 4) != cudaSuccess) {
        printf("bandwidth: not enough device memory, skipped\n");
        return;
    }
    cudaMemset(arg.a, 0x3c, arg.n * 4);
    cudaMemset(arg.b, 0x3c, arg.n * 4);
    for (int i = 0; i < SHARC_KERN_MAX_PIECES; i++) {
        arg.pieces[i] = (sharc_kern_piece_t){(char *)arg.a + (size_t)i * per * 4, i * per, per};
    }
    copy = bench(b_copy, &arg);
    cast = bench(b_cast, &arg);
    up = bench(b_cast_up, &arg);
    pack = bench(b_pack, &arg);
    unpack = bench(b_unpack, &arg);
    red = bench(b_reduce, &arg);
    float adamw = bench(b_adamw, &arg);
#define GBS(_bytes, _ms) ((double)(_bytes) / ((_ms)*1e-3) / 1e9)
    {
        double c = GBS(arg.n * 8.0, copy);
        printf("bandwidth (256 MiB f32, median of 11, GB/s read+written): copy %.0f\n", c);
        printf("  cast f32->bf16 %.0f (%.0f%% of copy), bf16->f32 %.0f (%.0f%%)\n",
               GBS(arg.n * 6.0, cast), 100 * GBS(arg.n * 6.0, cast) / c, GBS(arg.n * 6.0, up),
               100 * GBS(arg.n * 6.0, up) / c);
        printf("  pack 64 tensors f32->bf16 %.0f (%.0f%%), unpack bf16->f32 %.0f (%.0f%%)\n",
               GBS(arg.n * 6.0, pack), 100 * GBS(arg.n * 6.0, pack) / c, GBS(arg.n * 6.0, unpack),
               100 * GBS(arg.n * 6.0, unpack) / c);
        printf("  reduce f32 sum %.0f (%.0f%%)\n", GBS(arg.n / 2 * 12.0, red),
               100 * GBS(arg.n / 2 * 12.0, red) / c);
        printf("  adamw %.0f (%.0f%%; 28 bytes an element)\n", GBS(arg.n / 4 * 28.0, adamw),
               100 * GBS(arg.n / 4 * 28.0, adamw) / c);
    }
#undef GBS
    cudaFree(arg.a);
    cudaFree(arg.b);
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)(MAXLEN + 300000) * 8;
    char *a = malloc(bytes), *b = malloc(bytes), *out = malloc(bytes), *ref = malloc(bytes);
    void *da, *db, *dc;
    int ndev = 0; /* cudaGetDeviceCount leaves it alone on failure */
    cudaError_t err = cudaGetDeviceCount(&ndev);

    if (err != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device (%s)\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return 77;
    }
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaMalloc(&da, bytes) == cudaSuccess);
    CHECK(cudaMalloc(&db, bytes) == cudaSuccess);
    CHECK(cudaMalloc(&dc, bytes) == cudaSuccess);
    test_cast(a, b, out, da, db);
    test_reduce(a, b, out, ref, da, db, dc);
    test_pack(a, ref, out, db, dc);
    test_adamw();
    printf("kernels match the CPU: %s\n", check_failures ? "NO" : "yes");
    if (argc > 1 && strcmp(argv[1], "--bandwidth") == 0) {
        bandwidth();
    }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaStreamDestroy(stream);
    free(a);
    free(b);
    free(out);
    free(ref);
    return check_result("test_kern_cuda");
}
#endif
