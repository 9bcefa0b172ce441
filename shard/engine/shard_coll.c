/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_coll.c: the group's collectives, posted and completed in one place: the entry check of
 * every call, failing the group, posting (timed by events on CUDA), completing (the host
 * waits or tests; on CUDA a stream waits on the device and the host sees the request done a
 * step later, sharc_shard_inflight_retire), and draining everything at destroy. A failure
 * also stops the host's work on offloaded units, through the group's host_abort hook (offload
 * sits above this file). The rest of the engine calls these and never looks inside a request
 * (coll/api.h).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_SHARD

#include <stdlib.h>

#include "base/log.h"
#include "base/util.h"
#include "shard/engine/shard_engine.h"
#include "shard/trace/shard_record.h"

sharc_status_t sharc_shard_enter(sharc_shard_group_t *g, int unit, const char *what)
{
    if (g == NULL) {
        sharc_error("%s: group is NULL", what);
        return SHARC_ERR_INVALID;
    }
    if (unit != SHARC_SHARD_ALL && (unit < 0 || unit >= g->nunits)) {
        sharc_error("%s: unit %d is out of range (the group has %d)", what, unit, g->nunits);
        return SHARC_ERR_INVALID;
    }
    if (g->failed != SHARC_OK) {
        sharc_error("%s: the group's communication failed earlier (%s)", what,
                    sharc_status_string(g->failed));
        return g->failed;
    }
    return SHARC_OK;
}

sharc_status_t sharc_shard_enter_unit(sharc_shard_group_t *g, int unit, const char *what,
                                      sharc_shard_unit_t **u_p)
{
    sharc_status_t status = sharc_shard_enter(g, unit, what);

    if (status == SHARC_OK) {
        *u_p = &g->units[unit];
    }
    return status;
}

static const char *sharc_shard_op_name(sharc_coll_type_t type)
{
    switch (type) {
    case SHARC_COLL_ALLGATHER: return "all-gather";
    case SHARC_COLL_REDUCE_SCATTER: return "reduce-scatter";
    default: return "all-reduce across replicas";
    }
}

/* The bytes a collective of the unit moves, for the statistics: its unsharded buffer. */
static size_t sharc_shard_op_bytes(const sharc_shard_group_t *g, const sharc_shard_unit_t *u,
                                   sharc_coll_type_t type)
{
    switch (type) {
    case SHARC_COLL_ALLGATHER: return u->padded * g->pesize;
    case SHARC_COLL_REDUCE_SCATTER: return u->padded * g->resize;
    default: return u->shard * g->resize;
    }
}

sharc_status_t sharc_shard_fail(sharc_shard_group_t *g, sharc_status_t status,
                                const sharc_shard_unit_t *u, const char *what)
{
    if (g->failed == SHARC_OK) {
        if (u != NULL) {
            sharc_error("%s of unit %d failed (%s); the group stops", what, u->id,
                        sharc_status_string(status));
        } else {
            sharc_error("%s failed (%s); the group stops", what, sharc_status_string(status));
        }
        g->failed = status;
        if (g->host_abort != NULL) { /* the host's work queued goes, what runs ends */
            g->host_abort(g);
        }
    }
    return status;
}

/* The communicator behind a queue. */
static sharc_comm_h sharc_shard_queue_comm(const sharc_shard_group_t *g, sharc_shard_queue_t queue)
{
    switch (queue) {
    case SHARC_SHARD_Q_GATHER: return g->shard_comm;
    case SHARC_SHARD_Q_REDUCE: return g->reduce_comm;
    case SHARC_SHARD_Q_NODE: return g->node_comm;
    default: return g->replica_comm;
    }
}

/* The wire of a collective the group posts on @p queue (its gathers' and reduce-scatters'). */
static sharc_wire_t sharc_shard_wire_of(const sharc_shard_group_t *g, sharc_shard_queue_t queue,
                                        sharc_coll_type_t type)
{
    if (queue == SHARC_SHARD_Q_GATHER && type == SHARC_COLL_ALLGATHER) {
        return g->pwire;
    }
    if (queue == SHARC_SHARD_Q_REDUCE && type == SHARC_COLL_REDUCE_SCATTER) {
        return g->rwire;
    }
    return SHARC_WIRE_FULL; /* HSDP's all-reduces; the node's gathers of secondary shards */
}

sharc_status_t sharc_shard_post(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                sharc_shard_coll_t *op, sharc_shard_queue_t queue,
                                sharc_coll_type_t type, const void *sendbuf, void *recvbuf,
                                size_t count, sharc_dtype_t dtype, sharc_op_t rop, void *stream)
{
    sharc_coll_args_t a = {.type = type,
                           .sendbuf = sendbuf,
                           .recvbuf = recvbuf,
                           .count = count,
                           .dtype = dtype,
                           .op = rop,
                           .stream = stream,
                           .wire = sharc_shard_wire_of(g, queue, type),
                           .block = g->wire_block};
    sharc_comm_h comm = sharc_shard_queue_comm(g, queue);
    int lane = (queue == SHARC_SHARD_Q_REDUCE) ? g->reduce_lane : 0;
    void *e0 = g->cuda ? sharc_shard_stats_mark(g, stream) : NULL, *e1 = NULL;
    sharc_status_t status;

    op->t_post = sharc_time_now();
    op->timed = 0;
    /* (the trace's track: reductions without a queue of their own share the gathers') */
    op->queue = (comm == g->shard_comm && lane == 0) ? SHARC_SHARD_Q_GATHER : queue;
    status = sharc_coll_post_lane(comm->coll, &a, lane, &op->req);
    if (status != SHARC_OK) {
        op->req = NULL;
        sharc_shard_stats_evspan(g, u, e0, NULL, 1); /* uncounted */
        return sharc_shard_fail(g, status, u, sharc_shard_op_name(type));
    }
    if (e0 != NULL) {
        /* a collective on the device: the timing stream marks its end (a staged one is
         * timed on the host, as the host's are) */
        if (sharc_coll_request_on_device(op->req) &&
            sharc_coll_request_wait_stream(op->req, g->tstream) == SHARC_OK) {
            e1 = sharc_shard_stats_mark(g, g->tstream);
        }
        op->timed = e1 != NULL;
        sharc_shard_stats_evspan(g, u, e0, e1, 1);
    }
    return SHARC_OK;
}

