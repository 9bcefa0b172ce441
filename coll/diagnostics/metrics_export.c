/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_export.c: a context's metrics exporter, made with its first communicator when
 * SHARC_METRICS_PORT or SHARC_METRICS_FILE asks for one: the communicators that joined it,
 * a thread that replaces SHARC_METRICS_FILE every SHARC_METRICS_INTERVAL (written aside, then
 * renamed over it, so that node_exporter's textfile collector never reads half a file), and
 * the HTTP endpoint (metrics_http.c). A communicator writes the file once more as it leaves,
 * so that a short job leaves its final figures, and stays in the text with them from then on
 * (the last SHARC_COLL_ENDED_MAX that ended: a sharding group's communicator ends before the
 * job's, and its counts must not vanish from the file). Nothing here runs on a rank's own
 * threads
 * but that last write and the joining: a slow reader of the file or the endpoint waits on
 * this exporter's lock only.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "metrics.h"

/* Communicators that ended whose final figures stay in the text. */
#define SHARC_COLL_ENDED_MAX 64

struct sharc_coll_exporter {
    pthread_mutex_t lock; /* the list; a write or a scrape holds it while it formats */
    pthread_cond_t cond;
    pthread_t thread;
    int running, stop;
    sharc_coll_comm_t **comms;
    size_t ncomms, cap;
    /* communicators that ended, oldest first: their views, whose metrics are copies owned here */
    sharc_coll_metrics_view_t ended[SHARC_COLL_ENDED_MAX];
    size_t nended;
    char file[4096]; /* SHARC_METRICS_FILE, its %r and %l replaced; "": none */
    double interval;
    sharc_coll_http_t *http;
    int warned; /* the file could not be written: said once */
};

/* The text of the communicators in the exporter and of those that ended (lock held). */
static void sharc_coll_exporter_format(sharc_coll_exporter_t *ex, sharc_coll_text_t *t)
{
    size_t n = ex->nended + ex->ncomms;
    sharc_coll_metrics_view_t *views = malloc((n > 0 ? n : 1) * sizeof(*views));
    double now = sharc_time_now();

    if (views == NULL) {
        t->oom = 1;
        return;
    }
    n = 0;
    for (size_t e = 0; e < ex->nended; e++) {
        int live = 0; /* a communicator of the same name now: its series are the live one's */

        for (size_t i = 0; i < ex->ncomms; i++) {
            live |= strcmp(ex->comms[i]->name, ex->ended[e].comm) == 0;
        }
        if (!live) {
            views[n++] = ex->ended[e];
        }
    }
    for (size_t i = 0; i < ex->ncomms; i++) {
        sharc_coll_metrics_view(ex->comms[i], now, &views[n++]);
    }
    sharc_coll_metrics_text(views, n, t);
    free(views);
}

void sharc_coll_exporter_text(sharc_coll_exporter_t *ex, sharc_coll_text_t *t)
{
    pthread_mutex_lock(&ex->lock);
    sharc_coll_exporter_format(ex, t);
    pthread_mutex_unlock(&ex->lock);
}

/* Replace the file with the text now (lock held): written to a name beside it, then renamed. */
static void sharc_coll_exporter_write(sharc_coll_exporter_t *ex)
{
    sharc_coll_text_t t = {0};
    char tmp[sizeof(ex->file) + 32];
    FILE *f;
    int ok;

    sharc_coll_exporter_format(ex, &t);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", ex->file, (int)getpid());
    f = t.oom ? NULL : fopen(tmp, "w");
    ok = f != NULL && fwrite(t.buf, 1, t.len, f) == t.len;
    ok = (f != NULL && fclose(f) == 0) && ok;
    ok = ok && rename(tmp, ex->file) == 0;
    if (!ok) {
        if (!ex->warned) {
            sharc_warn("metrics: cannot write SHARC_METRICS_FILE %s: %s", ex->file,
                       t.oom ? "out of memory" : strerror(errno));
        }
        ex->warned = 1;
        unlink(tmp);
    }
    sharc_coll_text_free(&t);
}

static void *sharc_coll_exporter_thread(void *arg)
{
    sharc_coll_exporter_t *ex = arg;

    pthread_mutex_lock(&ex->lock);
    while (!ex->stop) {
        struct timespec ts;
        double at;

        if (ex->ncomms > 0) { /* (the last one to leave wrote the final figures) */
            sharc_coll_exporter_write(ex);
        }
        clock_gettime(CLOCK_REALTIME, &ts); /* (the condition variable's clock) */
        at = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + ex->interval;
        ts.tv_sec = (time_t)at;
        ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
        while (!ex->stop && pthread_cond_timedwait(&ex->cond, &ex->lock, &ts) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&ex->lock);
    return NULL;
}

/* @p pattern with %r replaced by @p rank, %l by @p local_rank, %% by %; -1: too long. */
static int sharc_coll_exporter_name(const char *pattern, int rank, int local_rank, char *out,
                                    size_t size)
{
    size_t o = 0;

    for (const char *p = pattern; *p != '\0'; p++) {
        int ret = 0;

        if (p[0] == '%' && (p[1] == 'r' || p[1] == 'l')) {
            ret = snprintf(out + o, size - o, "%d", p[1] == 'r' ? rank : local_rank);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            ret = snprintf(out + o, size - o, "%%");
            p++;
        } else {
            ret = snprintf(out + o, size - o, "%c", *p);
        }
        if (ret < 0 || (size_t)ret >= size - o) {
            return -1;
        }
        o += (size_t)ret;
    }
    return 0;
}

sharc_status_t sharc_coll_exporter_create(const sharc_cfg_t *cfg, int rank, int local_rank,
                                          int local_size, sharc_coll_exporter_t **ex_p)
{
    const sharc_coll_cfg_t *cc = sharc_coll_cfg(cfg);
    sharc_coll_exporter_t *ex;
    sharc_status_t status;
    int ret;

    *ex_p = NULL;
    if (cc->metrics_port == 0 && cc->metrics_file[0] == '\0') {
        return SHARC_OK; /* off: no exporter, and no communicator counts anything */
    }
    if (local_size > 1 && cc->metrics_file[0] != '\0' && strstr(cc->metrics_file, "%r") == NULL &&
        strstr(cc->metrics_file, "%l") == NULL) {
        sharc_error("metrics: SHARC_METRICS_FILE=%s names one file for the %d ranks of this node, "
                    "which would replace each other's: put %%l (the local rank) or %%r (the rank) "
                    "in it",
                    cc->metrics_file, local_size);
        return SHARC_ERR_INVALID;
    }
    ex = calloc(1, sizeof(*ex));
    if (ex == NULL) {
        return SHARC_ERR_NOMEM;
    }
    if (sharc_coll_exporter_name(cc->metrics_file, rank, local_rank, ex->file, sizeof(ex->file)) !=
        0) {
        sharc_error("metrics: SHARC_METRICS_FILE is too long (%zu characters)",
                    strlen(cc->metrics_file));
        free(ex);
        return SHARC_ERR_INVALID;
    }
    ex->interval = SHARC_MAX(cc->metrics_interval, 0.1);
    pthread_mutex_init(&ex->lock, NULL);
    pthread_cond_init(&ex->cond, NULL);
    if (cc->metrics_port != 0) {
        /* each rank of a node its own port: the base plus its local rank */
        status =
            sharc_coll_http_start(ex, cc->metrics_addr, cc->metrics_port + local_rank, &ex->http);
        if (status != SHARC_OK) {
            goto err_destroy_lock;
        }
    }
    if (ex->file[0] != '\0') {
        ret = pthread_create(&ex->thread, NULL, sharc_coll_exporter_thread, ex);
        if (ret != 0) {
            errno = ret;
            sharc_error("metrics: cannot start the thread that writes SHARC_METRICS_FILE: %m");
            status = SHARC_ERR_NOMEM;
            goto err_stop_http;
        }
        ex->running = 1;
    }
    *ex_p = ex;
    return SHARC_OK;

err_stop_http:
    sharc_coll_http_stop(ex->http);
err_destroy_lock:
    pthread_cond_destroy(&ex->cond);
    pthread_mutex_destroy(&ex->lock);
    free(ex);
    return status;
}

sharc_status_t sharc_coll_exporter_add(sharc_coll_exporter_t *ex, sharc_coll_comm_t *cc)
{
    sharc_coll_metrics_t *m = calloc(1, sizeof(*m));
    sharc_status_t status = SHARC_OK;

    if (m == NULL) {
        return SHARC_ERR_NOMEM;
    }
    pthread_mutex_lock(&ex->lock);
    if (sharc_array_grow(&ex->comms, &ex->cap, ex->ncomms, sizeof(*ex->comms), 8) != 0) {
        status = SHARC_ERR_NOMEM;
        free(m);
    } else {
        cc->metrics = m; /* (before its first collective: nobody counts into it yet) */
        cc->exporter = ex;
        ex->comms[ex->ncomms++] = cc;
    }
    pthread_mutex_unlock(&ex->lock);
    return status;
}

/* Keep @p cc's final figures among the ended (lock held); without memory they go. */
static void sharc_coll_exporter_keep(sharc_coll_exporter_t *ex, sharc_coll_comm_t *cc)
{
    sharc_coll_metrics_t *copy = malloc(sizeof(*copy));

    if (copy == NULL) {
        return;
    }
    for (size_t e = 0; e < ex->nended; e++) {
        /* one of the same name that ended before (the same series), or the oldest, goes */
        if (strcmp(ex->ended[e].comm, cc->name) == 0 || ex->nended == SHARC_COLL_ENDED_MAX) {
            free((void *)ex->ended[e].metrics);
            memmove(&ex->ended[e], &ex->ended[e + 1], (ex->nended - e - 1) * sizeof(ex->ended[0]));
            ex->nended--;
            break;
        }
    }
    sharc_coll_metrics_view(cc, sharc_time_now(), &ex->ended[ex->nended]);
    memcpy(copy, cc->metrics, sizeof(*copy)); /* (its counting is over: the lock is ours) */
    ex->ended[ex->nended++].metrics = copy;
}

void sharc_coll_exporter_remove(sharc_coll_exporter_t *ex, sharc_coll_comm_t *cc)
{
    pthread_mutex_lock(&ex->lock); /* (waits for a scrape that reads it to end) */
    if (ex->file[0] != '\0') {
        sharc_coll_exporter_write(ex); /* its final figures */
    }
    for (size_t i = 0; i < ex->ncomms; i++) {
        if (ex->comms[i] == cc) {
            memmove(&ex->comms[i], &ex->comms[i + 1], (ex->ncomms - i - 1) * sizeof(*ex->comms));
            ex->ncomms--;
            sharc_coll_exporter_keep(ex, cc);
            break;
        }
    }
    cc->exporter = NULL;
    pthread_mutex_unlock(&ex->lock);
}

void sharc_coll_exporter_destroy(sharc_coll_exporter_t *ex)
{
    if (ex == NULL) {
        return;
    }
    sharc_coll_http_stop(ex->http); /* (no scrape from here on) */
    pthread_mutex_lock(&ex->lock);
    ex->stop = 1;
    pthread_cond_signal(&ex->cond);
    pthread_mutex_unlock(&ex->lock);
    if (ex->running) {
        pthread_join(ex->thread, NULL);
    }
    for (size_t i = 0; i < ex->nended; i++) {
        free((void *)ex->ended[i].metrics);
    }
    free(ex->comms);
    pthread_cond_destroy(&ex->cond);
    pthread_mutex_destroy(&ex->lock);
    free(ex);
}
