# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_PKG(name, VAR, pkg-config module, header, function, libs)
# Shared logic of the dependencies that ship a pkg-config file (UCX, hwloc, verbs, MPI):
# DIR means DIR/include and DIR/lib; yes/auto ask pkg-config, then the system paths.
# Sets VAR_CPPFLAGS, VAR_LDFLAGS, VAR_LIBS, HAVE_VAR and the HAVE_VAR conditional.
AC_DEFUN([SHARC_CHECK_PKG], [
    SHARC_ARG_WITH([$1], [$1])
    sharc_$1_found=no
    sharc_$1_missing="$4 or lib for $5 was not found"
    AS_IF([test "x$sharc_with_$1" != xno], [
        AS_CASE([$sharc_with_$1],
            [yes|auto], [
                AS_IF([$PKG_CONFIG --exists $3 2>/dev/null],
                      [$2_CPPFLAGS=`$PKG_CONFIG --cflags $3`
                       $2_LDFLAGS=`$PKG_CONFIG --libs-only-L $3`
                       sharc_$1_libs=`$PKG_CONFIG --libs-only-l $3`],
                      [$2_CPPFLAGS=""; $2_LDFLAGS=""; sharc_$1_libs="$6"])],
            [SHARC_PREFIX_FLAGS([$2], [$sharc_with_$1])
             sharc_$1_libs="$6"])
        sharc_try_ok=no
        AS_CASE([$sharc_with_$1],
            [yes|auto], [SHARC_TRY_LINK([$2], [$4], [$5], [$sharc_$1_libs])],
            [AS_IF([test -f "$sharc_with_$1/include/$4"],
                   [SHARC_TRY_LINK([$2], [$4], [$5], [$sharc_$1_libs])],
                   [sharc_$1_missing="$sharc_with_$1/include/$4 does not exist"])])
        AS_IF([test "x$sharc_try_ok" = xyes], [sharc_$1_found=yes],
              [AS_IF([test "x$sharc_$1_missing" = "x$4 or lib for $5 was not found"],
                     [sharc_$1_missing="$4 and $5 ($sharc_$1_libs) did not compile and link; install the development package or give --with-$1=DIR"])])
    ])
    SHARC_DEP_RESULT([$1], [$sharc_$1_found], [$sharc_$1_missing])
    AS_IF([test "x$sharc_have_$1" = xyes], [
        $2_LIBS=$sharc_$1_libs
        AC_DEFINE([HAVE_$2], [1], [Define if $1 is available])
    ], [$2_CPPFLAGS=""; $2_LDFLAGS=""; $2_LIBS=""])
    AC_SUBST([$2_CPPFLAGS])
    AC_SUBST([$2_LDFLAGS])
    AC_SUBST([$2_LIBS])
    AM_CONDITIONAL([HAVE_$2], [test "x$sharc_have_$1" = xyes])
])
