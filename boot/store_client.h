/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_client.h: a rank's connection to the bootstrap store, as the client's files share it
 * (store_client.c: connecting, requests and their replies; store_watch.c: the unasked
 * messages, heartbeats and the stall verdict's rounds). Other files see store.h only.
 */
#ifndef SHARC_STORE_CLIENT_H
#define SHARC_STORE_CLIENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sock.h"
#include "store.h"
#include "store_proto.h"

/* Extra seconds past the server-side deadline before the client stops waiting itself. */
#define SHARC_STORE_CLIENT_GRACE 5.0

struct sharc_store_client {
    pthread_mutex_t lock;      /* one request at a time; the poll does not wait for it */
    pthread_mutex_t send_lock; /* one message at a time on fd: a request's, a heartbeat */
    int fd;
    int rank;
    int broken;
    int lost_rank, lost_by; /* from a NOTICE, -1 for none */
    int store_lost;         /* the connection to the store broke, for lost_why */
    int store_closed;       /* ... closed by the store's side: its process is gone */
    int hb_errno;           /* a heartbeat could not be sent: why (0: it could) */
    char lost_why[SHARC_SOCK_HOST_MAX + 256]; /* the store's address, what broke it */
    double timeout;
    size_t max_msg;
    char addr[SHARC_SOCK_HOST_MAX + 16];
    /* heartbeats (store_watch.c): the last one sent and the last answer (any reply counts) */
    double hb_sent, hb_ack;
    /* a verdict round the store announced and this rank has not answered yet */
    int round_pending;
    uint32_t round;
    uint64_t round_ordinal;
};

/* Send one message on @p fd: not logged; TIMEOUT or IO (errno set). The caller holds the
 * connection's send_lock. */
SHARC_HIDDEN sharc_status_t sharc_store_send_raw(int fd, uint8_t kind, const char *key,
                                                 const void *val, size_t len, double deadline);

/* The connection to the store broke, for @p why (the first cause stays), so that a check of a
 * communicator (sharc_store_poll) says so without a request. Not logged. @p closed: the store's
 * side closed it (its process is gone); otherwise it fell silent, and a rank cut off from the
 * store cannot tell whether its server died or the network between them went away. */
SHARC_HIDDEN void sharc_store_lost(sharc_store_client_t *c, const char *why, int closed);

/* Send one message (under send_lock); failures are logged and break the connection. */
SHARC_HIDDEN sharc_status_t sharc_store_send_msg(sharc_store_client_t *c, uint8_t kind,
                                                 const char *key, const void *val, size_t len,
                                                 double deadline);

/*
 * Receive one reply of @p kind, taking the unasked messages that come first; *val_p is
 * malloc'ed (NULL when empty). Not logged: returns TIMEOUT, IO (errno set), REMOTE for a
 * malformed reply, NOMEM.
 */
SHARC_HIDDEN sharc_status_t sharc_store_recv_raw(sharc_store_client_t *c, uint8_t kind,
                                                 double deadline, size_t max_len, int16_t *st_p,
                                                 char **val_p, size_t *len_p);

/* store_unasked.c: whether a header (@p kind, key and value lengths) is one the server sends
 * unasked: NOTICE, a heartbeat's answer, VERDICT. */
SHARC_HIDDEN int sharc_store_is_unasked(uint8_t kind, uint32_t key_len, uint32_t val_len);

/* Take an unasked message's value (its header read) and note what it says (lock held). */
SHARC_HIDDEN sharc_status_t sharc_store_take_unasked(sharc_store_client_t *c, uint8_t kind,
                                                     double deadline);

#endif
