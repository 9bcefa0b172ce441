/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * backend.c: a collective on CUDA buffers run whole by the communicator's collective
 * backend (NCCL). Computes what the collective's contract says, on the device, on the
 * backend's stream after the work queued on the caller's; the task keeps the backend's
 * completion event so a stream can wait for it (sharc_request_wait_stream), and finishes
 * when the backend reports it done. No extra memory, no host copies.
 */
#include "config.h"

#include <stdlib.h>

#include "coll.h"

static sharc_status_t sharc_coll_backend_init(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    const sharc_coll_args_t *a = &task->args;
    sharc_tp_coll_args_t ta = {a->type,  a->sendbuf, a->recvbuf, a->count,
                               a->dtype, a->op,      a->root,    a->stream};
    sharc_status_t status;

    sharc_coll_reqs_alloc(task, 1);
    if (task->reqs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    task->nreqs = 1;
    status = cc->gpu_ops->coll(cc->gpu_tp, &ta, &task->reqs[0]);
    task->event = task->reqs[0].event;
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

/* The backend's own progress (called by the engine before the tasks') completes it. */
static sharc_status_t sharc_coll_backend_progress(sharc_coll_task_t *task)
{
    sharc_status_t status = sharc_tp_req_status(&task->reqs[0]);

    if (status != SHARC_INPROGRESS) {
        task->event = NULL; /* the backend reuses it */
    }
    return status;
}

const sharc_coll_algo_t sharc_coll_backend = {
    .info = {.name = "backend", .flags = 0},
    .init = sharc_coll_backend_init,
    .progress = sharc_coll_backend_progress,
};
