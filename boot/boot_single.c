/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot_single.c: the `single` bootstrap of a process alone: every exchange is a copy.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
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

/* A group of a process alone is that process (the comm layer has checked the list). */
static sharc_status_t sharc_single_group(sharc_boot_t *boot, const int *ranks, int n, int new_rank,
                                         uint64_t id, sharc_boot_t **new_p)
{
    return sharc_single_split(boot, 0, 0, new_rank, n, new_p);
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
    .group = sharc_single_group,
    .destroy = sharc_single_destroy,
};

/* One-rank communicators made by this process, for their names (their flight dumps do not
 * collide). */
static unsigned sharc_single_made;

sharc_status_t sharc_boot_single_create(const sharc_cfg_t *cfg, sharc_boot_t **boot_p)
{
    sharc_boot_t *boot = calloc(1, sizeof(*boot));

    if (boot == NULL) {
        return SHARC_ERR_NOMEM;
    }
    boot->ops = &sharc_boot_single_ops;
    boot->mode = SHARC_BOOTSTRAP_SINGLE;
    snprintf(boot->name, sizeof(boot->name), "single.%u",
             __atomic_fetch_add(&sharc_single_made, 1, __ATOMIC_RELAXED));
    boot->rank = 0;
    boot->size = 1;
    boot->timeout = cfg ? sharc_boot_cfg(cfg)->timeout : 0;
    *boot_p = boot;
    return SHARC_OK;
}
