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
