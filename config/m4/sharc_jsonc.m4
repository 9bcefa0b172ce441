# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_JSONC: json-c (json-c/json.h), for sharc-topo's JSON output. Sets JSONC_* and
# HAVE_JSONC.
AC_DEFUN([SHARC_CHECK_JSONC], [
    SHARC_CHECK_PKG([jsonc], [JSONC], [json-c], [json-c/json.h], [json_object_new_object],
                    [-ljson-c])
])
