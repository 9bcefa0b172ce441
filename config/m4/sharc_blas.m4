# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_BLAS: a CBLAS (cblas.h, cblas_sgemm; OpenBLAS from Debian), for the compute of
# sharc-perf overlap --compute gemm and the reference trainer. Sets BLAS_* and HAVE_BLAS.
AC_DEFUN([SHARC_CHECK_BLAS], [
    SHARC_CHECK_PKG([blas], [BLAS], [openblas], [cblas.h], [cblas_sgemm], [-lopenblas])
])
