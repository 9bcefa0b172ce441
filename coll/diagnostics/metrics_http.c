/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_http.c: the metrics endpoint over HTTP with libmicrohttpd: GET (or HEAD) /metrics
 * answers the exporter's text; everything else is refused and changes nothing (it only
 * reads). libmicrohttpd's own thread serves it, event-driven: a client that sends slowly or
 * not at all is dropped after SHARC_COLL_HTTP_TIMEOUT_S and holds nobody else up, headers past
 * SHARC_COLL_HTTP_MEMORY get 431. The socket is bound here, not by libmicrohttpd, so that a
 * port already taken is said plainly.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "../../base/log.h"
#include "metrics.h"

#define SHARC_COLL_HTTP_TIMEOUT_S   5          /* a connection idle this long is closed */
#define SHARC_COLL_HTTP_CONNECTIONS 32         /* scrapers at once */
#define SHARC_COLL_HTTP_MEMORY      (16 << 10) /* a connection's request headers, at most */

struct sharc_coll_http {
    struct MHD_Daemon *daemon;
    sharc_coll_exporter_t *ex;
};

/* The request's state between calls: its first call has been seen; a body arrived. */
enum { SHARC_COLL_HTTP_SEEN = 1, SHARC_COLL_HTTP_BODY = 2 };

static enum MHD_Result sharc_coll_http_reply(struct MHD_Connection *conn, unsigned code,
                                             const char *text, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret;

    if (r == NULL) {
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (allow != NULL) {
        MHD_add_response_header(r, "Allow", allow);
    }
    ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result sharc_coll_http_metrics(struct MHD_Connection *conn,
                                               sharc_coll_exporter_t *ex)
{
    sharc_coll_text_t t = {0};
    struct MHD_Response *r;
    enum MHD_Result ret;

    sharc_coll_exporter_text(ex, &t);
    if (t.oom) {
        sharc_coll_text_free(&t);
        return sharc_coll_http_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL);
    }
    /* (libmicrohttpd frees the text with free() once it is sent) */
    r = MHD_create_response_from_buffer(t.len, t.buf != NULL ? t.buf : (void *)"",
                                        t.buf != NULL ? MHD_RESPMEM_MUST_FREE
                                                      : MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        sharc_coll_text_free(&t);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result sharc_coll_http_handle(void *cls, struct MHD_Connection *conn,
                                              const char *url, const char *method,
                                              const char *version, const char *upload,
                                              size_t *upload_size, void **state)
{
    static const int seen = SHARC_COLL_HTTP_SEEN, body = SHARC_COLL_HTTP_BODY;
    struct sharc_coll_http *http = cls;

    (void)version;
    (void)upload;
    if (*state == NULL) { /* the headers: answer once the request is whole */
        *state = (void *)&seen;
        return MHD_YES;
    }
    if (*upload_size != 0) { /* a body: read and dropped, then refused */
        *upload_size = 0;
        *state = (void *)&body;
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        return sharc_coll_http_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                                     "only GET and HEAD: the metrics are read-only\n", "GET, HEAD");
    }
    if (strcmp(url, "/metrics") != 0) {
        return sharc_coll_http_reply(conn, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", NULL);
    }
    if (*state == &body) {
        return sharc_coll_http_reply(conn, MHD_HTTP_BAD_REQUEST, "a GET takes no body\n", NULL);
    }
    return sharc_coll_http_metrics(conn, http->ex);
}

/* A listening socket on @p addr ("": every IPv4 address) and @p port, or -1 (logged). */
static int sharc_coll_http_listen(const char *addr, int port, int *family_p)
{
    struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                             .ai_socktype = SOCK_STREAM,
                             .ai_family = addr[0] == '\0' ? AF_INET : AF_UNSPEC};
    struct addrinfo *res;
    char service[16];
    int fd = -1, one = 1, ret;

    snprintf(service, sizeof(service), "%d", port);
    ret = getaddrinfo(addr[0] == '\0' ? NULL : addr, service, &hints, &res);
    if (ret != 0) {
        sharc_error("metrics: SHARC_METRICS_ADDR '%s' does not resolve: %s", addr,
                    gai_strerror(ret));
        return -1;
    }
    fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0) {
        sharc_error("metrics: socket() for port %d: %m", port);
    } else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
               bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        if (errno == EADDRINUSE) {
            sharc_error("metrics: port %d on %s is taken (SHARC_METRICS_PORT plus the local "
                        "rank): another process listens there; choose another "
                        "SHARC_METRICS_PORT",
                        port, addr[0] != '\0' ? addr : "every address");
        } else {
            sharc_error("metrics: cannot listen on %s port %d: %m",
                        addr[0] != '\0' ? addr : "every address", port);
        }
        close(fd);
        fd = -1;
    }
    *family_p = res->ai_family;
    freeaddrinfo(res);
    return fd;
}

sharc_status_t sharc_coll_http_start(sharc_coll_exporter_t *ex, const char *addr, int port,
                                     sharc_coll_http_t **http_p)
{
    struct sharc_coll_http *http;
    int family = AF_INET, fd;

    if (port <= 0 || port > 65535) {
        sharc_error("metrics: port %d (SHARC_METRICS_PORT plus the local rank) is out of range",
                    port);
        return SHARC_ERR_INVALID;
    }
    http = calloc(1, sizeof(*http));
    if (http == NULL) {
        return SHARC_ERR_NOMEM;
    }
    fd = sharc_coll_http_listen(addr, port, &family);
    if (fd < 0) {
        free(http);
        return SHARC_ERR_IO;
    }
    http->ex = ex;
    http->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (family == AF_INET6 ? MHD_USE_IPv6 : 0), 0,
        NULL, NULL, sharc_coll_http_handle, http, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SHARC_COLL_HTTP_TIMEOUT_S,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)SHARC_COLL_HTTP_CONNECTIONS,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SHARC_COLL_HTTP_MEMORY, MHD_OPTION_END);
    if (http->daemon == NULL) {
        sharc_error("metrics: libmicrohttpd could not serve port %d", port);
        close(fd);
        free(http);
        return SHARC_ERR_BACKEND;
    }
    sharc_info("metrics: served at http://%s:%d/metrics", addr[0] != '\0' ? addr : "0.0.0.0", port);
    *http_p = http;
    return SHARC_OK;
}

void sharc_coll_http_stop(sharc_coll_http_t *http)
{
    if (http == NULL) {
        return;
    }
    MHD_stop_daemon(http->daemon); /* (closes the socket) */
    free(http);
}
