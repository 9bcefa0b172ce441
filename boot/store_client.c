/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_client.c: one rank's connection to the bootstrap store. Requests are synchronous
 * (one outstanding at a time, under the client's lock) and every wait is bounded: the server
 * answers a gather with a TIMEOUT reply listing the missing ranks at the bootstrap timeout,
 * and the client gives up a few seconds after that if even that reply does not come. After
 * any failure the connection is marked broken and every later call fails at once. Between
 * replies the server may send unasked messages (a rank gone, a heartbeat's answer, a verdict
 * round): store_watch.c takes them, with the heartbeats and the poll.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/log.h"
#include "../base/util.h"
#include "sock.h"
#include "store_client.h"

/* Send one message: not logged; TIMEOUT or IO (errno set). */
sharc_status_t sharc_store_send_raw(int fd, uint8_t kind, const char *key, const void *val,
                                    size_t len, double deadline)
{
    size_t klen = strlen(key);
    unsigned char hdr[SHARC_STORE_HDR_SIZE];
    sharc_store_hdr_t h = {
        .magic = htonl(SHARC_STORE_MAGIC),
        .kind = kind,
        .key_len = htonl((uint32_t)klen),
        .val_len = htonl((uint32_t)len),
    };
    sharc_status_t status;

    memcpy(hdr, &h, sizeof(hdr));
    status = sharc_sock_send(fd, hdr, sizeof(hdr), deadline);
    if (status == SHARC_OK) {
        status = sharc_sock_send(fd, key, klen, deadline);
    }
    if (status == SHARC_OK && len > 0) {
        status = sharc_sock_send(fd, val, len, deadline);
    }
    return status;
}

void sharc_store_lost(sharc_store_client_t *c, const char *why, int closed)
{
    c->broken = 1;
    if (!c->store_lost) {
        c->store_lost = 1;
        c->store_closed = closed;
        snprintf(c->lost_why, sizeof(c->lost_why), "lost the store at %s: %s", c->addr, why);
    }
}

/* Send one request; failures are logged and break the connection. */
sharc_status_t sharc_store_send_msg(sharc_store_client_t *c, uint8_t kind, const char *key,
                                    const void *val, size_t len, double deadline)
{
    sharc_status_t status;

    pthread_mutex_lock(&c->send_lock); /* (the heartbeat sends between requests' messages) */
    status = sharc_store_send_raw(c->fd, kind, key, val, len, deadline);
    pthread_mutex_unlock(&c->send_lock);

    if (status != SHARC_OK) {
        c->broken = 1;
        if (status == SHARC_ERR_TIMEOUT) {
            sharc_error("rank %d: the store at %s stopped taking data (send timed out)", c->rank,
                        c->addr);
            return status;
        }
        int closed = errno == ECONNRESET || errno == EPIPE;
        const char *why = strerror(errno);

        sharc_error("rank %d: lost the store at %s: %s (did rank 0 fail?)", c->rank, c->addr, why);
        sharc_store_lost(c, why, closed);
        return SHARC_ERR_REMOTE;
    }
    return SHARC_OK;
}

/*
 * Receive one reply, taking the unasked messages that come first (store_watch.c); *val_p is
 * malloc'ed (NULL when empty).
 * Not logged: returns TIMEOUT, IO (errno set), REMOTE for a malformed reply, NOMEM.
 */
sharc_status_t sharc_store_recv_raw(sharc_store_client_t *c, uint8_t kind, double deadline,
                                    size_t max_len, int16_t *st_p, char **val_p, size_t *len_p)
{
    unsigned char hdr[SHARC_STORE_HDR_SIZE];
    sharc_store_hdr_t h;
    sharc_status_t status;
    char *val = NULL;

    for (;;) {
        status = sharc_sock_recv(c->fd, hdr, sizeof(hdr), deadline);
        if (status != SHARC_OK) {
            return status;
        }
        memcpy(&h, hdr, sizeof(h));
        h.val_len = ntohl(h.val_len);
        c->hb_ack = sharc_time_now(); /* the store speaks: it is alive */
        if (ntohl(h.magic) == SHARC_STORE_MAGIC && h.kind != kind &&
            sharc_store_is_unasked(h.kind, h.key_len, h.val_len)) {
            status = sharc_store_take_unasked(c, h.kind, deadline);
            if (status != SHARC_OK) {
                return status;
            }
            continue; /* the reply comes after it */
        }
        break;
    }
    if (ntohl(h.magic) != SHARC_STORE_MAGIC || h.kind != kind || h.key_len != 0 ||
        h.val_len > max_len) {
        return SHARC_ERR_REMOTE;
    }
    if (h.val_len > 0) {
        val = malloc((size_t)h.val_len + 1);
        if (val == NULL) {
            return SHARC_ERR_NOMEM;
        }
        status = sharc_sock_recv(c->fd, val, h.val_len, deadline);
        if (status != SHARC_OK) {
            free(val);
            return status;
        }
        val[h.val_len] = '\0';
    }
    *st_p = (int16_t)ntohs((uint16_t)h.status);
    *val_p = val;
    *len_p = h.val_len;
    return SHARC_OK;
}

/* Receive one reply to @p what; failures are logged and break the connection. */
static sharc_status_t sharc_store_recv_reply(sharc_store_client_t *c, uint8_t kind, double deadline,
                                             size_t max_len, int16_t *st_p, char **val_p,
                                             size_t *len_p, const char *what)
{
    sharc_status_t status = sharc_store_recv_raw(c, kind, deadline, max_len, st_p, val_p, len_p);

    if (status == SHARC_OK) {
        return SHARC_OK;
    }
    c->broken = 1;
    if (status == SHARC_ERR_REMOTE) {
        sharc_error("rank %d: the store at %s sent a malformed reply to %s", c->rank, c->addr,
                    what);
        return status;
    }
    if (status == SHARC_ERR_NOMEM) {
        return status;
    }
    if (status == SHARC_ERR_TIMEOUT) {
        sharc_error("rank %d: no answer from the store at %s to %s within %.1f s", c->rank, c->addr,
                    what, c->timeout + SHARC_STORE_CLIENT_GRACE);
        return SHARC_ERR_TIMEOUT;
    }
    int closed = errno == ECONNRESET || errno == EPIPE;
    const char *why = strerror(errno);

    sharc_error("rank %d: lost the store at %s during %s: %s (did rank 0 fail?)", c->rank, c->addr,
                what, why);
    sharc_store_lost(c, why, closed);
    return SHARC_ERR_REMOTE;
}

static sharc_status_t sharc_store_check(sharc_store_client_t *c)
{
    if (c->broken) {
        sharc_error("rank %d: the connection to the store at %s failed earlier; the "
                    "communicator can no longer bootstrap",
                    c->rank, c->addr);
        return SHARC_ERR_REMOTE;
    }
    return SHARC_OK;
}

/*
 * One connection and HELLO. SHARC_INPROGRESS means "try again": the store closed the
 * connection before answering, or said it is closing (rank 0 is between two stores).
 */
static sharc_status_t sharc_store_hello(sharc_store_client_t *c, const char *host, int port,
                                        const char *digest, const char *ns, int size,
                                        double deadline)
{
    unsigned char hello[12 + 256];
    uint32_t v[3] = {htonl(SHARC_STORE_VERSION), htonl((uint32_t)c->rank), htonl((uint32_t)size)};
    size_t ns_len = strlen(ns), len;
    char what[SHARC_SOCK_HOST_MAX + 64], *reply = NULL;
    sharc_status_t status;
    int16_t st;

    snprintf(what, sizeof(what), "the bootstrap store (rank %d)", c->rank);
    status = sharc_sock_connect(host, port, deadline, what, &c->fd);
    if (status != SHARC_OK) {
        return status;
    }
    memcpy(hello, v, 12);
    memcpy(hello + 12, ns, ns_len);
    status =
        sharc_store_send_raw(c->fd, SHARC_STORE_MSG_HELLO, digest, hello, 12 + ns_len, deadline);
    if (status == SHARC_OK) {
        status = sharc_store_recv_raw(c, SHARC_STORE_MSG_HELLO, deadline, 4096, &st, &reply, &len);
    }
    if (status == SHARC_ERR_TIMEOUT) {
        sharc_error("rank %d: the store at %s did not answer this rank's HELLO before the "
                    "timeout",
                    c->rank, c->addr);
    } else if (status == SHARC_ERR_REMOTE) {
        sharc_error("rank %d: the service at %s answered, but it is not a sharc store", c->rank,
                    c->addr);
    } else if (status == SHARC_ERR_IO) {
        status = SHARC_INPROGRESS; /* closed before answering: rank 0 between two stores */
    }
    if (status != SHARC_OK) {
        close(c->fd);
        return status;
    }
    if (st == SHARC_STORE_ST_CLOSING) {
        free(reply);
        close(c->fd);
        return SHARC_INPROGRESS;
    }
    if (st != SHARC_STORE_ST_OK) {
        sharc_error("rank %d: the store at %s refused this rank: %s", c->rank, c->addr,
                    reply ? reply : "no reason given");
        free(reply);
        close(c->fd);
        return (st == SHARC_STORE_ST_BAD_TOKEN) ? SHARC_ERR_REMOTE : SHARC_ERR_INVALID;
    }
    free(reply);
    return SHARC_OK;
}

sharc_status_t sharc_store_connect(const char *host, int port, const char *digest, const char *ns,
                                   int rank, int size, double timeout, size_t max_msg,
                                   sharc_store_client_t **client_p)
{
    double deadline = sharc_time_now() + timeout;
    sharc_store_client_t *c;
    sharc_status_t status;

    if (strlen(ns) >= 256 || strlen(digest) >= SHARC_STORE_MAX_KEY) {
        sharc_error("rank %d: communicator name '%s' is too long", rank, ns);
        return SHARC_ERR_INVALID;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return SHARC_ERR_NOMEM;
    }
    c->rank = rank;
    c->timeout = timeout;
    c->max_msg = max_msg;
    c->lost_rank = c->lost_by = -1;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->send_lock, NULL);
    c->hb_ack = sharc_time_now();
    snprintf(c->addr, sizeof(c->addr), (strchr(host, ':') ? "[%s]:%d" : "%s:%d"), host, port);
    for (;;) {
        status = sharc_store_hello(c, host, port, digest, ns, size, deadline);
        if (status != SHARC_INPROGRESS) {
            break;
        }
        if (sharc_time_now() + 0.05 >= deadline) {
            sharc_error("rank %d: the store at %s kept closing the connection before it "
                        "answered, until the timeout",
                        rank, c->addr);
            status = SHARC_ERR_TIMEOUT;
            break;
        }
        usleep(50000);
    }
    if (status != SHARC_OK) {
        pthread_mutex_destroy(&c->send_lock);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return status;
    }
    *client_p = c;
    return SHARC_OK;
}

