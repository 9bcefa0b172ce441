/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_hwloc.c: the live machine's CPU sockets and NUMA nodes through hwloc, which also sees
 * what sysfs hides in some containers. Built only with hwloc (topo_hwloc_none.c otherwise).
 */
#include "config.h"

#include <hwloc.h>

#include "topo_tool.h"

sharc_status_t sharc_topo_read_hwloc(sharc_topo_t *topo)
{
    hwloc_topology_t ht;
    int nsockets, nnuma;

    if (hwloc_topology_init(&ht) != 0) {
        return SHARC_ERR_UNSUPPORTED;
    }
    if (hwloc_topology_load(ht) != 0) {
        hwloc_topology_destroy(ht);
        return SHARC_ERR_UNSUPPORTED;
    }
    nsockets = hwloc_get_nbobjs_by_type(ht, HWLOC_OBJ_PACKAGE);
    nnuma = hwloc_get_nbobjs_by_type(ht, HWLOC_OBJ_NUMANODE);
    /* hwloc also sees what sysfs hides in some containers; keep the larger counts */
    if (nsockets > topo->cpu.nsockets) {
        topo->cpu.nsockets = nsockets;
    }
    if (nnuma > topo->cpu.nnuma && nnuma <= SHARC_TOPO_MAX_NUMA) {
        topo->cpu.nnuma = nnuma;
    }
    hwloc_topology_destroy(ht);
    return SHARC_OK;
}
