/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_query.c: what sharc/shard.h tells of a group: its units and parameters (by index
 * or name, and the local shard's view of them), the optimizer states it keeps beside the
 * master shards (added by shard_offload.c, which places their memory), where each unit's
 * state lives and the memory the group holds. The group's making and end are shard_group.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include <sharc/mem.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/shard_group.h"

int sharc_shard_num_units(sharc_shard_group_h g)
{
    return g ? g->nunits : -1;
}

int sharc_shard_num_params(sharc_shard_group_h g)
{
    return g ? g->nparams : -1;
}

sharc_status_t sharc_shard_unit_info(sharc_shard_group_h g, int unit,
                                     sharc_shard_unit_info_t *info_p)
{
    const sharc_shard_unit_t *u;

    if (g == NULL || unit < 0 || unit >= g->nunits || info_p == NULL) {
        sharc_error("sharc_shard_unit_info: no group, no output, or unit %d out of range", unit);
        return SHARC_ERR_INVALID;
    }
    u = &g->units[unit];
    info_p->first_param = u->first_param;
    info_p->nparams = u->nparams;
    info_p->count = u->count;
    info_p->padded_count = u->padded;
    info_p->shard_count = u->shard;
    info_p->shard_offset = (size_t)g->shard_rank * u->shard;
    return SHARC_OK;
}

sharc_status_t sharc_shard_param_info(sharc_shard_group_h g, int index,
                                      sharc_shard_param_info_t *info_p)
{
    if (g == NULL || index < 0 || index >= g->nparams || info_p == NULL) {
        sharc_error("sharc_shard_param_info: no group, no output, or parameter %d out of range",
                    index);
        return SHARC_ERR_INVALID;
    }
    *info_p = g->params[index];
    return SHARC_OK;
}

sharc_status_t sharc_shard_param_find(sharc_shard_group_h g, const char *name, int *index_p)
{
    for (int i = 0; g != NULL && name != NULL && i < g->nparams; i++) {
        if (strcmp(g->params[i].name, name) == 0) {
            if (index_p != NULL) {
                *index_p = i;
            }
            return SHARC_OK;
        }
    }
    return SHARC_ERR_INVALID;
}

sharc_status_t sharc_shard_local(sharc_shard_group_h g, int unit, float **master_p, float **grad_p,
                                 size_t *count_p)
{
    sharc_status_t status;

    if (g == NULL || unit < 0 || unit >= g->nunits) {
        sharc_error("sharc_shard_local: no group, or unit %d out of range", unit);
        return SHARC_ERR_INVALID;
    }
    /* the host's work on the unit first (its landings, its update); handing out the master
     * counts as a write */
    status = sharc_shard_offload_touch(g, &g->units[unit], master_p != NULL);
    if (status != SHARC_OK) {
        return status;
    }
    if (master_p != NULL) {
        *master_p = g->units[unit].master;
    }
    if (grad_p != NULL) {
        *grad_p = g->units[unit].grad;
    }
    if (count_p != NULL) {
        *count_p = g->units[unit].shard;
    }
    return SHARC_OK;
}

/* ---- optimizer states ------------------------------------------------------------------ */

/* (sharc_shard_state_add, which allocates them, is shard_offload.c's: where each unit's go) */

sharc_status_t sharc_shard_state_ptr(sharc_shard_group_h g, int index, int unit, float **ptr_p)
{
    sharc_status_t status;

    if (g == NULL || index < 0 || index >= g->nstates || unit < 0 || unit >= g->nunits ||
        ptr_p == NULL) {
        sharc_error("sharc_shard_state_ptr: no group or output, or state %d / unit %d out of "
                    "range",
                    index, unit);
        return SHARC_ERR_INVALID;
    }
    status = sharc_shard_offload_touch(g, &g->units[unit], 0); /* the update writes states */
    if (status == SHARC_OK) {
        *ptr_p = g->units[unit].state[index];
    }
    return status;
}

sharc_status_t sharc_shard_unit_memtype(sharc_shard_group_h g, int unit, sharc_memtype_t *memtype_p)
{
    if (g == NULL || unit < 0 || unit >= g->nunits || memtype_p == NULL) {
        sharc_error("sharc_shard_unit_memtype: no group or output, or unit %d out of range", unit);
        return SHARC_ERR_INVALID;
    }
    *memtype_p = sharc_shard_unit_where(g, &g->units[unit]);
    return SHARC_OK;
}

sharc_status_t sharc_shard_memory(sharc_shard_group_h g, size_t *device_bytes_p,
                                  size_t *host_bytes_p)
{
    size_t dev, host;

    if (g == NULL) {
        sharc_error("sharc_shard_memory: group is NULL");
        return SHARC_ERR_INVALID;
    }
    sharc_shard_offload_bytes(g, &dev, &host);
    if (device_bytes_p != NULL) {
        *device_bytes_p = dev;
    }
    if (host_bytes_p != NULL) {
        *host_bytes_p = host;
    }
    return SHARC_OK;
}
