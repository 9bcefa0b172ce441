/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter_direct.c: reduce-scatter in one step for small messages, and the uneven
 * reduce-scatter (reduce_scatterv) at any size: every rank sends block j of its sendbuf to
 * rank j and reduces the n blocks it receives, in rank order.
 * Computes: rank i's recvbuf = op over all ranks of their sendbuf block i (AVG: / n); block i
 * holds recvcount elements at i * recvcount, or counts[i] after blocks 0 .. i-1 (uneven).
 * Steps: 1 (latency-optimal). Bytes per rank: every block but its own sent once, its own
 * block received from every other rank, in n-1 messages each way; empty blocks travel in no
 * message. Extra memory: n blocks of this rank's size (the n-1 received blocks and the sum).
 * In place: recvbuf == this rank's block of sendbuf (read into the sum before it is written).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_reduce_scatter_direct_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = sharc_coll_vcount(a, task->cc->rank, 0) * sharc_dtype_size(a->dtype);
    size_t n = (size_t)task->cc->size;

    task->u.direct.phase = 0;
    task->nreqs = n - 1;
    sharc_coll_reqs_alloc(task, 2 * n);
    sharc_coll_scratch(task, n * bytes + 1); /* slot p: rank p's block; slot r: the sum */
    return (task->reqs && task->scratch) ? SHARC_OK : SHARC_ERR_NOMEM;
}

/* Post the exchanges: block `to` of sendbuf to each peer, this rank's block from each. */
static sharc_status_t sharc_reduce_scatter_direct_post(sharc_coll_task_t *task, size_t bytes)
{
    const sharc_coll_args_t *a = &task->args;
    int n = task->cc->size, r = task->cc->rank;
    size_t esize = sharc_dtype_size(a->dtype);
    sharc_status_t status = SHARC_OK;

    for (int i = 1; i < n && status == SHARC_OK; i++) {
        int to = (r + i) % n, from = (r - i + n) % n;
        size_t sbytes = sharc_coll_vcount(a, to, 0) * esize;

        if (bytes > 0) {
            status = sharc_coll_recv(task, from, task->scratch + (size_t)from * bytes, bytes,
                                     &task->reqs[i - 1]);
        }
        if (status == SHARC_OK && sbytes > 0) {
            status = sharc_coll_send(task, to,
                                     (const char *)a->sendbuf + sharc_coll_vdispl(a, to, 0) * esize,
                                     sbytes, &task->reqs[n + i - 1]);
        }
    }
    return status;
}

static sharc_status_t sharc_reduce_scatter_direct_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    const sharc_coll_comm_t *comm = task->cc;
    int n = comm->size, r = comm->rank;
    size_t count = sharc_coll_vcount(a, r, 0), bytes = count * sharc_dtype_size(a->dtype);
    const char *own =
        (const char *)a->sendbuf + sharc_coll_vdispl(a, r, 0) * sharc_dtype_size(a->dtype);
    char *slots = task->scratch, *sum = slots + (size_t)r * bytes;
    sharc_status_t status;

    if (task->u.direct.phase == 0) {
        task->u.direct.phase = 1;
        if ((status = sharc_reduce_scatter_direct_post(task, bytes)) != SHARC_OK) {
            return status;
        }
    }
    if ((status = sharc_coll_reqs_status(task->reqs, (size_t)(n - 1))) != SHARC_OK ||
        (status = sharc_coll_reqs_status(task->reqs + n, (size_t)(n - 1))) != SHARC_OK) {
        return status;
    }
    if (bytes == 0) {
        return SHARC_OK;
    }
    /* rank order, the same on every rank's block: own block joins at its place; rank 0's
     * block is the first operand (or the whole result on one rank) */
    if (n == 1) {
        memcpy(sum, own, bytes);
    }
    for (int p = 1; p < n; p++) {
        sharc_kern_cpu_ops.reduce(sum, p == 1 ? (r == 0 ? own : slots) : sum,
                                  p == r ? own : slots + (size_t)p * bytes, count, a->dtype, a->op,
                                  NULL);
    }
    if (a->op == SHARC_OP_AVG) {
        sharc_kern_cpu_ops.scale(sum, count, a->dtype, 1.0 / n, NULL);
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

const sharc_coll_algo_t sharc_coll_reduce_scatterv_direct = {
    .info = {.name = "direct", .flags = 0},
    .type = SHARC_COLL_REDUCE_SCATTERV,
    .init = sharc_reduce_scatter_direct_init,
    .progress = sharc_reduce_scatter_direct_progress,
};
