/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cuda_geom: the launch geometry of sharc-llama's CUDA kernels (trainer/ops/cuda/geom.h),
 * on the host, so it holds before a GPU ever runs them: every item, row, column and causal
 * tile is covered exactly once, grids stay within CUDA's limits, the column sums' scratch
 * stays within its bound. Runs everywhere (no GPU needed).
 */
#include "ops/cuda/geom.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

static void check_blocks(void)
{
    const size_t ns[] = {0, 1, 31, 255, 256, 257, 65536, 1000003, (size_t)1 << 33};

    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        unsigned b = llama_geom_blocks(ns[i], LLAMA_GEOM_THREADS, LLAMA_GEOM_MAX_BLOCKS);
        CHECK_MSG(b >= 1 && b <= LLAMA_GEOM_MAX_BLOCKS, "n %zu: %u blocks", ns[i], b);
        /* one item per thread when it fits, else the grid-stride loop takes the rest */
        if (ns[i] <= (size_t)LLAMA_GEOM_THREADS * LLAMA_GEOM_MAX_BLOCKS && ns[i] > 0) {
            CHECK_MSG((size_t)b * LLAMA_GEOM_THREADS >= ns[i] &&
                          (size_t)(b - 1) * LLAMA_GEOM_THREADS < ns[i],
                      "n %zu: %u blocks of %d", ns[i], b, LLAMA_GEOM_THREADS);
        }
    }
    /* a warp per row: 8 rows per 256-thread block */
    CHECK(llama_geom_row_blocks(1, 256) == 1);
    CHECK(llama_geom_row_blocks(8, 256) == 1);
    CHECK(llama_geom_row_blocks(9, 256) == 2);
    CHECK(llama_geom_row_blocks(8192, 256) == 1024);
    /* attention softmax rows (B*H*T of the 1b config at T = 2048, B = 8) fit a 1-D grid */
    CHECK((size_t)llama_geom_row_blocks((size_t)8 * 32 * 2048, 256) * 8 >= (size_t)8 * 32 * 2048);
}

/* every (row, column) of the matrix summed by exactly one thread of one chunk */
static void check_colsum(int N, int C)
{
    llama_geom_colsum_t g = llama_geom_colsum(N, C, LLAMA_GEOM_THREADS, 512);
    int *seen = calloc((size_t)N, sizeof(int));

    CHECK_MSG(g.chunks >= 1 && g.chunks <= LLAMA_GEOM_MAX_CHUNKS && g.chunks <= 65535 &&
                  g.rows_per_chunk >= 1,
              "N %d C %d: %u chunks of %d rows", N, C, g.chunks, g.rows_per_chunk);
    CHECK_MSG((size_t)g.col_blocks * LLAMA_GEOM_THREADS >= (size_t)C &&
                  (size_t)(g.col_blocks - 1) * LLAMA_GEOM_THREADS < (size_t)C,
              "C %d: %u column blocks", C, g.col_blocks);
    for (unsigned y = 0; y < g.chunks; y++) {
        int lo = (int)y * g.rows_per_chunk, hi = lo + g.rows_per_chunk;
        hi = hi < N ? hi : N;
        CHECK_MSG(lo < hi, "N %d: chunk %u of %u is empty", N, y, g.chunks);
        for (int n = lo; n < hi; n++) {
            seen[n]++;
        }
    }
    for (int n = 0; n < N; n++) {
        CHECK_MSG(seen[n] == 1, "N %d C %d: row %d summed %d times", N, C, n, seen[n]);
    }
    free(seen);
}

/* the causal tiles of each query tile: every (i, j <= i) in one of them, none wholly above */
static void check_causal(int T, int bq, int bk)
{
    int nq = llama_geom_tiles(T, bq);

    for (int qt = 0; qt < nq; qt++) {
        int nk = llama_geom_causal_tiles(qt, bq, bk, T);
        int last = (qt + 1) * bq - 1 < T - 1 ? (qt + 1) * bq - 1 : T - 1;
        CHECK_MSG(nk >= 1 && nk <= llama_geom_tiles(T, bk), "T %d: query tile %d, %d key tiles", T,
                  qt, nk);
        /* the last key tile needed holds column `last`, and it starts at or before `last` */
        CHECK_MSG((nk - 1) * bk <= last && nk * bk > last, "T %d tiles %dx%d: query tile %d", T, bq,
                  bk, qt);
    }
}

int main(void)
{
    check_blocks();
    for (int N = 1; N <= 300; N += 7) {
        check_colsum(N, 1 + N % 97);
    }
    check_colsum(8192, 2048);
    check_colsum(16384, 768);
    check_colsum(3, 100000);
    for (int T = 1; T <= 200; T += 13) {
        check_causal(T, 64, 64);
        check_causal(T, 64, 32);
        check_causal(T, 16, 64);
    }
    printf("test_cuda_geom: %s\n", check_failures ? "FAILED" : "ok");
    return check_result("test_cuda_geom");
}
