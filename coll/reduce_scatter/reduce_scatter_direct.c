/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter_direct.c: reduce-scatter in one step for small messages: every rank sends
 * block j of its sendbuf to rank j and reduces the n blocks it receives, in rank order.
 * Computes: rank i's recvbuf = op over all ranks of their sendbuf block i (AVG: / n).
 * Steps: 1 (latency-optimal). Bytes per rank: (n-1) * recvcount each way, in n-1 messages.
 * Extra memory: n * recvcount elements (the n-1 received blocks and the sum).
 * In place: recvbuf == sendbuf + rank * recvcount (read into the sum before it is written).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../coll.h"

static sharc_status_t sharc_reduce_scatter_direct_init(sharc_coll_task_t *task)
{
    size_t bytes = task->args.count * sharc_dtype_size(task->args.dtype);
    size_t n = (size_t)task->cc->size;

    task->u.direct.phase = 0;
    task->nreqs = n - 1;
    sharc_coll_reqs_alloc(task, 2 * n);
    sharc_coll_scratch(task, n * bytes + 1); /* slot p: rank p's block; slot r: the sum */
    return (task->reqs && task->scratch) ? SHARC_OK : SHARC_ERR_NOMEM;
}

static sharc_status_t sharc_reduce_scatter_direct_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    int n = comm->size, r = comm->rank;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    const char *send = a->sendbuf;
    char *slots = task->scratch, *sum = slots + (size_t)r * bytes;
    sharc_status_t status;

    if (bytes == 0) {
        return SHARC_OK;
    }
    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        for (int i = 1; i < n; i++) {
            int to = (r + i) % n, from = (r - i + n) % n;

            status = sharc_coll_sendrecv(task, to, send + (size_t)to * bytes, bytes,
                                         &task->reqs[n + i - 1], from, slots + (size_t)from * bytes,
                                         bytes, &task->reqs[i - 1]);
            if (status != SHARC_OK) {
                return status;
            }
        }
    }
    if ((status = sharc_coll_reqs_status(task->reqs, (size_t)(n - 1))) != SHARC_OK ||
        (status = sharc_coll_reqs_status(task->reqs + n, (size_t)(n - 1))) != SHARC_OK) {
        return status;
    }
    /* rank order, the same on every rank's block: own block joins at its place; rank 0's
     * block is the first operand (or the whole result on one rank) */
    if (n == 1) {
        memcpy(sum, send, bytes);
    }
    for (int p = 1; p < n; p++) {
        sharc_kern_cpu_ops.reduce(sum, p == 1 ? (r == 0 ? send : slots) : sum,
                                  p == r ? send + (size_t)r * bytes : slots + (size_t)p * bytes,
                                  a->count, a->dtype, a->op, NULL);
    }
    if (a->op == SHARC_OP_AVG) {
        sharc_kern_cpu_ops.scale(sum, a->count, a->dtype, 1.0 / n, NULL);
    }
    memcpy(a->recvbuf, sum, bytes);
    return SHARC_OK;
}

const sharc_coll_algo_t sharc_coll_reduce_scatter_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_REDUCE_SCATTER,
    .init = sharc_reduce_scatter_direct_init,
    .progress = sharc_reduce_scatter_direct_progress,
};
