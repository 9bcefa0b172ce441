/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * liveness.c: which rank is gone. The bootstrap's store says, so that every rank's error
 * names it and its host rather than waiting for SHARC_TIMEOUT; and what the engine tells the
 * diagnostics (sharc_coll_diag_ops: its only way to them, coll.h), the recorder's entries and
 * dumps among them.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdio.h>
#include <time.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "diagnostics.h"

/* How often progress asks the bootstrap whether a rank is gone (the fast failure of a job
 * whose rank died: well within its 2 s). */
#define SHARC_COLL_CHECK_S 0.1
/* How long a collective that failed on a peer's error waits for the store to name the peer. */
#define SHARC_COLL_EXPLAIN_S 0.3

/* The recorder to SHARC_FLIGHT_DIR, if set: the communicator failed. */
static void sharc_coll_fail_dump(sharc_coll_comm_t *cc)
{
    sharc_coll_fr_dump(cc, cc->cfg->flight_dir,
                       cc->failed == SHARC_ERR_TIMEOUT ? "timeout" : "failure");
}

/*
 * Has anyone said that a rank of this communicator is gone (its process died, or a peer's
 * transport lost it)? Then the communicator fails now, naming the rank and its host, rather
 * than at SHARC_TIMEOUT; a communicator that failed already on a transport's error learns
 * which rank it was. A slow rank is never declared gone: only a closed connection or a
 * transport's error says so. Every SHARC_COLL_CHECK_S, or at once with @p now_too.
 */
static void sharc_coll_watch_now(sharc_coll_comm_t *cc, int now_too)
{
    double now = sharc_time_now();
    const sharc_coll_task_t *oldest;
    const char *verdict;
    sharc_boot_loss_t loss;
    char why[192];

    if (cc->explained || cc->boot == NULL || (!now_too && now < cc->next_check) ||
        (cc->failed != SHARC_OK && cc->failed != SHARC_ERR_REMOTE &&
         cc->failed != SHARC_ERR_BACKEND)) {
        return;
    }
    cc->next_check = now + SHARC_COLL_CHECK_S;
    if (sharc_boot_check(cc->boot, &loss) == SHARC_OK) {
        return;
    }
    oldest = sharc_coll_oldest(cc);
    verdict = oldest ? sharc_coll_verdict_on(cc, oldest->ordinal) : NULL;
    if (loss.lost < 0) { /* cut off from the store: no rank can be named from here */
        snprintf(why, sizeof(why), "this rank (%s) %s; cut off, it cannot tell which ranks live",
                 sharc_coll_host(cc, cc->rank), loss.store);
    } else if (loss.lost == loss.by) {
        snprintf(why, sizeof(why), "rank %d (%s) of this %d-rank communicator is gone", loss.lost,
                 sharc_coll_host(cc, loss.lost), cc->size);
    } else {
        snprintf(why, sizeof(why), "rank %d (%s) of this %d-rank communicator lost rank %d (%s)",
                 loss.by, sharc_coll_host(cc, loss.by), cc->size, loss.lost,
                 sharc_coll_host(cc, loss.lost));
    }
    /* a stalled collective's ranks give up on it at their timeouts and leave: the verdict
     * says why it stalled */
    sharc_error("rank %d: %s: its collectives, sends and receives fail%s%s", cc->rank, why,
                verdict ? ". The ranks' verdict on its stalled collective: " : "",
                verdict ? verdict : "");
    cc->explained = 1;
    cc->lost_rank = loss.lost;    /* (-1: this rank was cut off; the metrics show it) */
    if (cc->failed != SHARC_OK) { /* a transport's error, now explained: a peer's failure */
        snprintf(cc->why, sizeof(cc->why), "%s", why);
        cc->failed = SHARC_ERR_REMOTE;
    }
    sharc_coll_fail(cc, SHARC_ERR_REMOTE, why);
}

static void sharc_coll_watch(sharc_coll_comm_t *cc)
{
    sharc_coll_watch_now(cc, 0);
}

/*
 * A collective failed with a peer's error: the transport that saw it has reported the peer to
 * the store, or the store saw its process end, so the notice naming the rank and its host is
 * on its way. Wait for it a moment (once per communicator), so that the error that reaches
 * the caller comes with its cause.
 */
static void sharc_coll_explain(sharc_coll_comm_t *cc)
{
    double until = sharc_time_now() + SHARC_COLL_EXPLAIN_S;
    struct timespec ts = {0, 10 * 1000 * 1000};

    if ((cc->failed != SHARC_ERR_REMOTE && cc->failed != SHARC_ERR_BACKEND) || cc->boot == NULL ||
        cc->boot->ops->check == NULL) {
        return; /* (a bootstrap without a store cannot tell) */
    }
    for (;;) {
        sharc_coll_watch_now(cc, 1);
        if (cc->explained || sharc_time_now() >= until) {
            return;
        }
        nanosleep(&ts, NULL);
    }
}

const sharc_coll_diag_ops_t sharc_coll_diag_ops = {
    .watch = sharc_coll_watch,
    .explain = sharc_coll_explain,
    .failed = sharc_coll_fail_dump,
};
