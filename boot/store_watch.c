/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_watch.c: what a store connection hears and says between requests: the poll that
 * hands out the unasked messages (store_unasked.c reads them) without blocking, the heartbeats that
 * tell the store this rank is alive and tell this rank the store is (a silence past the limit on
 * either side names the other gone), and the stall verdict's messages: asking for a round, and the
 * partial gather of the ranks' heads. Requests and replies are store_client.c's.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
#include "store_client.h"

/* The store is gone (@p closed), or cannot be heard: every later call fails, and the poll says
 * so. */
static void sharc_store_lose(sharc_store_client_t *c, const char *why, int closed)
{
    sharc_store_lost(c, why, closed);
    sharc_error("rank %d: lost the store at %s: %s", c->rank, c->addr, why);
}

/* Take what has arrived, without blocking (lock held): unasked messages only, or the end of
 * the connection (rank 0, which serves the store, is gone). */
static void sharc_store_drain(sharc_store_client_t *c)
{
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};

    while (c->lost_rank < 0 && !c->broken && poll(&pfd, 1, 0) > 0) {
        unsigned char hdr[SHARC_STORE_HDR_SIZE];
        sharc_status_t status = sharc_sock_recv(c->fd, hdr, sizeof(hdr), sharc_time_now() + 1.0);
        sharc_store_hdr_t h;

        memcpy(&h, hdr, sizeof(h));
        if (status == SHARC_OK && ntohl(h.magic) == SHARC_STORE_MAGIC &&
            sharc_store_is_unasked(h.kind, h.key_len, ntohl(h.val_len))) {
            status = sharc_store_take_unasked(c, h.kind, sharc_time_now() + 1.0);
        } else if (status == SHARC_OK) {
            status = SHARC_ERR_REMOTE; /* nothing else comes unasked */
        }
        if (status != SHARC_OK) {
            sharc_store_lose(c, "rank 0, which serves it, is gone", 1);
        }
    }
}

sharc_status_t sharc_store_poll(sharc_store_client_t *c, int *lost_p, int *by_p,
                                const char **store_why_p, int *closed_p)
{
    sharc_status_t status;

    if (pthread_mutex_trylock(&c->lock) != 0) {
        return SHARC_OK; /* a request is under way: it takes what arrives, the next poll tells */
    }
    sharc_store_drain(c);
    status = (c->lost_rank >= 0 || c->store_lost) ? SHARC_ERR_REMOTE : SHARC_OK;
    if (status != SHARC_OK) {
        *lost_p = c->lost_rank;
        *by_p = c->lost_by;
        *store_why_p = c->store_lost ? c->lost_why : NULL;
        *closed_p = c->store_closed;
    }
    pthread_mutex_unlock(&c->lock);
    return status;
}

void sharc_store_keepalive(sharc_store_client_t *c, double interval, double silent_max)
{
    uint32_t ms[2] = {htonl((uint32_t)(interval * 1e3)), htonl((uint32_t)(silent_max * 1e3))};
    double now = sharc_time_now();
    char why[160];

    if (c->store_lost || (c->broken && c->hb_errno == 0)) {
        return; /* lost, and said; or broken by a request, which said why */
    }
    if (!c->broken && now - c->hb_sent >= interval) {
        /* under send_lock only: a request of another thread may be waiting for its reply,
         * whose reader takes the answer (sharc_store_take_unasked) */
        c->hb_sent = now;
        pthread_mutex_lock(&c->send_lock);
        if (sharc_store_send_raw(c->fd, SHARC_STORE_MSG_HEARTBEAT, "", ms, sizeof(ms), now + 1.0) !=
            SHARC_OK) {
            c->hb_errno = errno != 0 ? errno : EIO; /* (said below, under the lock) */
            c->broken = 1;
        }
        pthread_mutex_unlock(&c->send_lock);
    }
    if (pthread_mutex_trylock(&c->lock) != 0) {
        return; /* a request is under way: its reader hears the store */
    }
    sharc_store_drain(c);
    if (!c->broken && now - c->hb_ack > silent_max && c->hb_sent > 0) {
        snprintf(why, sizeof(why),
                 "no answer to its heartbeats for %.1f s: rank 0, which serves it, is "
                 "unreachable from here (its node, or the link between them)",
                 now - c->hb_ack);
        sharc_store_lose(c, why, 0);
    } else if (c->hb_errno != 0 && !c->store_lost && c->lost_rank < 0) {
        snprintf(why, sizeof(why), "a heartbeat could not be sent: %s", strerror(c->hb_errno));
        /* a connection the store's side closed: its process is gone */
        sharc_store_lose(c, why, c->hb_errno == EPIPE || c->hb_errno == ECONNRESET);
    }
    pthread_mutex_unlock(&c->lock);
}