sharc_status_t sharc_store_set(sharc_store_client_t *c, const char *key, const void *val,
                               size_t len)
{
    sharc_status_t status;

    if (len > c->max_msg) {
        sharc_error("rank %d: a %zu-byte bootstrap value exceeds SHARC_BOOTSTRAP_MAX_MSG (%zu)",
                    c->rank, len, c->max_msg);
        return SHARC_ERR_INVALID;
    }
    pthread_mutex_lock(&c->lock);
    status = sharc_store_check(c);
    if (status == SHARC_OK) {
        status = sharc_store_send_msg(c, SHARC_STORE_MSG_SET, key, val, len,
                                      sharc_time_now() + c->timeout);
    }
    pthread_mutex_unlock(&c->lock);
    return status;
}

/* "ranks 3, 5, 7" from the TIMEOUT reply's list (at most a few dozen are named). */
static void sharc_store_format_missing(const char *val, size_t len, char *buf, size_t size)
{
    size_t off = 0, n = len / 4;

    buf[0] = '\0';
    for (size_t i = 0; i < n && off + 16 < size; i++) {
        uint32_t r;
        memcpy(&r, val + 4 * i, 4);
        off += (size_t)snprintf(buf + off, size - off, "%s%u", i ? ", " : "", ntohl(r));
    }
    if (off + 16 >= size && n > 0) {
        snprintf(buf + off, size - off, ", ...");
    }
}

