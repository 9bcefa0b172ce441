/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * self.h: the `self` transport: a communicator of one rank sending to itself. It has an
 * init file and an endpoint file only: it needs no memory registration (plain memcpy) and no
 * progress (a send and its receive are matched and copied inside whichever is posted last),
 * so those ops are NULL rather than empty files.
 */
#ifndef SHARC_TP_SELF_H
#define SHARC_TP_SELF_H

#include <pthread.h>

#include "../backend.h"

struct sharc_tp_comm {
    pthread_mutex_t lock;          /* posts may come from the caller and a progress thread */
    sharc_tp_queue_t sends, recvs; /* unmatched operations, in posting order */
};

/* What a queued request remembers (in its backend space). */
typedef struct {
    void *buf;
    size_t bytes;
    uint64_t tag;
} sharc_tp_self_req_t;

SHARC_TP_REQ_PRIV_FITS(sharc_tp_self_req_t);

static inline sharc_tp_self_req_t *sharc_tp_self_req(sharc_tp_req_t *req)
{
    return sharc_tp_req_priv(req);
}

SHARC_HIDDEN sharc_tp_send_fn_t sharc_tp_self_send;
SHARC_HIDDEN sharc_tp_recv_fn_t sharc_tp_self_recv;
SHARC_HIDDEN sharc_tp_recv_any_fn_t sharc_tp_self_recv_any;
SHARC_HIDDEN sharc_tp_probe_fn_t sharc_tp_self_probe;

#endif
