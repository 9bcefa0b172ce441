/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_status.c: status strings, dtype/op/memtype names and sizes, version and build info,
 * through the public library only.
 */
#include <string.h>

#include <sharc/sharc.h>

#include "../check.h"

int main(void)
{
    static const sharc_status_t all[] = {
        SHARC_OK,     SHARC_INPROGRESS,  SHARC_ERR_INVALID, SHARC_ERR_NOMEM, SHARC_ERR_UNSUPPORTED,
        SHARC_ERR_IO, SHARC_ERR_TIMEOUT, SHARC_ERR_BACKEND, SHARC_ERR_REMOTE};
    const size_t n = sizeof(all) / sizeof(all[0]);
    unsigned major = 99, minor = 99, patch = 99;
    sharc_dtype_t dt;
    sharc_op_t op;

    for (size_t i = 0; i < n; i++) {
        const char *s = sharc_status_string(all[i]);
        CHECK(s != NULL && strcmp(s, "unknown status") != 0);
        for (size_t j = 0; j < i; j++) {
            CHECK_MSG(strcmp(s, sharc_status_string(all[j])) != 0, "%s", s);
        }
    }
    CHECK(strcmp(sharc_status_string((sharc_status_t)42), "unknown status") == 0);
    CHECK(strcmp(sharc_status_string(SHARC_ERR_TIMEOUT), "timed out") == 0);

    CHECK(sharc_dtype_size(SHARC_DTYPE_F32) == 4 && sharc_dtype_size(SHARC_DTYPE_F64) == 8);
    CHECK(sharc_dtype_size(SHARC_DTYPE_F16) == 2 && sharc_dtype_size(SHARC_DTYPE_BF16) == 2);
    CHECK(sharc_dtype_size(SHARC_DTYPE_I32) == 4 && sharc_dtype_size(SHARC_DTYPE_I64) == 8);
    CHECK(sharc_dtype_size(SHARC_DTYPE_U8) == 1 && sharc_dtype_size(SHARC_DTYPE_LAST) == 0);
    for (int i = 0; i < SHARC_DTYPE_LAST; i++) {
        dt = SHARC_DTYPE_LAST;
        CHECK(sharc_dtype_from_name(sharc_dtype_name((sharc_dtype_t)i), &dt) == SHARC_OK);
        CHECK(dt == (sharc_dtype_t)i);
    }
    CHECK(sharc_dtype_from_name("BFloat16", &dt) == SHARC_OK && dt == SHARC_DTYPE_BF16);
    CHECK(sharc_dtype_from_name("half", &dt) == SHARC_OK && dt == SHARC_DTYPE_F16);
    dt = SHARC_DTYPE_U8;
    CHECK(sharc_dtype_from_name("f8", &dt) == SHARC_ERR_INVALID && dt == SHARC_DTYPE_U8);
    CHECK(sharc_dtype_from_name(NULL, &dt) == SHARC_ERR_INVALID);
    CHECK(sharc_dtype_name((sharc_dtype_t)-1) == NULL);

    for (int i = 0; i < SHARC_OP_LAST; i++) {
        op = SHARC_OP_LAST;
        CHECK(sharc_op_from_name(sharc_op_name((sharc_op_t)i), &op) == SHARC_OK);
        CHECK(op == (sharc_op_t)i);
    }
    CHECK(sharc_op_from_name("mean", &op) == SHARC_ERR_INVALID);
    CHECK(strcmp(sharc_memtype_name(SHARC_MEMTYPE_CUDA), "cuda") == 0);
    CHECK(sharc_memtype_name(SHARC_MEMTYPE_LAST) == NULL);
    CHECK(strcmp(sharc_log_level_name(SHARC_LOG_DEBUG), "debug") == 0);
    CHECK(strcmp(sharc_bootstrap_name(SHARC_BOOTSTRAP_SLURM), "slurm") == 0);
    CHECK(sharc_bootstrap_name(SHARC_BOOTSTRAP_LAST) == NULL);

    CHECK(strcmp(sharc_get_version(&major, &minor, &patch), SHARC_VERSION_STRING) == 0);
    CHECK(major == SHARC_VERSION_MAJOR && minor == SHARC_VERSION_MINOR &&
          patch == SHARC_VERSION_PATCH);
    CHECK(sharc_get_version(NULL, NULL, NULL) != NULL);
    CHECK(strstr(sharc_build_info(), "mpi: ") != NULL);
    CHECK(strstr(sharc_build_info(), "cuda: ") != NULL);
    return check_result("test_status");
}
