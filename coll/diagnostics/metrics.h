/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h: the communicators' metrics as an operator scrapes them: Prometheus' text format
 * (metrics_text.c), and the context's exporter (metrics_export.c) that writes it to
 * SHARC_METRICS_FILE every SHARC_METRICS_INTERVAL and serves it at /metrics over HTTP
 * (metrics_http.c with libmicrohttpd, metrics_http_none.c without). What is counted, and
 * where, is the engine's (engine.h: sharc_coll_metrics_t).
 */
#ifndef SHARC_COLL_METRICS_H
#define SHARC_COLL_METRICS_H

#include "../engine/metrics.h"
#include "diagnostics.h"

/* A growing text buffer; oom set once an append failed (the text is then cut short). */
typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} sharc_coll_text_t;

SHARC_HIDDEN void sharc_coll_text_printf(sharc_coll_text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
SHARC_HIDDEN void sharc_coll_text_free(sharc_coll_text_t *t);

/*
 * One communicator as the exposition shows it: its labels, its health when it was looked at,
 * and its counts (read as they are, with relaxed loads; a copy for one that has ended).
 */
typedef struct {
    int rank, local_rank, size;
    char node[SHARC_HOST_MAX], comm[128], transport[32];
    int in_flight;     /* collectives started, not complete */
    double oldest_age; /* seconds since the oldest of them was started (0: none) */
    int stalled;       /* the ranks' stall verdict is on the oldest of them */
    int culprit;       /* the rank that verdict blames, or -1 */
    int failed;        /* the communicator failed */
    int lost;          /* a rank the store said is gone, or -1 */
    const sharc_coll_metrics_t *metrics; /* NULL: nothing counted */
} sharc_coll_metrics_view_t;

/* @p cc as the exposition shows it at @p now (takes its lock for a moment: its queue). */
SHARC_HIDDEN void sharc_coll_metrics_view(sharc_coll_comm_t *cc, double now,
                                          sharc_coll_metrics_view_t *view);

/*
 * The metrics of communicators @p views[0 .. n-1] in Prometheus' text format 0.0.4, appended
 * to @p t: each family's HELP and TYPE once, then its samples of every communicator.
 */
SHARC_HIDDEN void sharc_coll_metrics_text(const sharc_coll_metrics_view_t *views, size_t n,
                                          sharc_coll_text_t *t);

/* Join / leave the exporter (at creation; before the communicator's parts go: leaving
 * writes the file once more, with its final figures). Joining turns its counting on. */
SHARC_HIDDEN sharc_status_t sharc_coll_exporter_add(sharc_coll_exporter_t *ex,
                                                    sharc_coll_comm_t *cc);
SHARC_HIDDEN void sharc_coll_exporter_remove(sharc_coll_exporter_t *ex, sharc_coll_comm_t *cc);

/* The context's exporter (its type is coll/api.h's): the text of every communicator in it now. */
SHARC_HIDDEN void sharc_coll_exporter_text(sharc_coll_exporter_t *ex, sharc_coll_text_t *t);

/* ---- HTTP (metrics_http.c, or metrics_http_none.c without libmicrohttpd) */

typedef struct sharc_coll_http sharc_coll_http_t;

/*
 * Serve @p ex's text at GET /metrics on @p addr ("": every address) port @p port, from a
 * thread of libmicrohttpd's; anything else is refused (404, 405, 400; headers beyond a few
 * KiB, 431), a client that stalls is dropped after a few seconds. A port that is taken, or an
 * address that cannot be bound, is SHARC_ERR_IO with a message; without libmicrohttpd,
 * SHARC_ERR_UNSUPPORTED.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_http_start(sharc_coll_exporter_t *ex, const char *addr,
                                                  int port, sharc_coll_http_t **http_p);
/* Stop serving (a scrape in progress ends first). NULL is a no-op. */
SHARC_HIDDEN void sharc_coll_http_stop(sharc_coll_http_t *http);

#endif
