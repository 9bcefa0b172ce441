/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allreduce_ring.c: all-reduce as a ring reduce-scatter followed by a ring all-gather over
 * the same blocks (the bandwidth-optimal pair; engine: ring.c).
 * Computes: recvbuf = op over all ranks' sendbuf, identical bits on every rank (each block
 * is reduced once, on its owner, then copied).
 * Blocks: count split over n ranks, the first count % n blocks one element longer.
 * Steps: 2 (n - 1). Bytes per rank: 2 (n-1)/n of the vector sent and received.
 * Extra memory: 4 chunks of scratch.
 * Out of place, the reduce-scatter reads sendbuf where it is and writes only this rank's
 * block of recvbuf; the all-gather fills the rest: no copy of the input first.
 */
#include "config.h"

#include <string.h>

#include "../algorithms.h"

/* The ring of phase @p reducing (1: the reduce-scatter, over the input; 0: the all-gather,
 * over recvbuf). */
static void sharc_allreduce_ring_layout(sharc_coll_task_t *task, int reducing)
{
    const sharc_coll_args_t *a = &task->args;
    sharc_coll_ring_t *ring = &task->u.allreduce_ring.ring;
    size_t n = (size_t)task->cc->size, esize = sharc_dtype_size(a->dtype);

    memset(ring, 0, sizeof(*ring));
    ring->vec = reducing ? (char *)a->sendbuf : a->recvbuf; /* (the reduce-scatter reads it) */
    ring->blocks = (sharc_coll_blocks_t){.base = a->count / n, .extra = a->count % n};
    ring->out = (char *)a->recvbuf + sharc_coll_block_off(&ring->blocks, task->cc->rank) * esize;
}

static sharc_status_t sharc_allreduce_ring_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;

    if (task->cc->size == 1 && a->sendbuf != a->recvbuf && a->count > 0) {
        memcpy(a->recvbuf, a->sendbuf, a->count * sharc_dtype_size(a->dtype)); /* no ring */
    }
    sharc_allreduce_ring_layout(task, 1);
    task->u.allreduce_ring.ring.scale = (a->op == SHARC_OP_AVG) ? 1.0 / task->cc->size : 0.0;
    task->u.allreduce_ring.ring.reducing = 1;
    task->u.allreduce_ring.phase = 0;
    return sharc_coll_ring_init(task, &task->u.allreduce_ring.ring);
}

static sharc_status_t sharc_allreduce_ring_progress(sharc_coll_task_t *task)
{
    sharc_status_t status;

    if (task->u.allreduce_ring.phase == 0) {
        /* the reduce-scatter: this rank's block of recvbuf, complete, last */
        status = sharc_coll_ring_reduce_scatter(task, &task->u.allreduce_ring.ring);
        if (status != SHARC_OK) {
            return status;
        }
        sharc_coll_ring_cleanup(task, &task->u.allreduce_ring.ring);
        sharc_allreduce_ring_layout(task, 0);
        status = sharc_coll_ring_init(task, &task->u.allreduce_ring.ring);
        if (status != SHARC_OK) {
            return status;
        }
        task->u.allreduce_ring.phase = 1;
    }
    return sharc_coll_ring_allgather(task, &task->u.allreduce_ring.ring);
}

static void sharc_allreduce_ring_finalize(sharc_coll_task_t *task)
{
    sharc_coll_ring_cleanup(task, &task->u.allreduce_ring.ring);
}

const sharc_coll_algo_t sharc_coll_allreduce_ring = {
    .info = {.name = "ring", .flags = 0},
    .type = SHARC_COLL_ALLREDUCE,
    .init = sharc_allreduce_ring_init,
    .progress = sharc_allreduce_ring_progress,
    .finalize = sharc_allreduce_ring_finalize,
};
