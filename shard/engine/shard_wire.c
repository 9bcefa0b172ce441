/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_wire.c: what the engine sends across nodes in fewer bytes (ZeRO++): the wires of its
 * gathers and reduce-scatters, as settings (quantized by coll/; sharc_shard_post says which
 * wire a collective takes), and node-local secondary shards (hpZ, reshard_after_forward = node):
 * at a unit's forward end this rank keeps its 1/node_size of the gathered unit, and the
 * backward gathers the unit among the node's ranks from those parts, then drops them.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>
#include <string.h>

#include "base/gpu.h"
#include "base/log.h"
#include "shard/engine/shard_engine.h"

sharc_status_t sharc_shard_wire_settings(sharc_shard_group_t *g, const sharc_shard_params_t *cfg,
                                         const sharc_shard_cfg_t *k, int *hpz_p)
{
    unsigned mask = (cfg != NULL) ? cfg->field_mask : 0;
    int reshard = (mask & SHARC_SHARD_PARAM_RESHARD_AFTER_FORWARD) ? cfg->reshard_after_forward
                                                                   : k->reshard_after_forward;

    g->pwire =
        (mask & SHARC_SHARD_PARAM_PARAM_WIRE) ? cfg->param_wire : (sharc_wire_t)k->param_wire;
    g->rwire =
        (mask & SHARC_SHARD_PARAM_REDUCE_WIRE) ? cfg->reduce_wire : (sharc_wire_t)k->reduce_wire;
    g->wire_block = (mask & SHARC_SHARD_PARAM_WIRE_BLOCK) ? cfg->wire_block : (size_t)k->wire_block;
    if ((unsigned)g->pwire >= SHARC_WIRE_LAST || (unsigned)g->rwire >= SHARC_WIRE_LAST) {
        sharc_error("param_wire (%d) and reduce_wire (%d) must be sharc_wire_t values",
                    (int)g->pwire, (int)g->rwire);
        return SHARC_ERR_INVALID;
    }
    if (g->wire_block == 0 || g->wire_block > SHARC_WIRE_BLOCK_MAX) {
        sharc_error("wire_block %zu is not in 1 .. %u", g->wire_block, SHARC_WIRE_BLOCK_MAX);
        return SHARC_ERR_INVALID;
    }
    if (reshard != 0 && reshard != 1 && reshard != SHARC_SHARD_RESHARD_NODE) {
        sharc_error("reshard_after_forward must be 0, 1 or SHARC_SHARD_RESHARD_NODE, not %d",
                    reshard);
        return SHARC_ERR_INVALID;
    }
    *hpz_p = reshard == SHARC_SHARD_RESHARD_NODE;
    g->plan.reshard_after_forward = reshard != 0; /* for the schedule, hpZ reshards */
    return SHARC_OK;
}

sharc_status_t sharc_shard_node_open(sharc_shard_group_t *g)
{
    sharc_comm_h c = g->shard_comm;
    int per = c->local_size, uniform = c->size % c->nnodes == 0;
    sharc_status_t status;

    /* every rank decides alike, from the node layout all of them know */
    for (int k = 0, n; uniform && k < c->nnodes; k++) {
        n = 0;
        for (int r = 0; r < c->size; r++) {
            n += c->node_of[r] == k;
        }
        uniform = n == c->size / c->nnodes;
    }
    if (!uniform) {
        sharc_warn("reshard_after_forward = node needs as many ranks of the shard group on "
                   "every node (here %d ranks on %d nodes): resharding fully instead",
                   c->size, c->nnodes);
        return SHARC_OK;
    }
    status = sharc_comm_split(c, c->node, c->rank, &g->node_comm);
    if (status != SHARC_OK) {
        return status;
    }
    g->node_rank = g->node_comm->rank;
    g->node_size = per;
    sharc_info("hpZ: secondary shards of 1/%d of each unit, gathered within the node", per);
    return SHARC_OK;
}

void sharc_shard_node_close(sharc_shard_group_t *g)
{
    sharc_comm_destroy(g->node_comm); /* (the secondaries are pooled buffers: freed with them) */
    g->node_comm = NULL;
}

/* Elements of a unit each rank of the node keeps: the padded unit divides evenly, since
 * padded = shard * shard_size and shard_size = nodes * node_size. */
static size_t sharc_shard_node_part(const sharc_shard_group_t *g, const sharc_shard_unit_t *u)
{
    return u->padded / (size_t)g->node_size;
}

sharc_status_t sharc_shard_node_keep(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    size_t part = sharc_shard_node_part(g, u), bytes = part * g->pesize;
    const char *src = (const char *)u->pbuf + (size_t)g->node_rank * bytes;
    sharc_status_t status = SHARC_OK;

    if (u->sbuf == NULL) {
        /* CUDA: written on the caller's stream, after the forward that read the unit */
        status = sharc_shard_buf_get(g, bytes, g->stream, &u->sbuf);
        if (status != SHARC_OK) {
            sharc_error("no memory for unit %d's %zu-byte secondary shard", u->id, bytes);
            return status;
        }
        g->secondary_bytes += bytes;
        g->stats.peak_secondary_bytes =
            SHARC_MAX(g->stats.peak_secondary_bytes, g->secondary_bytes);
        u->stats.peak_secondary_bytes = bytes;
    }
    if (g->cuda) {
        status = sharc_gpu_copy(u->sbuf, src, bytes, g->stream);
    } else {
        memcpy(u->sbuf, src, bytes);
    }
    return status;
}

sharc_status_t sharc_shard_node_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    return sharc_shard_post(g, u, &u->ag, SHARC_SHARD_Q_NODE, SHARC_COLL_ALLGATHER, u->sbuf,
                            u->pbuf, sharc_shard_node_part(g, u), g->pdtype, SHARC_OP_SUM,
                            g->estream);
}

void sharc_shard_node_drop(sharc_shard_group_t *g, sharc_shard_unit_t *u, void *stream)
{
    if (u->sbuf == NULL) {
        return;
    }
    /* CUDA: its last reader, the gather, is done where @p stream waited for it */
    sharc_shard_buf_put(g, u->sbuf, stream);
    g->secondary_bytes -= sharc_shard_node_part(g, u) * g->pesize;
    u->sbuf = NULL;
}

void sharc_shard_node_drop_all(sharc_shard_group_t *g)
{
    for (int i = 0; i < g->nunits; i++) {
        if (g->units[i].sbuf != NULL && g->units[i].pstate == SHARC_SHARD_SHARDED) {
            /* CUDA: written on the caller's stream and not read since */
            sharc_shard_buf_put(g, g->units[i].sbuf, g->stream);
            g->secondary_bytes -= sharc_shard_node_part(g, &g->units[i]) * g->pesize;
            g->units[i].sbuf = NULL;
        }
    }
}
