/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_gather.c: the store server's communicators (namespaces: their size, a rank lost)
 * and the server-side gather that carries every bootstrap exchange: SET of indexed keys,
 * GATHER answered once all are there (or with the missing ranks at its deadline), values
 * freed by the last reader; a lost rank fails its communicator's gathers at once.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
#include "store_srv.h"

sharc_store_ns_t *sharc_store_ns(sharc_store_server_t *srv, const char *name, int size)
{
    sharc_store_ns_t *ns;

    for (ns = srv->namespaces; ns != NULL; ns = ns->next) {
        if (strcmp(ns->name, name) == 0) {
            return ns;
        }
    }
    ns = calloc(1, sizeof(*ns));
    if (ns == NULL || (ns->name = strdup(name)) == NULL) {
        free(ns);
        return NULL;
    }
    ns->size = size;
    ns->lost_rank = -1;
    ns->next = srv->namespaces;
    srv->namespaces = ns;
    return ns;
}

/* The job's communicator and those split from it: "<root>" and "<root>.*". */
int sharc_store_admits(const sharc_store_server_t *srv, const char *ns)
{
    size_t len = strlen(srv->root_ns);

    return strncmp(ns, srv->root_ns, len) == 0 && (ns[len] == '\0' || ns[len] == '.');
}

static sharc_store_ns_t *sharc_store_find_ns(sharc_store_server_t *srv, const char *name)
{
    for (sharc_store_ns_t *ns = srv->namespaces; ns != NULL; ns = ns->next) {
        if (name != NULL && strcmp(ns->name, name) == 0) {
            return ns;
        }
    }
    return NULL;
}

/* A gather timed out: the missing indices (the waiters of one gather time out together:
 * they are listed once). */
static void sharc_store_reply_missing(sharc_store_server_t *srv, sharc_store_waiter_t *w)
{
    char key[SHARC_STORE_MAX_KEY + 16];
    sharc_store_missing_t *m = &srv->missing;

    if (m->prefix == NULL || strcmp(m->prefix, w->prefix) != 0 || m->n != w->n) {
        free(m->prefix);
        free(m->list);
        m->prefix = strdup(w->prefix);
        m->list = malloc(sizeof(uint32_t) * w->n);
        m->n = w->n;
        m->count = 0;
        for (uint32_t i = 0; m->list != NULL && i < w->n; i++) {
            snprintf(key, sizeof(key), "%s/%u", w->prefix, i);
            if (sharc_store_lookup(srv, key) == NULL) {
                m->list[m->count++] = htonl(i);
            }
        }
    }
    sharc_store_reply(w->conn, SHARC_STORE_MSG_GATHER, SHARC_STORE_ST_TIMEOUT, m->list,
                      m->list ? m->count * sizeof(uint32_t) : 0);
}

/* The last reader of a gather frees its values and counts. */
static void sharc_store_gather_read(sharc_store_server_t *srv, const sharc_store_waiter_t *w)
{
    char key[SHARC_STORE_MAX_KEY + 16], meta[SHARC_STORE_MAX_KEY + 4];

    if (sharc_store_bump(srv, 'r', w->prefix) < (int)w->readers) {
        return;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        snprintf(key, sizeof(key), "%s/%u", w->prefix, i);
        sharc_store_delete(srv, key);
    }
    sharc_store_meta_key(meta, sizeof(meta), 'c', w->prefix);
    sharc_store_delete(srv, meta);
    sharc_store_meta_key(meta, sizeof(meta), 'r', w->prefix);
    sharc_store_delete(srv, meta);
}

/*
 * Answer @p w with its entries, (u32 length, bytes) each: all of them (0 when one is still
 * missing: not answered yet), or, for a @p partial answer, what is there, the missing ones
 * empty. Returns 1 when the waiter is done.
 */
static int sharc_store_reply_entries(sharc_store_server_t *srv, sharc_store_waiter_t *w,
                                     int partial)
{
    char key[SHARC_STORE_MAX_KEY + 16];
    size_t total = 0, off = 0;
    unsigned char *reply;

    for (uint32_t i = 0; i < w->n; i++) {
        sharc_store_entry_t *e;

        snprintf(key, sizeof(key), "%s/%u", w->prefix, i);
        e = sharc_store_lookup(srv, key);
        if (e == NULL && !partial) {
            return 0; /* the count included a key beyond n */
        }
        total += 4 + (e ? e->len : 0);
    }
    if (total > UINT32_MAX) {
        sharc_store_reply(w->conn, SHARC_STORE_MSG_GATHER, SHARC_STORE_ST_TOO_BIG, NULL, 0);
        return 1;
    }
    reply = malloc(total ? total : 1);
    if (reply == NULL) {
        sharc_error("store: out of memory for a %zu-byte reply to rank %d", total, w->conn->rank);
        w->conn->dead = 1;
        return 1;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        sharc_store_entry_t *e;
        uint32_t len;

        snprintf(key, sizeof(key), "%s/%u", w->prefix, i);
        e = sharc_store_lookup(srv, key);
        len = htonl(e ? (uint32_t)e->len : 0);
        memcpy(reply + off, &len, 4);
        if (e != NULL) {
            memcpy(reply + off + 4, e->val, e->len);
        }
        off += 4 + (e ? e->len : 0);
    }
    sharc_store_reply(w->conn, SHARC_STORE_MSG_GATHER,
                      partial ? SHARC_STORE_ST_PARTIAL : SHARC_STORE_ST_OK, reply, total);
    free(reply);
    sharc_store_gather_read(srv, w);
    return 1;
}

