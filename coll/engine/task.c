/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task.c: a collective task's making, its one start (sequence number, algorithm's init,
 * place in the queue), the scratch its algorithm borrows, its release, and its name in
 * messages. The queue that drives started tasks is queue.c's; the lifecycle is drawn in
 * coll.h.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdio.h>
#include <stdlib.h>

#include <sharc/p2p.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "engine.h"
#include "flight.h"

/* An uneven collective's own copy of its counts and displacements (the caller's arrays may
 * change once the call returns), the displacements of packed blocks filled in; 0, or -1
 * without memory. */
static int sharc_coll_task_vblocks(sharc_coll_task_t *task, size_t n)
{
    sharc_coll_args_t *a = &task->args;
    size_t *v = malloc(4 * n * sizeof(*v));
    size_t *sides[2][2] = {{v, v + n}, {v + 2 * n, v + 3 * n}};
    const size_t *from[2][2] = {{a->counts, a->displs}, {a->scounts, a->sdispls}};

    if (v == NULL) {
        return -1;
    }
    for (int s = 0; s < 2; s++) {
        size_t at = 0;

        for (size_t i = 0; i < n && from[s][0] != NULL; i++) {
            sides[s][0][i] = from[s][0][i];
            sides[s][1][i] = (from[s][1] != NULL) ? from[s][1][i] : at;
            at += from[s][0][i];
        }
    }
    a->counts = sides[0][0];
    a->displs = sides[0][1];
    a->scounts = a->scounts != NULL ? sides[1][0] : NULL;
    a->sdispls = a->scounts != NULL ? sides[1][1] : NULL;
    task->vblocks = v;
    return 0;
}

sharc_coll_task_t *sharc_coll_task_new(sharc_coll_comm_t *cc, const sharc_coll_args_t *args,
                                       int lane)
{
    sharc_coll_task_t *task = calloc(1, sizeof(*task));

    if (task == NULL) {
        return NULL;
    }
    task->cc = cc;
    task->args = *args;
    if (args->counts != NULL && sharc_coll_task_vblocks(task, (size_t)cc->size) != 0) {
        free(task);
        return NULL;
    }
    task->lane = lane;
    task->state = SHARC_COLL_TASK_NEW;
    task->status = SHARC_INPROGRESS;
    task->await_peer = -1;
    task->ordinal = UINT64_MAX; /* (no flight entry until a collective is recorded) */
    return task;
}

void sharc_coll_task_record(sharc_coll_task_t *task)
{
    task->t_post = sharc_time_now();
    if (task->kind != SHARC_COLL_KIND_COLL) {
        return; /* the recorder and the verdict follow collectives, which every rank posts */
    }
    task->ordinal = task->cc->posts++;
    sharc_coll_fr_post(task);
}

sharc_status_t sharc_coll_task_start(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    char what[160];

    if (cc->failed != SHARC_OK) {
        sharc_error("%s: the communicator failed earlier: %s (%s)", sharc_coll_task_name(task),
                    cc->why, sharc_status_string(cc->failed));
        task->algo = NULL; /* never initialized: nothing to finalize */
        return cc->failed;
    }
    if (task->kind == SHARC_COLL_KIND_COLL) {
        /* the collectives' half of the tag space (coll.h); wrapping after 2^39 collectives is
         * safe. An algorithm with sub-tasks takes a range, the same on every rank. */
        task->seq = cc->seq & SHARC_COLL_SEQ_MASK;
        cc->seq += 1 + (task->algo->tags != NULL ? task->algo->tags(task) : 0);
    } else {
        task->seq = SHARC_COLL_TAG_P2P | (uint64_t)task->u.p2p.tag; /* posted by one rank */
    }
    status = task->algo->init(task);
    if (status != SHARC_OK) {
        sharc_coll_task_describe(task, what, sizeof(what));
        sharc_error("%s: its algorithm (%s) could not start (%s)", what, task->algo->info.name,
                    sharc_status_string(status));
        sharc_coll_scratch_put(task);
        return status;
    }
    task->state = SHARC_COLL_TASK_QUEUED;
    sharc_coll_task_record(task);
    sharc_coll_task_queue(task);
    return SHARC_OK;
}

void sharc_coll_task_queue(sharc_coll_task_t *task)
{
    sharc_coll_list_push(&task->cc->head, &task->cc->tail, task);
}

