# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_HWLOC: hwloc 2.x (hwloc.h, libhwloc). Sets HWLOC_* and HAVE_HWLOC.
AC_DEFUN([SHARC_CHECK_HWLOC], [
    SHARC_CHECK_PKG([hwloc], [HWLOC], [hwloc], [hwloc.h], [hwloc_topology_init], [-lhwloc])
])
