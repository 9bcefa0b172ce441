/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nodlclose.c: a test-only shim, preloaded into MPI test ranks of sanitizer builds. OpenMPI
 * dlcloses its components in MPI_Finalize, after which LeakSanitizer cannot name the module
 * that allocated their process-lifetime state, and the suppressions in lsan.supp (which
 * match OpenMPI's modules by name) cannot apply. Keeping every module mapped fixes that; it
 * changes nothing else at exit.
 */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
