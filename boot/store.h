/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.h: sharc's bootstrap store: a key-value server that rank 0 runs in a thread, and the
 * client every rank (rank 0 included) uses to reach it. The wire format is in store_proto.h.
 * The store is a rendezvous point for a job, not a database: values live until every reader
 * has taken them.
 */
#ifndef SHARC_STORE_H
#define SHARC_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/status.h>

#include "../base/def_int.h"

typedef struct sharc_store_server sharc_store_server_t;
typedef struct sharc_store_client sharc_store_client_t;

/** Digest of a job token as sent in HELLO: 16 lowercase hex digits and a NUL. */
SHARC_HIDDEN void sharc_store_digest(const char *token, char digest[17]);

/**
 * Start serving on bind_host:port (bind_host "*" for every interface) in a new thread.
 * @param root_ns       namespace of the job's communicator: the server admits it and the
 *                      names split from it ("<root_ns>.*"); others are told to try again.
 * @param auth_timeout  seconds a connection may take to present the token.
 * @param max_msg       largest message accepted, in bytes.
 */
SHARC_HIDDEN sharc_status_t sharc_store_server_start(const char *bind_host, int port,
                                                     const char *digest, const char *root_ns,
                                                     double auth_timeout, size_t max_msg,
                                                     sharc_store_server_t **server_p);

/** The port the server listens on (useful after starting it on port 0). */
SHARC_HIDDEN int sharc_store_server_port(const sharc_store_server_t *server);

/**
 * Stop the server: wait at most @p linger seconds for every rank that said HELLO to say BYE
 * or disconnect (the other ranks may still be reading their last results), then close.
 */
SHARC_HIDDEN void sharc_store_server_stop(sharc_store_server_t *server, double linger);

/**
 * Connect to the store, retrying until @p timeout, and introduce this rank of namespace @p ns.
 * Errors are logged naming @p rank, the address and the cause.
 */
SHARC_HIDDEN sharc_status_t sharc_store_connect(const char *host, int port, const char *digest,
                                                const char *ns, int rank, int size, double timeout,
                                                size_t max_msg, sharc_store_client_t **client_p);

/** Store @p len bytes under @p key. */
SHARC_HIDDEN sharc_status_t sharc_store_set(sharc_store_client_t *client, const char *key,
                                            const void *val, size_t len);

/**
 * Wait for "<prefix>/0" .. "<prefix>/<n-1>" and copy them into @p out, each exactly
 * @p len bytes (a different length is SHARC_ERR_REMOTE, naming the rank). The keys are
 * deleted after @p readers gathers of them. @p what names the operation in messages; on
 * timeout the message lists the missing indices as ranks, or names @p root when it is
 * >= 0 (a broadcast: the one key is the root's).
 */
SHARC_HIDDEN sharc_status_t sharc_store_gather(sharc_store_client_t *client, const char *prefix,
                                               uint32_t n, uint32_t readers, int root, void *out,
                                               size_t len, const char *what);

/**
 * Whether the store has said that a rank of this communicator is gone, or this rank lost the
 * store itself: SHARC_OK, or SHARC_ERR_REMOTE with the lost rank and the rank that reported it
 * (the same when its connection closed; -1 and -1 when none was named) and, when the store was
 * lost, *store_why_p saying where and why (valid while @p client is; NULL otherwise) and
 * *closed_p whether the store's side closed the connection (its process is gone) rather than
 * fell silent. Never blocks: while a request of another thread is under way it answers
 * SHARC_OK and the next poll tells. Logged by the caller, except the loss of the store.
 */
SHARC_HIDDEN sharc_status_t sharc_store_poll(sharc_store_client_t *client, int *lost_p, int *by_p,
                                             const char **store_why_p, int *closed_p);

/** Tell the store that @p rank of this communicator is gone (this rank's transport saw it
 *  fail): every rank of the communicator hears of it. Not logged; failures are ignored, and
 *  so is the report while another thread's request holds the connection. */
SHARC_HIDDEN void sharc_store_report(sharc_store_client_t *client, int rank);

/*
 * Heartbeats (from a thread of the rank's own, while the communicator lives): send one when
 * @p interval has passed since the last, with @p silent_max, the silence after which the
 * store declares this rank gone; take what the store sent meanwhile; and when the store has
 * not answered for @p silent_max, it is lost: the poll says so (rank 0, which serves it,
 * named unreachable), and every later call fails. Never waits for a request of another
 * thread.
 */
SHARC_HIDDEN void sharc_store_keepalive(sharc_store_client_t *client, double interval,
                                        double silent_max);

/* Ask for a verdict round: the collective of @p ordinal has waited past SHARC_STALL_WARN.
 * Not logged; skipped while a request of another thread holds the connection. */
SHARC_HIDDEN void sharc_store_stall(sharc_store_client_t *client, uint64_t ordinal);

/* Whether the store announced a verdict round this rank has not answered: 1 with its
 * number and stalled ordinal (taken), else 0. Never blocks. */
SHARC_HIDDEN int sharc_store_round(sharc_store_client_t *client, uint32_t *round_p,
                                   uint64_t *ordinal_p);

/*
 * Rank @p me of @p n sets @p mine (@p len bytes) under "<prefix>/<me>" and gathers every
 * rank's within @p timeout: out[i] and present[i] = 1 for those that came, present[i] = 0
 * for the others. Not logged (the verdict says who did not answer).
 */
SHARC_HIDDEN sharc_status_t sharc_store_exchange(sharc_store_client_t *client, const char *prefix,
                                                 uint32_t n, uint32_t me, const void *mine,
                                                 void *out, size_t len, double timeout,
                                                 unsigned char *present);

/** Say BYE and close. NULL is a no-op. */
SHARC_HIDDEN void sharc_store_close(sharc_store_client_t *client);

#endif
