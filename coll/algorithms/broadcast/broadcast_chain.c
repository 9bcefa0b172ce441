/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * broadcast_chain.c: broadcast along a chain root -> root+1 -> ... -> root-1, pipelined in
 * chunks: each rank forwards a chunk as soon as it has it.
 * Computes: every rank's recvbuf = root's sendbuf.
 * Steps: n - 1 + chunks - 1 (chunk times). Bytes per rank: count received and sent (the
 * last rank only receives, the root only sends).
 * Extra memory: none. In place: sendbuf == recvbuf on the root skips its copy.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_broadcast_chain_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    size_t esize = sharc_dtype_size(a->dtype), bytes = a->count * esize;
    size_t chunk = SHARC_MAX(comm->cfg->chunk / esize, (size_t)1) * esize;

    if (comm->rank == a->root && a->sendbuf != a->recvbuf && bytes > 0) {
        memcpy(a->recvbuf, a->sendbuf, bytes);
    }
    task->nreqs = (comm->size > 1 && bytes > 0) ? (bytes + chunk - 1) / chunk : 0;
    task->u.direct.step = 0;
    task->u.direct.chunk = chunk; /* bytes, here */
    if (task->nreqs == 0) {
        return SHARC_OK;
    }
    sharc_coll_reqs_alloc(task, 2 * task->nreqs); /* receives, then sends */
    if (task->reqs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    task->await_peer = (comm->rank - 1 + comm->size) % comm->size;
    return SHARC_OK;
}

static sharc_status_t sharc_broadcast_chain_progress(sharc_coll_task_t *task)
{
    const sharc_coll_comm_t *comm = task->cc;
    int n = comm->size, pos = (comm->rank - task->args.root + n) % n;
    int next = (comm->rank + 1) % n, prev = (comm->rank - 1 + n) % n;
    size_t chunk = task->u.direct.chunk,
           total = task->args.count * sharc_dtype_size(task->args.dtype);
    sharc_tp_req_t *rreq = task->reqs, *sreq = task->reqs + task->nreqs;
    sharc_status_t status;

    if (task->nreqs == 0) {
        return SHARC_OK;
    }
    if (task->u.direct.phase == 0) { /* post every receive at once: each chunk has its place */
        task->u.direct.phase = 1;
        for (size_t c = 0; pos > 0 && c < task->nreqs; c++) {
            size_t off = c * chunk;
            status = sharc_coll_recv(task, prev, (char *)task->args.recvbuf + off,
                                     SHARC_MIN(chunk, total - off), &rreq[c]);
            if (status != SHARC_OK) {
                return status;
            }
        }
    }
    /* forward each chunk once it is here (the root has them all; the last rank sends none) */
    for (; pos < n - 1 && task->u.direct.step < task->nreqs; task->u.direct.step++) {
        size_t c = task->u.direct.step, off = c * chunk;

        if (pos > 0 && (status = sharc_tp_req_status(&rreq[c])) != SHARC_OK) {
            if (status != SHARC_INPROGRESS) {
                return status;
            }
            break;
        }
        status = sharc_coll_send(task, next, (char *)task->args.recvbuf + off,
                                 SHARC_MIN(chunk, total - off), &sreq[c]);
        if (status != SHARC_OK) {
            return status;
        }
    }
    if (pos < n - 1 && task->u.direct.step < task->nreqs) {
        return SHARC_INPROGRESS; /* chunks still to forward */
    }
    if (pos > 0 && (status = sharc_coll_reqs_status(rreq, task->nreqs)) != SHARC_OK) {
        return status;
    }
    return (pos < n - 1) ? sharc_coll_reqs_status(sreq, task->nreqs) : SHARC_OK;
}

const sharc_coll_algo_t sharc_coll_broadcast_chain = {
    .info = {.name = "chain", .flags = 0},
    .type = SHARC_COLL_BROADCAST,
    .init = sharc_broadcast_chain_init,
    .progress = sharc_broadcast_chain_progress,
};
