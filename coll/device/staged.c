/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * staged.c: a collective on CUDA buffers that the GPU cannot run itself (no collective
 * backend, or a collective it lacks) runs over the host transports through page-locked host
 * memory, in chunks: chunk c is copied device-to-host on a staging stream, reduced or moved
 * by the host algorithm as a collective of its own, and copied back, while chunk c+1 is on
 * its way down and c-1 on its way up.
 * Steps per chunk (L elements per rank): device-to-host copy (strided for the blocks of a
 * reduce-scatter or all-to-all), the host collective on L elements per rank, host-to-device
 * copy (strided for all-gather and all-to-all results). Extra memory: SHARC_STAGE_SLOTS
 * chunks of page-locked memory (send and receive side), kept by the communicator between
 * collectives. In place: as the host collective's contract; each chunk is read before it is
 * written, on one stream. Tags: the task's, and one per chunk for the chunk collectives.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdlib.h>
#include <string.h>

#include "../../base/gpu.h"
#include "../../base/log.h"
#include "device.h"

#define SHARC_STAGE_SLOTS 4 /* chunks in flight: down, on the host, up */

typedef enum {
    SHARC_STAGE_WAIT, /* for its slot */
    SHARC_STAGE_DOWN, /* device-to-host copy queued */
    SHARC_STAGE_HOST, /* host collective running */
    SHARC_STAGE_UP,   /* host-to-device copy queued */
    SHARC_STAGE_DONE,
} sharc_stage_state_t;

struct sharc_stage {
    size_t n, per, chunk, nchunks, esize; /* ranks; elements per rank (block), per chunk */
    size_t srows, rrows;                  /* rows of L elements on each side of a chunk */
    char *pinned;                         /* SLOTS x (send side, receive side) */
    size_t pinned_bytes;
    int pinned_cached;
    void *ready, *down[SHARC_STAGE_SLOTS], *up[SHARC_STAGE_SLOTS]; /* events */
    sharc_stage_state_t *state;                                    /* [nchunks] */
    sharc_coll_task_t **child;                                     /* [nchunks] */
    size_t done;
};

typedef sharc_coll_stage_t sharc_stage_t;

/* Elements per rank (all-gather, reduce-scatter), per block (all-to-all), or in all
 * (all-reduce, broadcast: the whole vector is one block): what the chunks divide. */
static size_t sharc_stage_per_rank(const sharc_coll_task_t *task)
{
    return task->args.count;
}

static size_t sharc_stage_chunk(const sharc_coll_task_t *task)
{
    size_t esize = sharc_dtype_size(task->args.dtype);

    return SHARC_MAX(task->cc->cfg->stage_chunk / esize, (size_t)1);
}

static size_t sharc_stage_tags(const sharc_coll_task_t *task)
{
    size_t per = sharc_stage_per_rank(task), chunk = sharc_stage_chunk(task);

    return (per + chunk - 1) / chunk;
}

/* Staging of chunk c: send side and receive side of its slot. */
static char *sharc_stage_send(const sharc_stage_t *st, size_t c)
{
    return st->pinned + (c % SHARC_STAGE_SLOTS) * (st->srows + st->rrows) * st->chunk * st->esize;
}

static char *sharc_stage_recv(const sharc_stage_t *st, size_t c)
{
    return sharc_stage_send(st, c) + st->srows * st->chunk * st->esize;
}

static size_t sharc_stage_len(const sharc_stage_t *st, size_t c)
{
    return SHARC_MIN(st->chunk, st->per - c * st->chunk);
}

/* The communicator's page-locked buffer when free and large enough, else one of its own. */
static sharc_status_t sharc_stage_pinned(sharc_coll_task_t *task, sharc_stage_t *st)
{
    sharc_coll_comm_t *cc = task->cc;
    sharc_status_t status;

    /* (a small collective takes what it needs: chunks no larger than the message, no more
     * slots than chunks) */
    st->pinned_bytes =
        SHARC_MIN(SHARC_STAGE_SLOTS, st->nchunks) * (st->srows + st->rrows) * st->chunk * st->esize;
    if (!cc->pinned_busy) {
        if (cc->pinned_bytes < st->pinned_bytes) {
            sharc_gpu_host_free(cc->pinned);
            cc->pinned = NULL;
            cc->pinned_bytes = 0;
            status = sharc_gpu_host_alloc(st->pinned_bytes, (void **)&cc->pinned);
            if (status != SHARC_OK) {
                return status;
            }
            cc->pinned_bytes = st->pinned_bytes;
        }
        cc->pinned_busy = 1;
        st->pinned_cached = 1;
        st->pinned = cc->pinned;
        return SHARC_OK;
    }
    return sharc_gpu_host_alloc(st->pinned_bytes, (void **)&st->pinned);
}

