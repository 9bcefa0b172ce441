/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_srv.h: the bootstrap store server's state and the calls its files share (inside the
 * server thread only): the key-value table (store_kv.c), the wire messages
 * (store_msg.c), communicators and their gathers (store_gather.c), the thread and its
 * connections (store_server.c). Clients see store.h only.
 */
#ifndef SHARC_STORE_SRV_H
#define SHARC_STORE_SRV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/def_int.h"
#include "store.h"
#include "store_proto.h"

#define SHARC_STORE_REPLY_TIMEOUT 5.0  /* seconds a client gets to take a reply */
#define SHARC_STORE_MAX_UNAUTHED  1024 /* connections at once that have not said HELLO */

typedef struct sharc_store_entry {
    char *key;
    void *val;
    size_t len;
    uint32_t count; /* bookkeeping keys ("\x01c", "\x01r"): keys present, readers served */
    struct sharc_store_entry *next;
} sharc_store_entry_t;

typedef struct {
    int fd;
    char peer[64];
    int authed;
    int live; /* said HELLO and not yet BYE */
    int dead; /* to be closed at the end of this loop turn */
    int rank;
    char *ns;
    double since;      /* connection time, for the token deadline */
    double heard;      /* when it last sent anything */
    double silent_max; /* from its first HEARTBEAT on: the silence that declares it gone, s */
    unsigned char hdr_buf[SHARC_STORE_HDR_SIZE];
    size_t hdr_got;
    sharc_store_hdr_t hdr;
    char *payload;
    size_t payload_got;
} sharc_store_conn_t;

typedef struct sharc_store_waiter {
    sharc_store_conn_t *conn;
    char *prefix;
    uint32_t n, readers;
    int partial; /* SHARC_STORE_GATHER_PARTIAL: its timeout answers with what is there */
    double deadline;
    struct sharc_store_waiter *next;
} sharc_store_waiter_t;

/* The missing indices of the last gather that timed out (see sharc_store_try_gather). */
typedef struct {
    char *prefix;
    uint32_t n, count;
    uint32_t *list; /* network byte order */
} sharc_store_missing_t;

typedef struct sharc_store_ns {
    char *name;
    int size;
    int lost_rank;          /* a rank that died (closed without BYE) or was reported gone, or -1 */
    int lost_by;            /* the rank that reported it (lost_rank itself when it closed) */
    uint32_t rounds;        /* verdict rounds started */
    uint64_t round_ordinal; /* the stalled ordinal of the last one */
    double round_time;      /* when it started */
    struct sharc_store_ns *next;
} sharc_store_ns_t;

struct sharc_store_server {
    int listen_fd;
    int wake[2]; /* stop() writes a byte to interrupt poll() */
    pthread_t thread;
    char digest[17];
    char root_ns[64];
    double auth_timeout;
    size_t max_msg;
    int stopping; /* written by stop(), read by the thread (atomic) */
    double linger_deadline;
    /* Server-thread state */
    sharc_store_conn_t **conns;
    size_t nconns, conns_cap;
    sharc_store_entry_t **table;
    size_t table_size, nentries;
    sharc_store_waiter_t *waiters;
    sharc_store_ns_t *namespaces;
    sharc_store_missing_t missing;
    size_t unauthed;            /* connections that have not said HELLO yet */
    double accept_paused_until; /* out of file descriptors: stop accepting for a moment */
};

/* ---- the server's state and its connections (store_server.c) */
/* A server's state with no socket and no thread (start serves it; the fuzzer feeds it). */
SHARC_HIDDEN sharc_status_t sharc_store_server_new(const char *digest, const char *root_ns,
                                                   double auth_timeout, size_t max_msg,
                                                   sharc_store_server_t **srv_p);
/* Free it: its connections (closed), waiters, table, communicators. */
SHARC_HIDDEN void sharc_store_server_free(sharc_store_server_t *srv);
/* A connection on @p fd (non-blocking), owned from now on. */
SHARC_HIDDEN sharc_status_t sharc_store_adopt(sharc_store_server_t *srv, int fd);
/* Close dead connections (telling their communicators) and those past their deadlines. */
SHARC_HIDDEN void sharc_store_sweep(sharc_store_server_t *srv, double now);

