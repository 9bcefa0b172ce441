/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_cfg.h: the logging knobs (SHARC_LOG_LEVEL, _SUBSYS, _FILE): their table and parsed
 * struct, which a context's creation reads and applies (sharc_log_configure). Apart from the
 * logger (log.h), which the configuration's own parser logs through.
 */
#ifndef SHARC_LOG_CFG_H
#define SHARC_LOG_CFG_H

#include "config_int.h"

/* The logging knobs (SHARC_LOG_*), applied process-wide by a context's creation. */
typedef struct {
    int level;        /* sharc_log_level_t */
    unsigned subsys;  /* bit mask of sharc_subsys_t */
    const char *file; /* "" for stderr */
} sharc_log_cfg_t;

extern SHARC_HIDDEN const sharc_cfg_table_t sharc_log_cfg_table;

static inline const sharc_log_cfg_t *sharc_log_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_log_cfg_t *)sharc_cfg_get(cfg, &sharc_log_cfg_table);
}

#endif
