/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_binomial.c: reduce to a root along a binomial tree.
 * Computes: root's recvbuf = op over every rank's sendbuf (AVG: the sum, divided by n on the
 * root; the ranks on the way sum).
 * Steps: ceil(log2 n); with ranks renumbered so the root is 0, rank v receives the partial
 * results of its children v + 2^j (each 2^j below v's lowest set bit; every rank for the
 * root), combines them with its own in that order, and sends the result to its parent v
 * minus its lowest set bit (MPICH's binomial tree, the mirror of broadcast_binomial.c). The
 * order is fixed by the tree: the same bits on every run.
 * Bytes per rank: count sent once (but by the root), count received from each of at most
 * log2(n) children. Extra memory: a slot of count elements per child, and a running result
 * off the root; 1 + log2(n) requests.
 * In place: sendbuf == recvbuf on the root (read before it is written: the first combination
 * reads it as an operand).
 */
#include "config.h"

#include <string.h>

#include "../algorithms.h"

/* Rank v's lowest set bit (n for the root): its children are v + m for m below it. */
static int sharc_reduce_binomial_top(int v, int n)
{
    int mask = 1;

    while (mask < n && !(v & mask)) {
        mask <<= 1;
    }
    return mask;
}

static int sharc_reduce_binomial_children(int v, int n)
{
    int top = sharc_reduce_binomial_top(v, n), k = 0;

    for (int m = 1; m < top && v + m < n; m <<= 1) {
        k++;
    }
    return k;
}

static sharc_status_t sharc_reduce_binomial_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    int n = task->cc->size, v = (task->cc->rank - a->root + n) % n;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);
    size_t k = (size_t)sharc_reduce_binomial_children(v, n);

    task->u.direct.phase = 0;
    task->nreqs = k; /* the receives; [k]: the send */
    sharc_coll_reqs_alloc(task, k + 1);
    if (task->reqs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    /* a slot per child, and off the root a running result: the root's is its recvbuf */
    if (bytes > 0 && k > 0 && sharc_coll_scratch(task, (k + (v != 0)) * bytes) == NULL) {
        return SHARC_ERR_NOMEM;
    }
    return SHARC_OK;
}

/* The children's results, in tree order, with this rank's own: into @p acc. */
static void sharc_reduce_binomial_combine(sharc_coll_task_t *task, void *acc, sharc_op_t op)
{
    const sharc_coll_args_t *a = &task->args;
    size_t bytes = a->count * sharc_dtype_size(a->dtype);

    for (size_t c = 0; c < task->nreqs; c++) {
        sharc_kern_cpu_ops.reduce(acc, c == 0 ? a->sendbuf : acc, task->scratch + c * bytes,
                                  a->count, a->dtype, op, NULL);
    }
}

static sharc_status_t sharc_reduce_binomial_progress(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    int n = task->cc->size, v = (task->cc->rank - a->root + n) % n;
    int top = sharc_reduce_binomial_top(v, n);
    size_t bytes = a->count * sharc_dtype_size(a->dtype), k = task->nreqs;
    sharc_op_t op = (a->op == SHARC_OP_AVG) ? SHARC_OP_SUM : a->op;
    void *acc = (v == 0) ? a->recvbuf : task->scratch + k * bytes;
    sharc_status_t status;

    if (bytes == 0) {
        return SHARC_OK;
    }
    if (task->u.direct.phase == 0) { /* every child's result, at once */
        for (size_t c = 0; c < k; c++) {
            int child = (v + (1 << c) + a->root) % n;

            status = sharc_coll_recv(task, child, task->scratch + c * bytes, bytes, &task->reqs[c]);
            if (status != SHARC_OK) {
                return status;
            }
        }
        task->u.direct.phase = 1;
    }
    if (task->u.direct.phase == 1) {
        if ((status = sharc_coll_reqs_status(task->reqs, k)) != SHARC_OK) {
            for (size_t c = 0; c < k && status == SHARC_INPROGRESS; c++) { /* (for messages) */
                if (sharc_tp_req_status(&task->reqs[c]) == SHARC_INPROGRESS) {
                    task->await_peer = (v + (1 << c) + a->root) % n;
                    break;
                }
            }
            return status;
        }
        if (k > 0) {
            sharc_reduce_binomial_combine(task, acc, op);
        } else if (v == 0 && a->sendbuf != a->recvbuf) {
            memcpy(a->recvbuf, a->sendbuf, bytes); /* one rank */
        }
        if (v == 0) {
            if (a->op == SHARC_OP_AVG) {
                sharc_kern_cpu_ops.scale(a->recvbuf, a->count, a->dtype, 1.0 / n, NULL);
            }
            return SHARC_OK;
        }
        /* a leaf sends its own buffer, the others their result */
        status = sharc_coll_send(task, (v - top + a->root) % n, k > 0 ? acc : a->sendbuf, bytes,
                                 &task->reqs[k]);
        if (status != SHARC_OK) {
            return status;
        }
        task->u.direct.phase = 2;
    }
    return v == 0 ? SHARC_OK : sharc_coll_reqs_status(&task->reqs[k], 1);
}

const sharc_coll_algo_t sharc_coll_reduce_binomial = {
    .info = {.name = "binomial", .flags = 0},
    .type = SHARC_COLL_REDUCE,
    .init = sharc_reduce_binomial_init,
    .progress = sharc_reduce_binomial_progress,
};
