/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot_create.c: which bootstrap a job gets (the launcher's mode): MPI's, the store's (env,
 * Slurm, explicit), or the single process's.
 */
#include "config.h"

#include "boot.h"

sharc_status_t sharc_boot_create(const sharc_cfg_t *cfg, const sharc_launch_t *launch,
                                 sharc_boot_t **boot_p)
{
    sharc_status_t status;

    switch (launch->mode) {
    case SHARC_BOOTSTRAP_MPI: return sharc_boot_mpi_create(cfg, boot_p);
    case SHARC_BOOTSTRAP_ENV:
    case SHARC_BOOTSTRAP_SLURM:
    case SHARC_BOOTSTRAP_EXPLICIT:
        if (launch->size > 1) {
            return sharc_boot_store_create(cfg, launch, boot_p);
        }
        /* a job of one needs no store */
        status = sharc_boot_single_create(cfg, boot_p);
        if (status == SHARC_OK) {
            (*boot_p)->mode = launch->mode;
        }
        return status;
    default: return sharc_boot_single_create(cfg, boot_p);
    }
}
