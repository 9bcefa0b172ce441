# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_NCCL: NCCL (nccl.h, libnccl). Needs CUDA. Searched in DIR, else the CUDA
# toolkit's directory, else the system paths. Sets NCCL_CPPFLAGS, NCCL_LDFLAGS, NCCL_LIBS,
# HAVE_NCCL, SHARC_NCCL_LIBDIR. libsharc opens NCCL at run time and links only its headers;
# sharc-perf links it.
AC_DEFUN([SHARC_CHECK_NCCL], [
    SHARC_ARG_WITH([nccl], [NCCL])
    sharc_nccl_found=no
    sharc_nccl_missing="NCCL was not found"
    AS_IF([test "x$sharc_with_nccl" != xno], [
        AS_IF([test "x$sharc_have_cuda" != xyes], [sharc_nccl_missing="NCCL needs CUDA, which is disabled or missing"], [
            AS_CASE([$sharc_with_nccl],
                [yes|auto], [sharc_nccl_dirs="$CUDA_HOME /usr"],
                [sharc_nccl_dirs=$sharc_with_nccl])
            for sharc_nccl_dir in $sharc_nccl_dirs; do
                SHARC_PREFIX_FLAGS([NCCL], [$sharc_nccl_dir])
                NCCL_CPPFLAGS="$NCCL_CPPFLAGS $CUDA_CPPFLAGS"
                NCCL_LDFLAGS="$NCCL_LDFLAGS $CUDA_LDFLAGS"
                SHARC_TRY_LINK([NCCL], [nccl.h], [ncclGetVersion], [-lnccl -lcudart])
                AS_IF([test "x$sharc_try_ok" = xyes], [sharc_nccl_found=yes; break])
                sharc_nccl_missing="nccl.h or libnccl were not found in $sharc_nccl_dirs"
            done
        ])
    ])
    SHARC_DEP_RESULT([nccl], [$sharc_nccl_found], [$sharc_nccl_missing])
    AS_IF([test "x$sharc_have_nccl" = xyes], [
        NCCL_LIBS=-lnccl
        AC_DEFINE([HAVE_NCCL], [1], [Define if NCCL is available])
        dnl libsharc opens NCCL at run time (transport/nccl/nccl_lib.c): the loader's search
        dnl first, then the directory it was found in here
        sharc_nccl_libdir=""
        for sharc_nccl_flag in $NCCL_LDFLAGS; do
            AS_CASE([$sharc_nccl_flag], [-L*], [
                AS_IF([test -z "$sharc_nccl_libdir" && test -e "${sharc_nccl_flag#-L}/libnccl.so.2"],
                      [sharc_nccl_libdir=${sharc_nccl_flag#-L}])])
        done
        AC_DEFINE_UNQUOTED([SHARC_NCCL_LIBDIR], ["$sharc_nccl_libdir"],
                           [Where configure found libnccl.so.2 (libsharc's second place to open it)])
    ], [NCCL_CPPFLAGS=""; NCCL_LDFLAGS=""; NCCL_LIBS=""])
    AC_SUBST([NCCL_CPPFLAGS])
    AC_SUBST([NCCL_LDFLAGS])
    AC_SUBST([NCCL_LIBS])
    AM_CONDITIONAL([HAVE_NCCL], [test "x$sharc_have_nccl" = xyes])
])
