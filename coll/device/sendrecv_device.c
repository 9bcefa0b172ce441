/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sendrecv_device.c: the public sends and receives on CUDA buffers, through the collective
 * backend (NCCL's send and receive on its stream), issued alone or with their group. Done as
 * the host ones are (sendrecv.c), when their one request is.
 */
#include "config.h"

#include <stdlib.h>

#include "device.h"

sharc_status_t sharc_coll_p2p_issue(sharc_coll_task_t *const *tasks, size_t n)
{
    sharc_coll_comm_t *cc = tasks[0]->cc;
    sharc_tp_p2p_args_t *ta = calloc(n, sizeof(*ta));
    sharc_tp_req_t **reqs = calloc(n, sizeof(*reqs));
    sharc_status_t status = SHARC_ERR_NOMEM;
    size_t i;

    for (i = 0; ta != NULL && reqs != NULL && i < n; i++) {
        sharc_coll_task_t *t = tasks[i];
        int is_send = t->kind == SHARC_COLL_KIND_SEND;

        reqs[i] = sharc_coll_p2p_req(t);
        if (reqs[i] == NULL) {
            break;
        }
        t->await_peer = t->u.p2p.peer;
        ta[i] = (sharc_tp_p2p_args_t){.is_send = is_send,
                                      .buf = is_send ? (void *)t->args.sendbuf : t->args.recvbuf,
                                      .count = t->args.count,
                                      .dtype = t->args.dtype,
                                      .peer = t->u.p2p.peer,
                                      .stream = t->args.stream};
    }
    if (i == n) {
        status = cc->cuda_ops->coll->sendrecv(cc->cuda_tp, ta, n, reqs);
    }
    for (i = 0; status == SHARC_INPROGRESS && i < n; i++) {
        tasks[i]->event = reqs[i]->event;
    }
    free(ta);
    free(reqs);
    return (status == SHARC_INPROGRESS) ? SHARC_OK : status;
}

static sharc_status_t sharc_coll_p2p_device_init(sharc_coll_task_t *task)
{
    return sharc_coll_p2p_issue(&task, 1);
}

const sharc_coll_algo_t sharc_coll_p2p_device = {
    .info = {.name = "backend", .flags = 0},
    .init = sharc_coll_p2p_device_init,
    .progress = sharc_coll_p2p_progress,
    .held = sharc_coll_p2p_held,
    .device = 1,
};
