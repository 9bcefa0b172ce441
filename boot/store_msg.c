/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_msg.c: the store server's side of the wire protocol (store_proto.h): reading
 * messages from a connection without blocking, checking them (magic, sizes, forbidden
 * bytes, HELLO first), the HELLO that admits a rank, and dispatching the others (replies:
 * store_reply.c). A connection that breaks the protocol is dropped, never the server.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../base/log.h"
#include "../base/util.h"
#include "sock.h"
#include "store_srv.h"

static void sharc_store_hello(sharc_store_server_t *srv, sharc_store_conn_t *conn, const char *key,
                              const char *val, size_t len)
{
    uint32_t version;
    int32_t rank, size;
    char ns_name[256], why[512];
    sharc_store_ns_t *ns;
    int16_t st = SHARC_STORE_ST_OK;

    if (len < 12 || len - 12 >= sizeof(ns_name)) {
        sharc_store_reject(conn, "malformed HELLO");
        return;
    }
    memcpy(&version, val, 4);
    memcpy(&rank, val + 4, 4);
    memcpy(&size, val + 8, 4);
    version = ntohl(version);
    rank = (int32_t)ntohl((uint32_t)rank);
    size = (int32_t)ntohl((uint32_t)size);
    memcpy(ns_name, val + 12, len - 12);
    ns_name[len - 12] = '\0';

    if (version != SHARC_STORE_VERSION) {
        st = SHARC_STORE_ST_BAD_VERSION;
        snprintf(why, sizeof(why), "protocol version %u, this store speaks %u", version,
                 SHARC_STORE_VERSION);
    } else if (strcmp(key, srv->digest) != 0) {
        st = SHARC_STORE_ST_BAD_TOKEN;
        snprintf(why, sizeof(why), "wrong job token (a process of another job, or a stale one?)");
    } else if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE) ||
               !sharc_store_admits(srv, ns_name)) {
        st = SHARC_STORE_ST_CLOSING;
        snprintf(why, sizeof(why), "this store is closing, or serves another generation");
    } else if (size <= 0 || rank < 0 || rank >= size) {
        st = SHARC_STORE_ST_BAD_RANK;
        snprintf(why, sizeof(why), "rank %d of size %d is out of range", rank, size);
    } else if ((ns = sharc_store_ns(srv, ns_name, size)) == NULL) {
        sharc_store_reject(conn, "out of memory");
        return;
    } else if (ns->size != size) {
        st = SHARC_STORE_ST_BAD_SIZE;
        snprintf(why, sizeof(why), "rank %d says communicator '%s' has %d ranks, rank 0 says %d",
                 rank, ns_name, size, ns->size);
    } else {
        for (size_t i = 0; i < srv->nconns; i++) {
            sharc_store_conn_t *other = srv->conns[i];
            if (other != conn && other->live && !other->dead && other->rank == rank &&
                strcmp(other->ns, ns_name) == 0) {
                st = SHARC_STORE_ST_DUP_RANK;
                snprintf(why, sizeof(why),
                         "rank %d of '%s' is already connected from %s (duplicate RANK?)", rank,
                         ns_name, other->peer);
                break;
            }
        }
    }
    if (st != SHARC_STORE_ST_OK) {
        sharc_store_reply(conn, SHARC_STORE_MSG_HELLO, st, why, strlen(why));
        if (st == SHARC_STORE_ST_CLOSING) {
            conn->dead = 1; /* not an intruder: a rank early for the next store */
        } else {
            sharc_store_reject(conn, why);
        }
        return;
    }
    conn->ns = strdup(ns_name);
    if (conn->ns == NULL) {
        sharc_store_reject(conn, "out of memory");
        return;
    }
    conn->authed = 1;
    conn->live = 1;
    srv->unauthed--;
    conn->rank = rank;
    sharc_debug("store: rank %d of '%s' joined from %s", rank, ns_name, conn->peer);
    sharc_store_reply(conn, SHARC_STORE_MSG_HELLO, SHARC_STORE_ST_OK, NULL, 0);
}

/* HEARTBEAT: the rank is alive; from now on a silence of the length it names declares it
 * gone (sharc_store_sweep). Answered at once: its client measures the store's liveness by
 * the answers. */
static void sharc_store_heartbeat(sharc_store_conn_t *conn, const char *val, size_t len)
{
    uint32_t ms[2];

    if (len != sizeof(ms)) {
        sharc_store_reject(conn, "malformed HEARTBEAT");
        return;
    }
    memcpy(ms, val, sizeof(ms));
    conn->silent_max = ntohl(ms[1]) * 1e-3;
    sharc_store_reply(conn, SHARC_STORE_MSG_HEARTBEAT, SHARC_STORE_ST_OK, NULL, 0);
}

