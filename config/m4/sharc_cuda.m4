# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_CUDA: the CUDA toolkit (nvcc, cuda_runtime.h, libcudart).
# Searched in DIR, else $CUDA_HOME, else /usr/local/cuda. No GPU is needed to build.
# Sets CUDA_HOME, NVCC, CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS (libcudart, or libcudart_static
# with --with-cuda-runtime=static), SHARC_NVCC_ARCH_FLAGS,
# HAVE_CUDA; and CUBLAS_LIBS, HAVE_CUBLAS (a define and an automake conditional) where the
# toolkit has cuBLAS (sharc-perf's GPU compute and sharc-llama's --device cuda; the library
# does not use it).
AC_DEFUN([SHARC_CHECK_CUDA], [
    SHARC_ARG_WITH([cuda], [CUDA toolkit])
    AC_ARG_WITH([cuda-archs],
        [AS_HELP_STRING([--with-cuda-archs="80 90"],
                        [GPU architectures (SM numbers) to build .cu files for (default: 80 90)])],
        [], [with_cuda_archs="80 90"])
    AC_ARG_WITH([cuda-runtime],
        [AS_HELP_STRING([--with-cuda-runtime=shared|static],
                        [link the CUDA runtime as libcudart.so (default) or libcudart_static.a:
                         static, libsharc loads where no CUDA is installed (the Python wheel)])],
        [], [with_cuda_runtime=shared])
    AS_CASE([$with_cuda_runtime], [shared|static], [],
            [AC_MSG_ERROR([--with-cuda-runtime: '$with_cuda_runtime' is not shared or static])])
    sharc_cuda_found=no
    sharc_cuda_missing="no CUDA toolkit was found"
    AS_IF([test "x$sharc_with_cuda" != xno], [
        AS_CASE([$sharc_with_cuda],
            [yes|auto], [sharc_cuda_dir=${CUDA_HOME:-/usr/local/cuda}],
            [sharc_cuda_dir=$sharc_with_cuda])
        AS_IF([test -x "$sharc_cuda_dir/bin/nvcc"], [
            SHARC_PREFIX_FLAGS([CUDA], [$sharc_cuda_dir])
            SHARC_TRY_LINK([CUDA], [cuda_runtime.h], [cudaGetDeviceCount], [-lcudart])
            AS_IF([test "x$sharc_try_ok" = xyes], [sharc_cuda_found=yes],
                  [sharc_cuda_missing="cuda_runtime.h or libcudart under $sharc_cuda_dir do not work"])
        ], [sharc_cuda_missing="$sharc_cuda_dir/bin/nvcc does not exist"])
    ])
    SHARC_DEP_RESULT([cuda], [$sharc_cuda_found], [$sharc_cuda_missing])
    AS_IF([test "x$sharc_have_cuda" = xyes], [
        CUDA_HOME=$sharc_cuda_dir
        NVCC=$sharc_cuda_dir/bin/nvcc
        CUDA_LIBS=-lcudart
        dnl the static runtime opens the driver (libcuda.so.1) when first used, and its symbols
        dnl stay inside libsharc (torch brings a libcudart of its own)
        AS_IF([test "x$with_cuda_runtime" = xstatic], [
            CUDA_LIBS="-lcudart_static"
            CUDA_LDFLAGS="$CUDA_LDFLAGS -Wl,--exclude-libs,libcudart_static.a"])
        SHARC_CUDA_ARCHS=$with_cuda_archs
        SHARC_NVCC_ARCH_FLAGS=""
        for sharc_arch in $with_cuda_archs; do
            dnl digits with an optional trailing "a" (sm_90a): anything else is refused
            AS_CASE([$sharc_arch], [""|a*|*a?*|*@<:@!0-9a@:>@*],
                    [AC_MSG_ERROR([--with-cuda-archs: '$sharc_arch' is not an SM number like 80, 90 or 90a])])
            SHARC_NVCC_ARCH_FLAGS="$SHARC_NVCC_ARCH_FLAGS -gencode=arch=compute_$sharc_arch,code=sm_$sharc_arch"
        done
        AC_DEFINE([HAVE_CUDA], [1], [Define if the CUDA toolkit is available])
        SHARC_TRY_LINK([CUDA], [cublas_v2.h], [cublasCreate], [-lcublas -lcudart])
        AS_IF([test "x$sharc_try_ok" = xyes], [
            CUBLAS_LIBS=-lcublas
            AC_DEFINE([HAVE_CUBLAS], [1], [Define if cuBLAS is available (sharc-perf, sharc-llama)])
        ])
    ], [CUDA_CPPFLAGS=""; CUDA_LDFLAGS=""; CUDA_LIBS=""])
    AC_SUBST([CUDA_HOME])
    AC_SUBST([NVCC])
    AC_SUBST([CUDA_CPPFLAGS])
    AC_SUBST([CUDA_LDFLAGS])
    AC_SUBST([CUDA_LIBS])
    AC_SUBST([CUBLAS_LIBS])
    AC_SUBST([SHARC_CUDA_ARCHS])
    AC_SUBST([SHARC_NVCC_ARCH_FLAGS])
    AM_CONDITIONAL([HAVE_CUDA], [test "x$sharc_have_cuda" = xyes])
    AM_CONDITIONAL([HAVE_CUBLAS], [test "x$sharc_have_cuda" = xyes && test "x$CUBLAS_LIBS" != x])
])