/* ---- the key-value table (store_kv.c) */
SHARC_HIDDEN sharc_store_entry_t *sharc_store_lookup(sharc_store_server_t *srv, const char *key);
/* The entry of @p key, made empty when missing (*created_p); NULL: no memory. */
SHARC_HIDDEN sharc_store_entry_t *sharc_store_get_entry(sharc_store_server_t *srv, const char *key,
                                                        int *created_p);
SHARC_HIDDEN void sharc_store_delete(sharc_store_server_t *srv, const char *key);
/* The bookkeeping key of @p kind ('c': keys present, 'r': readers served) for @p prefix. */
SHARC_HIDDEN void sharc_store_meta_key(char *buf, size_t size, char kind, const char *prefix);
/* Counted key "P/i": i must be all digits. Returns the length of P, or 0. */
SHARC_HIDDEN size_t sharc_store_indexed_prefix(const char *key);
SHARC_HIDDEN uint32_t sharc_store_count(sharc_store_server_t *srv, char kind, const char *prefix);
/* Add one to a bookkeeping count: the new count, or -1 (no memory). */
SHARC_HIDDEN int sharc_store_bump(sharc_store_server_t *srv, char kind, const char *prefix);
/* Free every entry (the server stops). */
SHARC_HIDDEN void sharc_store_kv_clear(sharc_store_server_t *srv);

/* ---- replies (store_reply.c) */
/* Send a reply on @p conn within SHARC_STORE_REPLY_TIMEOUT (-1: it did not take it, and is
 * dropped). */
SHARC_HIDDEN int sharc_store_reply(sharc_store_conn_t *conn, uint8_t kind, int16_t status,
                                   const void *val, size_t len);
/* Drop @p conn, logging @p why; the job goes on. */
SHARC_HIDDEN void sharc_store_reject(sharc_store_conn_t *conn, const char *why);

/* ---- messages (store_msg.c) */
/* Read what is available on @p conn; act on each complete message. */
SHARC_HIDDEN void sharc_store_read(sharc_store_server_t *srv, sharc_store_conn_t *conn);

/* ---- communicators and their gathers (store_gather.c) */
/* Communicator @p name (made with @p size ranks when new); NULL: no memory. */
SHARC_HIDDEN sharc_store_ns_t *sharc_store_ns(sharc_store_server_t *srv, const char *name,
                                              int size);
/* The job's communicator and those split from it: "<root>" and "<root>.*". */
SHARC_HIDDEN int sharc_store_admits(const sharc_store_server_t *srv, const char *ns);
SHARC_HIDDEN void sharc_store_free_waiter(sharc_store_waiter_t *w);
/* Check the waiters (of @p prefix, or all); with @p now >= 0 also expire those past their
 * deadline. */
SHARC_HIDDEN void sharc_store_scan_waiters(sharc_store_server_t *srv, const char *prefix,
                                           double now);
/* SET: @p val (malloc'ed) becomes @p key's value. */
SHARC_HIDDEN void sharc_store_srv_set(sharc_store_server_t *srv, sharc_store_conn_t *conn,
                                      const char *key, char *val, size_t len);
/* GATHER: answered when every key of the prefix is there, or at its deadline. */
SHARC_HIDDEN void sharc_store_gather_req(sharc_store_server_t *srv, sharc_store_conn_t *conn,
                                         const char *key, const char *val, size_t len);
/* REPORT: a rank's transport lost a peer of its communicator. */
SHARC_HIDDEN void sharc_store_srv_report(sharc_store_server_t *srv, sharc_store_conn_t *conn,
                                         const char *val, size_t len);
/* STALL: start a verdict round of @p conn's communicator for @p ordinal (VERDICT to every
 * live rank of it), unless one began lately. */
SHARC_HIDDEN void sharc_store_srv_stall(sharc_store_server_t *srv, sharc_store_conn_t *conn,
                                        const char *val, size_t len);
/* Rank @p lost of communicator @p name is gone (rank @p by says so): its gathers fail and
 * its live ranks are told. */
SHARC_HIDDEN void sharc_store_peer_lost(sharc_store_server_t *srv, const char *name, int lost,
                                        int by);

#endif
