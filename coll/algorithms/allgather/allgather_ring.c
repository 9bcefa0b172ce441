/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allgather_ring.c: all-gather over a ring, pipelined in chunks (the engine is ring.c).
 * Computes: recvbuf[i * count ..] = rank i's sendbuf, on every rank.
 * Steps: n - 1; at step s rank r forwards block (r - s) to r + 1 and receives block
 * (r - s - 1) from r - 1, chunk by chunk.
 * Bytes per step and rank: count elements sent and received; (n-1) * count in all.
 * Extra memory: none (receives land in recvbuf).
 * In place: sendbuf == recvbuf + rank * count skips the copy of the own block, which
 * otherwise overlaps the first transfers.
 */
#include "config.h"

#include "../algorithms.h"

static sharc_status_t sharc_allgather_ring_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    sharc_coll_ring_t *ring = &task->u.ring;
    char *mine = (char *)a->recvbuf + (size_t)task->cc->rank * bytes;

    ring->vec = a->recvbuf;
    /* out of place: the engine copies sendbuf into recvbuf once the transfers are going */
    ring->own = (a->sendbuf != mine && bytes > 0) ? a->sendbuf : NULL;
    ring->own_copied = 0;
    ring->blocks = (sharc_coll_blocks_t){.base = a->count, .extra = 0};
    return sharc_coll_ring_init(task, ring);
}

static sharc_status_t sharc_allgather_ring_progress(sharc_coll_task_t *task)
{
    return sharc_coll_ring_allgather(task, &task->u.ring);
}

static void sharc_allgather_ring_finalize(sharc_coll_task_t *task)
{
    sharc_coll_ring_cleanup(task, &task->u.ring);
}

const sharc_coll_algo_t sharc_coll_allgather_ring = {
    .info = {.name = "ring", .flags = 0},
    .type = SHARC_COLL_ALLGATHER,
    .init = sharc_allgather_ring_init,
    .progress = sharc_allgather_ring_progress,
    .finalize = sharc_allgather_ring_finalize,
};