/* Answer @p w if complete (or @p timed_out). Returns 1 when the waiter is done. */
static int sharc_store_try_gather(sharc_store_server_t *srv, sharc_store_waiter_t *w, int timed_out)
{
    if (!timed_out && sharc_store_count(srv, 'c', w->prefix) < w->n) {
        return 0;
    }
    if (timed_out && !w->partial) {
        sharc_store_reply_missing(srv, w);
        return 1;
    }
    return sharc_store_reply_entries(srv, w, timed_out);
}

void sharc_store_free_waiter(sharc_store_waiter_t *w)
{
    free(w->prefix);
    free(w);
}

/* Check the waiters; with @p now >= 0 also expire those past their deadline. */
void sharc_store_scan_waiters(sharc_store_server_t *srv, const char *prefix, double now)
{
    if (now >= 0) { /* a new expiry pass: keys may have come since the last one */
        free(srv->missing.prefix);
        srv->missing.prefix = NULL;
    }
    for (sharc_store_waiter_t **pw = &srv->waiters; *pw != NULL;) {
        sharc_store_waiter_t *w = *pw;
        int done = 0;

        if (w->conn->dead) {
            done = 1;
        } else if (prefix == NULL || strcmp(prefix, w->prefix) == 0) {
            done = sharc_store_try_gather(srv, w, 0);
        }
        if (!done && now >= 0 && now >= w->deadline) {
            done = sharc_store_try_gather(srv, w, 1);
        }
        if (done) {
            *pw = w->next;
            sharc_store_free_waiter(w);
        } else {
            pw = &w->next;
        }
    }
}

void sharc_store_srv_set(sharc_store_server_t *srv, sharc_store_conn_t *conn, const char *key,
                         char *val, size_t len)
{
    sharc_store_entry_t *e;
    size_t plen;
    int created;

    e = sharc_store_get_entry(srv, key, &created);
    if (e == NULL) {
        sharc_error("store: out of memory storing '%s' for rank %d", key, conn->rank);
        conn->dead = 1;
        free(val);
        return;
    }
    free(e->val);
    e->val = val; /* takes the payload buffer */
    e->len = len;
    plen = sharc_store_indexed_prefix(key);
    if (created && plen > 0) {
        char prefix[SHARC_STORE_MAX_KEY + 1];

        memcpy(prefix, key, plen);
        prefix[plen] = '\0';
        if (sharc_store_bump(srv, 'c', prefix) < 0) {
            conn->dead = 1;
            return;
        }
        sharc_store_scan_waiters(srv, prefix, -1);
    }
}

void sharc_store_gather_req(sharc_store_server_t *srv, sharc_store_conn_t *conn, const char *key,
                            const char *val, size_t len)
{
    sharc_store_waiter_t *w;
    sharc_store_ns_t *ns;
    uint32_t args[4] = {0, 0, 0, 0};

    if (len != 3 * sizeof(uint32_t) && len != sizeof(args)) {
        sharc_store_reject(conn, "malformed GATHER");
        return;
    }
    memcpy(args, val, len);
    w = calloc(1, sizeof(*w));
    if (w == NULL || (w->prefix = strdup(key)) == NULL) {
        free(w);
        conn->dead = 1;
        return;
    }
    ns = sharc_store_find_ns(srv, conn->ns);
    if (ns == NULL || ntohl(args[0]) > (uint32_t)ns->size || ntohl(args[1]) > (uint32_t)ns->size ||
        ntohl(args[1]) == 0) {
        sharc_store_free_waiter(w);
        sharc_store_reject(conn, "a GATHER larger than its communicator");
        return;
    }
    if (ns->lost_rank >= 0) {
        uint32_t lost[2] = {htonl((uint32_t)ns->lost_rank), htonl((uint32_t)ns->lost_by)};
        sharc_store_reply(conn, SHARC_STORE_MSG_GATHER, SHARC_STORE_ST_PEER_LOST, lost,
                          sizeof(lost));
        sharc_store_free_waiter(w);
        return;
    }
    w->conn = conn;
    w->n = ntohl(args[0]);
    w->readers = ntohl(args[1]);
    w->partial = (ntohl(args[3]) & SHARC_STORE_GATHER_PARTIAL) != 0;
    w->deadline = sharc_time_now() + ntohl(args[2]) * 1e-3;
    if (sharc_store_try_gather(srv, w, 0)) {
        sharc_store_free_waiter(w);
        return;
    }
    w->next = srv->waiters;
    srv->waiters = w;
}

