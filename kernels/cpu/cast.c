/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu/cast.c: conversions between f32, f16 and bf16 on host memory: the reference the CUDA
 * kernels are checked against, and the casts the host collectives use. Plain loops over the
 * inline scalar conversions; the compiler vectorizes the bf16 ones.
 */
#include "config.h"

#include <string.h>

#include "cpu.h"

static int sharc_kern_is_float16ish(sharc_dtype_t dt)
{
    return dt == SHARC_DTYPE_F32 || dt == SHARC_DTYPE_F16 || dt == SHARC_DTYPE_BF16;
}

static float sharc_kern_load(const void *src, sharc_dtype_t dt, size_t i)
{
    switch (dt) {
    case SHARC_DTYPE_F16: return sharc_kern_f16_to_f32(((const uint16_t *)src)[i]);
    case SHARC_DTYPE_BF16: return sharc_kern_bf16_to_f32(((const uint16_t *)src)[i]);
    default: return ((const float *)src)[i];
    }
}

sharc_status_t sharc_kern_cpu_cast(void *dst, sharc_dtype_t dst_dtype, const void *src,
                                   sharc_dtype_t src_dtype, size_t count, void *stream)
{
    if (!sharc_kern_is_float16ish(dst_dtype) || !sharc_kern_is_float16ish(src_dtype)) {
        return SHARC_ERR_UNSUPPORTED;
    }
    if (dst_dtype == src_dtype) {
        memmove(dst, src, count * sharc_dtype_size(dst_dtype));
        return SHARC_OK;
    }
    switch (dst_dtype) {
    case SHARC_DTYPE_BF16:
        for (size_t i = 0; i < count; i++) {
            ((uint16_t *)dst)[i] = sharc_kern_f32_to_bf16(sharc_kern_load(src, src_dtype, i));
        }
        break;
    case SHARC_DTYPE_F16:
        for (size_t i = 0; i < count; i++) {
            ((uint16_t *)dst)[i] = sharc_kern_f32_to_f16(sharc_kern_load(src, src_dtype, i));
        }
        break;
    default:
        for (size_t i = 0; i < count; i++) {
            ((float *)dst)[i] = sharc_kern_load(src, src_dtype, i);
        }
        break;
    }
    return SHARC_OK;
}
