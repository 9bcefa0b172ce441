/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/pack.cu: many tensors into one bucket and back (FSDP's copy-in and copy-out) in one
 * launch per SHARC_KERN_MAX_PIECES tensors: block row y of the grid takes piece y, its
 * blocks stride over the piece's elements, four at a time where both sides are aligned.
 * Converts between f32, f16 and bf16 as cast.cu does; equal types of any dtype are copied.
 */
#include "config.h"

#include <stdint.h>

#include "elem.cuh"

extern "C" {
#include "cuda.h"
}

using namespace sharc_cuda;

namespace
{

/* The pieces of one launch, passed by value (a kernel parameter, so nothing to copy first). */
struct pieces_t {
    void *ptr[SHARC_KERN_MAX_PIECES];
    size_t offset[SHARC_KERN_MAX_PIECES], count[SHARC_KERN_MAX_PIECES];
    bool vec[SHARC_KERN_MAX_PIECES];
};

/* to_bucket: piece -> bucket (pack), else bucket -> piece (unpack). B bucket, P piece type. */
template <typename B, typename P>
__global__ void sharc_pack_kernel(B *bucket, pieces_t pc, bool to_bucket)
{
    int p = blockIdx.y;
    size_t n = pc.count[p], stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x, head = pc.vec[p] ? n / 4 * 4 : 0;
    B *b = bucket + pc.offset[p];
    P *t = static_cast<P *>(pc.ptr[p]);

    for (size_t i4 = tid; i4 < head / 4; i4 += stride) {
        float v[4];
        if (to_bucket) {
            load4(t, i4, v);
            store4(b, i4, v);
        } else {
            load4(b, i4, v);
            store4(t, i4, v);
        }
    }
    for (size_t i = head + tid; i < n; i += stride) {
        if (to_bucket) {
            store(b, i, load(t, i));
        } else {
            store(t, i, load(b, i));
        }
    }
}

/* Equal types: copied as unsigned words of the element's size. */
template <typename W> __global__ void sharc_pack_copy_kernel(W *bucket, pieces_t pc, bool to_bucket)
{
    int p = blockIdx.y;
    size_t n = pc.count[p], stride = (size_t)gridDim.x * blockDim.x;
    W *b = bucket + pc.offset[p], *t = static_cast<W *>(pc.ptr[p]);

    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (to_bucket) {
            b[i] = t[i];
        } else {
            t[i] = b[i];
        }
    }
}

template <typename B, typename P>
cudaError_t launch(void *bucket, const pieces_t &pc, int n, size_t max_count, bool to_bucket,
                   cudaStream_t s)
{
    /* blocks per piece: enough for the largest, with the whole grid bounded */
    unsigned per = blocks_for(max_count / 4 + 1), cap = (unsigned)(65536 / n);
    dim3 grid(per < cap ? per : (cap ? cap : 1), (unsigned)n);

    sharc_pack_kernel<B, P><<<grid, kThreads, 0, s>>>(static_cast<B *>(bucket), pc, to_bucket);
    return cudaGetLastError();
}

template <typename W>
cudaError_t launch_copy(void *bucket, const pieces_t &pc, int n, size_t max_count, bool to_bucket,
                        cudaStream_t s)
{
    unsigned per = blocks_for(max_count), cap = (unsigned)(65536 / n);
    dim3 grid(per < cap ? per : (cap ? cap : 1), (unsigned)n);

    sharc_pack_copy_kernel<W><<<grid, kThreads, 0, s>>>(static_cast<W *>(bucket), pc, to_bucket);
    return cudaGetLastError();
}

template <typename B>
cudaError_t launch_from(void *bucket, sharc_dtype_t pdt, const pieces_t &pc, int n, size_t max,
                        bool to_bucket, cudaStream_t s)
{
    switch (pdt) {
    case SHARC_DTYPE_F32: return launch<B, float>(bucket, pc, n, max, to_bucket, s);
    case SHARC_DTYPE_F16: return launch<B, __half>(bucket, pc, n, max, to_bucket, s);
    default: return launch<B, __nv_bfloat16>(bucket, pc, n, max, to_bucket, s);
    }
}

/* One launch for up to SHARC_KERN_MAX_PIECES pieces. */
static cudaError_t sharc_pack_batch(void *bucket, sharc_dtype_t bdt,
                                    const sharc_kern_piece_t *pieces, int n, sharc_dtype_t pdt,
                                    bool to_bucket, cudaStream_t s)
{
    size_t esize = sharc_dtype_size(bdt), max = 0;
    pieces_t pc;

    for (int i = 0; i < n; i++) {
        pc.ptr[i] = pieces[i].ptr;
        pc.offset[i] = pieces[i].offset;
        pc.count[i] = pieces[i].count;
        pc.vec[i] = aligned4(pieces[i].ptr, sharc_dtype_size(pdt),
                             static_cast<char *>(bucket) + pieces[i].offset * esize, esize);
        max = pieces[i].count > max ? pieces[i].count : max;
    }
    if (bdt == pdt) {
        switch (esize) {
        case 1: return launch_copy<uint8_t>(bucket, pc, n, max, to_bucket, s);
        case 2: return launch_copy<uint16_t>(bucket, pc, n, max, to_bucket, s);
        case 4: return launch_copy<uint32_t>(bucket, pc, n, max, to_bucket, s);
        default: return launch_copy<uint64_t>(bucket, pc, n, max, to_bucket, s);
        }
    }
    switch (bdt) {
    case SHARC_DTYPE_F32: return launch_from<float>(bucket, pdt, pc, n, max, to_bucket, s);
    case SHARC_DTYPE_F16: return launch_from<__half>(bucket, pdt, pc, n, max, to_bucket, s);
    default: return launch_from<__nv_bfloat16>(bucket, pdt, pc, n, max, to_bucket, s);
    }
}

sharc_status_t sharc_pack_all(void *bucket, sharc_dtype_t bdt, const sharc_kern_piece_t *pieces,
                              int n, sharc_dtype_t pdt, bool to_bucket, void *stream)
{
    if (n < 0) {
        return SHARC_ERR_INVALID;
    }
    if (bdt != pdt && (!is_float16ish(bdt) || !is_float16ish(pdt))) {
        return SHARC_ERR_UNSUPPORTED;
    }
    if (sharc_dtype_size(bdt) == 0) {
        return SHARC_ERR_UNSUPPORTED;
    }
    for (int i = 0; i < n; i += SHARC_KERN_MAX_PIECES) {
        int m = (n - i < SHARC_KERN_MAX_PIECES) ? n - i : SHARC_KERN_MAX_PIECES;
        sharc_status_t status = check(sharc_pack_batch(bucket, bdt, pieces + i, m, pdt, to_bucket,
                                                       static_cast<cudaStream_t>(stream)),
                                      to_bucket ? "pack" : "unpack");

        if (status != SHARC_OK) {
            return status;
        }
    }
    return SHARC_OK;
}

} // namespace

sharc_status_t sharc_kern_cuda_pack(void *bucket, sharc_dtype_t bucket_dtype,
                                    const sharc_kern_piece_t *pieces, int n,
                                    sharc_dtype_t piece_dtype, void *stream)
{
    return sharc_pack_all(bucket, bucket_dtype, pieces, n, piece_dtype, true, stream);
}

sharc_status_t sharc_kern_cuda_unpack(const void *bucket, sharc_dtype_t bucket_dtype,
                                      const sharc_kern_piece_t *pieces, int n,
                                      sharc_dtype_t piece_dtype, void *stream)
{
    return sharc_pack_all(const_cast<void *>(bucket), bucket_dtype, pieces, n, piece_dtype, false,
                          stream);
}
