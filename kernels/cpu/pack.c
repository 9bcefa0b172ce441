/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu/pack.c: many tensors into one bucket and back (FSDP's copy-in and copy-out), with the
 * casts of cast.c on the way: the reference for the CUDA kernels, and the host path.
 */
#include "config.h"

#include <string.h>

#include "cpu.h"

/* Equal types of any dtype are copied; otherwise the float pair goes through cast. */
static sharc_status_t sharc_kern_cpu_move(void *dst, sharc_dtype_t dst_dtype, const void *src,
                                          sharc_dtype_t src_dtype, size_t count)
{
    if (dst_dtype == src_dtype) {
        size_t esize = sharc_dtype_size(dst_dtype);

        if (esize == 0) {
            return SHARC_ERR_UNSUPPORTED;
        }
        memmove(dst, src, count * esize);
        return SHARC_OK;
    }
    return sharc_kern_cpu_cast(dst, dst_dtype, src, src_dtype, count, NULL);
}

sharc_status_t sharc_kern_cpu_pack(void *bucket, sharc_dtype_t bucket_dtype,
                                   const sharc_kern_piece_t *pieces, int n,
                                   sharc_dtype_t piece_dtype, void *stream)
{
    size_t esize = sharc_dtype_size(bucket_dtype);
    sharc_status_t status = (n < 0) ? SHARC_ERR_INVALID : SHARC_OK;

    for (int i = 0; status == SHARC_OK && i < n; i++) {
        status = sharc_kern_cpu_move((char *)bucket + pieces[i].offset * esize, bucket_dtype,
                                     pieces[i].ptr, piece_dtype, pieces[i].count);
    }
    return status;
}

sharc_status_t sharc_kern_cpu_unpack(const void *bucket, sharc_dtype_t bucket_dtype,
                                     const sharc_kern_piece_t *pieces, int n,
                                     sharc_dtype_t piece_dtype, void *stream)
{
    size_t esize = sharc_dtype_size(bucket_dtype);
    sharc_status_t status = (n < 0) ? SHARC_ERR_INVALID : SHARC_OK;

    for (int i = 0; status == SHARC_OK && i < n; i++) {
        status = sharc_kern_cpu_move(pieces[i].ptr, piece_dtype,
                                     (const char *)bucket + pieces[i].offset * esize, bucket_dtype,
                                     pieces[i].count);
    }
    return status;
}