static sharc_status_t sharc_store_gather_locked(sharc_store_client_t *c, const char *prefix,
                                                uint32_t n, uint32_t readers, int root, void *out,
                                                size_t len, const char *what)
{
    size_t expect = (size_t)n * (4 + len);

    uint32_t args[3] = {htonl(n), htonl(readers),
                        htonl((uint32_t)SHARC_MIN(c->timeout * 1000.0, 4e9))};
    double deadline = sharc_time_now() + c->timeout;
    sharc_status_t status = sharc_store_check(c);
    char *reply = NULL, missing[256];
    size_t reply_len, off = 0;
    uint32_t i;
    int16_t st;

    if (status != SHARC_OK) {
        return status;
    }
    if (len > UINT32_MAX || expect > UINT32_MAX) {
        sharc_error("rank %d: %s would gather %zu bytes; the store carries at most 4 GiB at once",
                    c->rank, what, expect);
        return SHARC_ERR_INVALID;
    }
    status = sharc_store_send_msg(c, SHARC_STORE_MSG_GATHER, prefix, args, sizeof(args), deadline);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_store_recv_reply(c, SHARC_STORE_MSG_GATHER, deadline + SHARC_STORE_CLIENT_GRACE,
                                    SHARC_MAX(expect, c->max_msg), &st, &reply, &reply_len, what);
    if (status != SHARC_OK) {
        return status;
    }
    if (st == SHARC_STORE_ST_PEER_LOST) {
        uint32_t lost[2] = {0, 0};

        if (reply != NULL && (reply_len == 4 || reply_len == 8)) {
            memcpy(lost, reply, reply_len);
        }
        if (reply_len == 8 && lost[0] != lost[1]) {
            sharc_error("rank %d: %s failed: rank %u of this communicator reported rank %u gone",
                        c->rank, what, ntohl(lost[1]), ntohl(lost[0]));
        } else {
            sharc_error("rank %d: %s failed: rank %u of this communicator is gone: its "
                        "connection to the store at %s closed without leaving (the rank ended, "
                        "or gave up on a store it could not reach: its node or link is down)",
                        c->rank, what, ntohl(lost[0]), c->addr);
        }
        free(reply);
        return SHARC_ERR_REMOTE;
    }
    if (st == SHARC_STORE_ST_TOO_BIG) {
        sharc_error("rank %d: %s: the gathered values exceed what the store can return at once "
                    "(ranks contributed different sizes?)",
                    c->rank, what);
        free(reply);
        return SHARC_ERR_REMOTE;
    }
    if (st == SHARC_STORE_ST_TIMEOUT) {
        if (root >= 0) { /* one value, from the root: the list can only say index 0 */
            snprintf(missing, sizeof(missing), "%d", root);
        } else {
            sharc_store_format_missing(reply ? reply : "", reply_len, missing, sizeof(missing));
        }
        sharc_error("rank %d: timed out after %.1f s in %s: rank(s) %s of %u did not arrive "
                    "(store %s)",
                    c->rank, c->timeout, what, missing, n, c->addr);
        free(reply);
        return SHARC_ERR_TIMEOUT;
    }
    for (i = 0; i < n; i++) {
        uint32_t elen;

        if (reply_len - off < 4) {
            break;
        }
        memcpy(&elen, reply + off, 4);
        elen = ntohl(elen);
        if (elen != len || reply_len - off - 4 < elen) {
            sharc_error("rank %d: in %s rank %u contributed %u bytes where this rank expects %zu "
                        "(mismatched sharc versions or arguments?)",
                        c->rank, what, i, elen, len);
            free(reply);
            return SHARC_ERR_REMOTE;
        }
        memcpy((char *)out + (size_t)i * len, reply + off + 4, len);
        off += 4 + len;
    }
    if (off != reply_len || i != n) {
        sharc_error("rank %d: the store at %s sent a malformed reply to %s", c->rank, c->addr,
                    what);
        free(reply);
        c->broken = 1;
        return SHARC_ERR_REMOTE;
    }
    free(reply);
    return SHARC_OK;
}

