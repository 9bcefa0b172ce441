/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * backend.c: a collective on CUDA buffers run whole by the communicator's collective
 * backend (NCCL). Computes what the collective's contract says, on the device, on the
 * backend's stream after the work queued on the caller's; the task keeps the backend's
 * completion event so a stream can wait for it (sharc_request_wait_stream), and finishes
 * when the backend reports it done. No extra memory, no host copies. Also the device memory
 * that collectives on it are fastest on (registered with it).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdlib.h>

#include "../../base/gpu.h"
#include "../../base/log.h"
#include "device.h"

static sharc_status_t sharc_coll_backend_init(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    const sharc_coll_args_t *a = &task->args;
    sharc_tp_coll_args_t ta = {.type = a->type,
                               .sendbuf = a->sendbuf,
                               .recvbuf = a->recvbuf,
                               .count = a->count,
                               .dtype = a->dtype,
                               .op = a->op,
                               .root = a->root,
                               .stream = a->stream,
                               .counts = a->counts,
                               .displs = a->displs,
                               .scounts = a->scounts,
                               .sdispls = a->sdispls};
    sharc_status_t status;

    sharc_coll_reqs_alloc(task, 1);
    if (task->reqs == NULL) {
        return SHARC_ERR_NOMEM;
    }
    task->nreqs = 1;
    status = cc->cuda_ops->coll->run(cc->cuda_tp, &ta, &task->reqs[0]);
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

const sharc_coll_algo_t sharc_coll_cuda_backend = {
    .info = {.name = "backend", .flags = 0},
    .init = sharc_coll_backend_init,
    .progress = sharc_coll_backend_progress,
    .device = 1,
};

/* ---- device memory for it ------------------------------------------------------------------ */

sharc_status_t sharc_coll_devmem_alloc(sharc_coll_comm_t *cc, size_t bytes,
                                       sharc_coll_devmem_t *mem_p)
{
    const sharc_tp_ops_t *ops = cc->cuda_ops;
    sharc_coll_devmem_t m = {0};
    sharc_status_t status = SHARC_ERR_UNSUPPORTED;

    if (cc->cuda_tp != NULL && ops->mem_alloc != NULL) {
        status = ops->mem_alloc(cc->cuda_tp, bytes, SHARC_MEMTYPE_CUDA, &m.ptr);
    }
    if (status == SHARC_ERR_UNSUPPORTED) {
        status = sharc_gpu_alloc(bytes, &m.ptr);
    } else if (status == SHARC_OK) {
        m.backend = 1;
        if (ops->mem_reg != NULL) {
            status = ops->mem_reg(cc->cuda_tp, m.ptr, bytes, SHARC_MEMTYPE_CUDA, &m.reg);
        }
        if (status == SHARC_ERR_UNSUPPORTED) {
            m.reg = NULL;
            status = SHARC_OK;
        } else if (status != SHARC_OK) {
            sharc_error("the CUDA backend cannot register a %zu-byte buffer (%s)", bytes,
                        sharc_status_string(status));
            ops->mem_free(cc->cuda_tp, m.ptr);
        }
    }
    if (status == SHARC_OK) {
        *mem_p = m;
    }
    return status;
}

void sharc_coll_devmem_free(sharc_coll_comm_t *cc, const sharc_coll_devmem_t *mem)
{
    if (mem->reg != NULL) {
        cc->cuda_ops->mem_dereg(cc->cuda_tp, mem->reg);
    }
    if (mem->backend) {
        cc->cuda_ops->mem_free(cc->cuda_tp, mem->ptr);
    } else {
        sharc_gpu_free(mem->ptr);
    }
}
