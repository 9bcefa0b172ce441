/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * self_init.c: the self transport's ops table and per-communicator setup.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>

#include "../../base/log.h"
#include "self.h"

static sharc_status_t sharc_tp_self_comm_create(const sharc_tp_comm_params_t *params,
                                                sharc_tp_comm_t **tp_p)
{
    sharc_tp_comm_t *tp;

    if (params->size != 1) {
        sharc_error("self transport: a communicator of %d ranks needs a real transport",
                    params->size);
        return SHARC_ERR_INVALID;
    }
    tp = calloc(1, sizeof(*tp));
    if (tp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    pthread_mutex_init(&tp->lock, NULL);
    *tp_p = tp;
    return SHARC_OK;
}

static void sharc_tp_self_comm_destroy(sharc_tp_comm_t *tp)
{
    if (tp->sends.head != NULL || tp->recvs.head != NULL) {
        sharc_warn("self transport: destroyed with unmatched %s still posted",
                   tp->sends.head ? "sends" : "receives");
    }
    pthread_mutex_destroy(&tp->lock);
    free(tp);
}

static const sharc_tp_p2p_ops_t sharc_tp_self_p2p_ops = {
    .send = sharc_tp_self_send,
    .recv = sharc_tp_self_recv,
    .recv_any = sharc_tp_self_recv_any,
    .probe = sharc_tp_self_probe,
};

const sharc_tp_ops_t sharc_tp_self_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "self",
    .caps = SHARC_TP_CAP_HOST_MEM,
    .query = NULL,
    .comm_create = sharc_tp_self_comm_create,
    .comm_destroy = sharc_tp_self_comm_destroy,
    .mem_reg = NULL,
    .mem_dereg = NULL,
    .progress = NULL,
    .p2p = &sharc_tp_self_p2p_ops,
};
