/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_server.c: the bootstrap store's server, run by rank 0 in one thread: its loop,
 * accepting and sweeping connections, start and stop. It owns every byte of its state
 * (store_srv.h); other threads only start and stop it. Clients are read without blocking
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
#include "store_srv.h"

void sharc_store_digest(const char *token, char digest[17])
{
    /* Two rounds with different seeds so that short tokens still spread over 64 bits. */
    uint64_t h = sharc_hash64(SHARC_HASH_SEED, "sharc-store-v1:", 15);

    h = sharc_hash64(h, token, strlen(token));
    h = sharc_hash64(h ^ 0x9e3779b97f4a7c15ull, token, strlen(token));
    snprintf(digest, 17, "%016llx", (unsigned long long)h);
}

static void sharc_store_accept(sharc_store_server_t *srv)
{
    for (;;) {
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
        sharc_sock_nodelay(fd);
        if (sharc_store_adopt(srv, fd) != SHARC_OK) {
            close(fd);
            return;
        }
    }
}

sharc_status_t sharc_store_adopt(sharc_store_server_t *srv, int fd)
{
    sharc_store_conn_t *conn;

    if (sharc_array_grow(&srv->conns, &srv->conns_cap, srv->nconns, sizeof(*srv->conns), 16) != 0) {
        return SHARC_ERR_NOMEM;
    }
    conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        return SHARC_ERR_NOMEM;
    }
    conn->fd = fd;
    conn->rank = -1;
    conn->since = conn->heard = sharc_time_now();
    sharc_sock_peer(fd, conn->peer, sizeof(conn->peer));
    srv->conns[srv->nconns++] = conn;
    srv->unauthed++;
    return SHARC_OK;
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
void sharc_store_sweep(sharc_store_server_t *srv, double now)
{
    size_t j = 0;
    int changed, dead = 0;

    for (size_t i = 0; i < srv->nconns; i++) {
        sharc_store_conn_t *conn = srv->conns[i];

        if (!conn->authed && !conn->dead && now - conn->since > srv->auth_timeout) {
            sharc_store_reject(conn, "no job token within the bootstrap timeout");
        }
        if (conn->live && !conn->dead && conn->silent_max > 0 &&
            now - conn->heard > conn->silent_max) {
            sharc_warn("store: rank %d of '%s' (%s) has been silent for %.1f s, past its "
                       "heartbeats' %.1f s: its node is cut off, or its process stopped",
                       conn->rank, conn->ns, conn->peer, now - conn->heard, conn->silent_max);
            conn->dead = 1; /* (below: its communicator hears it is lost) */
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

    status = sharc_store_server_new(digest, root_ns, auth_timeout, max_msg, &srv);
    if (status != SHARC_OK) {
        return status;
    }
    snprintf(what, sizeof(what), "the bootstrap store");
    status = sharc_sock_listen(bind_host, port, what, &srv->listen_fd);
    if (status != SHARC_OK) {
        goto err_free_srv;
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
err_free_srv:
    srv->listen_fd = -1;
    sharc_store_server_free(srv);
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
    close(srv->wake[0]);
    close(srv->wake[1]);
    sharc_store_server_free(srv);
}

sharc_status_t sharc_store_server_new(const char *digest, const char *root_ns, double auth_timeout,
                                      size_t max_msg, sharc_store_server_t **srv_p)
{
    sharc_store_server_t *srv = calloc(1, sizeof(*srv));

    if (srv == NULL) {
        return SHARC_ERR_NOMEM;
    }
    srv->listen_fd = -1;
    srv->table_size = 256;
    srv->table = calloc(srv->table_size, sizeof(*srv->table));
    if (srv->table == NULL) {
        free(srv);
        return SHARC_ERR_NOMEM;
    }
    snprintf(srv->digest, sizeof(srv->digest), "%s", digest);
    snprintf(srv->root_ns, sizeof(srv->root_ns), "%s", root_ns);
    srv->auth_timeout = auth_timeout;
    srv->max_msg = max_msg;
    *srv_p = srv;
    return SHARC_OK;
}

void sharc_store_server_free(sharc_store_server_t *srv)
{
    for (size_t i = 0; i < srv->nconns; i++) {
        sharc_store_close_conn(srv->conns[i]);
    }
    free(srv->conns);
    while (srv->waiters != NULL) {
        sharc_store_waiter_t *w = srv->waiters;
        srv->waiters = w->next;
        sharc_store_free_waiter(w);
    }
    sharc_store_kv_clear(srv);
    free(srv->missing.prefix);
    free(srv->missing.list);
    while (srv->namespaces != NULL) {
        sharc_store_ns_t *ns = srv->namespaces;
        srv->namespaces = ns->next;
        free(ns->name);
        free(ns);
    }
    if (srv->listen_fd >= 0) {
        close(srv->listen_fd);
    }
    free(srv);
}
