/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allreduce_recursive_doubling.c: all-reduce by recursive doubling, for small messages on
 * power-of-two rank counts.
 * Computes: recvbuf = op over all ranks' sendbuf. Every rank gets the same bits: at each
 * step the two partners combine the same two partial results (ops are commutative).
 * Steps: log2(n); at step k rank r swaps its whole partial result with r ^ 2^k and adds
 * the partner's. Bytes per step: count each way. Extra memory: count elements of scratch.
 * In place: sendbuf == recvbuf skips the initial copy.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_allreduce_recdbl_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    int n = task->cc->size;

    if (n & (n - 1)) {
        return SHARC_ERR_UNSUPPORTED; /* the selection only picks it for powers of two */
    }
    if (a->sendbuf != a->recvbuf && bytes > 0) {
        memcpy(a->recvbuf, a->sendbuf, bytes);
    }
    task->u.rounds.step = 0;
    task->u.rounds.phase = 0;
    sharc_coll_reqs_alloc(task, 2);
    sharc_coll_scratch(task, bytes + 1);
    return (task->reqs && task->scratch) ? SHARC_OK : SHARC_ERR_NOMEM;
}

static sharc_status_t sharc_allreduce_recdbl_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    sharc_status_t status;

    while (bytes > 0 && ((size_t)1 << task->u.rounds.step) < (size_t)comm->size) {
        int partner = comm->rank ^ (1 << task->u.rounds.step);

        if (task->u.rounds.phase == 0) {
            task->await_peer = partner;
            status = sharc_coll_sendrecv(task, partner, a->recvbuf, bytes, &task->reqs[1], partner,
                                         task->scratch, bytes, &task->reqs[0]);
            if (status != SHARC_OK) {
                return status;
            }
            task->u.rounds.phase = 1;
        }
        /* both done before recvbuf changes: the send reads it */
        if ((status = sharc_coll_reqs_status(task->reqs, 2)) != SHARC_OK) {
            return status;
        }
        sharc_kern_cpu_ops.reduce(a->recvbuf, a->recvbuf, task->scratch, a->count, a->dtype, a->op,
                                  NULL);
        task->u.rounds.phase = 0;
        task->u.rounds.step++;
    }
    if (a->op == SHARC_OP_AVG && task->u.rounds.phase == 0 && bytes > 0) {
        sharc_kern_cpu_ops.scale(a->recvbuf, a->count, a->dtype, 1.0 / comm->size, NULL);
        task->u.rounds.phase = 2; /* scaled once */
    }
    return SHARC_OK;
}

const sharc_coll_algo_t sharc_coll_allreduce_recursive_doubling = {
    .info = {.name = "recursive_doubling", .flags = SHARC_COLL_ALGO_POW2},
    .type = SHARC_COLL_ALLREDUCE,
    .init = sharc_allreduce_recdbl_init,
    .progress = sharc_allreduce_recdbl_progress,
};
