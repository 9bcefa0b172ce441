/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_offload_move.c: how an offloaded unit's state moves during a step, hooked into the
 * engine's gather and reduction: before a gather, the unit's host work is done and its
 * parameters are up on the device (the engine's stream waits for the upload); after a
 * reduction, its part goes down into a slot on the download stream and the host worker lands
 * it (managed: the device adds it into the managed shard, whose pages the host then reads);
 * zeroing skips the pass; a caller's read or write waits for the host's work first. The
 * upload itself is the worker's (shard_host.c), queued here as a task of its own when the
 * master changed outside a step.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <string.h>

#include "base/gpu.h"
#include "base/log.h"
#include "base/util.h"
#include "shard/engine/shard_engine.h"
#include "shard/offload/offload.h"

sharc_status_t sharc_shard_offload_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                          const void **own_p, int *stage_p)
{
    sharc_shard_ounit_t *ou = &g->off->units[u->id];
    sharc_shard_task_t t = {
        .unit = u->id, .what = SHARC_SHARD_TASK_UPLOAD, .slot = -1, .run = sharc_shard_task_upload};
    sharc_status_t status;

    *own_p = u->master;
    *stage_p = g->pdtype != SHARC_DTYPE_F32;
    if (!sharc_shard_host_unit(g, u)) {
        return SHARC_OK;
    }
    /* the unit's update (and upload) first: the gather sends what it wrote */
    status = sharc_shard_host_wait(g, u, SHARC_COLL_ALLGATHER);
    if (status != SHARC_OK || !g->cuda) {
        return status;
    }
    if (ou->where == SHARC_MEMTYPE_CUDA_MANAGED) {
        *stage_p = 1; /* the engine's stream reads the master over the link into the buffer */
        return SHARC_OK;
    }
    if (ou->dirty) { /* the master changed outside a step: up it goes, now */
        ou->dirty = 0;
        status = sharc_shard_host_queue(g, &t);
        if (status == SHARC_OK) {
            status = sharc_shard_host_wait(g, u, SHARC_COLL_ALLGATHER);
        }
    }
    /* the gather is posted after the engine's stream: that waits for the upload on the device */
    if (status == SHARC_OK) {
        status = sharc_gpu_stream_wait(g->estream, ou->up_ev);
    }
    *own_p = ou->dparam;
    *stage_p = 0;
    return status;
}

sharc_status_t sharc_shard_offload_reduced(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_shard_off_t *off = g->off;
    sharc_shard_ounit_t *ou = &off->units[u->id];
    const char *part = (const char *)u->gbuf + (size_t)g->shard_rank * u->shard * g->resize;
    sharc_shard_task_t t = {.unit = u->id,
                            .what = SHARC_SHARD_TASK_LAND,
                            .slot = -1,
                            .overwrite = u->grad_zero,
                            .scale = (g->grad_op == SHARC_OP_AVG) ? 1.0 / g->size : 1.0};
    sharc_status_t status;
    void *slot = NULL;

    if (!sharc_shard_pinned_unit(g, u)) {
        return SHARC_ERR_UNSUPPORTED;
    }
    status = sharc_shard_host_slot(g, &t.slot, &slot);
    /* the download follows the reduction (on the engine's stream by now), and the event after
     * it tells the worker the part is in the slot */
    if (status == SHARC_OK) {
        status = sharc_shard_after(g, off->down, g->estream);
    }
    if (status == SHARC_OK) {
        status = sharc_gpu_copy(slot, part, u->shard * g->resize, off->down);
    }
    if (status == SHARC_OK) {
        status = sharc_gpu_event_record(ou->land_ev, off->down);
    }
    if (status != SHARC_OK) {
        sharc_shard_host_slot_put(g, t.slot);
        return sharc_shard_fail(g, status, u, "downloading the reduced gradients");
    }
    sharc_shard_grads_release(g, u, off->down); /* the buffer's last use: the download */
    u->grad_zero = 0;
    ou->stale = 0; /* the landing writes the whole shard when it counted as zero */
    sharc_shard_adamw_task(g, u, &t);
    return sharc_shard_host_queue(g, &t);
}

sharc_status_t sharc_shard_offload_landed(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    sharc_shard_ounit_t *ou = &g->off->units[u->id];
    sharc_shard_task_t t = {.unit = u->id, .slot = -1};
    sharc_status_t status = SHARC_OK;

    ou->stale = 0; /* the accumulation wrote the shard if it counted as zero */
    if (g->cuda && !sharc_shard_host_unit(g, u)) {
        return sharc_shard_adamw_device(g, u);
    }
    if (ou->where == SHARC_MEMTYPE_CUDA_MANAGED) {
        /* the host reads the shard next: its pages there (the advice keeps them on the host,
         * the device writes through its mapping; a prefetch makes sure), after the device's
         * accumulation, which the event tells the worker */
        status = sharc_gpu_prefetch(u->grad, u->shard * sizeof(float), 1, g->estream);
        if (status == SHARC_OK) {
            status = sharc_gpu_event_record(ou->land_ev, g->estream);
        }
        t.what = SHARC_SHARD_TASK_LAND;
    }
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u, "handing the gradient shard to the host");
    }
    sharc_shard_adamw_task(g, u, &t);
    return (t.what != 0) ? sharc_shard_host_queue(g, &t) : SHARC_OK;
}

sharc_status_t sharc_shard_offload_zero(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    if (!sharc_shard_host_unit(g, u) || (!g->cuda && g->adamw == NULL)) {
        return SHARC_ERR_UNSUPPORTED;
    }
    /* counts as zero: the next landing writes the shard (an update may still be reading it) */
    u->grad_zero = 1;
    g->off->units[u->id].stale = 1;
    return SHARC_OK;
}

sharc_status_t sharc_shard_offload_touch(sharc_shard_group_t *g, sharc_shard_unit_t *u, int write)
{
    sharc_shard_ounit_t *ou = &g->off->units[u->id];
    sharc_status_t status;

    if (!sharc_shard_host_unit(g, u)) { /* the device's update queued: the caller's stream
                                         * sees it */
        return (g->cuda && g->adamw != NULL) ? sharc_shard_after(g, g->stream, g->estream)
                                             : SHARC_OK;
    }
    status = sharc_shard_host_wait(g, u, SHARC_COLL_REDUCE_SCATTER);
    if (status == SHARC_OK && ou->stale) {
        memset(u->grad, 0, u->shard * sizeof(float));
        ou->stale = 0;
    }
    if (status == SHARC_OK && write && sharc_shard_pinned_unit(g, u)) {
        /* an upload may still be reading the master: done first, and the next gather's
         * upload takes what the caller writes */
        status = sharc_gpu_stream_sync(g->off->up);
        ou->dirty = 1;
    }
    return status;
}

void sharc_shard_offload_dirty_all(sharc_shard_group_t *g)
{
    for (int i = 0; i < g->nunits; i++) {
        if (sharc_shard_pinned_unit(g, &g->units[i])) {
            g->off->units[i].dirty = 1;
        }
    }
}
