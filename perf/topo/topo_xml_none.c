/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_xml_none.c: NCCL topology XML without libxml2: import and export say so (the pair of
 * topo_xml.c).
 */
#include "config.h"

#include <stdio.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "topo_tool.h"

sharc_status_t sharc_topo_parse_nccl_xml(sharc_topo_t *topo, const char *text, size_t len)
{
    sharc_error("NCCL XML import needs libxml2, which this build lacks");
    return SHARC_ERR_UNSUPPORTED;
}

sharc_status_t sharc_topo_write_nccl_xml(const sharc_topo_t *topo, FILE *out)
{
    sharc_error("NCCL XML export needs libxml2, which this build lacks");
    return SHARC_ERR_UNSUPPORTED;
}
