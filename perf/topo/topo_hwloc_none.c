/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_hwloc_none.c: a build without hwloc reads CPUs and NUMA nodes from sysfs only (the
 * pair of topo_hwloc.c).
 */
#include "config.h"

#include "topo_tool.h"

sharc_status_t sharc_topo_read_hwloc(sharc_topo_t *topo)
{
    return SHARC_ERR_UNSUPPORTED;
}
