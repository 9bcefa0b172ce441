/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_cfg.h: the verbs transport's knobs (SHARC_IB_*), parsed. Free of verbs' types: the
 * table (ib_cfg.c) is built into every library, so that the knobs are listed and accepted
 * alike with or without verbs.
 */
#ifndef SHARC_TP_IB_CFG_H
#define SHARC_TP_IB_CFG_H

#include <stddef.h>

#include "../../base/config_int.h"

typedef struct {
    const char *hca;  /* device[:port], "" for the first active */
    int gid_index;    /* on RoCE: GID index, -1 for automatic */
    int timeout;      /* QP ACK timeout, 4.096 us * 2^timeout per try */
    size_t zcopy_min; /* messages this large go zero-copy (0: never) */
    size_t reg_cache; /* bytes the registration cache keeps pinned */
} sharc_tp_ib_cfg_t;

static inline const sharc_tp_ib_cfg_t *sharc_tp_ib_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_tp_ib_cfg_t *)sharc_cfg_get(cfg, &sharc_tp_ib_cfg_table);
}

#endif
