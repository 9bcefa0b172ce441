/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendrecv_post.c: posting the public sends and receives (sharc/p2p.h): the checks on the
 * calling rank, routing (the point-to-point transport for host buffers; the CUDA backend
 * for CUDA buffers, which are not staged), the task and its post, and the groups that issue
 * sends and receives on CUDA buffers together. The tasks themselves are sendrecv.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <stdlib.h>

#include <sharc/p2p.h>

#include "../base/gpu.h"
#include "../base/log.h"
#include "../base/util.h"
#include "coll.h"

/* The checks on the calling rank: a bad call fails here, and nothing is sent. */
static sharc_status_t sharc_coll_p2p_check(const sharc_coll_comm_t *cc,
                                           const sharc_coll_p2p_args_t *a, const char *name)
{
    size_t esize = sharc_dtype_size(a->dtype);

    if (esize == 0) {
        sharc_error("%s: dtype %d is not a sharc_dtype_t", name, (int)a->dtype);
        return SHARC_ERR_INVALID;
    }
    if ((a->peer < 0 || a->peer >= cc->size) && (a->is_send || a->peer != SHARC_ANY_SOURCE)) {
        sharc_error("%s: peer %d is not a rank of this %d-rank communicator%s", name, a->peer,
                    cc->size, a->is_send ? "" : " (nor SHARC_ANY_SOURCE)");
        return SHARC_ERR_INVALID;
    }
    if (a->tag < 0) {
        sharc_error("%s: tag %d is negative: tags are 0 .. %d (SHARC_TAG_MAX)", name, a->tag,
                    SHARC_TAG_MAX);
        return SHARC_ERR_INVALID;
    }
    if (a->count > SIZE_MAX / esize) {
        sharc_error("%s: %zu elements of %s overflow the address space", name, a->count,
                    sharc_dtype_name(a->dtype));
        return SHARC_ERR_INVALID;
    }
    if (a->buf == NULL && a->count > 0) {
        sharc_error("%s: buf is NULL with %zu elements", name, a->count);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

/* Host buffers: the point-to-point transport. */
static sharc_status_t sharc_coll_p2p_route_host(const sharc_coll_comm_t *cc,
                                                const sharc_coll_p2p_args_t *a, const char *name,
                                                const sharc_coll_algo_t **algo_p)
{
    if (cc->tp_ops == NULL) {
        sharc_error("%s: this communicator of %d ranks has no point-to-point transport "
                    "(SHARC_TRANSPORT, and was sharc built with UCX?)",
                    name, cc->size);
        return SHARC_ERR_UNSUPPORTED;
    }
    *algo_p = a->is_send ? &sharc_coll_send_host : &sharc_coll_recv_host;
    return SHARC_OK;
}

/* CUDA buffers: the CUDA backend's sends and receives (NCCL's), or a refusal. */
static sharc_status_t sharc_coll_p2p_route_device(const sharc_coll_comm_t *cc,
                                                  const sharc_coll_p2p_args_t *a, const char *name,
                                                  const sharc_coll_algo_t **algo_p)
{
    if (a->peer == SHARC_ANY_SOURCE) {
        sharc_error("recv from SHARC_ANY_SOURCE into a CUDA buffer: NCCL receives from one named "
                    "peer; name the peer, or receive into host memory");
        return SHARC_ERR_UNSUPPORTED;
    }
    if (cc->cuda_ops != NULL) {
        *algo_p = &sharc_coll_p2p_device;
        return SHARC_OK;
    }
    if (cc->cuda_failed != SHARC_OK) {
        sharc_error("%s on a CUDA buffer: SHARC_CUDA_BACKEND=nccl, but NCCL could not be opened "
                    "for this communicator (%s)",
                    name, sharc_status_string(cc->cuda_failed));
        return cc->cuda_failed;
    }
    sharc_error("%s on a CUDA buffer needs NCCL (this communicator has none: sharc built "
                "without it, SHARC_CUDA_BACKEND=staged, or a rank could not open it); sends and "
                "receives are not staged through host memory: use a host buffer",
                name);
    return SHARC_ERR_UNSUPPORTED;
}

/* Does @p a go to the CUDA backend (NCCL) rather than the point-to-point transport? A
 * message with data goes by its buffer's memory. One of no data goes by nothing of its own:
 * whatever its buffer (NULL on one rank, a pointer into CUDA memory on its peer: an empty torch
 * tensor), it takes the transport when the communicator has one, so that both ranks take the
 * same path (NCCL and the transport never match each other's messages). */
static int sharc_coll_p2p_on_device(const sharc_coll_comm_t *cc, const sharc_coll_p2p_args_t *a)
{
    if (a->count > 0) {
        return sharc_gpu_memtype(a->buf) != SHARC_MEMTYPE_HOST;
    }
    return cc->tp_ops == NULL && cc->cuda_ops != NULL;
}

/* Inside an open group, messages with data all on host memory or all on CUDA buffers: a group
 * is one NCCL group or none, and a rank whose peer put the same exchange on the other kind
 * of memory would wait for it until SHARC_TIMEOUT; refused at once instead. */
static sharc_status_t sharc_coll_group_kind(sharc_coll_comm_t *cc, const sharc_coll_p2p_args_t *a,
                                            int device, const char *name)
{
    int kind = device ? 2 : 1;

    if (cc->group_depth == 0 || a->count == 0) {
        return SHARC_OK;
    }
    if (cc->group_kind != 0 && cc->group_kind != kind) {
        sharc_error("%s of %zu %s %s peer %d: a %s buffer in a group of sends and receives on %s "
                    "(sharc_p2p_group_start): a group takes one kind of memory; post the others "
                    "in a group of their own",
                    name, a->count, sharc_dtype_name(a->dtype), a->is_send ? "to" : "from", a->peer,
                    device ? "CUDA" : "host", device ? "host memory" : "CUDA buffers");
        return SHARC_ERR_INVALID;
    }
    cc->group_kind = kind;
    return SHARC_OK;
}

/* A NEW task for @p a on @p cc, with its algorithm; NULL: no memory. */
static sharc_coll_task_t *sharc_coll_p2p_task(sharc_coll_comm_t *cc, const sharc_coll_p2p_args_t *a,
                                              const sharc_coll_algo_t *algo)
{
    sharc_coll_args_t ca = {.type = SHARC_COLL_LAST, /* not a collective */
                            .sendbuf = a->is_send ? a->buf : NULL,
                            .recvbuf = a->is_send ? NULL : a->buf,
                            .count = a->count,
                            .dtype = a->dtype,
                            .stream = a->stream};
    sharc_coll_task_t *task = sharc_coll_task_new(cc, &ca, 0);

    if (task != NULL) {
        task->kind = a->is_send ? SHARC_COLL_KIND_SEND : SHARC_COLL_KIND_RECV;
        task->algo = algo;
        task->u.p2p.peer = a->peer;
        task->u.p2p.tag = a->tag;
        task->u.p2p.source = -1;
    }
    return task;
}

/* Inside an open group, a send or receive on CUDA buffers waits for its end: 1 when @p task
 * was put there (the caller holds its request), else 0. */
static int sharc_coll_group_hold(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    int held = 0;

    sharc_coll_lock(cc);
    if (cc->group_depth > 0 && task->algo == &sharc_coll_p2p_device) {
        task->u.p2p.grouped = 1;
        sharc_coll_list_push(&cc->group_head, &cc->group_tail, task);
        held = 1;
    }
    sharc_coll_unlock(cc);
    return held;
}

sharc_status_t sharc_coll_p2p_post(sharc_coll_comm_t *cc, const sharc_coll_p2p_args_t *args,
                                   sharc_request_h *req_p)
{
    const char *name = args->is_send ? "send" : "recv";
    const sharc_coll_algo_t *algo = NULL;
    sharc_coll_task_t *task;
    sharc_status_t status = sharc_coll_p2p_check(cc, args, name);

    if (status == SHARC_OK && args->blocking && cc->group_depth > 0) {
        sharc_error("%s: a blocking call inside sharc_p2p_group_start: it would wait for the "
                    "group's end; pass a request",
                    name);
        status = SHARC_ERR_INVALID;
    }
    if (status == SHARC_OK) {
        int device = sharc_coll_p2p_on_device(cc, args);

        status = sharc_coll_group_kind(cc, args, device, name);
        if (status == SHARC_OK) {
            status = device ? sharc_coll_p2p_route_device(cc, args, name, &algo)
                            : sharc_coll_p2p_route_host(cc, args, name, &algo);
        }
    }
    if (status != SHARC_OK) {
        return status;
    }
    task = sharc_coll_p2p_task(cc, args, algo);
    if (task == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (!sharc_coll_group_hold(task)) {
        status = sharc_coll_task_post(task); /* (an error released the task) */
        if (status != SHARC_OK) {
            return status;
        }
    }
    sharc_trace("%s posted: %zu %s, peer %d, tag %d", name, args->count,
                sharc_dtype_name(args->dtype), args->peer, args->tag);
    *req_p = task;
    return SHARC_OK;
}

/* ---- groups ----------------------------------------------------------------------------- */

sharc_status_t sharc_coll_group_start(sharc_coll_comm_t *cc)
{
    sharc_coll_lock(cc);
    cc->group_depth++;
    sharc_coll_unlock(cc);
    return SHARC_OK;
}

/* Issue the group's tasks together (lock held); each is queued, started or ended by the
 * error that kept it from being issued. */
static sharc_status_t sharc_coll_group_issue(sharc_coll_comm_t *cc, sharc_coll_task_t **tasks,
                                             size_t n)
{
    sharc_status_t status = cc->failed;

    if (status != SHARC_OK) {
        sharc_error("sharc_p2p_group_end: the communicator failed earlier: %s (%s)", cc->why,
                    sharc_status_string(cc->failed));
    } else {
        status = sharc_coll_p2p_issue(tasks, n);
    }
    for (size_t i = 0; i < n; i++) {
        sharc_coll_task_t *t = tasks[i];

        t->u.p2p.grouped = 0;
        if (status == SHARC_OK) {
            t->seq = SHARC_COLL_TAG_P2P | (uint64_t)t->u.p2p.tag;
            t->state = SHARC_COLL_TASK_QUEUED;
        } else {
            t->status = status;
            t->state = SHARC_COLL_TASK_DONE;
            t->t_done = sharc_time_now();
        }
        sharc_coll_task_queue(t);
    }
    return status;
}

sharc_status_t sharc_coll_group_end(sharc_coll_comm_t *cc)
{
    sharc_coll_task_t **tasks = NULL, *t;
    sharc_status_t status = SHARC_OK;
    size_t n = 0;

    sharc_coll_lock(cc);
    if (cc->group_depth == 0) {
        sharc_coll_unlock(cc);
        sharc_error("sharc_p2p_group_end: no group is open on this communicator");
        return SHARC_ERR_INVALID;
    }
    if (--cc->group_depth == 0 && cc->group_head != NULL) {
        for (t = cc->group_head; t != NULL; t = t->next) {
            n++;
        }
        tasks = malloc(n * sizeof(*tasks));
        status = (tasks != NULL) ? SHARC_OK : SHARC_ERR_NOMEM;
        for (size_t i = 0; tasks != NULL && i < n; i++) {
            tasks[i] = (i == 0) ? cc->group_head : tasks[i - 1]->next;
        }
        if (tasks != NULL) { /* (without memory the group stays, for a later end) */
            cc->group_head = cc->group_tail = NULL;
            status = sharc_coll_group_issue(cc, tasks, n);
            if (cc->driver == SHARC_COLL_DRIVER_THREAD) {
                sharc_coll_driver_kick(cc);
            } else {
                sharc_coll_progress(cc);
            }
        } else {
            cc->group_depth++;
        }
        free(tasks);
    }
    if (cc->group_depth == 0) {
        cc->group_kind = 0;
    }
    sharc_coll_unlock(cc);
    return status;
}

void sharc_coll_group_clear(sharc_coll_comm_t *cc)
{
    int n = 0;

    sharc_coll_lock(cc);
    while (cc->group_head != NULL) {
        sharc_coll_group_drop(cc->group_head);
        n++;
    }
    cc->group_depth = 0;
    cc->group_kind = 0;
    sharc_coll_unlock(cc);
    if (n > 0) {
        sharc_warn("rank %d: communicator destroyed inside a point-to-point group: %d send(s) "
                   "and receive(s) never issued",
                   cc->rank, n);
    }
}
