/*
 * boot.c: chooses the bootstrap for a job, and the `single` bootstrap of a process alone
 * (every exchange is a copy).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "boot.h"

static sharc_status_t sharc_single_allgather(sharc_boot_t *boot, const void *sendbuf, void *recvbuf,
                                             size_t bytes)
{
    memmove(recvbuf, sendbuf, bytes);
    return SHARC_OK;
}

static sharc_status_t sharc_single_bcast(sharc_boot_t *boot, void *buf, size_t bytes, int root)
{
    return SHARC_OK;
}

static sharc_status_t sharc_single_barrier(sharc_boot_t *boot)
{
    return SHARC_OK;
}

static sharc_status_t sharc_single_split(sharc_boot_t *boot, int color, int key, int new_rank,
                                         int new_size, sharc_boot_t **new_p)
{
    sharc_status_t status;

    if (color == SHARC_COMM_SPLIT_NOCOLOR) {
        *new_p = NULL;
        return SHARC_OK;
    }
    status = sharc_boot_single_create(NULL, new_p);
    if (status == SHARC_OK) {
        (*new_p)->mode = boot->mode;
        (*new_p)->timeout = boot->timeout;
    }
    return status;
}

static void sharc_single_destroy(sharc_boot_t *boot)
{
    free(boot);
}

static const sharc_boot_ops_t sharc_boot_single_ops = {
    .name = "single",
    .allgather = sharc_single_allgather,
    .alltoall = sharc_single_allgather, /* one block, to itself */
    .bcast = sharc_single_bcast,
    .barrier = sharc_single_barrier,
    .split = sharc_single_split,
    .destroy = sharc_single_destroy,
};

sharc_status_t sharc_boot_single_create(const sharc_cfg_t *cfg, sharc_boot_t **boot_p)
{
    sharc_boot_t *boot = calloc(1, sizeof(*boot));

    if (boot == NULL) {
        return SHARC_ERR_NOMEM;
    }
    boot->ops = &sharc_boot_single_ops;
    boot->mode = SHARC_BOOTSTRAP_SINGLE;
    boot->rank = 0;
    boot->size = 1;
    boot->timeout = cfg ? cfg->bootstrap_timeout : 0;
    *boot_p = boot;
    return SHARC_OK;
}

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
