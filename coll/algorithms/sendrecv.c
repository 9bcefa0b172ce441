/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendrecv.c: the public sends and receives on host buffers as tasks. They go over the
 * communicator's point-to-point transport, tagged in the point-to-point half of the tag space
 * (engine.h), a receive from any rank through the transport's recv_any. A task holds one
 * transport request and is done when it is (on CUDA buffers too: sendrecv_device.c). Posting
 * them (checks, routing, groups) is sendrecv_post.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdlib.h>

#include <sharc/p2p.h>

#include "../../base/log.h"
#include "algorithms.h"

static size_t sharc_coll_p2p_bytes(const sharc_coll_task_t *task)
{
    return task->args.count * sharc_dtype_size(task->args.dtype);
}

sharc_tp_req_t *sharc_coll_p2p_req(sharc_coll_task_t *task)
{
    if (task->reqs == NULL) {
        task->reqs = calloc(1, sizeof(*task->reqs));
        task->nreqs = task->reqs != NULL;
    }
    return task->reqs;
}

static sharc_status_t sharc_coll_send_init(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_tp_req_t *req = sharc_coll_p2p_req(task);
    sharc_status_t status;

    if (req == NULL) {
        return SHARC_ERR_NOMEM;
    }
    task->await_peer = task->u.p2p.peer;
    status = cc->tp_ops->p2p->send(cc->tp, task->u.p2p.peer, task->seq, task->args.sendbuf,
                                   sharc_coll_p2p_bytes(task), NULL, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

static sharc_status_t sharc_coll_recv_init(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_tp_req_t *req = sharc_coll_p2p_req(task);
    size_t bytes = sharc_coll_p2p_bytes(task);
    sharc_status_t status;

    if (req == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (task->u.p2p.peer == SHARC_ANY_SOURCE) {
        status = cc->tp_ops->p2p->recv_any(cc->tp, task->seq, task->args.recvbuf, bytes, NULL, req);
    } else {
        task->await_peer = task->u.p2p.peer;
        status = cc->tp_ops->p2p->recv(cc->tp, task->u.p2p.peer, task->seq, task->args.recvbuf,
                                       bytes, NULL, req);
    }
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

/* A receive's message did not fit: said in the caller's terms (the transport said it in its
 * own, with the tag as it travels). */
static void sharc_coll_p2p_truncated(const sharc_coll_task_t *task, size_t msg_bytes)
{
    char what[160];

    sharc_coll_task_describe(task, what, sizeof(what));
    if (msg_bytes > 0) {
        sharc_error("%s: a %zu-byte message does not fit the %zu-byte receive buffer", what,
                    msg_bytes, sharc_coll_p2p_bytes(task));
    } else {
        sharc_error("%s: the message does not fit the %zu-byte receive buffer", what,
                    sharc_coll_p2p_bytes(task));
    }
}

sharc_status_t sharc_coll_p2p_progress(sharc_coll_task_t *task)
{
    const sharc_tp_req_t *req = &task->reqs[0];
    sharc_status_t status = sharc_tp_req_status(req);

    if (status == SHARC_INPROGRESS) {
        return status;
    }
    task->event = NULL; /* (CUDA buffers: the backend reuses it) */
    if (status == SHARC_ERR_INVALID && task->kind == SHARC_COLL_KIND_RECV) {
        sharc_coll_p2p_truncated(task, req->bytes);
    }
    if (status == SHARC_OK && task->kind == SHARC_COLL_KIND_RECV) {
        task->u.p2p.source = (task->u.p2p.peer == SHARC_ANY_SOURCE) ? req->peer : task->u.p2p.peer;
        task->u.p2p.bytes = req->bytes;
    }
    return status;
}

int sharc_coll_p2p_held(const sharc_coll_task_t *task)
{
    return task->nreqs > 0 && sharc_tp_req_status(&task->reqs[0]) == SHARC_INPROGRESS;
}

const sharc_coll_algo_t sharc_coll_send_host = {
    .info = {.name = "send", .flags = 0},
    .init = sharc_coll_send_init,
    .progress = sharc_coll_p2p_progress,
    .held = sharc_coll_p2p_held,
};

const sharc_coll_algo_t sharc_coll_recv_host = {
    .info = {.name = "recv", .flags = 0},
    .init = sharc_coll_recv_init,
    .progress = sharc_coll_p2p_progress,
    .held = sharc_coll_p2p_held,
};
