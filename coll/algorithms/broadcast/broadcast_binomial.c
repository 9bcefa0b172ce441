/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * broadcast_binomial.c: broadcast along a binomial tree, for small messages.
 * Computes: every rank's recvbuf = root's sendbuf.
 * Steps: ceil(log2 n); with ranks renumbered so the root is 0, rank v receives the whole
 * message from v minus its lowest set bit, then sends it to v + 2^j for each 2^j below that
 * bit (MPICH's binomial tree).
 * Bytes per rank: count received once and sent to at most log2(n) children.
 * Extra memory: 1 + log2(n) requests. In place: sendbuf == recvbuf on the root.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_broadcast_binomial_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    size_t bytes = a->count * sharc_dtype_size(a->dtype), levels = 0;

    if (comm->rank == a->root && a->sendbuf != a->recvbuf && bytes > 0) {
        memcpy(a->recvbuf, a->sendbuf, bytes);
    }
    while (((size_t)1 << levels) < (size_t)comm->size) {
        levels++;
    }
    task->u.direct.phase = 0;
    task->nreqs = 0;                         /* sends posted so far */
    sharc_coll_reqs_alloc(task, levels + 1); /* [0]: the receive */
    return task->reqs ? SHARC_OK : SHARC_ERR_NOMEM;
}

static sharc_status_t sharc_broadcast_binomial_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    int n = comm->size, v = (comm->rank - a->root + n) % n, mask = 1;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    sharc_status_t status;

    if (bytes == 0 || n == 1) {
        return SHARC_OK;
    }
    while (mask < n && !(v & mask)) { /* the lowest set bit of v: where the parent is */
        mask <<= 1;
    }
    if (task->u.direct.phase == 0) {
        if (v != 0) {
            task->await_peer = (v - mask + a->root) % n;
            status = sharc_coll_recv(task, task->await_peer, a->recvbuf, bytes, &task->reqs[0]);
            if (status != SHARC_OK) {
                return status;
            }
        }
        task->u.direct.phase = 1;
    }
    if (task->u.direct.phase == 1) {
        if (v != 0 && (status = sharc_tp_req_status(&task->reqs[0])) != SHARC_OK) {
            return status;
        }
        for (int m = mask >> 1; m > 0; m >>= 1) {
            if (v + m < n) {
                status = sharc_coll_send(task, (v + m + a->root) % n, a->recvbuf, bytes,
                                         &task->reqs[1 + task->nreqs]);
                if (status != SHARC_OK) {
                    return status;
                }
                task->nreqs++;
            }
        }
        task->u.direct.phase = 2;
    }
    return sharc_coll_reqs_status(task->reqs + 1, task->nreqs);
}

const sharc_coll_algo_t sharc_coll_broadcast_binomial = {
    .info = {.name = "binomial", .flags = 0},
    .type = SHARC_COLL_BROADCAST,
    .init = sharc_broadcast_binomial_init,
    .progress = sharc_broadcast_binomial_progress,
};