sharc_status_t sharc_store_gather(sharc_store_client_t *c, const char *prefix, uint32_t n,
                                  uint32_t readers, int root, void *out, size_t len,
                                  const char *what)
{
    sharc_status_t status;

    pthread_mutex_lock(&c->lock);
    status = sharc_store_gather_locked(c, prefix, n, readers, root, out, len, what);
    pthread_mutex_unlock(&c->lock);
    return status;
}

void sharc_store_report(sharc_store_client_t *c, int rank)
{
    uint32_t v = htonl((uint32_t)rank);

    /* from inside a transport's progress: never wait for a request of another thread (the
     * store hears of a dead process anyway, when its connection closes) */
    if (pthread_mutex_trylock(&c->lock) != 0) {
        return;
    }
    if (!c->broken && c->lost_rank < 0) {
        sharc_store_send_msg(c, SHARC_STORE_MSG_REPORT, "", &v, sizeof(v), sharc_time_now() + 1.0);
    }
    pthread_mutex_unlock(&c->lock);
}

void sharc_store_close(sharc_store_client_t *c)
{
    if (c == NULL) {
        return;
    }
    if (!c->broken) {
        sharc_store_send_msg(c, SHARC_STORE_MSG_BYE, "", NULL, 0, sharc_time_now() + 1.0);
    }
    close(c->fd);
    pthread_mutex_destroy(&c->send_lock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
