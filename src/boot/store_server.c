/*
 * store_server.c: the bootstrap store's server, run by rank 0 in one thread. It owns every
 * byte of its state; other threads only start and stop it. Clients are read without blocking
 * (a slow or malicious connection cannot stall the others); replies are small and written
 * with a short deadline. Connections that send garbage, oversized or truncated messages or a
 * wrong token are logged and dropped; the job goes on.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../base/log.h"
#include "../base/util.h"
#include "sock.h"
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
    double since; /* connection time, for the token deadline */
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
    int lost_rank; /* a rank that died (closed without BYE) or was reported gone, or -1 */
    int lost_by;   /* the rank that reported it (lost_rank itself when it closed) */
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

void sharc_store_digest(const char *token, char digest[17])
{
    /* Two rounds with different seeds so that short tokens still spread over 64 bits. */
    uint64_t h = sharc_hash64(SHARC_HASH_SEED, "sharc-store-v1:", 15);

    h = sharc_hash64(h, token, strlen(token));
    h = sharc_hash64(h ^ 0x9e3779b97f4a7c15ull, token, strlen(token));
    snprintf(digest, 17, "%016llx", (unsigned long long)h);
}

/* ---- key-value table ------------------------------------------------------------------- */

static size_t sharc_store_bucket(const sharc_store_server_t *srv, const char *key)
{
    return sharc_hash64(SHARC_HASH_SEED, key, strlen(key)) & (srv->table_size - 1);
}

static sharc_store_entry_t *sharc_store_lookup(sharc_store_server_t *srv, const char *key)
{
    for (sharc_store_entry_t *e = srv->table[sharc_store_bucket(srv, key)]; e; e = e->next) {
        if (strcmp(e->key, key) == 0) {
            return e;
        }
    }
    return NULL;
}

static void sharc_store_grow(sharc_store_server_t *srv)
{
    size_t old_size = srv->table_size, new_size = old_size * 2;
    sharc_store_entry_t **old = srv->table, **table = calloc(new_size, sizeof(*table));

    if (table == NULL) {
        return; /* keep the longer chains */
    }
    srv->table = table;
    srv->table_size = new_size;
    for (size_t i = 0; i < old_size; i++) {
        while (old[i] != NULL) {
            sharc_store_entry_t *e = old[i];
            size_t b = sharc_store_bucket(srv, e->key);
            old[i] = e->next;
            e->next = table[b];
            table[b] = e;
        }
    }
    free(old);
}

/* Find or create; NULL when out of memory. *created_p tells which. */
static sharc_store_entry_t *sharc_store_get_entry(sharc_store_server_t *srv, const char *key,
                                                  int *created_p)
{
    sharc_store_entry_t *e = sharc_store_lookup(srv, key);
    size_t b;

    *created_p = 0;
    if (e != NULL) {
        return e;
    }
    if (srv->nentries >= srv->table_size) {
        sharc_store_grow(srv);
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL || (e->key = strdup(key)) == NULL) {
        free(e);
        return NULL;
    }
    b = sharc_store_bucket(srv, key);
    e->next = srv->table[b];
    srv->table[b] = e;
    srv->nentries++;
    *created_p = 1;
    return e;
}

static void sharc_store_delete(sharc_store_server_t *srv, const char *key)
{
    for (sharc_store_entry_t **pe = &srv->table[sharc_store_bucket(srv, key)]; *pe;
         pe = &(*pe)->next) {
        if (strcmp((*pe)->key, key) == 0) {
            sharc_store_entry_t *e = *pe;
            *pe = e->next;
            free(e->key);
            free(e->val);
            free(e);
            srv->nentries--;
            return;
        }
    }
}

/* Bookkeeping keys start with a byte no client key can hold (keys are checked for it). */
static void sharc_store_meta_key(char *buf, size_t size, char kind, const char *prefix)
{
    snprintf(buf, size, "\x01%c%s", kind, prefix);
}

/* ---- connections ----------------------------------------------------------------------- */