/* A whole message has arrived on @p conn. */
static void sharc_store_dispatch(sharc_store_server_t *srv, sharc_store_conn_t *conn)
{
    size_t klen = conn->hdr.key_len, vlen = conn->hdr.val_len;
    char key[SHARC_STORE_MAX_KEY + 1];
    char *val;

    memcpy(key, conn->payload, klen);
    key[klen] = '\0';
    if (strlen(key) != klen || key[0] == '\x01') {
        sharc_store_reject(conn, "a key with forbidden bytes");
        return;
    }
    if (!conn->authed && conn->hdr.kind != SHARC_STORE_MSG_HELLO) {
        sharc_store_reject(conn, "a request before HELLO");
        return;
    }
    switch (conn->hdr.kind) {
    case SHARC_STORE_MSG_HELLO:
        if (conn->authed) {
            sharc_store_reject(conn, "a second HELLO");
            return;
        }
        sharc_store_hello(srv, conn, key, conn->payload + klen, vlen);
        return;
    case SHARC_STORE_MSG_SET:
        val = malloc(vlen ? vlen : 1);
        if (val == NULL) {
            conn->dead = 1;
            return;
        }
        memcpy(val, conn->payload + klen, vlen);
        sharc_store_srv_set(srv, conn, key, val, vlen);
        return;
    case SHARC_STORE_MSG_GATHER:
        sharc_store_gather_req(srv, conn, key, conn->payload + klen, vlen);
        return;
    case SHARC_STORE_MSG_BYE: conn->live = 0; return;
    case SHARC_STORE_MSG_HEARTBEAT: sharc_store_heartbeat(conn, conn->payload + klen, vlen); return;
    case SHARC_STORE_MSG_STALL:
        sharc_store_srv_stall(srv, conn, conn->payload + klen, vlen);
        return;
    case SHARC_STORE_MSG_REPORT:
        sharc_store_srv_report(srv, conn, conn->payload + klen, vlen);
        return;
    default: sharc_store_reject(conn, "an unknown request"); return;
    }
}

/* Read what is available on @p conn; dispatch each complete message. */
void sharc_store_read(sharc_store_server_t *srv, sharc_store_conn_t *conn)
{
    for (;;) {
        ssize_t n;

        if (conn->hdr_got < SHARC_STORE_HDR_SIZE) {
            n = recv(conn->fd, conn->hdr_buf + conn->hdr_got, SHARC_STORE_HDR_SIZE - conn->hdr_got,
                     0);
        } else {
            size_t want = (size_t)conn->hdr.key_len + conn->hdr.val_len;
            n = (want == conn->payload_got) ? 0
                                            : recv(conn->fd, conn->payload + conn->payload_got,
                                                   want - conn->payload_got, 0);
            if (want == conn->payload_got) {
                goto complete;
            }
        }
        if (n == 0) {
            if (conn->hdr_got > 0 || conn->payload_got > 0) {
                sharc_store_reject(conn, "a truncated message (the peer closed mid-message)");
            } else {
                if (conn->live) {
                    sharc_warn("store: rank %d of '%s' (%s) disconnected without leaving",
                               conn->rank, conn->ns, conn->peer);
                }
                conn->dead = 1;
            }
            return;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                return;
            }
            if (conn->live) {
                sharc_warn("store: connection of rank %d (%s) failed: %m", conn->rank, conn->peer);
            }
            conn->dead = 1;
            return;
        }
        conn->heard = sharc_time_now(); /* any byte says the rank is alive */
        if (conn->hdr_got < SHARC_STORE_HDR_SIZE) {
            conn->hdr_got += (size_t)n;
            if (conn->hdr_got < SHARC_STORE_HDR_SIZE) {
                continue;
            }
            memcpy(&conn->hdr, conn->hdr_buf, sizeof(conn->hdr));
            conn->hdr.magic = ntohl(conn->hdr.magic);
            conn->hdr.key_len = ntohl(conn->hdr.key_len);
            conn->hdr.val_len = ntohl(conn->hdr.val_len);
            if (conn->hdr.magic != SHARC_STORE_MAGIC) {
                sharc_store_reject(conn, "garbage (no sharc store header)");
                return;
            }
            if (conn->hdr.key_len > SHARC_STORE_MAX_KEY || conn->hdr.val_len > srv->max_msg ||
                (!conn->authed && conn->hdr.val_len > 4096)) {
                char why[160];
                snprintf(why, sizeof(why),
                         "an oversized message (key %u, value %u bytes; limit %zu)",
                         conn->hdr.key_len, conn->hdr.val_len, srv->max_msg);
                sharc_store_reject(conn, why);
                return;
            }
            conn->payload = malloc((size_t)conn->hdr.key_len + conn->hdr.val_len + 1);
            conn->payload_got = 0;
            if (conn->payload == NULL) {
                conn->dead = 1;
                return;
            }
            continue;
        }
        conn->payload_got += (size_t)n;
        if (conn->payload_got < (size_t)conn->hdr.key_len + conn->hdr.val_len) {
            continue;
        }
    complete:
        sharc_store_dispatch(srv, conn);
        free(conn->payload);
        conn->payload = NULL;
        conn->payload_got = 0;
        conn->hdr_got = 0;
        if (conn->dead) {
            return;
        }
    }
}
