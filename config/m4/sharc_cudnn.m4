# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_CUDNN: cuDNN 9 (cudnn.h, libcudnn.so.9) and the header-only cudnn-frontend
# (cudnn_frontend.h, 1.12 or newer), for sharc-llama's --attention cudnn (trainer/ops/cuda/
# cudnn_sdpa.cc). Needs CUDA with cuBLAS (the trainer's GPU table). cuDNN is searched in DIR
# (--with-cudnn=DIR: DIR/include, DIR/lib64 or DIR/lib), else the CUDA toolkit's directory,
# the system's, and the nvidia-cudnn-cu13 package of a Python environment: the project's venv
# (tools/install-deps.sh --cudnn makes it: $SHARC_VENV, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv), then python3's site-packages. The frontend is
# searched in --with-cudnn-frontend=DIR (DIR/include or DIR), else beside cuDNN's headers, the
# CUDA toolkit's and the system's, and the include/ folder of the nvidia-cudnn-frontend package
# in the same Python environments.
# Nothing links libcudnn: sharc-llama opens libcudnn.so.9 at run time from the loader's path,
# then from the directory found here.
# Sets CUDNN_CPPFLAGS (-isystem: the headers' own warnings are not sharc's), SHARC_CUDNN_LIBDIR
# (a define), HAVE_CUDNN (a define and an automake conditional).
AC_DEFUN([SHARC_CHECK_CUDNN], [
    SHARC_ARG_WITH([cudnn], [cuDNN and its frontend, for sharc-llama --attention cudnn])
    AC_ARG_WITH([cudnn-frontend],
        [AS_HELP_STRING([--with-cudnn-frontend=DIR],
                        [where cudnn_frontend.h is: DIR/include or DIR (default: beside cuDNN,
                         the system, the Python packages)])],
        [], [with_cudnn_frontend=])
    sharc_cudnn_found=no
    sharc_cudnn_missing="cuDNN was not found"
    AS_IF([test "x$sharc_with_cudnn" != xno], [
        AS_IF([test "x$CUBLAS_LIBS" = x],
              [sharc_cudnn_missing="cuDNN's attention is sharc-llama's GPU table's, which needs CUDA and cuBLAS"],
              [SHARC_FIND_CUDNN])
    ])
    SHARC_DEP_RESULT([cudnn], [$sharc_cudnn_found], [$sharc_cudnn_missing])
    AS_IF([test "x$sharc_have_cudnn" = xyes], [
        AC_DEFINE([HAVE_CUDNN], [1],
                  [Define if cuDNN and cudnn-frontend are available (sharc-llama --attention cudnn)])
        AC_DEFINE_UNQUOTED([SHARC_CUDNN_LIBDIR], ["$sharc_cudnn_libdir"],
                           [Where configure found libcudnn.so.9 (sharc-llama's second place to open it)])
        SHARC_CUDNN_LIBDIR_SHOWN=$sharc_cudnn_libdir
    ], [CUDNN_CPPFLAGS=""])
    AC_SUBST([CUDNN_CPPFLAGS])
    AM_CONDITIONAL([HAVE_CUDNN], [test "x$sharc_have_cudnn" = xyes])
])

# SHARC_FIND_CUDNN: the search of SHARC_CHECK_CUDNN; sets sharc_cudnn_found, CUDNN_CPPFLAGS,
# sharc_cudnn_libdir, sharc_cudnn_frontend_version, or sharc_cudnn_missing.
AC_DEFUN([SHARC_FIND_CUDNN], [
    sharc_venv=${SHARC_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sharc/venv}
    sharc_sites=`ls -d "$sharc_venv"/lib/python3*/site-packages 2>/dev/null`
    sharc_sites="$sharc_sites `python3 -c 'import site, sysconfig; print(sysconfig.get_path("purelib"), *site.getsitepackages())' 2>/dev/null`"
    AS_CASE([$sharc_with_cudnn],
        [yes|auto], [sharc_cudnn_dirs="$CUDA_HOME /usr"
                     for sharc_site in $sharc_sites; do
                         sharc_cudnn_dirs="$sharc_cudnn_dirs $sharc_site/nvidia/cudnn"
                     done],
        [sharc_cudnn_dirs=$sharc_with_cudnn])
    # cuDNN: a header of version 9 or newer, and libcudnn.so.9 beside it
    sharc_cudnn_inc=""
    sharc_cudnn_libdir=""
    for sharc_cudnn_dir in $sharc_cudnn_dirs; do
        for sharc_inc in "$sharc_cudnn_dir/include" "$sharc_cudnn_dir/include/x86_64-linux-gnu"; do
            test -f "$sharc_inc/cudnn.h" || continue
            for sharc_lib in "$sharc_cudnn_dir/lib64" "$sharc_cudnn_dir/lib" \
                             "$sharc_cudnn_dir/lib/x86_64-linux-gnu"; do
                test -e "$sharc_lib/libcudnn.so.9" || continue
                sharc_save_CPPFLAGS=$CPPFLAGS
                CPPFLAGS="$CPPFLAGS -I$sharc_inc $CUDA_CPPFLAGS"
                AC_MSG_CHECKING([for cuDNN 9 in $sharc_inc and $sharc_lib])
                AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cudnn.h>
#if CUDNN_MAJOR < 9
#error cuDNN 9 or newer
#endif]], [[(void)cudnnGetVersion;]])],
                    [sharc_cudnn_inc=$sharc_inc; sharc_cudnn_libdir=$sharc_lib],
                    [sharc_cudnn_missing="$sharc_inc/cudnn.h is not cuDNN 9"])
                CPPFLAGS=$sharc_save_CPPFLAGS
                AS_IF([test -n "$sharc_cudnn_inc"], [AC_MSG_RESULT([yes]); break], [AC_MSG_RESULT([no])])
            done
            test -n "$sharc_cudnn_inc" && break
        done
        test -n "$sharc_cudnn_inc" && break
    done
    AS_IF([test -z "$sharc_cudnn_inc" && test "x$sharc_cudnn_missing" = "xcuDNN was not found"],
          [sharc_cudnn_missing="cudnn.h with libcudnn.so.9 was not found in $sharc_cudnn_dirs (tools/install-deps.sh --cudnn installs them)"])
    # the frontend (header-only C++)
    AS_IF([test -n "$sharc_cudnn_inc"], [
        AS_IF([test -n "$with_cudnn_frontend"],
              [sharc_fe_dirs="$with_cudnn_frontend/include $with_cudnn_frontend"],
              [sharc_fe_dirs="$sharc_cudnn_inc $CUDA_HOME/include /usr/include"
               for sharc_site in $sharc_sites; do
                   sharc_fe_dirs="$sharc_fe_dirs $sharc_site/include"
               done])
        sharc_fe_inc=""
        for sharc_inc in $sharc_fe_dirs; do
            test -f "$sharc_inc/cudnn_frontend.h" || continue
            sharc_save_CPPFLAGS=$CPPFLAGS
            CPPFLAGS="$CPPFLAGS -I$sharc_inc"
            AC_MSG_CHECKING([for cudnn-frontend 1.12 or newer in $sharc_inc])
            AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cudnn_frontend_version.h>
#if CUDNN_FRONTEND_VERSION < 11200
#error cudnn-frontend 1.12 or newer
#endif]], [[]])],
                [sharc_fe_inc=$sharc_inc])
            CPPFLAGS=$sharc_save_CPPFLAGS
            AS_IF([test -n "$sharc_fe_inc"], [AC_MSG_RESULT([yes]); break], [AC_MSG_RESULT([no])])
        done
        AS_IF([test -n "$sharc_fe_inc"], [
            sharc_cudnn_found=yes
            CUDNN_CPPFLAGS="-isystem $sharc_fe_inc"
            AS_IF([test "x$sharc_fe_inc" != "x$sharc_cudnn_inc"],
                  [CUDNN_CPPFLAGS="$CUDNN_CPPFLAGS -isystem $sharc_cudnn_inc"])
        ], [sharc_cudnn_missing="cudnn_frontend.h (1.12 or newer) was not found in $sharc_fe_dirs (tools/install-deps.sh --cudnn installs it, or give --with-cudnn-frontend=DIR)"])
    ])
])
