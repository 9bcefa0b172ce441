# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_MICROHTTPD: GNU libmicrohttpd (microhttpd.h, libmicrohttpd), which serves each
# rank's metrics at /metrics (SHARC_METRICS_PORT). Sets MHD_* and HAVE_MHD.
AC_DEFUN([SHARC_CHECK_MICROHTTPD], [
    SHARC_CHECK_PKG([microhttpd], [MHD], [libmicrohttpd], [microhttpd.h], [MHD_start_daemon],
                    [-lmicrohttpd])
])
