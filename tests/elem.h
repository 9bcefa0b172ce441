/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elem.h: element i of a buffer of any sharc dtype, as a double, for the tests that build
 * inputs and expected results element by element (16-bit floats through sharc's own
 * conversions, rounding to nearest even; u8 wraps modulo 256).
 */
#ifndef SHARC_TEST_ELEM_H
#define SHARC_TEST_ELEM_H

#include <stddef.h>
#include <stdint.h>

#include <sharc/types.h>

#include "../kernels/kernels.h"

static inline void elem_put(void *buf, sharc_dtype_t dt, size_t i, double v)
{
    switch (dt) {
    case SHARC_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case SHARC_DTYPE_F64: ((double *)buf)[i] = v; break;
    case SHARC_DTYPE_F16: ((uint16_t *)buf)[i] = sharc_kern_f32_to_f16((float)v); break;
    case SHARC_DTYPE_BF16: ((uint16_t *)buf)[i] = sharc_kern_f32_to_bf16((float)v); break;
    case SHARC_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case SHARC_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    default: ((uint8_t *)buf)[i] = (uint8_t)((uint64_t)v & 0xff); break;
    }
}

static inline double elem_get(const void *buf, sharc_dtype_t dt, size_t i)
{
    switch (dt) {
    case SHARC_DTYPE_F32: return ((const float *)buf)[i];
    case SHARC_DTYPE_F64: return ((const double *)buf)[i];
    case SHARC_DTYPE_F16: return sharc_kern_f16_to_f32(((const uint16_t *)buf)[i]);
    case SHARC_DTYPE_BF16: return sharc_kern_bf16_to_f32(((const uint16_t *)buf)[i]);
    case SHARC_DTYPE_I32: return ((const int32_t *)buf)[i];
    case SHARC_DTYPE_I64: return (double)((const int64_t *)buf)[i];
    default: return ((const uint8_t *)buf)[i];
    }
}

#endif