void sharc_store_stall(sharc_store_client_t *c, uint64_t ordinal)
{
    uint64_t v = htobe64(ordinal);

    if (pthread_mutex_trylock(&c->lock) != 0) {
        return; /* a request holds the connection: the watchdog asks again on its next turn */
    }
    if (!c->broken) {
        sharc_store_send_msg(c, SHARC_STORE_MSG_STALL, "", &v, sizeof(v), sharc_time_now() + 1.0);
    }
    pthread_mutex_unlock(&c->lock);
}

int sharc_store_round(sharc_store_client_t *c, uint32_t *round_p, uint64_t *ordinal_p)
{
    int pending = 0;

    if (pthread_mutex_trylock(&c->lock) != 0) {
        return 0;
    }
    sharc_store_drain(c);
    if (c->round_pending) {
        c->round_pending = 0;
        *round_p = c->round;
        *ordinal_p = c->round_ordinal;
        pending = 1;
    }
    pthread_mutex_unlock(&c->lock);
    return pending;
}

/* The entries of a partial gather's reply into @p out (missing ones: present[i] = 0). */
static sharc_status_t sharc_store_unpack(const char *reply, size_t reply_len, uint32_t n,
                                         size_t len, void *out, unsigned char *present)
{
    size_t off = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint32_t elen;

        if (reply_len - off < 4) {
            return SHARC_ERR_REMOTE;
        }
        memcpy(&elen, reply + off, 4);
        elen = ntohl(elen);
        if ((elen != 0 && elen != len) || reply_len - off - 4 < elen) {
            return SHARC_ERR_REMOTE;
        }
        present[i] = elen != 0;
        memcpy((char *)out + (size_t)i * len, reply + off + 4, elen);
        off += 4 + elen;
    }
    return (off == reply_len) ? SHARC_OK : SHARC_ERR_REMOTE;
}

sharc_status_t sharc_store_exchange(sharc_store_client_t *c, const char *prefix, uint32_t n,
                                    uint32_t me, const void *mine, void *out, size_t len,
                                    double timeout, unsigned char *present)
{
    uint32_t args[4] = {htonl(n), htonl(n), htonl((uint32_t)(timeout * 1e3)),
                        htonl(SHARC_STORE_GATHER_PARTIAL)};
    double deadline = sharc_time_now() + timeout;
    char key[SHARC_STORE_MAX_KEY], *reply = NULL;
    sharc_status_t status;
    size_t reply_len = 0;
    int16_t st = 0;

    snprintf(key, sizeof(key), "%s/%u", prefix, me);
    pthread_mutex_lock(&c->lock);
    status = c->broken ? SHARC_ERR_REMOTE : SHARC_OK;
    if (status == SHARC_OK) {
        status = sharc_store_send_msg(c, SHARC_STORE_MSG_SET, key, mine, len, deadline);
    }
    if (status == SHARC_OK) {
        status =
            sharc_store_send_msg(c, SHARC_STORE_MSG_GATHER, prefix, args, sizeof(args), deadline);
    }
    if (status == SHARC_OK) {
        status = sharc_store_recv_raw(c, SHARC_STORE_MSG_GATHER, deadline + 5.0,
                                      (size_t)n * (4 + len), &st, &reply, &reply_len);
    }
    if (status == SHARC_OK && st != SHARC_STORE_ST_OK && st != SHARC_STORE_ST_PARTIAL) {
        status = SHARC_ERR_REMOTE; /* (PEER_LOST: the communicator is failing anyway) */
    } else if (status == SHARC_OK) {
        status = sharc_store_unpack(reply ? reply : "", reply_len, n, len, out, present);
    }
    pthread_mutex_unlock(&c->lock);
    free(reply);
    return status;
}
