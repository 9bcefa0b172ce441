/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allgather_direct.c: all-gather in one step for small messages, and the uneven all-gather
 * (allgatherv) at any size: every rank sends its block to every other rank and receives
 * theirs straight into recvbuf.
 * Computes: recvbuf's block i = rank i's sendbuf, on every rank (even: block i at i * count,
 * count elements; uneven: at displs[i], counts[i] elements).
 * Steps: 1 (latency-optimal). Bytes per rank: its block sent n-1 times, every other block
 * received once, in n-1 messages each way (the uneven all-gather's total is what any
 * algorithm moves to every rank); empty blocks travel in no message. Extra memory: 2 (n-1)
 * requests.
 * In place: sendbuf == its own block of recvbuf skips the copy of the own block. Out of place
 * the block is sent from sendbuf and copied into recvbuf after the transfers are posted, so
 * that the peers read it while this rank copies.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_allgather_direct_init(sharc_coll_task_t *task)
{
    task->nreqs = (size_t)(task->cc->size - 1);
    task->u.direct.phase = 0;
    if (task->nreqs == 0) {
        return SHARC_OK;
    }
    sharc_coll_reqs_alloc(task, 2 * task->nreqs);
    return task->reqs ? SHARC_OK : SHARC_ERR_NOMEM;
}

static sharc_status_t sharc_allgather_direct_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    size_t esize = sharc_dtype_size(a->dtype);
    size_t bytes = sharc_coll_vcount(a, comm->rank, 0) * esize;
    char *buf = a->recvbuf, *mine = buf + sharc_coll_vdispl(a, comm->rank, 0) * esize;
    sharc_status_t status;

    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        for (int i = 1; i < comm->size; i++) { /* peers in ring order: no hot spot */
            int to = (comm->rank + i) % comm->size,
                from = (comm->rank - i + comm->size) % comm->size;
            size_t k = (size_t)(i - 1), rbytes = sharc_coll_vcount(a, from, 0) * esize;

            /* empty blocks travel in no message: every rank knows every block's size */
            status = rbytes == 0
                         ? SHARC_OK
                         : sharc_coll_recv(task, from, buf + sharc_coll_vdispl(a, from, 0) * esize,
                                           rbytes, &task->reqs[k]);
            if (status == SHARC_OK && bytes > 0) {
                status = sharc_coll_send(task, to, a->sendbuf, bytes, &task->reqs[task->nreqs + k]);
            }
            if (status != SHARC_OK) {
                return status;
            }
        }
        if (a->sendbuf != mine && bytes > 0) {
            sharc_kern_copy(mine, a->sendbuf, bytes);
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

const sharc_coll_algo_t sharc_coll_allgatherv_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_ALLGATHERV,
    .init = sharc_allgather_direct_init,
    .progress = sharc_allgather_direct_progress,
};
