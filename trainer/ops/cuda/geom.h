/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/geom.h: the launch geometry of sharc-llama's CUDA kernels (ops_cuda*.cu) as
 * plain C, so the host compiler and tests/trainer/test_cuda_geom.c check it without a GPU:
 * how many blocks cover a range, how rows map to warps, how a column sum is split into row
 * chunks, how attention tiles cover a causal square. No CUDA types here.
 */
#ifndef SHARC_LLAMA_CUDA_GEOM_H
#define SHARC_LLAMA_CUDA_GEOM_H

#include <stddef.h>

/* the kernels compute some of it on the device too */
#ifdef __CUDACC__
#define LLAMA_GEOM_FN static inline __host__ __device__
#else
#define LLAMA_GEOM_FN static inline
#endif

/* Threads of the element-wise and row kernels; a multiple of the 32-thread warp. */
#define LLAMA_GEOM_THREADS 256
/*
 * Blocks an element-wise grid-stride loop starts at most (a few waves of a large GPU), the
 * blocks a column sum aims for, and the partial sums a sum of squares leaves at most (one per
 * block). The host emulation of CUDA (tests/trainer/cuda_emu.h) sets smaller ones: the kernels
 * loop over what their grid does not cover, and an emulated thread is costly.
 */
#ifndef LLAMA_GEOM_MAX_BLOCKS
#define LLAMA_GEOM_MAX_BLOCKS 4096
#endif
#ifndef LLAMA_GEOM_COLSUM_BLOCKS
#define LLAMA_GEOM_COLSUM_BLOCKS 512
#endif
#ifndef LLAMA_GEOM_MAX_PARTIALS
#define LLAMA_GEOM_MAX_PARTIALS 1024
#endif
/* Row chunks a column sum splits into at most (the partial sums' scratch is chunks x C). */
#define LLAMA_GEOM_MAX_CHUNKS 64

/** Blocks of @p threads for @p n items, one item per thread: ceil(n / threads), at least 1
 *  (a launch needs one), at most @p max_blocks (the kernels loop over the rest). */
LLAMA_GEOM_FN unsigned llama_geom_blocks(size_t n, unsigned threads, unsigned max_blocks)
{
    size_t b = (n + threads - 1) / threads;

    return b == 0 ? 1u : (b > max_blocks ? max_blocks : (unsigned)b);
}

/** Blocks for @p rows rows, one warp per row, @p threads per block. */
LLAMA_GEOM_FN unsigned llama_geom_row_blocks(size_t rows, unsigned threads)
{
    return llama_geom_blocks(rows, threads / 32, 0xffffffffu);
}

/**
 * A sum down the columns of an (N, C) matrix (the weight gradient of RMSNorm): a grid of
 * col_blocks x chunks blocks, thread c of column block x summing column x * threads + c over
 * rows [y * rows_per_chunk, min(N, (y + 1) * rows_per_chunk)) of chunk y into a partial; the
 * chunks' partials are then added in order. Enough blocks to fill a GPU (target_blocks),
 * no more chunks than LLAMA_GEOM_MAX_CHUNKS, and no chunk without rows.
 */
typedef struct {
    unsigned col_blocks, chunks;
    int rows_per_chunk;
} llama_geom_colsum_t;

LLAMA_GEOM_FN llama_geom_colsum_t llama_geom_colsum(int N, int C, unsigned threads,
                                                    unsigned target_blocks)
{
    llama_geom_colsum_t g;
    unsigned want;

    g.col_blocks = llama_geom_blocks((size_t)(C > 0 ? C : 1), threads, 0xffffffffu);
    want = (target_blocks + g.col_blocks - 1) / g.col_blocks;
    want = want < 1 ? 1 : (want > LLAMA_GEOM_MAX_CHUNKS ? LLAMA_GEOM_MAX_CHUNKS : want);
    if (N < 1) {
        N = 1;
    }
    want = want > (unsigned)N ? (unsigned)N : want;
    g.rows_per_chunk = (N + (int)want - 1) / (int)want;
    /* rounding up may leave the last chunks empty: drop them */
    g.chunks = (unsigned)((N + g.rows_per_chunk - 1) / g.rows_per_chunk);
    return g;
}

/**
 * Tiles of the memory-efficient attention (flash.cu): query tiles of @p bq rows and
 * key tiles of @p bk columns over a causal T x T square. Query tile i needs the key tiles
 * 0 .. llama_geom_causal_tiles(i, ...) - 1: those with a column at or before its last row.
 */
LLAMA_GEOM_FN int llama_geom_tiles(int T, int tile)
{
    return (T + tile - 1) / tile;
}

LLAMA_GEOM_FN int llama_geom_causal_tiles(int qtile, int bq, int bk, int T)
{
    int last_row = (qtile + 1) * bq - 1;

    last_row = last_row >= T ? T - 1 : last_row;
    return last_row / bk + 1;
}

#endif
