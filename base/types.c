/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * types.c: names and sizes of statuses, dtypes, ops, memory types, log levels, bootstraps,
 * and the version query. Pure tables; no state.
 */
#include "config.h"

#include <strings.h>
#include <stdint.h>
#include <sharc/sharc.h>

#include "util.h"

const char *sharc_status_string(sharc_status_t status)
{
    switch (status) {
    case SHARC_OK: return "success";
    case SHARC_INPROGRESS: return "operation in progress";
    case SHARC_ERR_INVALID: return "invalid argument";
    case SHARC_ERR_NOMEM: return "out of memory";
    case SHARC_ERR_UNSUPPORTED: return "unsupported operation";
    case SHARC_ERR_IO: return "input/output error";
    case SHARC_ERR_TIMEOUT: return "timed out";
    case SHARC_ERR_BACKEND: return "backend error";
    case SHARC_ERR_REMOTE: return "remote peer error";
    }
    return "unknown status";
}

static const struct {
    const char *name;
    size_t size;
    const char *aliases[2];
} sharc_dtypes[SHARC_DTYPE_LAST] = {
    [SHARC_DTYPE_F32] = {"f32", 4, {"float", "float32"}},
    [SHARC_DTYPE_F64] = {"f64", 8, {"double", "float64"}},
    [SHARC_DTYPE_F16] = {"f16", 2, {"half", "float16"}},
    [SHARC_DTYPE_BF16] = {"bf16", 2, {"bfloat16", NULL}},
    [SHARC_DTYPE_I32] = {"i32", 4, {"int", "int32"}},
    [SHARC_DTYPE_I64] = {"i64", 8, {"int64", NULL}},
    [SHARC_DTYPE_U8] = {"u8", 1, {"uint8", NULL}},
};

size_t sharc_dtype_size(sharc_dtype_t dtype)
{
    return ((unsigned)dtype < SHARC_DTYPE_LAST) ? sharc_dtypes[dtype].size : 0;
}

const char *sharc_dtype_name(sharc_dtype_t dtype)
{
    return ((unsigned)dtype < SHARC_DTYPE_LAST) ? sharc_dtypes[dtype].name : NULL;
}

sharc_status_t sharc_dtype_from_name(const char *name, sharc_dtype_t *dtype_p)
{
    if (name == NULL) {
        return SHARC_ERR_INVALID;
    }
    for (int i = 0; i < SHARC_DTYPE_LAST; i++) {
        if (strcasecmp(name, sharc_dtypes[i].name) == 0 ||
            (sharc_dtypes[i].aliases[0] && strcasecmp(name, sharc_dtypes[i].aliases[0]) == 0) ||
            (sharc_dtypes[i].aliases[1] && strcasecmp(name, sharc_dtypes[i].aliases[1]) == 0)) {
            *dtype_p = (sharc_dtype_t)i;
            return SHARC_OK;
        }
    }
    return SHARC_ERR_INVALID;
}

static const char *const sharc_op_names[SHARC_OP_LAST] = {
    [SHARC_OP_SUM] = "sum", [SHARC_OP_PROD] = "prod", [SHARC_OP_MIN] = "min",
    [SHARC_OP_MAX] = "max", [SHARC_OP_AVG] = "avg",
};

const char *sharc_op_name(sharc_op_t op)
{
    return ((unsigned)op < SHARC_OP_LAST) ? sharc_op_names[op] : NULL;
}

sharc_status_t sharc_op_from_name(const char *name, sharc_op_t *op_p)
{
    int idx = sharc_name_index(sharc_op_names, SHARC_OP_LAST, name);

    if (idx < 0) {
        return SHARC_ERR_INVALID;
    }
    *op_p = (sharc_op_t)idx;
    return SHARC_OK;
}

