/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p2p.c: the point-to-point calls of the algorithms: a task's sends and receives over its
 * communicator's transport, tagged with the task's sequence number; receives that reduce on
 * arrival where the transport can; a task's transport requests (allocated, watched by the
 * flight recorder) and their joint status.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

sharc_tp_req_t *sharc_coll_reqs_alloc(sharc_coll_task_t *task, size_t n)
{
    task->reqs = calloc(n, sizeof(*task->reqs));
    task->watch[0].reqs = task->reqs;
    task->watch[0].n = (task->reqs != NULL) ? n : 0;
    return task->reqs;
}

sharc_status_t sharc_coll_send(sharc_coll_task_t *task, int peer, const void *buf, size_t bytes,
                               sharc_tp_req_t *req)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    memset(req, 0, sizeof(*req));
    req->peer = peer;
    status = cc->tp_ops->p2p->send(cc->tp, peer, task->seq, buf, bytes, NULL, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_recv(sharc_coll_task_t *task, int peer, void *buf, size_t bytes,
                               sharc_tp_req_t *req)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    memset(req, 0, sizeof(*req));
    req->peer = peer;
    req->is_recv = 1;
    status = cc->tp_ops->p2p->recv(cc->tp, peer, task->seq, buf, bytes, NULL, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_recv_reduce(sharc_coll_task_t *task, int peer, void *dst, const void *src,
                                      size_t count, sharc_tp_req_t *req)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    if (cc->tp_ops->p2p->recv_reduce == NULL) {
        return SHARC_ERR_UNSUPPORTED;
    }
    memset(req, 0, sizeof(*req));
    req->peer = peer;
    req->is_recv = 1;
    status = cc->tp_ops->p2p->recv_reduce(cc->tp, peer, task->seq, dst, src, count,
                                          task->args.dtype, task->args.op, req);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

sharc_status_t sharc_coll_sendrecv(sharc_coll_task_t *task, int to, const void *sbuf, size_t sbytes,
                                   sharc_tp_req_t *sreq, int from, void *rbuf, size_t rbytes,
                                   sharc_tp_req_t *rreq)
{
    sharc_status_t status = sharc_coll_recv(task, from, rbuf, rbytes, rreq);

    return (status == SHARC_OK) ? sharc_coll_send(task, to, sbuf, sbytes, sreq) : status;
}

sharc_status_t sharc_coll_reqs_status(const sharc_tp_req_t *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sharc_status_t status = sharc_tp_req_status(&reqs[i]);
        if (status != SHARC_OK) {
            return status;
        }
    }
    return SHARC_OK;
}
