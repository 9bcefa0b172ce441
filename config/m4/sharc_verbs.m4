# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_VERBS: libibverbs (infiniband/verbs.h). Sets VERBS_* and HAVE_VERBS.
AC_DEFUN([SHARC_CHECK_VERBS], [
    SHARC_CHECK_PKG([verbs], [VERBS], [libibverbs], [infiniband/verbs.h], [ibv_get_device_list],
                    [-libverbs])
])