static int sharc_store_reply(sharc_store_conn_t *conn, uint8_t op, int16_t status, const void *val,
                             size_t len)
{
    unsigned char hdr[SHARC_STORE_HDR_SIZE];
    sharc_store_hdr_t h = {
        .magic = htonl(SHARC_STORE_MAGIC),
        .op = op,
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

static void sharc_store_reject(sharc_store_conn_t *conn, const char *why)
{
    sharc_warn("store: rejected connection from %s: %s; the job goes on", conn->peer, why);
    conn->dead = 1;
}

static sharc_store_ns_t *sharc_store_ns(sharc_store_server_t *srv, const char *name, int size)
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
static int sharc_store_admits(const sharc_store_server_t *srv, const char *ns)
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
        sharc_store_reply(conn, SHARC_STORE_OP_HELLO, st, why, strlen(why));
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
    sharc_store_reply(conn, SHARC_STORE_OP_HELLO, SHARC_STORE_ST_OK, NULL, 0);
}

/* ---- gathers --------------------------------------------------------------------------- */

/* Counted key "P/i": i must be all digits. Returns the length of P, or 0. */
static size_t sharc_store_indexed_prefix(const char *key)
{
    const char *slash = strrchr(key, '/');

    if (slash == NULL || slash == key || slash[1] == '\0') {
        return 0;
    }
    for (const char *p = slash + 1; *p; p++) {
        if (*p < '0' || *p > '9') {
            return 0;
        }
    }
    return (size_t)(slash - key);
}

static uint32_t sharc_store_count(sharc_store_server_t *srv, char kind, const char *prefix)
{
    char meta[SHARC_STORE_MAX_KEY + 4];
    sharc_store_entry_t *e;

    sharc_store_meta_key(meta, sizeof(meta), kind, prefix);
    e = sharc_store_lookup(srv, meta);
    return e ? e->count : 0;
}

static int sharc_store_bump(sharc_store_server_t *srv, char kind, const char *prefix)
{
    char meta[SHARC_STORE_MAX_KEY + 4];
    sharc_store_entry_t *e;
    int created;

    sharc_store_meta_key(meta, sizeof(meta), kind, prefix);
    e = sharc_store_get_entry(srv, meta, &created);
    if (e == NULL) {
        return -1;
    }
    e->count++;
    return (int)e->count;
}

/* Answer @p w if complete (or @p timed_out). Returns 1 when the waiter is done. */
static int sharc_store_try_gather(sharc_store_server_t *srv, sharc_store_waiter_t *w, int timed_out)
{
    char key[SHARC_STORE_MAX_KEY + 16], meta[SHARC_STORE_MAX_KEY + 4];
    size_t total = 0, off = 0;
    unsigned char *reply;

    if (!timed_out && sharc_store_count(srv, 'c', w->prefix) < w->n) {
        return 0;
    }
    if (timed_out) {
        sharc_store_missing_t *m = &srv->missing;

        /* The waiters of one gather time out together: list the missing ranks once. */
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
        sharc_store_reply(w->conn, SHARC_STORE_OP_GATHER, SHARC_STORE_ST_TIMEOUT, m->list,
                          m->list ? m->count * sizeof(uint32_t) : 0);
        return 1;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        sharc_store_entry_t *e;

        snprintf(key, sizeof(key), "%s/%u", w->prefix, i);
        e = sharc_store_lookup(srv, key);
        if (e == NULL) {
            return 0; /* the count included a key beyond n */
        }
        total += 4 + e->len;
    }
    if (total > UINT32_MAX) {
        sharc_store_reply(w->conn, SHARC_STORE_OP_GATHER, SHARC_STORE_ST_TOO_BIG, NULL, 0);
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
        len = htonl((uint32_t)e->len);
        memcpy(reply + off, &len, 4);
        memcpy(reply + off + 4, e->val, e->len);
        off += 4 + e->len;
    }
    sharc_store_reply(w->conn, SHARC_STORE_OP_GATHER, SHARC_STORE_ST_OK, reply, total);
    free(reply);
    /* The last reader frees the values. */
    if (sharc_store_bump(srv, 'r', w->prefix) >= (int)w->readers) {
        for (uint32_t i = 0; i < w->n; i++) {
            snprintf(key, sizeof(key), "%s/%u", w->prefix, i);
            sharc_store_delete(srv, key);
        }
        sharc_store_meta_key(meta, sizeof(meta), 'c', w->prefix);
        sharc_store_delete(srv, meta);
        sharc_store_meta_key(meta, sizeof(meta), 'r', w->prefix);
        sharc_store_delete(srv, meta);
    }
    return 1;
}

static void sharc_store_free_waiter(sharc_store_waiter_t *w)
{
    free(w->prefix);
    free(w);
}

/* Check the waiters; with @p now >= 0 also expire those past their deadline. */
static void sharc_store_scan_waiters(sharc_store_server_t *srv, const char *prefix, double now)
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

static void sharc_store_srv_set(sharc_store_server_t *srv, sharc_store_conn_t *conn,
                                const char *key, char *val, size_t len)
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

static void sharc_store_gather_req(sharc_store_server_t *srv, sharc_store_conn_t *conn,
                                   const char *key, const char *val, size_t len)
{
    sharc_store_waiter_t *w;
    sharc_store_ns_t *ns;
    uint32_t args[3];

    if (len != sizeof(args)) {
        sharc_store_reject(conn, "malformed GATHER");
        return;
    }
    memcpy(args, val, sizeof(args));
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
        sharc_store_reply(conn, SHARC_STORE_OP_GATHER, SHARC_STORE_ST_PEER_LOST, lost,
                          sizeof(lost));
        sharc_store_free_waiter(w);
        return;
    }
    w->conn = conn;
    w->n = ntohl(args[0]);
    w->readers = ntohl(args[1]);
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
static void sharc_store_peer_lost(sharc_store_server_t *srv, const char *name, int lost, int by)
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
            sharc_store_reply(w->conn, SHARC_STORE_OP_GATHER, SHARC_STORE_ST_PEER_LOST, notice,
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
            sharc_store_reply(c, SHARC_STORE_OP_NOTICE, SHARC_STORE_ST_PEER_LOST, notice,
                              sizeof(notice));
        }
    }
}

