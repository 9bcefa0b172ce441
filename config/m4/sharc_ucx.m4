# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_UCX: UCX's UCP layer (ucp/api/ucp.h, libucp). Sets UCX_* and HAVE_UCX.
AC_DEFUN([SHARC_CHECK_UCX], [
    SHARC_CHECK_PKG([ucx], [UCX], [ucx], [ucp/api/ucp.h], [ucp_init_version], [-lucp -lucs])
])
