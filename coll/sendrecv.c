/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendrecv.c: the public sends and receives as tasks. On host buffers they go over the
 * communicator's point-to-point transport, tagged in the point-to-point half of the tag space
 * (coll.h), a receive from any rank through the transport's recv_any; on CUDA buffers through
 * the collective backend (NCCL's send and receive on its stream), issued alone or with their
 * group. A task holds one transport request and is done when it is. Posting them (checks,
 * routing, groups) is sendrecv_post.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdlib.h>

#include <sharc/p2p.h>

#include "../src/base/log.h"
#include "coll.h"

static size_t sharc_coll_p2p_bytes(const sharc_coll_task_t *task)
{
    return task->args.count * sharc_dtype_size(task->args.dtype);
}

/* The task's one transport request. */
static sharc_tp_req_t *sharc_coll_p2p_req(sharc_coll_task_t *task)
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
    status = cc->tp_ops->send(cc->tp, task->u.p2p.peer, task->seq, task->args.sendbuf,
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
        status = cc->tp_ops->recv_any(cc->tp, task->seq, task->args.recvbuf, bytes, NULL, req);
    } else {
        task->await_peer = task->u.p2p.peer;
        status = cc->tp_ops->recv(cc->tp, task->u.p2p.peer, task->seq, task->args.recvbuf, bytes,
                                  NULL, req);
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

/* Done when its request is; a receive then knows its sender and size. */
static sharc_status_t sharc_coll_p2p_progress(sharc_coll_task_t *task)
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

sharc_status_t sharc_coll_p2p_issue(sharc_coll_task_t *const *tasks, size_t n)
{
    sharc_coll_comm_t *cc = tasks[0]->cc;
    sharc_tp_p2p_args_t *ta = calloc(n, sizeof(*ta));
    sharc_tp_req_t **reqs = calloc(n, sizeof(*reqs));
    sharc_status_t status = SHARC_ERR_NOMEM;
    size_t i;

    for (i = 0; ta != NULL && reqs != NULL && i < n; i++) {
        sharc_coll_task_t *t = tasks[i];
        int is_send = t->kind == SHARC_COLL_KIND_SEND;

        reqs[i] = sharc_coll_p2p_req(t);
        if (reqs[i] == NULL) {
            break;
        }
        t->await_peer = t->u.p2p.peer;
        ta[i] = (sharc_tp_p2p_args_t){.is_send = is_send,
                                      .buf = is_send ? (void *)t->args.sendbuf : t->args.recvbuf,
                                      .count = t->args.count,
                                      .dtype = t->args.dtype,
                                      .peer = t->u.p2p.peer,
                                      .stream = t->args.stream};
    }
    if (i == n) {
        status = cc->gpu_ops->p2p(cc->gpu_tp, ta, n, reqs);
    }
    for (i = 0; status == SHARC_INPROGRESS && i < n; i++) {
        tasks[i]->event = reqs[i]->event;
    }
    free(ta);
    free(reqs);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

static sharc_status_t sharc_coll_p2p_device_init(sharc_coll_task_t *task)
{
    return sharc_coll_p2p_issue(&task, 1);
}

/* A failed send or receive keeps its memory while its one transport request is in flight. */
static int sharc_coll_p2p_held(const sharc_coll_task_t *task)
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

const sharc_coll_algo_t sharc_coll_p2p_device = {
    .info = {.name = "backend", .flags = 0},
    .init = sharc_coll_p2p_device_init,
    .progress = sharc_coll_p2p_progress,
    .held = sharc_coll_p2p_held,
    .device = 1,
};
