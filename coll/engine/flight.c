/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flight.c: a communicator's flight recorder: the last SHARC_FLIGHT_RECORDER collectives it
 * started (ordinal, sequence number, op, dtype, count, lane, algorithm, state, times), kept
 * in a ring as they are started and change state, and for a running one the peers whose
 * data has not arrived (read from its receives in flight when asked). What it is worth on
 * a hang, its summary (the head) and its dump, are in flight_dump.c.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "../../base/util.h"
#include "engine.h"
#include "flight.h"

sharc_status_t sharc_coll_fr_init(sharc_coll_fr_t *fr, size_t cap)
{
    fr->cap = 0;
    fr->ring = NULL;
    if (cap == 0) {
        return SHARC_OK;
    }
    fr->ring = malloc(cap * sizeof(*fr->ring));
    if (fr->ring == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (size_t i = 0; i < cap; i++) {
        fr->ring[i].ordinal = UINT64_MAX;
    }
    fr->cap = cap;
    return SHARC_OK;
}

void sharc_coll_fr_fini(sharc_coll_fr_t *fr)
{
    free(fr->ring);
    fr->ring = NULL;
    fr->cap = 0;
}

void sharc_coll_fr_post(sharc_coll_task_t *task)
{
    const sharc_coll_fr_t *fr = &task->cc->fr;
    sharc_coll_fr_entry_t *e;

    if (fr->cap == 0) {
        return;
    }
    e = &fr->ring[task->ordinal % fr->cap];
    *e = (sharc_coll_fr_entry_t){
        .ordinal = task->ordinal,
        .seq = task->seq,
        .algo = task->algo != NULL ? task->algo->info.name : "-",
        .count = task->args.count,
        .t_post = task->t_post,
        .t_start = task->t_start,
        .t_done = task->t_done,
        .status = task->status,
        .type = (int8_t)task->args.type,
        .dtype = (int8_t)task->args.dtype,
        .op = (int8_t)task->args.op,
        .lane = (int8_t)task->lane,
        .state = (int8_t)task->state,
    };
}

int sharc_coll_fr_pending(const sharc_coll_task_t *task, int *peers, int max)
{
    int n = 0;

    for (size_t w = 0; w < SHARC_ARRAY_SIZE(task->watch); w++) {
        for (size_t i = 0; i < task->watch[w].n; i++) {
            const sharc_tp_req_t *r = &task->watch[w].reqs[i];
            int seen = 0;

            if (!r->is_recv || sharc_tp_req_status(r) != SHARC_INPROGRESS) {
                continue;
            }
            for (int j = 0; j < n; j++) {
                seen |= peers[j] == r->peer;
            }
            if (!seen && n < max) {
                peers[n++] = r->peer;
            }
        }
    }
    if (n == 0 && task->await_peer >= 0 && max > 0) {
        peers[n++] = task->await_peer; /* an algorithm that keeps no watched requests */
    }
    return n;
}