/* REPORT: a rank's transport lost a peer of its communicator. */
static void sharc_store_srv_report(sharc_store_server_t *srv, sharc_store_conn_t *conn,
                                   const char *val, size_t len)
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
    if (!conn->authed && conn->hdr.op != SHARC_STORE_OP_HELLO) {
        sharc_store_reject(conn, "a request before HELLO");
        return;
    }
    switch (conn->hdr.op) {
    case SHARC_STORE_OP_HELLO:
        if (conn->authed) {
            sharc_store_reject(conn, "a second HELLO");
            return;
        }
        sharc_store_hello(srv, conn, key, conn->payload + klen, vlen);
        return;
    case SHARC_STORE_OP_SET:
        val = malloc(vlen ? vlen : 1);
        if (val == NULL) {
            conn->dead = 1;
            return;
        }
        memcpy(val, conn->payload + klen, vlen);
        sharc_store_srv_set(srv, conn, key, val, vlen);
        return;
    case SHARC_STORE_OP_GATHER:
        sharc_store_gather_req(srv, conn, key, conn->payload + klen, vlen);
        return;
    case SHARC_STORE_OP_BYE: conn->live = 0; return;
    case SHARC_STORE_OP_REPORT:
        sharc_store_srv_report(srv, conn, conn->payload + klen, vlen);
        return;
    default: sharc_store_reject(conn, "an unknown request"); return;
    }
}

/* Read what is available on @p conn; dispatch each complete message. */
static void sharc_store_read(sharc_store_server_t *srv, sharc_store_conn_t *conn)
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

static void sharc_store_accept(sharc_store_server_t *srv)
{
    for (;;) {
        sharc_store_conn_t *conn;
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* the backlog waits; retrying at once would spin on a readable socket */
                sharc_warn("store: cannot accept connections: %m; pausing for 100 ms");
                srv->accept_paused_until = sharc_time_now() + 0.1;
            }
            return; /* EAGAIN, or a transient error: poll will tell us again */
        }
        if (srv->unauthed >= SHARC_STORE_MAX_UNAUTHED) {
            close(fd); /* a flood of strangers: ranks retry their connection */
            continue;
        }
        if (srv->nconns == srv->conns_cap) {
            size_t cap = srv->conns_cap ? srv->conns_cap * 2 : 16;
            sharc_store_conn_t **conns = realloc(srv->conns, cap * sizeof(*conns));
            if (conns == NULL) {
                close(fd);
                return;
            }
            srv->conns = conns;
            srv->conns_cap = cap;
        }
        conn = calloc(1, sizeof(*conn));
        if (conn == NULL) {
            close(fd);
            return;
        }
        conn->fd = fd;
        conn->rank = -1;
        conn->since = sharc_time_now();
        sharc_sock_peer(fd, conn->peer, sizeof(conn->peer));
        srv->conns[srv->nconns++] = conn;
        srv->unauthed++;
    }
}

