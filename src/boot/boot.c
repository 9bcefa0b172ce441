/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot.c: chooses the bootstrap for a job, and the `single` bootstrap of a process alone
 * (every exchange is a copy).
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

static const sharc_cfg_field_t sharc_boot_cfg_fields[] = {
    {.name = "BOOTSTRAP",
     .dflt = "auto",
     .type = SHARC_CFG_ENUM,
     .offset = offsetof(sharc_boot_cfg_t, mode),
     .names = sharc_bootstrap_names,
     .nnames = SHARC_BOOTSTRAP_LAST,
     .doc = "How ranks find each other: auto (mpirun, then torchrun-style env, then Slurm, else a "
            "single process), mpi, env, slurm, explicit or single."},
    {.name = "BOOTSTRAP_TIMEOUT",
     .dflt = "120s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_boot_cfg_t, timeout),
     .doc = "Longest wait for any bootstrap step (other ranks arriving, the store answering), "
            "e.g. 500ms, 30s, 2m."},
    {.name = "BOOTSTRAP_TOKEN",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_boot_cfg_t, token),
     .doc = "Job token every rank presents to the store; empty: derived from the launch "
            "environment (MASTER_ADDR/PORT, WORLD_SIZE, run or job id). Guards against stray and "
            "stale clients; set a secret value to also keep out other users."},
    {.name = "BOOTSTRAP_BIND_ADDR",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_boot_cfg_t, bind_addr),
     .doc = "Address rank 0's store listens on: empty for the store address itself "
            "(MASTER_ADDR), * for every interface, or an address."},
    {.name = "BOOTSTRAP_PORT",
     .dflt = "0",
     .type = SHARC_CFG_INT,
     .min = 0,
     .max = 65535,
     .offset = offsetof(sharc_boot_cfg_t, port),
     .doc = "Store port; 0 derives it: MASTER_PORT (MASTER_PORT+1 under torchrun, whose agent "
            "holds MASTER_PORT), or 12000 + SLURM_JOB_ID % 20000 under Slurm without "
            "MASTER_PORT."},
    {.name = "BOOTSTRAP_MAX_MSG",
     .dflt = "64m",
     .type = SHARC_CFG_SIZE,
     .min = 4096,
     .max = 1L << 30,
     .offset = offsetof(sharc_boot_cfg_t, max_msg),
     .doc = "Largest message the store accepts; bigger ones are rejected as garbage."},
    {.name = "BOOTSTRAP_HEARTBEAT",
     .dflt = "2s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_boot_cfg_t, heartbeat),
     .doc = "How often each rank of a store-based communicator tells the store it is alive, "
            "from a thread of its own (the store answers, which tells the rank the store is "
            "alive too)."},
    {.name = "BOOTSTRAP_HEARTBEAT_TIMEOUT",
     .dflt = "15s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_boot_cfg_t, heartbeat_timeout),
     .doc = "A silence this long names a rank gone (the store tells its communicators, whose "
            "collectives then fail naming it and its host) or, seen from a rank, the store "
            "(rank 0's node unreachable): a node cut off by a partition or a dead link is found "
            "in this time, not at SHARC_TIMEOUT. A process that stops this long (a debugger, "
            "SIGSTOP) counts as gone."},
};

const sharc_cfg_table_t sharc_boot_cfg_table =
    SHARC_CFG_TABLE("bootstrap (src/boot)", sharc_boot_cfg_fields, sharc_boot_cfg_t);
