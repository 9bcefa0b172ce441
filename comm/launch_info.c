/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch_info.c: sharc_launch_query, the public report of what the launcher told this process:
 * the launcher (boot/launch.c's detection), the bootstrap and store a communicator would
 * use (launch.c's reader, the Slurm port rule included), and the launcher's rank, size and
 * node layout. It reads a variable itself only where no bootstrap does (mpirun's ranks, the
 * node counts); it creates and connects nothing.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sharc/launch.h>

#include "context.h"
#include "../base/log.h"
#include "../boot/boot.h"

static const char *const sharc_launcher_names[SHARC_LAUNCHER_LAST] = {
    [SHARC_LAUNCHER_NONE] = "none",
    [SHARC_LAUNCHER_MPIRUN] = "mpirun",
    [SHARC_LAUNCHER_ENV] = "env",
    [SHARC_LAUNCHER_SLURM] = "slurm",
};

const char *sharc_launcher_name(sharc_launcher_t launcher)
{
    return ((unsigned)launcher < SHARC_LAUNCHER_LAST) ? sharc_launcher_names[launcher] : NULL;
}

/* mpirun's ranks: the mpi bootstrap asks MPI, which reads these same variables. */
static sharc_status_t sharc_launch_query_mpirun(sharc_launch_info_t *info)
{
    if (sharc_launch_int("mpi", "OMPI_COMM_WORLD_SIZE", 1, INT_MAX, 1, &info->size) < 0 ||
        sharc_launch_int("mpi", "OMPI_COMM_WORLD_RANK", 0, INT_MAX, 1, &info->rank) < 0 ||
        sharc_launch_int("mpi", "OMPI_COMM_WORLD_LOCAL_RANK", 0, INT_MAX, 0, &info->local_rank) <
            0 ||
        sharc_launch_int("mpi", "OMPI_COMM_WORLD_LOCAL_SIZE", 1, INT_MAX, 0, &info->local_size) <
            0) {
        return SHARC_ERR_INVALID;
    }
    if (info->rank >= info->size) {
        sharc_error("mpi bootstrap: OMPI_COMM_WORLD_RANK %d is not below OMPI_COMM_WORLD_SIZE %d",
                    info->rank, info->size);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

/* The number of nodes, where the launcher says it: the first of its variables that is set. */
static sharc_status_t sharc_launch_query_nnodes(sharc_launch_info_t *info)
{
    static const char *const vars[SHARC_LAUNCHER_LAST][2] = {
        [SHARC_LAUNCHER_MPIRUN] = {"OMPI_MCA_orte_num_nodes", NULL},
        [SHARC_LAUNCHER_ENV] = {"GROUP_WORLD_SIZE", NULL},
        [SHARC_LAUNCHER_SLURM] = {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"},
    };
    const char *mode = sharc_bootstrap_name(sharc_launch_mode(info->launcher));

    if (info->launcher == SHARC_LAUNCHER_NONE) {
        info->nnodes = 1;
        return SHARC_OK;
    }
    for (int i = 0; i < 2 && vars[info->launcher][i] != NULL; i++) {
        switch (sharc_launch_int(mode, vars[info->launcher][i], 1, INT_MAX, 0, &info->nnodes)) {
        case -1: return SHARC_ERR_INVALID;
        case 0: return SHARC_OK;
        }
    }
    return SHARC_OK;
}

/* The launcher's rank, size and place on its node, as the bootstrap that reads its variables
 * reads them: @p boot when that is the bootstrap sharc would use, else read again for it. */
static sharc_status_t sharc_launch_query_ranks(const sharc_cfg_t *cfg, const sharc_launch_t *boot,
                                               sharc_launch_info_t *info)
{
    sharc_comm_params_t params = {.field_mask = SHARC_COMM_PARAM_BOOTSTRAP};
    sharc_launch_t vars;
    sharc_status_t status;

    if (info->launcher == SHARC_LAUNCHER_MPIRUN) {
        return sharc_launch_query_mpirun(info);
    }
    params.bootstrap = sharc_launch_mode(info->launcher);
    if (params.bootstrap == boot->mode) {
        vars = *boot;
    } else {
        status = sharc_launch_read(cfg, &params, &vars);
        if (status != SHARC_OK) {
            return status;
        }
    }
    info->rank = vars.rank;
    info->size = vars.size;
    info->local_rank = vars.local_rank;
    info->local_size = vars.local_size;
    info->node = vars.node_hint;
    if (info->launcher == SHARC_LAUNCHER_NONE) { /* one process: all of its node */
        info->local_rank = info->node = 0;
        info->local_size = 1;
    }
    return SHARC_OK;
}

static sharc_status_t sharc_launch_query_cfg(const sharc_cfg_t *cfg, sharc_launch_info_t *info)
{
    sharc_launch_t boot;
    sharc_status_t status;

    status = sharc_launch_read(cfg, NULL, &boot);
    if (status != SHARC_OK) {
        return status;
    }
    memset(info, 0, sizeof(*info));
    info->launcher = sharc_launch_launcher(1);
    info->bootstrap = boot.mode;
    info->local_rank = info->local_size = info->node = info->nnodes = -1;
    if (boot.store_from != NULL) { /* a store-based bootstrap with more than one rank */
        snprintf(info->store_host, sizeof(info->store_host), "%s", boot.store_host);
    }
    info->store_port = boot.store_port; /* (a one-task Slurm step's too: see launch.h) */
    status = sharc_launch_query_ranks(cfg, &boot, info);
    if (status != SHARC_OK) {
        return status;
    }
    return sharc_launch_query_nnodes(info);
}

sharc_status_t sharc_launch_query(sharc_config_h config, sharc_launch_info_t *info_p)
{
    sharc_config_h own = NULL;
    sharc_launch_info_t info;
    sharc_status_t status;

    if (info_p == NULL) {
        sharc_error("sharc_launch_query: info_p is NULL");
        return SHARC_ERR_INVALID;
    }
    if (config == NULL) { /* the bootstrap's knobs are all a launch reading needs */
        static const sharc_cfg_table_t *const boot_knobs[] = {&sharc_boot_cfg_table};

        status = sharc_cfg_create(boot_knobs, 1, 0, &own);
        if (status != SHARC_OK) {
            return status;
        }
        config = own;
    }
    status = sharc_launch_query_cfg(sharc_config_parsed(config), &info);
    sharc_config_destroy(own);
    if (status == SHARC_OK) {
        *info_p = info;
    }
    return status;
}