static void sharc_store_close_conn(sharc_store_conn_t *conn)
{
    close(conn->fd);
    free(conn->payload);
    free(conn->ns);
    free(conn);
}

/*
 * Close dead connections (and their waiters) and those that never said HELLO in time. Two
 * passes: first every dead connection that was live tells its communicator (a notice that
 * cannot be sent marks its receiver dead too, so until nothing changes), and only then are
 * the dead ones freed: the notices walk every connection, freed ones included otherwise.
 */
static void sharc_store_sweep(sharc_store_server_t *srv, double now)
{
    size_t j = 0;
    int changed, dead = 0;

    for (size_t i = 0; i < srv->nconns; i++) {
        sharc_store_conn_t *conn = srv->conns[i];

        if (!conn->authed && !conn->dead && now - conn->since > srv->auth_timeout) {
            sharc_store_reject(conn, "no job token within the bootstrap timeout");
        }
    }
    do {
        changed = 0;
        for (size_t i = 0; i < srv->nconns; i++) {
            sharc_store_conn_t *conn = srv->conns[i];

            if (conn->dead && conn->live) { /* gone without BYE: its communicator is lost */
                conn->live = 0;
                sharc_store_peer_lost(srv, conn->ns, conn->rank, conn->rank);
                changed = 1;
            }
            dead |= conn->dead;
        }
    } while (changed);
    if (!dead) {
        return;
    }
    sharc_store_scan_waiters(srv, "\x01", -1); /* drops the dead connections' waiters */
    for (size_t i = 0; i < srv->nconns; i++) {
        sharc_store_conn_t *conn = srv->conns[i];

        if (conn->dead) {
            if (!conn->authed) {
                srv->unauthed--;
            }
            sharc_store_close_conn(conn);
        } else {
            srv->conns[j++] = conn;
        }
    }
    srv->nconns = j;
}

static size_t sharc_store_live(const sharc_store_server_t *srv)
{
    size_t live = 0;

    for (size_t i = 0; i < srv->nconns; i++) {
        live += srv->conns[i]->live && !srv->conns[i]->dead;
    }
    return live;
}

static void *sharc_store_thread(void *arg)
{
    sharc_store_server_t *srv = arg;
    struct pollfd *pfds = NULL;
    size_t pfds_cap = 0;

    for (;;) {
        double now = sharc_time_now(), next = now + 1.0;
        size_t npfds = 2;
        int ret;

        if (__atomic_load_n(&srv->stopping, __ATOMIC_ACQUIRE)) {
            size_t live = sharc_store_live(srv);
            /* No newcomers: a rank that connects now belongs to the next store. */
            if (srv->listen_fd >= 0) {
                close(srv->listen_fd);
                srv->listen_fd = -1;
            }
            if (live == 0) {
                break;
            }
            if (now >= srv->linger_deadline) {
                sharc_warn("store: closing while %zu rank(s) are still connected", live);
                break;
            }
            next = SHARC_MIN(next, srv->linger_deadline);
        }
        for (sharc_store_waiter_t *w = srv->waiters; w != NULL; w = w->next) {
            next = SHARC_MIN(next, w->deadline);
        }
        if (pfds_cap < srv->nconns + 2) {
            struct pollfd *p = realloc(pfds, (srv->nconns + 16) * sizeof(*p));
            if (p == NULL) {
                sharc_error("store: out of memory; the store stops serving");
                break;
            }
            pfds = p;
            pfds_cap = srv->nconns + 16;
        }
        pfds[0] = (struct pollfd){.fd = now < srv->accept_paused_until ? -1 : srv->listen_fd,
                                  .events = POLLIN};
        if (now < srv->accept_paused_until) {
            next = SHARC_MIN(next, srv->accept_paused_until);
        }
        pfds[1] = (struct pollfd){.fd = srv->wake[0], .events = POLLIN};
        for (size_t i = 0; i < srv->nconns; i++) {
            pfds[npfds++] = (struct pollfd){.fd = srv->conns[i]->fd, .events = POLLIN};
        }
        /* a deadline already past (a slow reply ran over it) must not become -1: forever */
        ret = poll(pfds, npfds, next > now ? (int)((next - now) * 1000.0) + 1 : 0);
        if (ret < 0 && errno != EINTR) {
            sharc_error("store: poll failed: %m; the store stops serving");
            break;
        }
        if (ret > 0) {
            size_t nconns = srv->nconns; /* accept() below appends */
            if (pfds[1].revents) {
                char buf[16];
                ssize_t n = read(srv->wake[0], buf, sizeof(buf));
                (void)n;
            }
            for (size_t i = 0; i < nconns; i++) {
                if (pfds[i + 2].revents && !srv->conns[i]->dead) {
                    sharc_store_read(srv, srv->conns[i]);
                }
            }
            if (pfds[0].revents) {
                sharc_store_accept(srv);
            }
        }
        now = sharc_time_now();
        sharc_store_scan_waiters(srv, "\x01", now); /* "\x01" matches no waiter: expiry only */
        sharc_store_sweep(srv, now);
    }
    free(pfds);
    return NULL;
}