/* CUDA: a request the device follows, for the host to see done a step later. */
static void sharc_shard_inflight_add(sharc_shard_group_t *g, sharc_request_h req)
{
    if (sharc_array_grow(&g->inflight.req, &g->inflight.cap, g->inflight.n,
                         sizeof(*g->inflight.req), 64) != 0) { /* no room: see it done now */
        sharc_request_wait(req);
        sharc_request_free(req);
        return;
    }
    g->inflight.req[g->inflight.n++] = req;
}

/* Host: a request seen complete, to free at the step's end (at once without room). */
static void sharc_shard_retire(sharc_shard_group_t *g, sharc_request_h req)
{
    if (sharc_array_grow(&g->retired, &g->retired_cap, g->nretired, sizeof(*g->retired), 64) != 0) {
        sharc_request_free(req);
        return;
    }
    g->retired[g->nretired++] = req;
}

void sharc_shard_free_retired(sharc_shard_group_t *g)
{
    for (size_t i = 0; i < g->nretired; i++) {
        sharc_request_free(g->retired[i]);
    }
    g->nretired = 0;
}

/* Wait for every request of @p list on the host and free it; the first error. */
static sharc_status_t sharc_shard_wait_all(sharc_request_h *list, size_t *n)
{
    sharc_status_t status = SHARC_OK;

    for (size_t i = 0; i < *n; i++) {
        sharc_status_t s = sharc_request_wait(list[i]);

        if (status == SHARC_OK) {
            status = s;
        }
        sharc_request_free(list[i]);
    }
    *n = 0;
    return status;
}

sharc_status_t sharc_shard_inflight_retire(sharc_shard_group_t *g, int all)
{
    sharc_status_t status = sharc_shard_wait_all(g->inflight_last.req, &g->inflight_last.n);
    sharc_shard_reqs_t done = g->inflight_last;

    if (all) {
        sharc_status_t s = sharc_shard_wait_all(g->inflight.req, &g->inflight.n);

        return (status == SHARC_OK) ? s : status;
    }
    g->inflight_last = g->inflight; /* this step's wait a step; the emptied list is reused */
    g->inflight = done;
    return status;
}

sharc_status_t sharc_shard_complete(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                    sharc_shard_coll_t *op, sharc_coll_type_t type, int block,
                                    void *stream)
{
    sharc_request_h req = op->req;
    double t0 = sharc_time_now();
    /* a collective that runs on the device: a stream waits for it, not the host */
    int device = g->cuda && block && sharc_coll_request_on_device(req);
    sharc_status_t status;

    if (!device) { /* the host's, or staged through the host */
        status = block ? sharc_request_wait(req) : sharc_request_test(req);
        if (status == SHARC_INPROGRESS) {
            return status;
        }
        if (block) {
            sharc_shard_stats_exposed(g, u, type, t0);
        }
    } else if (stream == g->stream) { /* exposed: how long the caller's stream waits */
        void *e0 = sharc_shard_stats_mark(g, stream);

        status = sharc_coll_request_wait_stream(req, stream);
        sharc_shard_stats_evspan(g, u, e0, sharc_shard_stats_mark(g, stream), 0);
    } else {
        status = sharc_coll_request_wait_stream(req, stream);
    }
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u, sharc_shard_op_name(type));
    }
    /* timed by events, or on the device and not seen done by the host: no host interval */
    sharc_shard_stats_op(g, u, type, op->t_post,
                         (op->timed || device) ? -1.0 : sharc_coll_request_done_time(req),
                         sharc_shard_op_bytes(g, u, type));
    if (g->trace != NULL) {
        sharc_shard_trace_op(g, u, op, type, (op->timed || device) ? NULL : req,
                             sharc_shard_op_bytes(g, u, type));
    }
    op->req = NULL;
    if (device && sharc_coll_request_stream_waited(req)) {
        sharc_shard_inflight_add(g, req); /* the host sees it done at the next finish */
    } else if (!device) {
        sharc_shard_retire(g, req); /* complete: nothing of it is in flight */
    } else {
        sharc_request_free(req);
    }
    return SHARC_OK;
}

void sharc_shard_drain(sharc_shard_group_t *g)
{
    /* on the host first, each bounded by the timeout (which aborts a stuck device
     * collective), then the streams: a dead peer ends the wait, not the process */
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];
        sharc_shard_coll_t *ops[] = {&u->ag, &u->rs, &u->ar};

        for (size_t k = 0; k < SHARC_ARRAY_SIZE(ops); k++) {
            if (ops[k]->req != NULL) { /* a failed request still completes before it is freed */
                sharc_request_wait(ops[k]->req);
                sharc_request_free(ops[k]->req);
                ops[k]->req = NULL;
            }
        }
        u->pbuf = u->gbuf = NULL; /* the group's buffers, freed with it */
    }
    sharc_shard_free_retired(g);
    sharc_shard_inflight_retire(g, 1);
    sharc_shard_quiesce(g);
    g->rhead = g->rtail = NULL;
    g->plan.alive = 0;
}
