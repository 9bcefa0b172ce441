/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sock.h: TCP helpers for the bootstrap store: address parsing, listen, connect with retry,
 * and whole-buffer send/recv bounded by a deadline. IPv4 and IPv6.
 */
#ifndef SHARC_SOCK_H
#define SHARC_SOCK_H

#include <stddef.h>
#include <sharc/status.h>

#include "../base/def_int.h"

#define SHARC_SOCK_HOST_MAX 256

/**
 * Split "host:port", "[v6addr]:port" into host and port.
 * @return SHARC_OK or SHARC_ERR_INVALID (not logged: the caller names the source).
 */
SHARC_HIDDEN sharc_status_t sharc_sock_parse_addr(const char *addr, char *host, size_t host_size,
                                                  int *port_p);

/**
 * Listen on host:port (host NULL or "*" for every interface). Logs failures naming @p what.
 */
SHARC_HIDDEN sharc_status_t sharc_sock_listen(const char *host, int port, const char *what,
                                              int *fd_p);

/**
 * Connect to host:port, retrying refused or unreachable attempts until @p deadline
 * (sharc_time_now() seconds): rank 0 may not be listening yet. Logs a timeout naming
 * @p what and the last error.
 */
SHARC_HIDDEN sharc_status_t sharc_sock_connect(const char *host, int port, double deadline,
                                               const char *what, int *fd_p);

/**
 * Send small messages at once (TCP_NODELAY), on both ends of a connection: the store's
 * messages are a header and a value sent apart, and with Nagle's algorithm the second waits
 * for the peer's delayed acknowledgement of the first (40 ms on Linux) on every reply.
 */
SHARC_HIDDEN void sharc_sock_nodelay(int fd);

/** Send exactly @p len bytes before @p deadline. Not logged; returns IO, TIMEOUT. */
SHARC_HIDDEN sharc_status_t sharc_sock_send(int fd, const void *buf, size_t len, double deadline);

/** Receive exactly @p len bytes before @p deadline. IO on error or EOF, TIMEOUT. */
SHARC_HIDDEN sharc_status_t sharc_sock_recv(int fd, void *buf, size_t len, double deadline);

/** "addr:port" of the peer of @p fd, for messages. */
SHARC_HIDDEN const char *sharc_sock_peer(int fd, char *buf, size_t size);

#endif
