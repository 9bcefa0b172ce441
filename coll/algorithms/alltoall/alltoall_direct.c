/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alltoall_direct.c: all-to-all in one step for small messages, and the uneven all-to-all
 * (alltoallv) at any size: every exchange is posted at once, the send to rank r+k beside the
 * receive from rank r-k, k = 1 .. n-1; empty blocks travel in no message.
 * Computes: block j of rank i's sendbuf (count elements at j * count; uneven: sendcounts[j]
 * at sdispls[j]) lands in block i of rank j's recvbuf; the own block is copied locally.
 * Steps: 1 (latency-optimal). Bytes per rank: (n-1) * count sent and received, in n-1
 * messages each way, all in flight at once. Extra memory: 2 (n-1) requests; in place, a copy
 * of the whole buffer (n * count elements).
 * In place: sendbuf == recvbuf. The receives would overwrite blocks still to be sent, so the
 * blocks are sent from a scratch copy of the buffer (the own block stays where it is).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_alltoall_direct_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t n = (size_t)task->cc->size, bytes = a->count * sharc_dtype_size(a->dtype);

    task->u.direct.phase = 0;
    task->nreqs = (bytes == 0 && a->counts == NULL) ? 0 : n - 1;
    if (task->nreqs > 0) {
        sharc_coll_reqs_alloc(task, 2 * task->nreqs);
        if (task->reqs == NULL) {
            return SHARC_ERR_NOMEM;
        }
    }
    if (task->nreqs > 0 &&
        a->sendbuf == a->recvbuf) { /* (even blocks: alltoallv is not in place) */
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
    size_t esize = sharc_dtype_size(a->dtype);
    const char *send = (task->scratch != NULL) ? task->scratch : a->sendbuf;
    char *recv = a->recvbuf;
    sharc_status_t status = SHARC_OK;

    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        for (int k = 1; k < n && task->nreqs > 0 && status == SHARC_OK; k++) {
            /* peers in ring order: no hot spot; empty blocks travel in no message (every rank
             * knows what it sends and receives) */
            int to = (r + k) % n, from = (r - k + n) % n;
            size_t sbytes = sharc_coll_vcount(a, to, 1) * esize;
            size_t rbytes = sharc_coll_vcount(a, from, 0) * esize;

            if (rbytes > 0) {
                status = sharc_coll_recv(task, from, recv + sharc_coll_vdispl(a, from, 0) * esize,
                                         rbytes, &task->reqs[k - 1]);
            }
            if (status == SHARC_OK && sbytes > 0) {
                status = sharc_coll_send(task, to, send + sharc_coll_vdispl(a, to, 1) * esize,
                                         sbytes, &task->reqs[task->nreqs + (size_t)k - 1]);
            }
        }
        if (status != SHARC_OK) {
            return status;
        }
        /* the own block, while the peers read theirs */
        if (a->sendbuf != a->recvbuf && sharc_coll_vcount(a, r, 1) > 0) {
            memcpy(recv + sharc_coll_vdispl(a, r, 0) * esize,
                   (const char *)a->sendbuf + sharc_coll_vdispl(a, r, 1) * esize,
                   sharc_coll_vcount(a, r, 1) * esize);
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

const sharc_coll_algo_t sharc_coll_alltoallv_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_ALLTOALLV,
    .init = sharc_alltoall_direct_init,
    .progress = sharc_alltoall_direct_progress,
};
