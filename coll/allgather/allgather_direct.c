/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allgather_direct.c: all-gather in one step for small messages: every rank sends its block
 * to every other rank and receives theirs straight into recvbuf.
 * Computes: recvbuf[i * count ..] = rank i's sendbuf, on every rank.
 * Steps: 1 (latency-optimal). Bytes per rank: (n-1) * count sent and received, in n-1
 * messages each way. Extra memory: 2 (n-1) requests.
 * In place: sendbuf == recvbuf + rank * count skips the copy of the own block. Out of place
 * the block is sent from sendbuf and copied into recvbuf after the transfers are posted, so
 * that the peers read it while this rank copies.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../coll.h"

static sharc_status_t sharc_allgather_direct_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    char *mine = (char *)a->recvbuf + (size_t)task->cc->rank * bytes;

    task->nreqs = (size_t)(task->cc->size - 1);
    task->u.direct.phase = 0;
    if (task->nreqs == 0 || bytes == 0) {
        if (a->sendbuf != mine && bytes > 0) {
            sharc_kern_copy(mine, a->sendbuf, bytes);
        }
        task->nreqs = 0;
        return SHARC_OK;
    }
    sharc_coll_reqs_alloc(task, 2 * task->nreqs);
    return task->reqs ? SHARC_OK : SHARC_ERR_NOMEM;
}

static sharc_status_t sharc_allgather_direct_progress(sharc_coll_task_t *task)
{
    const sharc_coll_comm_t *comm = task->cc;
    size_t bytes = task->args.count * sharc_dtype_size(task->args.dtype);
    char *buf = task->args.recvbuf, *mine = buf + (size_t)comm->rank * bytes;
    sharc_status_t status;

    if (task->nreqs == 0) {
        return SHARC_OK; /* one rank, or nothing to send */
    }
    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        for (int i = 1; i < comm->size; i++) { /* peers in ring order: no hot spot */
            int to = (comm->rank + i) % comm->size,
                from = (comm->rank - i + comm->size) % comm->size;
            size_t k = (size_t)(i - 1);

            status = sharc_coll_sendrecv(task, to, task->args.sendbuf, bytes,
                                         &task->reqs[task->nreqs + k], from,
                                         buf + (size_t)from * bytes, bytes, &task->reqs[k]);
            if (status != SHARC_OK) {
                return status;
            }
        }
        if (task->args.sendbuf != mine) {
            sharc_kern_copy(mine, task->args.sendbuf, bytes);
        }
    }
    return sharc_coll_reqs_status(task->reqs, 2 * task->nreqs);
}

const sharc_coll_algo_t sharc_coll_allgather_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_ALLGATHER,
    .init = sharc_allgather_direct_init,
    .progress = sharc_allgather_direct_progress,
};
