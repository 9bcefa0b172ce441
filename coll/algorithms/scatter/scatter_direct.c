/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scatter_direct.c: scatter in one step: the root sends block i of its sendbuf to rank i,
 * which receives it straight into its recvbuf.
 * Computes: rank i's recvbuf = root's sendbuf[i * count ..].
 * Steps: 1. Bytes: (n-1) * count sent by the root in n-1 messages (what any scatter must send
 * from it); count received by every other rank. Extra memory: n-1 requests on the root, 1
 * elsewhere.
 * In place: recvbuf == sendbuf + root * count on the root skips the copy of its own block.
 */
#include "config.h"

#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_scatter_direct_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    int root = task->cc->rank == a->root;

    task->u.direct.phase = 0;
    task->nreqs = (bytes == 0) ? 0 : root ? (size_t)(task->cc->size - 1) : 1;
    if (task->nreqs > 0 && sharc_coll_reqs_alloc(task, task->nreqs) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

static sharc_status_t sharc_scatter_direct_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    int n = task->cc->size, r = task->cc->rank;
    size_t bytes = a->count * sharc_dtype_size(a->dtype), k = 0;
    const char *send = a->sendbuf;
    sharc_status_t status;

    if (bytes == 0) {
        return SHARC_OK;
    }
    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        if (r != a->root) {
            task->await_peer = a->root;
            status = sharc_coll_recv(task, a->root, a->recvbuf, bytes, &task->reqs[0]);
            return status != SHARC_OK ? status : sharc_coll_reqs_status(task->reqs, 1);
        }
        for (int i = 1; i < n; i++) {
            int to = (r + i) % n;

            status = sharc_coll_send(task, to, send + (size_t)to * bytes, bytes, &task->reqs[k++]);
            if (status != SHARC_OK) {
                return status;
            }
        }
        if (a->recvbuf != send + (size_t)r * bytes) {
            memcpy(a->recvbuf, send + (size_t)r * bytes, bytes);
        }
    }
    return sharc_coll_reqs_status(task->reqs, task->nreqs);
}

const sharc_coll_algo_t sharc_coll_scatter_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_SCATTER,
    .init = sharc_scatter_direct_init,
    .progress = sharc_scatter_direct_progress,
};
