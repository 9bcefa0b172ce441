/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot_mpi_none.c: a build without MPI has no mpi bootstrap (the pair of boot_mpi.c); the
 * launcher's reading (launch.c) has said why when mpirun's variables are set.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include "boot.h"

sharc_status_t sharc_boot_mpi_create(const sharc_cfg_t *cfg, sharc_boot_t **boot_p)
{
    return SHARC_ERR_UNSUPPORTED; /* sharc_launch_read has said why */
}
