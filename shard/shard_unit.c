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

#include "../src/base/log.h"
#include "../src/base/util.h"
#include "shard.h"

/* ---- collectives --------------------------------------------------------------------- */

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
    }
    return status;
}

sharc_status_t sharc_shard_post(sharc_shard_group_t *g, sharc_shard_unit_t *u, sharc_shard_op_t *op,
                                sharc_comm_h comm, sharc_coll_type_t type, const void *sendbuf,
                                void *recvbuf, size_t count, sharc_dtype_t dtype, sharc_op_t rop,
                                void *stream)
{
    sharc_coll_args_t a = {type, sendbuf, recvbuf, count, dtype, rop, 0, stream};
    void *e0 = g->cuda ? sharc_shard_stats_mark(g, stream) : NULL, *e1 = NULL;
    sharc_status_t status;

    op->t_post = sharc_time_now();
    op->timed = 0;
    status = sharc_coll_start(comm, &a, &op->req);
    if (status != SHARC_OK) {
        op->req = NULL;
        sharc_shard_stats_evspan(g, u, e0, NULL, 1); /* uncounted */
        return sharc_shard_fail(g, status, u, sharc_shard_op_name(type));
    }
    if (e0 != NULL) {
        /* a collective on the device: the timing stream marks its end (a staged one is
         * timed on the host, as the host's are) */
        if (op->req->algo == &sharc_coll_backend &&
            sharc_request_wait_stream(op->req, g->tstream) == SHARC_OK) {
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
    if (g->ninflight == g->inflight_cap) {
        size_t cap = g->inflight_cap ? 2 * g->inflight_cap : 64;
        sharc_request_h *list = realloc(g->inflight, cap * sizeof(*list));

        if (list == NULL) { /* no room to remember it: see it done now */
            sharc_request_wait(req);
            sharc_request_free(req);
            return;
        }
        g->inflight = list;
        g->inflight_cap = cap;
    }
    g->inflight[g->ninflight++] = req;
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
    sharc_status_t status = sharc_shard_wait_all(g->inflight_last, &g->ninflight_last);
    sharc_request_h *list = g->inflight_last;
    size_t cap = g->inflight_last_cap;

    if (all) {
        sharc_status_t s = sharc_shard_wait_all(g->inflight, &g->ninflight);

        return (status == SHARC_OK) ? s : status;
    }
    g->inflight_last = g->inflight;
    g->inflight_last_cap = g->inflight_cap;
    g->ninflight_last = g->ninflight;
    g->inflight = list;
    g->inflight_cap = cap;
    g->ninflight = 0;
    return status;
}

sharc_status_t sharc_shard_complete(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                    sharc_shard_op_t *op, sharc_coll_type_t type, int block,
                                    void *stream)
{
    sharc_request_h req = op->req;
    double t0 = sharc_time_now();
    /* a collective that runs on the device: a stream waits for it, not the host */
    int device = g->cuda && block && req->algo == &sharc_coll_backend;
    sharc_status_t status;

    if (!device) { /* the host's, or staged through the host */
        status = block ? sharc_request_wait(req) : sharc_request_test(req);
        if (status == SHARC_INPROGRESS) {
            return status;
        }
        if (block) {
            sharc_shard_stats_exposed(g, u, t0);
        }
    } else if (stream == g->stream) { /* exposed: how long the caller's stream waits */
        void *e0 = sharc_shard_stats_mark(g, stream);

        status = sharc_request_wait_stream(req, stream);
        sharc_shard_stats_evspan(g, u, e0, sharc_shard_stats_mark(g, stream), 0);
    } else {
        status = sharc_request_wait_stream(req, stream);
    }
    if (status != SHARC_OK) {
        return sharc_shard_fail(g, status, u, sharc_shard_op_name(type));
    }
    /* timed by events, or on the device and not seen done by the host: no host interval */
    sharc_shard_stats_op(g, u, type, op->t_post, (op->timed || device) ? -1.0 : req->t_done,
                         sharc_shard_op_bytes(g, u, type));
    op->req = NULL;
    if (device && req->stream_waited) {
        sharc_shard_inflight_add(g, req); /* the host sees it done at the next finish */
    } else {
        sharc_request_free(req);
    }
    return SHARC_OK;
}

/* ---- gathering ----------------------------------------------------------------------- */

sharc_status_t sharc_shard_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u)
{
    size_t bytes = u->padded * g->pesize, off = (size_t)g->shard_rank * u->shard * g->pesize;
    const void *own = u->master;
    sharc_status_t status = SHARC_OK;

    /* CUDA: the engine's stream follows the caller's: the optimizer's last writes to the
     * master, and the compute that used the buffer it takes, come first */
    if (g->cuda) {
        status = sharc_shard_after(g, g->estream, g->stream);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_buf_get(g, bytes, g->estream, &u->pbuf);
    }
    if (status != SHARC_OK) {
        sharc_error("no memory for unit %d's %zu-byte unsharded parameters", u->id, bytes);
        return status;
    }
    if (g->pdtype != SHARC_DTYPE_F32) {
        /* this rank's block first, in the param dtype: then the all-gather runs in place.
         * (f32 gathers straight from the master: the collective copies this rank's block
         * itself, in the progress thread when there is one, not on the caller's time.) */
        own = (char *)u->pbuf + off;
        status =
            g->kern->cast((void *)own, g->pdtype, u->master, SHARC_DTYPE_F32, u->shard, g->estream);
    }
    if (status == SHARC_OK) {
        status = sharc_shard_post(g, u, &u->ag, g->shard_comm, SHARC_COLL_ALLGATHER, own, u->pbuf,
                                  u->shard, g->pdtype, SHARC_OP_SUM, g->estream);
    }
    if (status != SHARC_OK) {
        sharc_shard_buf_put(g, u->pbuf, 1);
        u->pbuf = NULL;
        return sharc_shard_fail(g, status, u, "all-gather");
    }
    u->pstate = SHARC_SHARD_GATHERING;
    g->alive++;
    sharc_shard_stats_mem(g, u, (long long)bytes);
    return SHARC_OK;
}

/* The unit's all-gather, done for @p stream (CUDA) or the host: it is GATHERED. */
static sharc_status_t sharc_shard_wait_gather(sharc_shard_group_t *g, sharc_shard_unit_t *u,
                                              void *stream)
{
    sharc_status_t status = sharc_shard_complete(g, u, &u->ag, SHARC_COLL_ALLGATHER, 1, stream);

    if (status == SHARC_OK) {
        u->pstate = SHARC_SHARD_GATHERED;
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
    sharc_shard_buf_put(g, u->pbuf, unused);
    sharc_shard_stats_mem(g, u, -(long long)(u->padded * g->pesize));
    u->pbuf = NULL;
    u->pstate = SHARC_SHARD_SHARDED;
    u->prefetched = 0;
    g->alive--;
    return SHARC_OK;
}

/*
 * Make room for one more unsharded unit: when max_unsharded are out, release a unit that was
 * prefetched and not used yet (the last one issued: it is needed last).
 */
static sharc_status_t sharc_shard_make_room(sharc_shard_group_t *g, const sharc_shard_unit_t *want)
{
    sharc_shard_unit_t *victim = NULL;

    if (g->alive < g->max_unsharded) {
        return SHARC_OK;
    }
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        if (u->pstate != SHARC_SHARD_SHARDED && u->prefetched && !u->in_use &&
            (victim == NULL || u->ag.t_post > victim->ag.t_post)) {
            victim = u;
        }
    }
    if (victim == NULL) {
        sharc_error("unit %d cannot be gathered: %d units are unsharded already, the "
                    "limit (max_unsharded, SHARC_SHARD_MAX_UNSHARDED); reshard one first",
                    want->id, g->alive);
        return SHARC_ERR_INVALID;
    }
    sharc_debug("unit %d, prefetched and not used yet, released for unit %d", victim->id, want->id);
    g->stats.evictions++;
    victim->stats.evictions++;
    return sharc_shard_release(g, victim);
}

sharc_status_t sharc_shard_unshard(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_unshard");
    sharc_shard_unit_t *u;

    if (status != SHARC_OK) {
        return status;
    }
    u = &g->units[unit];
    if (u->pstate != SHARC_SHARD_SHARDED) {
        return sharc_shard_poll(g);
    }
    status = sharc_shard_make_room(g, u);
    return (status == SHARC_OK) ? sharc_shard_gather(g, u) : status;
}

sharc_status_t sharc_shard_wait(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_wait");
    sharc_shard_unit_t *u;

    if (status != SHARC_OK) {
        return status;
    }
    u = &g->units[unit];
    if (u->pstate == SHARC_SHARD_SHARDED) {
        sharc_error("sharc_shard_wait: unit %d is not being gathered (sharc_shard_unshard first)",
                    unit);
        return SHARC_ERR_INVALID;
    }
    if (u->pstate == SHARC_SHARD_GATHERING) {
        status = sharc_shard_wait_gather(g, u, g->stream); /* CUDA: the caller's stream waits */
    }
    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

sharc_status_t sharc_shard_reshard(sharc_shard_group_h g, int unit)
{
    sharc_status_t status = sharc_shard_enter(g, unit, "sharc_shard_reshard");

    if (status == SHARC_OK) {
        g->units[unit].in_use = 0;
        status = sharc_shard_release(g, &g->units[unit]);
    }
    return status;
}

sharc_status_t sharc_shard_poll(sharc_shard_group_t *g)
{
    sharc_status_t status;

    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];

        if (u->pstate == SHARC_SHARD_GATHERING) {
            status = sharc_shard_complete(g, u, &u->ag, SHARC_COLL_ALLGATHER, 0, NULL);
            if (status == SHARC_OK) {
                u->pstate = SHARC_SHARD_GATHERED;
            } else if (status != SHARC_INPROGRESS) {
                return status;
            }
        }
    }
    status = sharc_shard_reduce_poll(g);
    return (status == SHARC_OK) ? g->failed : status;
}

