/*
 * self.h: the `self` transport: a communicator of one rank sending to itself. It has an
 * init file and an endpoint file only: it needs no memory registration (plain memcpy) and no
 * progress (a send and its receive are matched and copied inside whichever is posted last),
 * so those ops are NULL rather than empty files.
 */
#ifndef SHARC_TP_SELF_H
#define SHARC_TP_SELF_H

#include <pthread.h>

#include "../transport.h"

/* Unmatched operations, in posting order. */
typedef struct {
    sharc_tp_req_t *head, *tail;
} sharc_tp_self_queue_t;

struct sharc_tp_comm {
    pthread_mutex_t lock; /* posts may come from the caller and a progress thread */
    sharc_tp_self_queue_t sends, recvs;
};

SHARC_HIDDEN sharc_status_t sharc_tp_self_send(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                               const void *buf, size_t bytes, sharc_tp_mem_t *mem,
                                               sharc_tp_req_t *req);
SHARC_HIDDEN sharc_status_t sharc_tp_self_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                               void *buf, size_t bytes, sharc_tp_mem_t *mem,
                                               sharc_tp_req_t *req);

#endif