static sharc_status_t sharc_staged_init(sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    sharc_coll_comm_t *cc = task->cc;
    sharc_stage_t *st = calloc(1, sizeof(*st));
    sharc_status_t status = SHARC_OK;

    if (st == NULL) {
        return SHARC_ERR_NOMEM;
    }
    task->u.stage = st;
    st->n = (size_t)cc->size;
    st->esize = sharc_dtype_size(a->dtype);
    st->per = sharc_stage_per_rank(task);
    st->chunk = SHARC_MIN(sharc_stage_chunk(task), SHARC_MAX(st->per, (size_t)1));
    st->nchunks = sharc_stage_tags(task);
    st->srows =
        (a->type == SHARC_COLL_REDUCE_SCATTER || a->type == SHARC_COLL_ALLTOALL) ? st->n : 1;
    st->rrows = (a->type == SHARC_COLL_ALLGATHER || a->type == SHARC_COLL_ALLTOALL) ? st->n : 1;
    if (st->nchunks == 0) {
        return SHARC_OK; /* nothing to move */
    }
    st->state = calloc(st->nchunks, sizeof(*st->state));
    st->child = calloc(st->nchunks, sizeof(*st->child));
    if (st->state == NULL || st->child == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (cc->stage_stream == NULL) {
        status = sharc_gpu_stream_create(&cc->stage_stream);
    }
    if (status == SHARC_OK) {
        status = sharc_stage_pinned(task, st);
    }
    for (int i = 0; status == SHARC_OK && i < SHARC_STAGE_SLOTS; i++) {
        status = sharc_gpu_event_create(0, &st->down[i]);
        if (status == SHARC_OK) {
            status = sharc_gpu_event_create(0, &st->up[i]);
        }
    }
    if (status == SHARC_OK) {
        status = sharc_gpu_event_create(0, &st->ready);
    }
    /* the copies read what the caller's stream has queued up to now */
    if (status == SHARC_OK) {
        status = sharc_gpu_event_record(st->ready, a->stream);
    }
    if (status == SHARC_OK) {
        status = sharc_gpu_stream_wait(cc->stage_stream, st->ready);
    }
    return status;
}

/* Queue chunk c's copy down: its piece of every block this rank sends. */
static sharc_status_t sharc_stage_down(sharc_coll_task_t *task, sharc_stage_t *st, size_t c)
{
    const sharc_coll_args_t *a = &task->args;
    void *s = task->cc->stage_stream;
    size_t len = sharc_stage_len(st, c), off = c * st->chunk * st->esize, width = len * st->esize;
    sharc_status_t status = SHARC_OK;

    if (a->type == SHARC_COLL_BROADCAST && task->cc->rank != a->root) {
        /* nothing to send */
    } else if (st->srows == 1) {
        status = sharc_gpu_copy(sharc_stage_send(st, c), (const char *)a->sendbuf + off, width, s);
    } else {
        status = sharc_gpu_copy2d(sharc_stage_send(st, c), width, (const char *)a->sendbuf + off,
                                  st->per * st->esize, width, st->srows, s);
    }
    return (status == SHARC_OK) ? sharc_gpu_event_record(st->down[c % SHARC_STAGE_SLOTS], s)
                                : status;
}

/* Queue chunk c's copy up into the caller's receive buffer. */
static sharc_status_t sharc_stage_up(sharc_coll_task_t *task, sharc_stage_t *st, size_t c)
{
    const sharc_coll_args_t *a = &task->args;
    void *s = task->cc->stage_stream;
    size_t len = sharc_stage_len(st, c), off = c * st->chunk * st->esize, width = len * st->esize;
    sharc_status_t status;

    if (st->rrows == 1) {
        status = sharc_gpu_copy((char *)a->recvbuf + off, sharc_stage_recv(st, c), width, s);
    } else {
        status = sharc_gpu_copy2d((char *)a->recvbuf + off, st->per * st->esize,
                                  sharc_stage_recv(st, c), width, width, st->rrows, s);
    }
    return (status == SHARC_OK) ? sharc_gpu_event_record(st->up[c % SHARC_STAGE_SLOTS], s) : status;
}

/* The host collective of chunk c, on its staging, with its own tag: a sub-task, driven by
 * this task's progress and freed with it (never queued, so it stays NEW). */
static sharc_status_t sharc_stage_child(sharc_coll_task_t *task, sharc_stage_t *st, size_t c)
{
    sharc_coll_args_t args = task->args;

    args.sendbuf = sharc_stage_send(st, c);
    args.recvbuf = sharc_stage_recv(st, c);
    args.count = sharc_stage_len(st, c);
    args.stream = NULL;
    return sharc_coll_child_start(task, &args, c, &st->child[c]);
}

/* Move chunk c one state on if it can: 1 if it moved. */
static int sharc_stage_step(sharc_coll_task_t *task, sharc_stage_t *st, size_t c,
                            sharc_status_t *status_p)
{
    sharc_coll_task_t *t = st->child[c];
    sharc_status_t status = SHARC_OK;
    int slot = (int)(c % SHARC_STAGE_SLOTS), moved = 1;

    switch (st->state[c]) {
    case SHARC_STAGE_WAIT: /* its slot is free once chunk c - SLOTS went up */
        if (c >= SHARC_STAGE_SLOTS && st->state[c - SHARC_STAGE_SLOTS] != SHARC_STAGE_DONE) {
            return 0;
        }
        status = sharc_stage_down(task, st, c);
        break;
    case SHARC_STAGE_DOWN:
        status = sharc_gpu_event_query(st->down[slot]);
        if (status == SHARC_OK) {
            status = sharc_stage_child(task, st, c);
        }
        break;
    case SHARC_STAGE_HOST:
        status = sharc_coll_child_progress(task, t);
        if (status == SHARC_OK) {
            status = sharc_stage_up(task, st, c);
        }
        break;
    case SHARC_STAGE_UP: status = sharc_gpu_event_query(st->up[slot]); break;
    default: return 0;
    }
    if (status == SHARC_INPROGRESS) {
        return 0;
    }
    *status_p = status;
    if (status == SHARC_OK) {
        st->state[c]++;
        st->done += st->state[c] == SHARC_STAGE_DONE;
    }
    return moved;
}

static sharc_status_t sharc_staged_progress(sharc_coll_task_t *task)
{
    sharc_stage_t *st = task->u.stage;
    sharc_status_t status = SHARC_OK;
    int moved;

    do {
        moved = 0;
        for (size_t c = 0; status == SHARC_OK && c < st->nchunks; c++) {
            moved |= sharc_stage_step(task, st, c, &status);
        }
    } while (moved && status == SHARC_OK);
    if (status != SHARC_OK) {
        return status;
    }
    return (st->done == st->nchunks) ? SHARC_OK : SHARC_INPROGRESS;
}

/* The task's staging, done or not (lock held); the communicator keeps its stream and buffer. */
static void sharc_staged_finalize(sharc_coll_task_t *task)
{
    sharc_stage_t *st = task->u.stage;
    sharc_coll_comm_t *cc = task->cc;

    if (st == NULL) {
        return;
    }
    if (st->done < st->nchunks && cc->stage_stream != NULL) {
        /* ended early (an error): copies may still be running into the staging */
        sharc_gpu_stream_sync(cc->stage_stream);
    }
    for (size_t c = 0; st->child != NULL && c < st->nchunks; c++) {
        if (st->child[c] != NULL) {
            sharc_coll_task_free(st->child[c]); /* with the scratch of one that ended early */
        }
    }
    for (int i = 0; i < SHARC_STAGE_SLOTS; i++) {
        sharc_gpu_event_destroy(st->down[i]);
        sharc_gpu_event_destroy(st->up[i]);
    }
    sharc_gpu_event_destroy(st->ready);
    if (st->pinned_cached) {
        cc->pinned_busy = 0;
    } else {
        sharc_gpu_host_free(st->pinned);
    }
    free(st->state);
    free(st->child);
    free(st);
    task->u.stage = NULL;
}

const sharc_coll_algo_t sharc_coll_staged = {
    .info = {.name = "staged", .flags = 0},
    .tags = sharc_stage_tags,
    .init = sharc_staged_init,
    .progress = sharc_staged_progress,
    .finalize = sharc_staged_finalize,
    .device = 1,
};
