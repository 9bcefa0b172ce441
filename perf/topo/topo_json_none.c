/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_json_none.c: sharc-topo built without json-c: --json says so (the pair of
 * topo_json.c).
 */
#include "config.h"

#include <stdio.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "topo_tool.h"

sharc_status_t sharc_topo_print_json(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                     FILE *out)
{
    sharc_error("JSON output needs json-c, which this build lacks");
    return SHARC_ERR_UNSUPPORTED;
}

sharc_status_t sharc_topo_print_doctor_json(const sharc_topo_finding_t *findings, int n, FILE *out)
{
    sharc_error("JSON output needs json-c, which this build lacks");
    return SHARC_ERR_UNSUPPORTED;
}
