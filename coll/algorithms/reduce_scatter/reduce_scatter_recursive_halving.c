/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter_recursive_halving.c: reduce-scatter by recursive halving, for power-of-two
 * rank counts.
 * Computes: rank i's recvbuf = op over all ranks of their sendbuf block i (AVG: / n).
 * Steps: log2(n); rank r holds a range of blocks (at first all n). At step k, with
 * d = n / 2^(k+1), it keeps the half of its range on its side of r ^ d, sends the other half
 * to r ^ d and adds the half it receives into the half it keeps; after the last step the
 * range is block r alone.
 * Bytes at step k: d * recvcount each way; (n-1) * recvcount in all.
 * Extra memory: 1.5 n * recvcount elements (a working copy of sendbuf, and a receive half).
 * In place: recvbuf == sendbuf + rank * recvcount (sendbuf is copied before it is written).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_reduce_scatter_rechalf_init(sharc_coll_task_t *task)
{
    size_t bytes = task->args.count * sharc_dtype_size(task->args.dtype);
    size_t n = (size_t)task->cc->size;

    if (n & (n - 1)) {
        return SHARC_ERR_UNSUPPORTED; /* the selection only picks it for powers of two */
    }
    sharc_coll_scratch(task, (n + n / 2) * bytes + 1);
    sharc_coll_reqs_alloc(task, 2);
    if (task->scratch == NULL || task->reqs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    memcpy(task->scratch, task->args.sendbuf, n * bytes);
    task->u.rounds.step = 0;
    task->u.rounds.phase = 0;
    task->u.rounds.lo = 0; /* first block of the range this rank holds */
    return SHARC_OK;
}

static sharc_status_t sharc_reduce_scatter_rechalf_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t n = (size_t)task->cc->size, r = (size_t)task->cc->rank;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    char *work = task->scratch, *in = work + n * bytes;
    sharc_status_t status;

    while (bytes > 0 && ((size_t)1 << task->u.rounds.step) < n) {
        size_t d = n >> (task->u.rounds.step + 1), lo = task->u.rounds.lo;
        size_t keep = (r & d) ? lo + d : lo, give = (r & d) ? lo : lo + d;
        int partner = (int)(r ^ d);

        if (task->u.rounds.phase == 0) {
            task->await_peer = partner;
            status = sharc_coll_sendrecv(task, partner, work + give * bytes, d * bytes,
                                         &task->reqs[1], partner, in, d * bytes, &task->reqs[0]);
            if (status != SHARC_OK) {
                return status;
            }
            task->u.rounds.phase = 1;
        }
        if ((status = sharc_coll_reqs_status(task->reqs, 2)) != SHARC_OK) {
            return status;
        }
        sharc_kern_cpu_ops.reduce(work + keep * bytes, work + keep * bytes, in, d * a->count,
                                  a->dtype, a->op, NULL);
        task->u.rounds.lo = keep;
        task->u.rounds.phase = 0;
        task->u.rounds.step++;
    }
    if (bytes > 0 && task->u.rounds.phase == 0) {
        if (a->op == SHARC_OP_AVG) {
            sharc_kern_cpu_ops.scale(work + r * bytes, a->count, a->dtype, 1.0 / n, NULL);
        }
        memcpy(a->recvbuf, work + r * bytes, bytes);
        task->u.rounds.phase = 2; /* written out once */
    }
    return SHARC_OK;
}

const sharc_coll_algo_t sharc_coll_reduce_scatter_recursive_halving = {
    .info = {.name = "recursive_halving", .flags = SHARC_COLL_ALGO_POW2},
    .type = SHARC_COLL_REDUCE_SCATTER,
    .init = sharc_reduce_scatter_rechalf_init,
    .progress = sharc_reduce_scatter_rechalf_progress,
};
