/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter_ring.c: reduce-scatter over a ring, pipelined in chunks (engine: ring.c).
 * Computes: rank i's recvbuf = op over all ranks of their sendbuf block i (recvcount
 * elements each); AVG divides by the rank count at the end.
 * Steps: n - 1; at step s rank r sends its partial result for block (r - s - 1) to r + 1 and
 * receives the partial for block (r - s - 2) from r - 1, adding its own contribution.
 * Bytes per step and rank: recvcount elements sent and received, one reduction pass.
 * Extra memory: 4 chunks of scratch (SHARC_COLL_CHUNK bytes each).
 * In place: recvbuf == sendbuf + rank * recvcount (own block is read before it is written).
 */
#include "config.h"

#include <string.h>

#include "../algorithms.h"

static sharc_status_t sharc_reduce_scatter_ring_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    sharc_coll_ring_t *ring = &task->u.ring;
    int n = task->cc->size;

    ring->vec = (char *)a->sendbuf; /* read only: partial sums live in scratch */
    ring->out = a->recvbuf;
    ring->blocks = (sharc_coll_blocks_t){.base = a->count, .extra = 0};
    ring->scale = (a->op == SHARC_OP_AVG) ? 1.0 / n : 0.0;
    ring->reducing = 1;
    if (n == 1 && a->count > 0) { /* no ring: the result is this rank's own block */
        if (a->recvbuf != a->sendbuf) {
            memcpy(a->recvbuf, a->sendbuf, a->count * sharc_dtype_size(a->dtype));
        }
    }
    return sharc_coll_ring_init(task, ring);
}

static sharc_status_t sharc_reduce_scatter_ring_progress(sharc_coll_task_t *task)
{
    return sharc_coll_ring_reduce_scatter(task, &task->u.ring);
}

static void sharc_reduce_scatter_ring_finalize(sharc_coll_task_t *task)
{
    sharc_coll_ring_cleanup(task, &task->u.ring);
}

const sharc_coll_algo_t sharc_coll_reduce_scatter_ring = {
    .info = {.name = "ring", .flags = 0},
    .type = SHARC_COLL_REDUCE_SCATTER,
    .init = sharc_reduce_scatter_ring_init,
    .progress = sharc_reduce_scatter_ring_progress,
    .finalize = sharc_reduce_scatter_ring_finalize,
};
