/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alltoall_direct.c: all-to-all in one step for small messages: every exchange is posted at
 * once, the send to rank r+k beside the receive from rank r-k, k = 1 .. n-1.
 * Computes: block j (count elements at j * count) of rank i's sendbuf lands in block i of
 * rank j's recvbuf; the own block is copied locally.
 * Steps: 1 (latency-optimal). Bytes per rank: (n-1) * count sent and received, in n-1
 * messages each way, all in flight at once. Extra memory: 2 (n-1) requests; in place, a copy
 * of the whole buffer (n * count elements).
 * In place: sendbuf == recvbuf. The receives would overwrite blocks still to be sent, so the
 * blocks are sent from a scratch copy of the buffer (the own block stays where it is).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../coll.h"

static sharc_status_t sharc_alltoall_direct_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t n = (size_t)task->cc->size, bytes = a->count * sharc_dtype_size(a->dtype);

    task->u.direct.phase = 0;
    task->nreqs = (bytes == 0) ? 0 : n - 1;
    if (task->nreqs > 0) {
        sharc_coll_reqs_alloc(task, 2 * task->nreqs);
        if (task->reqs == NULL) {
            return SHARC_ERR_NOMEM;
        }
    }
    if (task->nreqs > 0 && a->sendbuf == a->recvbuf) {
        /* the blocks are sent from this copy; the receives overwrite the originals */
        if (sharc_coll_scratch(task, n * bytes) == NULL) {
            return SHARC_ERR_NOMEM;
        }
        memcpy(task->scratch, a->sendbuf, n * bytes);
    }
    return SHARC_OK;
}

static sharc_status_t sharc_alltoall_direct_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    int n = comm->size, r = comm->rank;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    const char *send = (task->scratch != NULL) ? task->scratch : a->sendbuf;
    char *recv = a->recvbuf;
    sharc_status_t status;

    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        for (int k = 1; k < n && bytes > 0; k++) { /* peers in ring order: no hot spot */
            int to = (r + k) % n, from = (r - k + n) % n;

            status = sharc_coll_sendrecv(task, to, send + (size_t)to * bytes, bytes,
                                         &task->reqs[task->nreqs + (size_t)k - 1], from,
                                         recv + (size_t)from * bytes, bytes, &task->reqs[k - 1]);
            if (status != SHARC_OK) {
                return status;
            }
        }
        /* the own block, while the peers read theirs */
        if (a->sendbuf != a->recvbuf && bytes > 0) {
            memcpy(recv + (size_t)r * bytes, (const char *)a->sendbuf + (size_t)r * bytes, bytes);
        }
    }
    return sharc_coll_reqs_status(task->reqs, 2 * task->nreqs);
}

const sharc_coll_algo_t sharc_coll_alltoall_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_ALLTOALL,
    .init = sharc_alltoall_direct_init,
    .progress = sharc_alltoall_direct_progress,
};