static const char *const sharc_memtype_names[SHARC_MEMTYPE_LAST] = {
    [SHARC_MEMTYPE_HOST] = "host",
    [SHARC_MEMTYPE_CUDA] = "cuda",
    [SHARC_MEMTYPE_CUDA_MANAGED] = "cuda-managed",
};

const char *sharc_memtype_name(sharc_memtype_t memtype)
{
    return ((unsigned)memtype < SHARC_MEMTYPE_LAST) ? sharc_memtype_names[memtype] : NULL;
}

static const char *const sharc_wire_names[SHARC_WIRE_LAST] = {
    [SHARC_WIRE_FULL] = "full",
    [SHARC_WIRE_INT8] = "int8",
    [SHARC_WIRE_FP8] = "fp8",
};

const char *sharc_wire_name(sharc_wire_t wire)
{
    return ((unsigned)wire < SHARC_WIRE_LAST) ? sharc_wire_names[wire] : NULL;
}

sharc_status_t sharc_wire_from_name(const char *name, sharc_wire_t *wire_p)
{
    int idx = sharc_name_index(sharc_wire_names, SHARC_WIRE_LAST, name);

    if (idx < 0 && name != NULL) {
        if (strcasecmp(name, "none") == 0) {
            idx = SHARC_WIRE_FULL;
        } else if (strcasecmp(name, "e4m3") == 0) {
            idx = SHARC_WIRE_FP8;
        }
    }
    if (idx < 0) {
        return SHARC_ERR_INVALID;
    }
    *wire_p = (sharc_wire_t)idx;
    return SHARC_OK;
}

size_t sharc_wire_size(sharc_wire_t wire, size_t count, size_t block, sharc_dtype_t dtype)
{
    size_t blocks;

    switch (wire) {
    case SHARC_WIRE_FULL: return count * sharc_dtype_size(dtype);
    case SHARC_WIRE_INT8:
    case SHARC_WIRE_FP8:
        if (block == 0 || sharc_dtype_size(dtype) == 0) {
            return 0;
        }
        blocks = count / block + (count % block != 0);
        return (blocks * sizeof(float) + count + 15) / 16 * 16;
    default: return 0;
    }
}

const char *const sharc_log_level_names[SHARC_LOG_LAST] = {
    [SHARC_LOG_ERROR] = "error", [SHARC_LOG_WARN] = "warn",   [SHARC_LOG_INFO] = "info",
    [SHARC_LOG_DEBUG] = "debug", [SHARC_LOG_TRACE] = "trace",
};

const char *sharc_log_level_name(sharc_log_level_t level)
{
    return ((unsigned)level < SHARC_LOG_LAST) ? sharc_log_level_names[level] : NULL;
}

const char *const sharc_bootstrap_names[SHARC_BOOTSTRAP_LAST] = {
    [SHARC_BOOTSTRAP_AUTO] = "auto",         [SHARC_BOOTSTRAP_MPI] = "mpi",
    [SHARC_BOOTSTRAP_ENV] = "env",           [SHARC_BOOTSTRAP_SLURM] = "slurm",
    [SHARC_BOOTSTRAP_EXPLICIT] = "explicit", [SHARC_BOOTSTRAP_SINGLE] = "single",
};

const char *sharc_bootstrap_name(sharc_bootstrap_t bootstrap)
{
    return ((unsigned)bootstrap < SHARC_BOOTSTRAP_LAST) ? sharc_bootstrap_names[bootstrap] : NULL;
}

const char *sharc_get_version(unsigned *major_p, unsigned *minor_p, unsigned *patch_p)
{
    if (major_p != NULL) {
        *major_p = SHARC_VERSION_MAJOR;
    }
    if (minor_p != NULL) {
        *minor_p = SHARC_VERSION_MINOR;
    }
    if (patch_p != NULL) {
        *patch_p = SHARC_VERSION_PATCH;
    }
    return SHARC_VERSION_STRING;
}

const char *sharc_build_info(void)
{
    return SHARC_BUILD_INFO;
}
