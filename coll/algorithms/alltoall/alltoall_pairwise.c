/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alltoall_pairwise.c: all-to-all by pairwise exchange for large messages and many ranks:
 * at step k (k = 0 .. n-1) rank r exchanges blocks with rank (k - r) mod n, which at the same
 * step exchanges with r; every step pairs the ranks off, so no rank receives from several at
 * once. The step where the partner is r itself copies the own block. At most
 * SHARC_ALLTOALL_WINDOW steps are in flight; a step is posted when the oldest one completes.
 * Computes: block j (count elements at j * count) of rank i's sendbuf lands in block i of
 * rank j's recvbuf.
 * Steps: n (n-1 exchanges and one local copy). Bytes per step: count elements each way, one
 * message each way. Extra memory: 2n requests; in place, SHARC_ALLTOALL_WINDOW blocks.
 * In place: sendbuf == recvbuf. A step sends and receives the same block (the partner's), so
 * the block is copied into a scratch slot, sent from there, and received in its place.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../algorithms.h"

/* Steps in flight: enough to keep the transport busy, few enough to bound scratch. */
#define SHARC_ALLTOALL_WINDOW 4

static int sharc_alltoall_pairwise_peer(const sharc_coll_task_t *task, size_t step)
{
    int n = task->cc->size;

    return (int)((step + (size_t)n - (size_t)task->cc->rank) % (size_t)n);
}

static sharc_status_t sharc_alltoall_pairwise_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t n = (size_t)task->cc->size, bytes = a->count * sharc_dtype_size(a->dtype);

    task->u.window.step = task->u.window.retired = 0;
    task->nreqs = n; /* steps: reqs[2s] receives, reqs[2s + 1] sends */
    if (bytes == 0) {
        return SHARC_OK;
    }
    sharc_coll_reqs_alloc(task, 2 * n);
    if (task->reqs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (a->sendbuf == a->recvbuf && n > 1) {
        if (sharc_coll_scratch(task, SHARC_MIN(n, (size_t)SHARC_ALLTOALL_WINDOW) * bytes) == NULL) {
            return SHARC_ERR_NOMEM;
        }
    }
    return SHARC_OK;
}

static sharc_status_t sharc_alltoall_pairwise_post(sharc_coll_task_t *task, size_t s)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    int peer = sharc_alltoall_pairwise_peer(task, s);
    char *rblock = (char *)a->recvbuf + (size_t)peer * bytes;
    const char *sblock = (const char *)a->sendbuf + (size_t)peer * bytes;

    if (peer == task->cc->rank) {
        if (a->sendbuf != a->recvbuf) {
            memcpy(rblock, sblock, bytes);
        }
        return SHARC_OK;
    }
    if (task->scratch != NULL) {
        /* slot s % window is free: step s - window, its last user, has retired */
        char *slot = task->scratch + (s % SHARC_ALLTOALL_WINDOW) * bytes;

        memcpy(slot, sblock, bytes);
        sblock = slot;
    }
    return sharc_coll_sendrecv(task, peer, sblock, bytes, &task->reqs[2 * s + 1], peer, rblock,
                               bytes, &task->reqs[2 * s]);
}

static sharc_status_t sharc_alltoall_pairwise_progress(sharc_coll_task_t *task)
{
    size_t n = (size_t)task->cc->size;
    sharc_status_t status;

    if (task->reqs == NULL) {
        return SHARC_OK; /* count 0 */
    }
    while (task->u.window.retired < n) {
        size_t s = task->u.window.retired;

        if (task->u.window.step < n &&
            task->u.window.step < task->u.window.retired + SHARC_ALLTOALL_WINDOW) {
            status = sharc_alltoall_pairwise_post(task, task->u.window.step);
            if (status != SHARC_OK) {
                return status;
            }
            task->u.window.step++;
            continue;
        }
        /* the oldest step in flight (a local copy has no requests and retires at once) */
        if (sharc_alltoall_pairwise_peer(task, s) != task->cc->rank) {
            status = sharc_coll_reqs_status(&task->reqs[2 * s], 2);
            if (status == SHARC_INPROGRESS) {
                task->await_peer = sharc_alltoall_pairwise_peer(task, s);
                return status;
            } else if (status != SHARC_OK) {
                return status;
            }
        }
        task->u.window.retired++;
    }
    return SHARC_OK;
}

const sharc_coll_algo_t sharc_coll_alltoall_pairwise = {
    .info = {.name = "pairwise", .flags = 0},
    .type = SHARC_COLL_ALLTOALL,
    .init = sharc_alltoall_pairwise_init,
    .progress = sharc_alltoall_pairwise_progress,
};
