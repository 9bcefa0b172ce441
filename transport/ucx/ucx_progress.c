/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx_progress.c: progress of the UCX transport: the worker is driven until it has nothing
 * more to do right now; completion callbacks run inside.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include "../../base/log.h"
#include "../../base/util.h"
#include "ucx.h"

int sharc_tp_ucx_progress(sharc_tp_comm_t *tp)
{
    unsigned total = 0, n;

    pthread_mutex_lock(&tp->base.lock);
    do {
        n = ucp_worker_progress(tp->worker);
        total += n;
    } while (n > 0);
    pthread_mutex_unlock(&tp->base.lock);
    return total > 0;
}

/* Whether a receive is still in flight (sends cannot be cancelled; their endpoints end them). */
static int sharc_tp_ucx_recv_inflight(const sharc_tp_comm_t *tp)
{
    for (sharc_tp_req_t *req = tp->inflight; req != NULL; req = req->next) {
        if (sharc_tp_ucx_req(req)->is_recv) {
            return 1;
        }
    }
    return 0;
}

/* How long an abort lets cancelled receives finish: a cancel completes at once or within a
 * progress call; one that has not by then is a rendezvous with a peer that cannot answer (a
 * cut link), which no wait will end (its endpoint's forced close at the destroy does). The
 * wait adds to every failure's time to the caller: 1 s, as it was, made a cut link's failure
 * take SHARC_TIMEOUT + 1 s. */
#define SHARC_UCX_CANCEL_WAIT_S 0.2

void sharc_tp_ucx_abort(sharc_tp_comm_t *tp)
{
    double deadline = sharc_time_now() + SHARC_UCX_CANCEL_WAIT_S;

    pthread_mutex_lock(&tp->base.lock);
    tp->aborted = 1;
    /* receives can be cancelled: their callbacks (in progress) complete them with an error and
     * take them off the list. Sends cannot: a send to a dead peer ends when its endpoint is
     * closed, forced, at the destroy; until then its memory stays the communicator's. */
    for (sharc_tp_req_t *req = tp->inflight, *next; req != NULL; req = next) {
        sharc_tp_ucx_req_t *u = sharc_tp_ucx_req(req);

        next = req->next; /* a cancel may complete the request (its callback unlinks it) */
        if (u->ureq != NULL && u->is_recv) {
            ucp_request_cancel(tp->worker, u->ureq);
        }
    }
    while (sharc_tp_ucx_recv_inflight(tp) && sharc_time_now() < deadline) {
        ucp_worker_progress(tp->worker);
    }
    if (sharc_tp_ucx_recv_inflight(tp)) {
        sharc_warn("ucx: rank %d: receives still in flight after cancelling them", tp->base.rank);
    }
    pthread_mutex_unlock(&tp->base.lock);
}
