/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_none.c: checkpoints need json-c (the metadata) and xxHash (the checksums); a build
 * without either refuses them with a message saying so (the pair of shard_save.c,
 * shard_load.c and ckpt_io.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include "base/log.h"
#include "shard/shard.h"

sharc_status_t sharc_shard_save(sharc_shard_group_h g, const char *dir, uint64_t step)
{
    sharc_error("sharc_shard_save: sharc was built without json-c or xxHash (checkpoints need "
                "both)");
    return SHARC_ERR_UNSUPPORTED;
}

sharc_status_t sharc_shard_load(sharc_shard_group_h g, const char *dir, uint64_t *step_p)
{
    sharc_error("sharc_shard_load: sharc was built without json-c or xxHash (checkpoints need "
                "both)");
    return SHARC_ERR_UNSUPPORTED;
}