sharc_status_t sharc_shard_progress(sharc_shard_group_h g)
{
    sharc_status_t status = sharc_shard_enter(g, SHARC_SHARD_ALL, "sharc_shard_progress");

    return (status == SHARC_OK) ? sharc_shard_poll(g) : status;
}

void sharc_shard_drain(sharc_shard_group_t *g)
{
    /* on the host first, each bounded by the timeout (which aborts a stuck device
     * collective), then the streams: a dead peer ends the wait, not the process */
    for (int i = 0; i < g->nunits; i++) {
        sharc_shard_unit_t *u = &g->units[i];
        sharc_shard_op_t *ops[] = {&u->ag, &u->rs, &u->ar};

        for (size_t k = 0; k < SHARC_ARRAY_SIZE(ops); k++) {
            if (ops[k]->req != NULL) { /* a failed request still completes before it is freed */
                sharc_request_wait(ops[k]->req);
                sharc_request_free(ops[k]->req);
                ops[k]->req = NULL;
            }
        }
        u->pbuf = u->gbuf = NULL; /* the group's buffers, freed with it */
    }
    sharc_shard_inflight_retire(g, 1);
    sharc_shard_quiesce(g);
    g->rhead = g->rtail = NULL;
    g->alive = 0;
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
        sharc_shard_buf_put(g, u->gbuf, 0);
        u->gbuf = NULL;
        return status;
    }
    u->gstate = SHARC_SHARD_GRAD_OPEN;
    sharc_shard_stats_mem(g, u, (long long)bytes);
    return SHARC_OK;
}

