# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_LIBXML2: libxml2 (libxml/parser.h), for NCCL topology XML import and export.
# Sets LIBXML2_* and HAVE_LIBXML2.
AC_DEFUN([SHARC_CHECK_LIBXML2], [
    SHARC_CHECK_PKG([libxml2], [LIBXML2], [libxml-2.0], [libxml/parser.h], [xmlReadMemory],
                    [-lxml2])
])
