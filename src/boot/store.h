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
 * Whether the store has said that a rank of this communicator is gone, or the store itself
 * went away (rank 0, which serves it, died): SHARC_OK, or SHARC_ERR_REMOTE with the lost
 * rank and the rank that reported it (the same when its connection closed; 0 and 0 for the
 * store). Never blocks: while a request of another thread is under way it answers SHARC_OK
 * and the next poll tells. Logged by the caller, except the loss of the store.
 */
SHARC_HIDDEN sharc_status_t sharc_store_poll(sharc_store_client_t *client, int *lost_p, int *by_p);

/** Tell the store that @p rank of this communicator is gone (this rank's transport saw it
 *  fail): every rank of the communicator hears of it. Not logged; failures are ignored, and
 *  so is the report while another thread's request holds the connection. */
SHARC_HIDDEN void sharc_store_report(sharc_store_client_t *client, int rank);

/** Say BYE and close. NULL is a no-op. */
SHARC_HIDDEN void sharc_store_close(sharc_store_client_t *client);

#endif
