/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_exchange.c: the ranks' vote. Every rank of a group sends its status and two values to
 * every other through the bootstrap, so that a rank that failed on its own fails them all
 * together instead of leaving the others to wait: creation (the layout's agreement, the
 * shards' memory), the trace's gathering and checkpoints take it. Nothing else of the group.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include "base/log.h"
#include "shard/trace/shard_record.h"

sharc_status_t sharc_shard_exchange(sharc_shard_group_t *g, sharc_status_t mine,
                                    sharc_shard_vote_t *vote, sharc_shard_vote_t *all,
                                    const char *what)
{
    sharc_status_t status;

    vote->status = mine;
    status = sharc_boot_allgather(g->comm->boot, vote, all, sizeof(*vote));
    if (status != SHARC_OK || mine != SHARC_OK) {
        return (status != SHARC_OK) ? status : mine; /* this rank's own error is logged */
    }
    for (int r = 0; r < g->size; r++) {
        if (all[r].status != SHARC_OK) {
            sharc_error("%s failed on rank %d (%s)", what, r,
                        sharc_status_string((sharc_status_t)all[r].status));
            return SHARC_ERR_REMOTE;
        }
    }
    return SHARC_OK;
}
