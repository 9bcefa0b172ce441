/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_cfg.c: the logging knobs' table (log_cfg.h). The logger is log.c.
 */
#include "config.h"

#include <stddef.h>

#include "log.h"
#include "log_cfg.h"
#include "util.h"

static const sharc_cfg_field_t sharc_log_cfg_fields[] = {
    {.name = "LOG_LEVEL",
     .dflt = "warn",
     .type = SHARC_CFG_ENUM,
     .offset = offsetof(sharc_log_cfg_t, level),
     .names = sharc_log_level_names,
     .nnames = SHARC_LOG_LAST,
     .doc = "Log level: error, warn, info, debug or trace."},
    {.name = "LOG_SUBSYS",
     .dflt = "all",
     .type = SHARC_CFG_SUBSYS,
     .offset = offsetof(sharc_log_cfg_t, subsys),
     .doc = "Subsystems to log: all, a list of core,boot,tp,coll,shard,topo,kern,perf, or ^list "
            "for all but those. Errors are always logged."},
    {.name = "LOG_FILE",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_log_cfg_t, file),
     .doc = "Log to this file instead of stderr; %r is replaced by the rank, %h by the host name, "
            "%p by the process id (e.g. sharc.%h.%r.log)."},
};

const sharc_cfg_table_t sharc_log_cfg_table =
    SHARC_CFG_TABLE("logging (base)", sharc_log_cfg_fields, sharc_log_cfg_t);
