/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fail.c: when a communicator cannot go on. A failure (a task's error, a transport's, a
 * timeout, SHARC_CHECK's mismatch) fails every task in flight and every later post, and ends
 * what the transports still hold for it. What the failure tells the diagnostics (the
 * recorder's dump; which rank is gone, from the store) goes through cc->diag (coll.h).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdio.h>

#include "../../base/log.h"
#include "engine.h"

int sharc_coll_fail_now(sharc_coll_comm_t *cc, sharc_status_t status, const char *why)
{
    if (cc->failed != SHARC_OK) {
        return 0;
    }
    cc->failed = status;
    snprintf(cc->why, sizeof(cc->why), "%s", why);
    /* the ranks no longer agree on what is in flight: what the transports still hold for
     * this communicator ends now (with an error), rather than at their destroy */
    if (cc->tp_ops != NULL && cc->tp_ops->abort != NULL) {
        cc->tp_ops->abort(cc->tp);
    }
    if (cc->cuda_tp != NULL && cc->cuda_ops->abort != NULL) {
        cc->cuda_ops->abort(cc->cuda_tp); /* the device would go on waiting for the peer */
    }
    return 1;
}

void sharc_coll_fail(sharc_coll_comm_t *cc, sharc_status_t status, const char *why)
{
    if (sharc_coll_fail_now(cc, status, why) && cc->diag->failed != NULL) {
        cc->diag->failed(cc);
    }
}

int sharc_coll_fails_comm(const sharc_coll_task_t *task)
{
    /* a collective's ranks no longer agree on what is in flight; a send or receive is one
     * rank's, and only a peer or a transport that failed says more than that it failed */
    return task->kind == SHARC_COLL_KIND_COLL || task->status == SHARC_ERR_REMOTE ||
           task->status == SHARC_ERR_BACKEND || task->status == SHARC_ERR_TIMEOUT;
}

void sharc_coll_fail_task(sharc_coll_task_t *task)
{
    sharc_coll_comm_t *cc = task->cc;
    const char *verdict = sharc_coll_verdict_on(cc, task->ordinal);
    char why[320], what[160];

    /* the ranks no longer agree on what is in flight: stop the rest */
    sharc_coll_task_describe(task, what, sizeof(what));
    /* a collective's receive fails with INVALID only when a peer's message did not fit it (the
     * transports leave saying so to this layer) */
    snprintf(why, sizeof(why), "%s failed (%s)", what,
             task->status == SHARC_ERR_INVALID
                 ? "a peer's message did not fit its receive: do the ranks agree on the count?"
                 : sharc_status_string(task->status));
    sharc_error("rank %d: %s: this communicator's operations fail%s%s", cc->rank, why,
                verdict ? ". The ranks had found it stalled; their verdict: " : "",
                verdict ? verdict : "");
    if (sharc_coll_fail_now(cc, task->status, why)) {
        /* a peer that gave up on the stalled collective (its timeout) and left: the verdict,
         * not its leaving, is the cause */
        cc->explained |= verdict != NULL;
        if (cc->diag->explain != NULL) {
            cc->diag->explain(cc);
        }
        if (cc->diag->failed != NULL) {
            cc->diag->failed(cc); /* (with the cause the store named, when it came) */
        }
    }
}
