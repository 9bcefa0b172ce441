# SPDX-License-Identifier: BSD-3-Clause
# SHARC_ARG_WITH(name, description)
# Declares --with-NAME=yes|no|auto|DIR (default auto) and sets sharc_with_NAME to
# "yes", "no", "auto" or the directory. A directory implies "yes".
AC_DEFUN([SHARC_ARG_WITH], [
    AC_ARG_WITH([$1],
        [AS_HELP_STRING([--with-$1=yes|no|auto|DIR], [$2 (default: auto)])],
        [sharc_with_$1=$withval], [sharc_with_$1=auto])
    AS_CASE([$sharc_with_$1],
        [yes|no|auto], [],
        [AS_IF([test -d "$sharc_with_$1"], [],
               [AC_MSG_ERROR([--with-$1=$sharc_with_$1: no such directory])])])
])

# SHARC_DEP_RESULT(name, found, what-is-missing)
# Turns a detection result into sharc_have_NAME; an explicit yes or DIR that was not met
# stops configure with a message saying what is missing.
AC_DEFUN([SHARC_DEP_RESULT], [
    AS_IF([test "x$2" = xyes], [sharc_have_$1=yes],
          [AS_IF([test "x$sharc_with_$1" != xauto && test "x$sharc_with_$1" != xno],
                 [AC_MSG_ERROR([--with-$1=$sharc_with_$1 was requested, but $3])])
           sharc_have_$1=no])
])

# AX_PTHREAD_SIMPLE: POSIX threads through -pthread (glibc, musl, the BSDs).
AC_DEFUN([AX_PTHREAD_SIMPLE], [
    PTHREAD_CFLAGS=-pthread
    PTHREAD_LIBS=-pthread
    AC_SUBST([PTHREAD_CFLAGS])
    AC_SUBST([PTHREAD_LIBS])
])

# SHARC_PREFIX_FLAGS(VAR, DIR): VAR_CPPFLAGS/VAR_LDFLAGS for an install prefix DIR.
AC_DEFUN([SHARC_PREFIX_FLAGS], [
    $1_CPPFLAGS="-I$2/include"
    AS_IF([test -d "$2/lib64"], [$1_LDFLAGS="-L$2/lib64"], [$1_LDFLAGS="-L$2/lib"])
])

# SHARC_TRY_LINK(VAR, header, function, libs): checks that header compiles and function
# links with VAR_CPPFLAGS/VAR_LDFLAGS and libs; sets sharc_try_ok.
AC_DEFUN([SHARC_TRY_LINK], [
    sharc_save_CPPFLAGS=$CPPFLAGS; sharc_save_LDFLAGS=$LDFLAGS; sharc_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $$1_CPPFLAGS"; LDFLAGS="$LDFLAGS $$1_LDFLAGS"; LIBS="$4 $LIBS"
    AC_MSG_CHECKING([for $3 in $2 with $4])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <$2>]], [[(void)$3;]])],
                   [sharc_try_ok=yes], [sharc_try_ok=no])
    AC_MSG_RESULT([$sharc_try_ok])
    CPPFLAGS=$sharc_save_CPPFLAGS; LDFLAGS=$sharc_save_LDFLAGS; LIBS=$sharc_save_LIBS
])
