/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sock.c: TCP helpers for the bootstrap store (see sock.h). Sockets are nonblocking and every
 * wait is a poll() with the time left to a deadline, so nothing here can hang.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../base/config_int.h"
#include "../base/log.h"
#include "../base/util.h"
#include "sock.h"

sharc_status_t sharc_sock_parse_addr(const char *addr, char *host, size_t host_size, int *port_p)
{
    const char *colon, *hbeg = addr, *hend;
    long port;

    if (addr == NULL || *addr == '\0') {
        return SHARC_ERR_INVALID;
    }
    if (addr[0] == '[') {
        hbeg = addr + 1;
        hend = strchr(hbeg, ']');
        if (hend == NULL || hend[1] != ':') {
            return SHARC_ERR_INVALID;
        }
        colon = hend + 1;
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL || memchr(addr, ':', (size_t)(colon - addr)) != NULL) {
            return SHARC_ERR_INVALID; /* no port, or a bare IPv6 address */
        }
        hend = colon;
    }
    if (hend == hbeg || (size_t)(hend - hbeg) >= host_size ||
        sharc_cfg_parse_long(colon + 1, 1, 65535, &port) != 0) {
        return SHARC_ERR_INVALID;
    }
    memcpy(host, hbeg, (size_t)(hend - hbeg));
    host[hend - hbeg] = '\0';
    *port_p = (int)port;
    return SHARC_OK;
}

static int sharc_sock_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    return (flags < 0) ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static int sharc_sock_resolve(const char *host, int port, int passive, struct addrinfo **res_p,
                              const char **err_p)
{
    struct addrinfo hints;
    char service[16];
    int ret;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    snprintf(service, sizeof(service), "%d", port);
    ret = getaddrinfo(host, service, &hints, res_p);
    if (ret != 0) {
        *err_p = gai_strerror(ret);
        return -1;
    }
    return 0;
}

sharc_status_t sharc_sock_listen(const char *host, int port, const char *what, int *fd_p)
{
    struct addrinfo *res, *ai;
    const char *err = NULL;
    int fd = -1, one = 1, saved = 0;

    if (host != NULL && strcmp(host, "*") == 0) {
        host = NULL;
    }
    if (sharc_sock_resolve(host, port, 1, &res, &err) != 0) {
        sharc_error("cannot listen for %s: cannot resolve '%s': %s", what, host ? host : "*", err);
        return SHARC_ERR_IO;
    }
    /* Prefer IPv6 wildcard (it usually takes IPv4 too); otherwise the first that binds. */
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0 &&
            sharc_sock_nonblock(fd) == 0) {
            break;
        }
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        errno = saved;
        sharc_error("cannot listen for %s on %s:%d: %m%s", what, host ? host : "*", port,
                    saved == EADDRINUSE      ? " (another process holds the port: set "
                                               "SHARC_BOOTSTRAP_PORT or MASTER_PORT to a free one)"
                    : saved == EADDRNOTAVAIL ? " (the address is not on this host: set "
                                               "SHARC_BOOTSTRAP_BIND_ADDR=* to listen everywhere)"
                                             : "");
        return SHARC_ERR_IO;
    }
    *fd_p = fd;
    return SHARC_OK;
}

static int sharc_sock_poll(int fd, short events, double deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    double left = deadline - sharc_time_now();
    int ret;

    if (left <= 0) {
        return 0;
    }
    do {
        ret = poll(&pfd, 1, (int)(left * 1000.0) + 1);
    } while (ret < 0 && errno == EINTR);
    return ret;
}

/* sharc_sock_poll as a status: ready (SHARC_OK), SHARC_ERR_TIMEOUT or SHARC_ERR_IO. */
static sharc_status_t sharc_sock_ready(int fd, short events, double deadline)
{
    int ret = sharc_sock_poll(fd, events, deadline);

    return ret > 0 ? SHARC_OK : ret == 0 ? SHARC_ERR_TIMEOUT : SHARC_ERR_IO;
}

void sharc_sock_nodelay(int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* One connection attempt: 0 connected, -1 with errno. */
static int sharc_sock_try_connect(const struct addrinfo *ai, double deadline, int *fd_p)
{
    int fd, err = 0;
    socklen_t len = sizeof(err);

    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        return -1;
    }
    sharc_sock_nodelay(fd);
    if (sharc_sock_nonblock(fd) != 0) {
        goto err_close;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            goto err_close;
        }
        if (sharc_sock_poll(fd, POLLOUT, SHARC_MIN(deadline, sharc_time_now() + 5.0)) <= 0) {
            errno = ETIMEDOUT;
            goto err_close;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            errno = err ? err : errno;
            goto err_close;
        }
    }
    *fd_p = fd;
    return 0;

err_close:
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

sharc_status_t sharc_sock_connect(const char *host, int port, double deadline, const char *what,
                                  int *fd_p)
{
    const char *gai_err = NULL;
    double delay = 0.01;
    int last_errno = 0, attempts = 0;

    for (;;) {
        struct addrinfo *res = NULL;

        attempts++;
        if (sharc_sock_resolve(host, port, 0, &res, &gai_err) == 0) {
            for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
                if (sharc_sock_try_connect(ai, deadline, fd_p) == 0) {
                    freeaddrinfo(res);
                    return SHARC_OK;
                }
                last_errno = errno;
            }
            freeaddrinfo(res);
            gai_err = NULL;
        }
        if (sharc_time_now() + delay >= deadline) {
            break;
        }
        /* rank 0 may still be starting, or DNS may not know the master pod yet */
        struct timespec ts = {0, (long)(delay * 1e9)};
        nanosleep(&ts, NULL);
        delay = SHARC_MIN(delay * 2, 0.5);
    }
    if (gai_err != NULL) {
        sharc_error("cannot reach %s at %s:%d: cannot resolve '%s': %s (%d attempts)", what, host,
                    port, host, gai_err, attempts);
    } else {
        errno = last_errno;
        sharc_error("cannot reach %s at %s:%d before the timeout: %m (%d attempts)", what, host,
                    port, attempts);
    }
    return SHARC_ERR_TIMEOUT;
}

sharc_status_t sharc_sock_send(int fd, const void *buf, size_t len, double deadline)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            sharc_status_t status = sharc_sock_ready(fd, POLLOUT, deadline);
            if (status != SHARC_OK) {
                return status;
            }
        } else {
            return SHARC_ERR_IO;
        }
    }
    return SHARC_OK;
}

sharc_status_t sharc_sock_recv(int fd, void *buf, size_t len, double deadline)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);

        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n == 0) {
            errno = ECONNRESET;
            return SHARC_ERR_IO;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            sharc_status_t status = sharc_sock_ready(fd, POLLIN, deadline);
            if (status != SHARC_OK) {
                return status;
            }
        } else {
            return SHARC_ERR_IO;
        }
    }
    return SHARC_OK;
}

const char *sharc_sock_peer(int fd, char *buf, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;

    if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
            port = ntohs(sin->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
            port = ntohs(sin6->sin6_port);
        }
    }
    snprintf(buf, size, "%s:%d", host, port);
    return buf;
}
