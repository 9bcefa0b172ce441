/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_unit.c: a unit's parameters and the group's collectives. Gathering casts the f32
 * master shard into the unsharded buffer at this rank's place and all-gathers in place (f32
 * parameters gather straight from the master); the unsharded gradient buffer is handed out
 * zeroed. Every collective of the group is posted and completed here: on the host its
 * completion is waited for or tested; on CUDA a stream waits for it on the device and the
 * host sees it done one step later (sharc_shard_inflight_retire). Also the per-unit calls of
 * sharc/shard.h.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "shard/shard_group.h"

/* ---- collectives --------------------------------------------------------------------- */

/* ---- gathering ----------------------------------------------------------------------- */

sharc_status_t sharc_shard_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u, int prefetched)
{
    size_t bytes = u->padded * g->pesize, off = (size_t)g->shard_rank * u->shard * g->pesize;
    const void *own = u->master;
    sharc_status_t status = SHARC_OK;
    int stage = 0;

    /* CUDA: the engine's stream follows the caller's: the optimizer's last writes to the
     * master, and the compute that used the buffer it takes, come first. An offloaded unit:
     * its update on the host and its upload first (shard_offload_move.c) */
    if (g->cuda) {
        status = sharc_shard_after(g, g->estream, g->stream);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_offload_gather(g, u, &own, &stage);
        if (status != SHARC_OK) {
            return sharc_shard_fail(g, status, u, "the unit's update before its all-gather");
        }
    }
    if (status == SHARC_OK) {
        status = sharc_shard_buf_get(g, bytes, g->estream, &u->pbuf);
    }
    if (status != SHARC_OK) {
        sharc_error("no memory for unit %d's %zu-byte unsharded parameters", u->id, bytes);
        return status;
    }
    if (u->sbuf != NULL) { /* hpZ: from the node's secondary shards */
        status = sharc_shard_node_gather(g, u);
        own = NULL;
    } else if (stage) {
        /* this rank's block first, in the param dtype: then the all-gather runs in place.
         * (f32 gathers straight from the master: the collective copies this rank's block
         * itself, in the progress thread when there is one, not on the caller's time.) */
        own = (char *)u->pbuf + off;
        status =
            g->kern->cast((void *)own, g->pdtype, u->master, SHARC_DTYPE_F32, u->shard, g->estream);
    }
    if (status == SHARC_OK && own != NULL) {
        status = sharc_shard_post(g, u, &u->ag, SHARC_SHARD_Q_GATHER, SHARC_COLL_ALLGATHER, own,
                                  u->pbuf, u->shard, g->pdtype, SHARC_OP_SUM, g->estream);
    }
    if (status != SHARC_OK) {
        sharc_shard_buf_put(g, u->pbuf, g->estream);
        u->pbuf = NULL;
        return sharc_shard_fail(g, status, u, "all-gather");
    }
    u->pstate = SHARC_SHARD_GATHERING;
    sharc_shard_plan_gathered(&g->plan, u->id, prefetched);
    sharc_shard_stats_mem(g, u, (long long)bytes);
    return SHARC_OK;
}

sharc_status_t sharc_shard_wait_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u, void *stream)
{
    sharc_status_t status = sharc_shard_complete(g, u, &u->ag, SHARC_COLL_ALLGATHER, 1, stream);

    if (status == SHARC_OK) {
        u->pstate = SHARC_SHARD_GATHERED;
        sharc_shard_node_drop(g, u, stream); /* hpZ: its secondary shard was gathered */
    }
    return status;
}

sharc_status_t sharc_shard_release(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_status_t status = SHARC_OK;
    int unused = u->pstate == SHARC_SHARD_GATHERING;

    if (u->pstate == SHARC_SHARD_SHARDED) {
        return SHARC_OK;
    }
    if (unused) {
        /* given up before use (CUDA: the engine's stream waits for the gather, and the
         * buffer's last use ends there; else on the caller's stream, in its compute) */
        status = sharc_shard_wait_gather(g, u, g->estream);
        if (status != SHARC_OK) {
            return status;
        }
    }
    sharc_shard_buf_put(g, u->pbuf, unused ? g->estream : g->stream);
    sharc_shard_stats_mem(g, u, -(long long)(u->padded * g->pesize));
    u->pbuf = NULL;
    u->pstate = SHARC_SHARD_SHARDED;
    sharc_shard_plan_released(&g->plan, u->id);
    return SHARC_OK;
}

sharc_status_t sharc_shard_make_room(sharc_shard_group_t *g, const sharc_shard_unit_t *want)
{
    int full, victim = sharc_shard_plan_victim(&g->plan, &full);

    if (!full) {
        return SHARC_OK;
    }
    if (victim < 0) {
        sharc_error("unit %d cannot be gathered: %d units are unsharded already, the "
                    "limit (max_unsharded, SHARC_SHARD_MAX_UNSHARDED); reshard one first",
                    want->id, g->plan.alive);
        return SHARC_ERR_INVALID;
    }
    sharc_debug("unit %d, prefetched and not used yet, released for unit %d", victim, want->id);
    g->stats.evictions++;
    g->units[victim].stats.evictions++;
    sharc_shard_trace_evict(g, victim, want->id);
    return sharc_shard_release(g, &g->units[victim]);
}

/* ---- views --------------------------------------------------------------------------- */

sharc_status_t sharc_shard_open_grads(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    size_t bytes = u->padded * g->resize, end = 0;
    sharc_status_t status;
    char *buf;

    /* CUDA: zeroed on the caller's stream, which writes the gradients next */
    status = sharc_shard_buf_get(g, bytes, g->stream, &u->gbuf);
    if (status != SHARC_OK) {
        sharc_error("no memory for unit %d's %zu-byte gradients", u->id, bytes);
        return status;
    }
    buf = u->gbuf;
    if (!g->assign_grads) {
        status = sharc_shard_zero(g, buf, bytes, g->stream);
    } else { /* the caller writes every parameter: only gaps and padding, which reduce as zeros */
        for (int i = u->first_param; status == SHARC_OK && i < u->first_param + u->nparams; i++) {
            const sharc_shard_param_info_t *p = &g->params[i];

            status = sharc_shard_zero(g, buf + end * g->resize, (p->offset - end) * g->resize,
                                      g->stream);
            end = p->offset + p->count;
        }
        if (status == SHARC_OK) {
            status = sharc_shard_zero(g, buf + end * g->resize, (u->padded - end) * g->resize,
                                      g->stream);
        }
    }
    if (status != SHARC_OK) {
        sharc_shard_buf_put(g, u->gbuf, g->stream);
        u->gbuf = NULL;
        return status;
    }
    u->gstate = SHARC_SHARD_GRAD_OPEN;
    sharc_shard_stats_mem(g, u, (long long)bytes);
    return SHARC_OK;
}

sharc_status_t sharc_shard_gathers_poll(sharc_shard_group_t *g)
{
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        if (u->pstate == SHARC_SHARD_GATHERING) {
            sharc_status_t status =
                sharc_shard_complete(g, u, &u->ag, SHARC_COLL_ALLGATHER, 0, NULL);

            if (status == SHARC_OK) {
                u->pstate = SHARC_SHARD_GATHERED;
                sharc_shard_node_drop(g, u, NULL);
            } else if (status != SHARC_INPROGRESS) {
                return status;
            }
        }
    }
    return SHARC_OK;
}
