/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gather_direct.c: gather in one step: every rank sends its block to the root, which posts a
 * receive for each straight into its block of recvbuf.
 * Computes: root's recvbuf[i * count ..] = rank i's sendbuf.
 * Steps: 1. Bytes: count sent by every rank but the root; (n-1) * count received by the root,
 * in n-1 messages (what any gather must bring it). Extra memory: n-1 requests on the root, 1
 * elsewhere.
 * In place: sendbuf == recvbuf + root * count on the root skips the copy of its own block;
 * out of place the root copies it while the messages come.
 */
#include "config.h"

#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_gather_direct_init(sharc_coll_task_t *task)
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

static sharc_status_t sharc_gather_direct_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    int n = task->cc->size, r = task->cc->rank;
    size_t bytes = a->count * sharc_dtype_size(a->dtype), k = 0;
    char *recv = a->recvbuf;
    sharc_status_t status;

    if (bytes == 0) {
        return SHARC_OK;
    }
    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        if (r != a->root) {
            task->await_peer = a->root;
            status = sharc_coll_send(task, a->root, a->sendbuf, bytes, &task->reqs[0]);
            return status != SHARC_OK ? status : sharc_coll_reqs_status(task->reqs, 1);
        }
        for (int i = 1; i < n; i++) { /* from the root's neighbours on: as they are ready */
            int from = (r + i) % n;

            status =
                sharc_coll_recv(task, from, recv + (size_t)from * bytes, bytes, &task->reqs[k++]);
            if (status != SHARC_OK) {
                return status;
            }
        }
        if (a->sendbuf != recv + (size_t)r * bytes) {
            memcpy(recv + (size_t)r * bytes, a->sendbuf, bytes);
        }
    }
    return sharc_coll_reqs_status(task->reqs, task->nreqs);
}

const sharc_coll_algo_t sharc_coll_gather_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_GATHER,
    .init = sharc_gather_direct_init,
    .progress = sharc_gather_direct_progress,
};