static const char *const sharc_coll_names[SHARC_COLL_LAST] = {
    [SHARC_COLL_ALLGATHER] = "allgather", [SHARC_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [SHARC_COLL_ALLREDUCE] = "allreduce", [SHARC_COLL_BROADCAST] = "broadcast",
    [SHARC_COLL_ALLTOALL] = "alltoall",   [SHARC_COLL_BARRIER] = "barrier",
    [SHARC_COLL_REDUCE] = "reduce",       [SHARC_COLL_GATHER] = "gather",
    [SHARC_COLL_SCATTER] = "scatter",     [SHARC_COLL_ALLGATHERV] = "allgatherv",
    [SHARC_COLL_REDUCE_SCATTERV] = "reduce_scatterv", [SHARC_COLL_ALLTOALLV] = "alltoallv",
};

const char *sharc_coll_name(sharc_coll_type_t coll)
{
    return ((unsigned)coll < SHARC_COLL_LAST) ? sharc_coll_names[coll] : NULL;
}

const char *sharc_coll_task_name(const sharc_coll_task_t *task)
{
    switch (task->kind) {
    case SHARC_COLL_KIND_SEND: return "send";
    case SHARC_COLL_KIND_RECV: return "recv";
    default: return sharc_coll_name(task->args.type);
    }
}

void sharc_coll_task_describe(const sharc_coll_task_t *task, char *buf, size_t len)
{
    const char *dt = sharc_dtype_name(task->args.dtype);

    if (task->kind == SHARC_COLL_KIND_COLL) {
        snprintf(buf, len, "%s #%llu (%zu %s)", sharc_coll_name(task->args.type),
                 (unsigned long long)task->seq, task->args.count, dt ? dt : "?");
    } else if (task->u.p2p.peer == SHARC_ANY_SOURCE) {
        snprintf(buf, len, "recv from any rank, tag %d (%zu %s)", task->u.p2p.tag, task->args.count,
                 dt ? dt : "?");
    } else {
        snprintf(buf, len, "%s rank %d, tag %d (%zu %s)",
                 task->kind == SHARC_COLL_KIND_SEND ? "send to" : "recv from", task->u.p2p.peer,
                 task->u.p2p.tag, task->args.count, dt ? dt : "?");
    }
}

char *sharc_coll_scratch(sharc_coll_task_t *task, size_t bytes)
{
    sharc_coll_comm_t *cc = task->cc;

    if (!cc->scratch_busy) {
        if (cc->scratch_bytes < bytes) {
            free(cc->scratch);
            cc->scratch = malloc(bytes);
            cc->scratch_bytes = (cc->scratch != NULL) ? bytes : 0;
        }
        if (cc->scratch != NULL) {
            cc->scratch_busy = 1;
            task->scratch = cc->scratch;
            return task->scratch;
        }
    }
    task->scratch = malloc(bytes);
    return task->scratch;
}

void sharc_coll_scratch_put(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;

    if (task->scratch == NULL) {
        return;
    }
    /* the communicator's kept buffer is never another task's own (both are live) */
    if (task->scratch == cc->scratch) {
        cc->scratch_busy = 0;
    } else {
        free(task->scratch);
    }
    task->scratch = NULL;
}

void sharc_coll_task_free(sharc_coll_task_t *task)
{
    if (task->algo != NULL && task->algo->finalize != NULL) {
        task->algo->finalize(task); /* the algorithm's own state (task->u) */
    }
    free(task->reqs);
    free(task->vblocks);
    sharc_coll_scratch_put(task); /* a failed task's, or one whose init failed */
    free(task);
}

void sharc_coll_task_release(sharc_coll_task_t *task)
{
    /* a failed task whose requests may still be with the transport waits for the transports'
     * end (one with no algorithm never started: nothing of it is there) */
    if (task->state >= SHARC_COLL_TASK_DONE && task->status != SHARC_OK &&
        task->algo != NULL && (task->algo->held == NULL || task->algo->held(task))) {
        task->next = task->cc->graveyard;
        task->cc->graveyard = task;
        return;
    }
    sharc_coll_task_free(task);
}

int sharc_coll_on_gpu(const sharc_coll_task_t *task)
{
    return task->algo != NULL && task->algo->device;
}

const sharc_coll_task_t *sharc_coll_oldest(const sharc_coll_comm_t *cc)
{
    for (const sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
        /* (one handed over is not started: no ordinal yet; a send or receive has none) */
        if (t->state != SHARC_COLL_TASK_HANDED && t->kind == SHARC_COLL_KIND_COLL) {
            return t;
        }
    }
    return NULL;
}

void sharc_coll_group_drop(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;

    for (sharc_coll_task_t **p = &cc->group_head, *prev = NULL; *p != NULL;
         prev = *p, p = &(*p)->next) {
        if (*p == task) {
            *p = task->next;
            if (cc->group_tail == task) {
                cc->group_tail = prev;
            }
            break;
        }
    }
    sharc_coll_task_free(task);
}
