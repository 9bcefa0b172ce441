/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_reply.c: what the store server says to a connection: a reply, sent with a deadline (a
 * rank that does not take it is dropped), and the refusal of a connection (dropped, said).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <arpa/inet.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
#include "sock.h"
#include "store_srv.h"

int sharc_store_reply(sharc_store_conn_t *conn, uint8_t kind, int16_t status, const void *val,
                      size_t len)
{
    unsigned char hdr[SHARC_STORE_HDR_SIZE];
    sharc_store_hdr_t h = {
        .magic = htonl(SHARC_STORE_MAGIC),
        .kind = kind,
        .status = (int16_t)htons((uint16_t)status),
        .key_len = 0,
        .val_len = htonl((uint32_t)len),
    };
    double deadline = sharc_time_now() + SHARC_STORE_REPLY_TIMEOUT;

    memcpy(hdr, &h, sizeof(hdr));
    if (sharc_sock_send(conn->fd, hdr, sizeof(hdr), deadline) != SHARC_OK ||
        (len > 0 && sharc_sock_send(conn->fd, val, len, deadline) != SHARC_OK)) {
        sharc_warn("store: dropping %s (rank %d): it did not take its reply", conn->peer,
                   conn->rank);
        conn->dead = 1;
        return -1;
    }
    return 0;
}

void sharc_store_reject(sharc_store_conn_t *conn, const char *why)
{
    sharc_warn("store: rejected connection from %s: %s; the job goes on", conn->peer, why);
    conn->dead = 1;
}