/*
 * Rank @p lost of communicator @p ns is gone (its connection closed without BYE, or rank
 * @p by reported it): the communicator cannot complete another exchange, so every pending and
 * later gather of it fails at once, naming the rank, and every live rank of it is told now
 * (NOTICE), so that its collectives fail too instead of waiting for the timeout.
 */
void sharc_store_peer_lost(sharc_store_server_t *srv, const char *name, int lost, int by)
{
    sharc_store_ns_t *ns = sharc_store_find_ns(srv, name);
    uint32_t notice[2] = {htonl((uint32_t)lost), htonl((uint32_t)by)};

    if (ns == NULL || ns->lost_rank >= 0) {
        return;
    }
    ns->lost_rank = lost;
    ns->lost_by = by;
    if (by == lost) {
        sharc_warn("store: rank %d of '%s' is gone: telling the others", lost, name);
    } else {
        sharc_warn("store: rank %d of '%s' reports rank %d gone: telling the others", by, name,
                   lost);
    }
    for (sharc_store_waiter_t **pw = &srv->waiters; *pw != NULL;) {
        sharc_store_waiter_t *w = *pw;

        if (!w->conn->dead && w->conn->ns != NULL && strcmp(w->conn->ns, name) == 0) {
            sharc_store_reply(w->conn, SHARC_STORE_MSG_GATHER, SHARC_STORE_ST_PEER_LOST, notice,
                              sizeof(notice));
            *pw = w->next;
            sharc_store_free_waiter(w);
        } else {
            pw = &w->next;
        }
    }
    for (size_t i = 0; i < srv->nconns; i++) {
        sharc_store_conn_t *c = srv->conns[i];

        if (c->live && !c->dead && c->ns != NULL && strcmp(c->ns, name) == 0) {
            sharc_store_reply(c, SHARC_STORE_MSG_NOTICE, SHARC_STORE_ST_PEER_LOST, notice,
                              sizeof(notice));
        }
    }
}

/* REPORT: a rank's transport lost a peer of its communicator. */
void sharc_store_srv_report(sharc_store_server_t *srv, sharc_store_conn_t *conn, const char *val,
                            size_t len)
{
    sharc_store_ns_t *ns = sharc_store_find_ns(srv, conn->ns);
    uint32_t lost;

    if (len != 4 || ns == NULL) {
        sharc_store_reject(conn, "malformed REPORT");
        return;
    }
    memcpy(&lost, val, 4);
    lost = ntohl(lost);
    if (lost >= (uint32_t)ns->size) {
        sharc_store_reject(conn, "a REPORT of a rank outside its communicator");
        return;
    }
    sharc_store_peer_lost(srv, conn->ns, (int)lost, conn->rank);
}

void sharc_store_srv_stall(sharc_store_server_t *srv, sharc_store_conn_t *conn, const char *val,
                           size_t len)
{
    sharc_store_ns_t *ns = sharc_store_find_ns(srv, conn->ns);
    double now = sharc_time_now();
    unsigned char round[12];
    uint64_t ordinal;
    uint32_t k;

    if (len != sizeof(ordinal) || ns == NULL) {
        sharc_store_reject(conn, "malformed STALL");
        return;
    }
    memcpy(&ordinal, val, sizeof(ordinal)); /* (as the client sent it: no byte swap needed) */
    if (ns->rounds > 0 && ns->round_ordinal == ordinal &&
        now - ns->round_time < SHARC_STORE_ROUND_HOLD_S) {
        return; /* its round is under way, or just done */
    }
    k = ns->rounds++;
    ns->round_ordinal = ordinal;
    ns->round_time = now;
    sharc_info("store: rank %d of '%s' reports collective #%llu stalled: verdict round %u",
               conn->rank, conn->ns, (unsigned long long)ordinal, k);
    k = htonl(k);
    memcpy(round, &k, 4);
    memcpy(round + 4, &ordinal, 8);
    for (size_t i = 0; i < srv->nconns; i++) {
        sharc_store_conn_t *c = srv->conns[i];

        if (c->live && !c->dead && c->ns != NULL && strcmp(c->ns, conn->ns) == 0) {
            sharc_store_reply(c, SHARC_STORE_MSG_VERDICT, SHARC_STORE_ST_OK, round, sizeof(round));
        }
    }
}
