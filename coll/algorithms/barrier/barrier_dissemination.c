/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier_dissemination.c: the dissemination barrier (Hensgen, Finkel and Manber).
 * Computes: returns on a rank only after every rank has entered.
 * Steps: ceil(log2 n); at step k rank r sends an empty message to r + 2^k and waits for
 * one from r - 2^k. After step k a rank has heard, directly or not, from 2^(k+1) ranks.
 * Bytes: none (empty messages). Extra memory: 2 requests per step.
 */
#include "config.h"

#include <stdlib.h>

#include "../algorithms.h"

static sharc_status_t sharc_barrier_dissemination_init(sharc_coll_task_t *task)
{
    size_t steps = 0;

    while (((size_t)1 << steps) < (size_t)task->cc->size) {
        steps++;
    }
    task->nreqs = steps;
    task->u.rounds.step = 0;
    task->u.rounds.phase = 0; /* 1: the current step's messages are posted */
    if (steps == 0) {
        return SHARC_OK;
    }
    sharc_coll_reqs_alloc(task, 2 * steps);
    return task->reqs ? SHARC_OK : SHARC_ERR_NOMEM;
}

static sharc_status_t sharc_barrier_dissemination_progress(sharc_coll_task_t *task)
{
    int n = task->cc->size, r = task->cc->rank;
    sharc_status_t status;

    while (task->u.rounds.step < task->nreqs) {
        size_t k = task->u.rounds.step;
        int dist = (int)(((size_t)1 << k) % (size_t)n);
        sharc_tp_req_t *sreq = &task->reqs[2 * k], *rreq = &task->reqs[2 * k + 1];

        if (!task->u.rounds.phase) {
            task->await_peer = (r - dist + n) % n;
            status = sharc_coll_sendrecv(task, (r + dist) % n, NULL, 0, sreq, task->await_peer,
                                         NULL, 0, rreq);
            if (status != SHARC_OK) {
                return status;
            }
            task->u.rounds.phase = 1;
        }
        status = sharc_tp_req_status(rreq);
        if (status != SHARC_OK) {
            return status; /* INPROGRESS included */
        }
        task->u.rounds.phase = 0;
        task->u.rounds.step++;
    }
    for (size_t k = 0; k < task->nreqs; k++) {
        if ((status = sharc_tp_req_status(&task->reqs[2 * k])) != SHARC_OK) {
            return status;
        }
    }
    return SHARC_OK;
}

const sharc_coll_algo_t sharc_coll_barrier_dissemination = {
    .info = {.name = "dissemination", .flags = 0},
    .type = SHARC_COLL_BARRIER,
    .init = sharc_barrier_dissemination_init,
    .progress = sharc_barrier_dissemination_progress,
};
