/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allgather_recursive_doubling.c: all-gather by recursive doubling, for power-of-two rank
 * counts.
 * Computes: recvbuf[i * count ..] = rank i's sendbuf, on every rank.
 * Steps: log2(n); at step k rank r swaps with r ^ 2^k the 2^k blocks it holds (the aligned
 * group of 2^k ranks around it) for the partner's 2^k blocks.
 * Bytes at step k: 2^k * count each way; (n-1) * count in all. Extra memory: 2 requests.
 * In place: sendbuf == recvbuf + rank * count skips the copy of the own block.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_allgather_recdbl_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    char *mine = (char *)a->recvbuf + (size_t)task->cc->rank * bytes;
    int n = task->cc->size;

    if (n & (n - 1)) {
        return SHARC_ERR_UNSUPPORTED; /* the selection only picks it for powers of two */
    }
    if (a->sendbuf != mine && bytes > 0) {
        sharc_kern_copy(mine, a->sendbuf, bytes);
    }
    task->u.rounds.step = 0;
    task->u.rounds.phase = 0;
    sharc_coll_reqs_alloc(task, 2);
    return task->reqs ? SHARC_OK : SHARC_ERR_NOMEM;
}

static sharc_status_t sharc_allgather_recdbl_progress(sharc_coll_task_t *task)
{
    const sharc_coll_comm_t *comm = task->cc;
    size_t bytes = task->args.count * sharc_dtype_size(task->args.dtype);
    char *buf = task->args.recvbuf;
    sharc_status_t status;

    while (bytes > 0 && ((size_t)1 << task->u.rounds.step) < (size_t)comm->size) {
        size_t dist = (size_t)1 << task->u.rounds.step;
        int partner = comm->rank ^ (int)dist;
        size_t mine = ((size_t)comm->rank & ~(dist - 1)) * bytes;
        size_t theirs = ((size_t)partner & ~(dist - 1)) * bytes;

        if (task->u.rounds.phase == 0) {
            task->await_peer = partner;
            status = sharc_coll_sendrecv(task, partner, buf + mine, dist * bytes, &task->reqs[1],
                                         partner, buf + theirs, dist * bytes, &task->reqs[0]);
            if (status != SHARC_OK) {
                return status;
            }
            task->u.rounds.phase = 1;
        }
        if ((status = sharc_coll_reqs_status(task->reqs, 2)) != SHARC_OK) {
            return status;
        }
        task->u.rounds.phase = 0;
        task->u.rounds.step++;
    }
    return SHARC_OK;
}

const sharc_coll_algo_t sharc_coll_allgather_recursive_doubling = {
    .info = {.name = "recursive_doubling", .flags = SHARC_COLL_ALGO_POW2},
    .type = SHARC_COLL_ALLGATHER,
    .init = sharc_allgather_recdbl_init,
    .progress = sharc_allgather_recdbl_progress,
};