/* Parameter @p index and its unit, for a view call (@p what). */
static sharc_status_t sharc_shard_param_unit(sharc_shard_group_t *g, int index, void **ptr_p,
                                             const char *what, const sharc_shard_param_info_t **p_p,
                                             sharc_shard_unit_t **u_p)
{
    if (g == NULL || index < 0 || index >= g->nparams || ptr_p == NULL) {
        sharc_error("%s: no group or output, or parameter %d out of range", what, index);
        return SHARC_ERR_INVALID;
    }
    *p_p = &g->params[index];
    *u_p = &g->units[(*p_p)->unit];
    return SHARC_OK;
}

sharc_status_t sharc_shard_param_ptr(sharc_shard_group_h g, int index, void **ptr_p)
{
    const sharc_shard_param_info_t *p;
    sharc_shard_unit_t *u;
    sharc_status_t status =
        sharc_shard_param_unit(g, index, ptr_p, "sharc_shard_param_ptr", &p, &u);

    if (status != SHARC_OK) {
        return status;
    }
    if (u->pstate != SHARC_SHARD_GATHERED) {
        sharc_error("sharc_shard_param_ptr: '%s' (unit %d) is not gathered%s", p->name, u->id,
                    u->pstate == SHARC_SHARD_GATHERING ? " yet (sharc_shard_wait first)" : "");
        return SHARC_ERR_INVALID;
    }
    *ptr_p = (char *)u->pbuf + p->offset * g->pesize;
    return SHARC_OK;
}

sharc_status_t sharc_shard_grad_ptr(sharc_shard_group_h g, int index, void **ptr_p)
{
    const sharc_shard_param_info_t *p;
    sharc_shard_unit_t *u;
    sharc_status_t status = sharc_shard_param_unit(g, index, ptr_p, "sharc_shard_grad_ptr", &p, &u);

    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_shard_settle_grads(g, u); /* the last micro-batch's, still reducing */
    if (status != SHARC_OK) {
        return status;
    }
    if (u->gstate == SHARC_SHARD_GRAD_NONE) {
        if (u->pstate != SHARC_SHARD_GATHERED) {
            sharc_error("sharc_shard_grad_ptr: '%s' (unit %d) is not gathered: gradients come "
                        "from a backward, between the unit's gather and its reshard",
                        p->name, u->id);
            return SHARC_ERR_INVALID;
        }
        status = sharc_shard_open_grads(g, u);
        if (status != SHARC_OK) {
            return status;
        }
    }
    *ptr_p = (char *)u->gbuf + p->offset * g->resize;
    return SHARC_OK;
}