sharc_status_t sharc_store_server_start(const char *bind_host, int port, const char *digest,
                                        const char *root_ns, double auth_timeout, size_t max_msg,
                                        sharc_store_server_t **server_p)
{
    sharc_store_server_t *srv;
    sharc_status_t status;
    char what[64];
    int ret;

    srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        return SHARC_ERR_NOMEM;
    }
    srv->table_size = 256;
    srv->table = calloc(srv->table_size, sizeof(*srv->table));
    if (srv->table == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_free_srv;
    }
    snprintf(srv->digest, sizeof(srv->digest), "%s", digest);
    snprintf(srv->root_ns, sizeof(srv->root_ns), "%s", root_ns);
    srv->auth_timeout = auth_timeout;
    srv->max_msg = max_msg;
    snprintf(what, sizeof(what), "the bootstrap store");
    status = sharc_sock_listen(bind_host, port, what, &srv->listen_fd);
    if (status != SHARC_OK) {
        goto err_free_table;
    }
    if (pipe2(srv->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        sharc_error("store: pipe2 failed: %m");
        status = SHARC_ERR_IO;
        goto err_close_listen;
    }
    ret = pthread_create(&srv->thread, NULL, sharc_store_thread, srv);
    if (ret != 0) {
        errno = ret;
        sharc_error("store: cannot start the server thread: %m");
        status = SHARC_ERR_IO;
        goto err_close_pipe;
    }
    sharc_info("store: serving on %s:%d", bind_host, port);
    *server_p = srv;
    return SHARC_OK;

err_close_pipe:
    close(srv->wake[0]);
    close(srv->wake[1]);
err_close_listen:
    close(srv->listen_fd);
err_free_table:
    free(srv->table);
err_free_srv:
    free(srv);
    return status;
}

int sharc_store_server_port(const sharc_store_server_t *srv)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(srv->listen_fd, (struct sockaddr *)&ss, &len) != 0) {
        return -1;
    }
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
}

void sharc_store_server_stop(sharc_store_server_t *srv, double linger)
{
    ssize_t n;

    if (srv == NULL) {
        return;
    }
    srv->linger_deadline = sharc_time_now() + linger;
    __atomic_store_n(&srv->stopping, 1, __ATOMIC_RELEASE);
    n = write(srv->wake[1], "x", 1);
    (void)n;
    pthread_join(srv->thread, NULL);

    for (size_t i = 0; i < srv->nconns; i++) {
        sharc_store_close_conn(srv->conns[i]);
    }
    free(srv->conns);
    while (srv->waiters != NULL) {
        sharc_store_waiter_t *w = srv->waiters;
        srv->waiters = w->next;
        sharc_store_free_waiter(w);
    }
    for (size_t i = 0; i < srv->table_size; i++) {
        while (srv->table[i] != NULL) {
            sharc_store_entry_t *e = srv->table[i];
            srv->table[i] = e->next;
            free(e->key);
            free(e->val);
            free(e);
        }
    }
    free(srv->table);
    free(srv->missing.prefix);
    free(srv->missing.list);
    while (srv->namespaces != NULL) {
        sharc_store_ns_t *ns = srv->namespaces;
        srv->namespaces = ns->next;
        free(ns->name);
        free(ns);
    }
    close(srv->wake[0]);
    close(srv->wake[1]);
    if (srv->listen_fd >= 0) {
        close(srv->listen_fd);
    }
    free(srv);
}
