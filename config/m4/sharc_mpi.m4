# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_MPI: an MPI library for the `mpi` bootstrap (OpenMPI's ompi-c pkg-config
# module first, then mpi.h/libmpi), and its mpirun for the multi-rank tests.
# Sets MPI_*, MPIRUN, HAVE_MPI.
AC_DEFUN([SHARC_CHECK_MPI], [
    SHARC_CHECK_PKG([mpi], [MPI], [ompi-c], [mpi.h], [MPI_Iallgather], [-lmpi])
    AS_IF([test "x$sharc_have_mpi" = xyes], [
        AS_CASE([$sharc_with_mpi],
            [yes|auto], [AC_PATH_PROGS([MPIRUN], [mpirun mpiexec])],
            [AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [], [$sharc_with_mpi/bin])])
    ])
    AC_SUBST([MPIRUN])
])
