/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/types.h: element types, reduction operations and memory types, with their sizes and
 * names. These are the vocabulary of every collective; they carry no state.
 */
#ifndef SHARC_TYPES_H
#define SHARC_TYPES_H

#include <stddef.h>
#include <sharc/def.h>
#include <sharc/status.h>

SHARC_BEGIN_DECLS

/** Element types. f16 is IEEE binary16; bf16 is the upper half of an IEEE binary32. */
typedef enum {
    SHARC_DTYPE_F32 = 0,
    SHARC_DTYPE_F64 = 1,
    SHARC_DTYPE_F16 = 2,
    SHARC_DTYPE_BF16 = 3,
    SHARC_DTYPE_I32 = 4,
    SHARC_DTYPE_I64 = 5,
    SHARC_DTYPE_U8 = 6,
    SHARC_DTYPE_LAST
} sharc_dtype_t;

/** Reduction operations. AVG is defined for the floating-point types only. */
typedef enum {
    SHARC_OP_SUM = 0,
    SHARC_OP_PROD = 1,
    SHARC_OP_MIN = 2,
    SHARC_OP_MAX = 3,
    SHARC_OP_AVG = 4,
    SHARC_OP_LAST
} sharc_op_t;

/** Where a buffer lives. */
typedef enum {
    SHARC_MEMTYPE_HOST = 0,         /**< pageable or pinned host memory */
    SHARC_MEMTYPE_CUDA = 1,         /**< CUDA device memory */
    SHARC_MEMTYPE_CUDA_MANAGED = 2, /**< CUDA managed (unified) memory */
    SHARC_MEMTYPE_LAST
} sharc_memtype_t;

/**
 * How values travel between ranks in a collective that allows a narrower wire than its dtype
 * (sharc_allgather_ex, sharc_reduce_scatter_ex, the sharding engine's param_wire and
 * reduce_wire). The values are cut into blocks of a set number (sharc_coll_opts_t.block,
 * default SHARC_WIRE_BLOCK) and each block travels with one f32 scale:
 *
 * - int8: scale = absmax / 127, code = round(x / scale) (to nearest, ties to even), value =
 *   code * scale: every value within absmax / 254 of the original.
 * - fp8: OCP float8 e4m3 (4 exponent bits, bias 7, 3 mantissa bits, no infinities, largest
 *   448) of x / scale with scale = absmax / 448, rounded to nearest even: a relative error of
 *   at most 2^-4 for values above absmax * 2^-14, an absolute one of absmax * 2^-18 below.
 *
 * A block whose absmax is below 2^-100 travels as zeros. A block holding a NaN or an infinity
 * travels as NaN throughout (its scale is NaN): non-finite values are never hidden, so an
 * overflow still shows in what the ranks receive.
 */
typedef enum {
    SHARC_WIRE_FULL = 0, /**< the dtype itself: exact */
    SHARC_WIRE_INT8 = 1, /**< int8 codes, one f32 absmax scale per block */
    SHARC_WIRE_FP8 = 2,  /**< float8 e4m3 codes, one f32 scale per block */
    SHARC_WIRE_LAST
} sharc_wire_t;

/** Values per scale when none is set. */
#define SHARC_WIRE_BLOCK 256
/** Largest block (values per scale) a quantized wire accepts. */
#define SHARC_WIRE_BLOCK_MAX (1u << 20)

/** "full", "int8", "fp8"; NULL for an invalid wire format. */
SHARC_API const char *sharc_wire_name(sharc_wire_t wire);

/** Parse a wire format name as printed by sharc_wire_name (also "none", "e4m3"; any case). */
SHARC_API sharc_status_t sharc_wire_from_name(const char *name, sharc_wire_t *wire_p);

/**
 * Bytes @p count values of one rank take on the wire in format @p wire with @p block values
 * per scale: for the quantized formats the scales (4 bytes per block, first), then one byte
 * per value, padded to a multiple of 16; for SHARC_WIRE_FULL, count * sizeof(@p dtype).
 * 0 for an invalid format or dtype, or block 0 with a quantized format.
 */
SHARC_API size_t sharc_wire_size(sharc_wire_t wire, size_t count, size_t block,
                                 sharc_dtype_t dtype);

/** Size of one element in bytes; 0 for an invalid dtype. */
SHARC_API size_t sharc_dtype_size(sharc_dtype_t dtype);

/** "f32", "f64", "f16", "bf16", "i32", "i64", "u8"; NULL for an invalid dtype. */
SHARC_API const char *sharc_dtype_name(sharc_dtype_t dtype);

/**
 * Parse a dtype name as printed by sharc_dtype_name (also accepted: "float", "double",
 * "half", "bfloat16", "int32", "int64", "uint8"; case-insensitive).
 * @return SHARC_OK, or SHARC_ERR_INVALID for an unknown name (*dtype_p untouched).
 */
SHARC_API sharc_status_t sharc_dtype_from_name(const char *name, sharc_dtype_t *dtype_p);

/** "sum", "prod", "min", "max", "avg"; NULL for an invalid op. */
SHARC_API const char *sharc_op_name(sharc_op_t op);

/** Parse an op name as printed by sharc_op_name (case-insensitive). */
SHARC_API sharc_status_t sharc_op_from_name(const char *name, sharc_op_t *op_p);

/** "host", "cuda", "cuda-managed"; NULL for an invalid memory type. */
SHARC_API const char *sharc_memtype_name(sharc_memtype_t memtype);

SHARC_END_DECLS

#endif
