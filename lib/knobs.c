/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * knobs.c: the library's root list of knob tables, one per layer, each declared beside the
 * code that reads it, in the order `sharc-info -c` prints them; and the public calls that
 * need the whole list: creating a configuration, printing the defaults, the values of an
 * enumerated knob. The mechanism is base's (base/cfg.c).
 */
#include "config.h"

#include <sharc/config.h>

#include "../coll/api.h"
#include "../comm/context.h"
#include "../shard/shard.h"
#include "../transport/transport.h"
#include "../base/config_int.h"
#include "../base/log.h"
#include "../base/log_cfg.h"
#include "../base/util.h"
#include "../boot/boot.h"

static const sharc_cfg_table_t *const sharc_knobs[] = {
    &sharc_log_cfg_table,    /* logging (base) */
    &sharc_boot_cfg_table,   /* bootstrap (boot) */
    &sharc_tp_cfg_table,     /* transport selection (transport/registry.c) */
    &sharc_tp_shm_cfg_table, /* transport/shm */
    &sharc_tp_ib_cfg_table,  /* transport/ib */
    &sharc_coll_cfg_table,   /* collectives (coll) */
    &sharc_core_cfg_table,   /* communicators (core) */
    &sharc_shard_cfg_table,  /* sharding engine (shard) */
};

sharc_status_t sharc_config_create(unsigned flags, sharc_config_h *config_p)
{
    return sharc_cfg_create(sharc_knobs, SHARC_ARRAY_SIZE(sharc_knobs), flags, config_p);
}

void sharc_config_print(sharc_config_h config, FILE *stream, unsigned flags)
{
    sharc_cfg_print(sharc_knobs, SHARC_ARRAY_SIZE(sharc_knobs), config, stream, flags);
}

const char *sharc_config_choice(const char *name, int index)
{
    return sharc_cfg_choice(sharc_knobs, SHARC_ARRAY_SIZE(sharc_knobs), name, index);
}
