/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx_init.c: the UCX transport's ops table and per-communicator setup: a UCP context and
 * worker, worker addresses exchanged through the bootstrap, an endpoint per peer with peer
 * error handling (a dead peer fails its requests instead of hanging them).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <stdlib.h>
#include <string.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "ucx.h"

/* Whether an operation with @p peer is in flight (tp->base.lock held: callbacks run in progress).
 */
static int sharc_tp_ucx_busy_with(const sharc_tp_comm_t *tp, int peer)
{
    for (sharc_tp_req_t *r = tp->inflight; r != NULL; r = r->next) {
        if (sharc_tp_ucx_req(r)->peer == peer) {
            return 1;
        }
    }
    return 0;
}

static void sharc_tp_ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    sharc_tp_comm_t *tp = arg;
    sharc_boot_loss_t loss;

    for (int p = 0; p < tp->base.size; p++) {
        if (tp->eps[p] != ep) {
            continue;
        }
        __atomic_store_n(&tp->peer_failed[p], 1, __ATOMIC_RELEASE);
        if (tp->closing || tp->aborted) { /* the peer closed its side first, or all failed */
            sharc_debug("ucx: rank %d: the connection to rank %d ended: %s", tp->base.rank, p,
                        ucs_status_string(status));
            continue;
        }
        if (!sharc_tp_ucx_busy_with(tp, p)) {
            /* A peer that finished its last collective and left closes its endpoints while
             * this rank may still be in that collective (a barrier's last round): everything
             * it sent has arrived. Nothing here waits for it: its loss is news only once an
             * operation needs it (sharc_tp_ucx_gone), or when the store hears of it. */
            sharc_debug("ucx: rank %d: the connection to rank %d ended (%s), nothing in flight "
                        "with it",
                        tp->base.rank, p, ucs_status_string(status));
            continue;
        }
        if (sharc_boot_check(tp->base.boot, &loss) != SHARC_OK && loss.lost >= 0 &&
            loss.lost != p) {
            /* the store has named another rank lost: the communicator fails on every rank, and
             * a peer that failed it first and left closes its connections under the ranks
             * still in the collective; that is the failure's consequence, not news (its
             * requests fail all the same, and the error names the rank that was lost) */
            sharc_debug("ucx: rank %d: the connection to rank %d ended (%s) after rank %d was "
                        "lost",
                        tp->base.rank, p, ucs_status_string(status), loss.lost);
            continue;
        }
        sharc_error("ucx: rank %d lost its connection to rank %d: %s", tp->base.rank, p,
                    ucs_status_string(status));
        sharc_boot_report(tp->base.boot, p); /* every rank of the communicator hears of it */
    }
}

/* Exchange worker addresses (their lengths differ) through the bootstrap. */
static sharc_status_t sharc_tp_ucx_exchange(sharc_tp_comm_t *tp, sharc_boot_t *boot, char **addrs_p,
                                            size_t *stride_p)
{
    ucp_address_t *addr;
    size_t len, max = 0, *lens;
    ucs_status_t ustatus;
    sharc_status_t status;
    char *mine = NULL, *all = NULL;

    ustatus = ucp_worker_get_address(tp->worker, &addr, &len);
    if (ustatus != UCS_OK) {
        sharc_error("ucx: ucp_worker_get_address failed: %s", ucs_status_string(ustatus));
        return sharc_tp_ucx_status(ustatus);
    }
    lens = calloc((size_t)tp->base.size, sizeof(*lens));
    status = lens ? sharc_boot_allgather(boot, &len, lens, sizeof(len)) : SHARC_ERR_NOMEM;
    if (status != SHARC_OK) {
        goto out;
    }
    for (int p = 0; p < tp->base.size; p++) {
        max = SHARC_MAX(max, lens[p]);
    }
    mine = calloc(1, max);
    all = calloc((size_t)tp->base.size, max);
    if (mine == NULL || all == NULL) {
        status = SHARC_ERR_NOMEM;
        goto out;
    }
    memcpy(mine, addr, len);
    status = sharc_boot_allgather(boot, mine, all, max);
    if (status == SHARC_OK) {
        *addrs_p = all;
        *stride_p = max;
        all = NULL;
    }
out:
    free(all);
    free(mine);
    free(lens);
    ucp_worker_release_address(tp->worker, addr);
    return status;
}

/*
 * Endpoints to other nodes ask UCX to report a failed peer (error handling mode PEER). Those
 * on this node do not: UCX's shared-memory transports cannot detect peer failure, so asking
 * for it would push node-local traffic onto TCP; a dead local peer is caught by the
 * collective timeout and the bootstrap store instead.
 */
static sharc_status_t sharc_tp_ucx_connect(sharc_tp_comm_t *tp, const char *addrs, size_t stride,
                                           const int *node_of)
{
    for (int p = 0; p < tp->base.size; p++) {
        int remote = node_of[p] != node_of[tp->base.rank];
        ucp_ep_params_t params = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .address = (const ucp_address_t *)(addrs + (size_t)p * stride),
            .err_mode = remote ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE,
            .err_handler = {.cb = sharc_tp_ucx_ep_error, .arg = tp},
        };
        ucs_status_t ustatus = ucp_ep_create(tp->worker, &params, &tp->eps[p]);

        if (ustatus != UCS_OK) {
            sharc_error("ucx: rank %d cannot create an endpoint to rank %d: %s", tp->base.rank, p,
                        ucs_status_string(ustatus));
            tp->eps[p] = NULL;
            return sharc_tp_ucx_status(ustatus);
        }
    }
    return SHARC_OK;
}

/* Close every endpoint, flushing what is in flight; a peer that does not answer within the
 * timeout gets a forced close. */
static void sharc_tp_ucx_close_eps(sharc_tp_comm_t *tp)
{
    /* a failed communicator's peers may never answer a flush: close at once */
    double deadline = sharc_time_now() + (tp->aborted ? 1.0 : tp->timeout);

    for (int p = 0; p < tp->base.size; p++) {
        ucp_request_param_t param = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
            .flags = (tp->peer_failed[p] || tp->aborted) ? UCP_EP_CLOSE_FLAG_FORCE : 0,
        };
        void *req;

        if (tp->eps[p] == NULL) {
            continue;
        }
        req = ucp_ep_close_nbx(tp->eps[p], &param);
        while (UCS_PTR_IS_PTR(req) && ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(tp->worker);
            if (sharc_time_now() > deadline) {
                sharc_warn("ucx: rank %d: closing the endpoint to rank %d timed out", tp->base.rank,
                           p);
                break;
            }
        }
        if (UCS_PTR_IS_PTR(req)) {
            if (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_request_cancel(tp->worker, req);
            }
            ucp_request_free(req);
        }
        tp->eps[p] = NULL;
    }
}

static void sharc_tp_ucx_comm_destroy(sharc_tp_comm_t *tp)
{
    tp->closing = 1;
    if (tp->worker != NULL && tp->inflight != NULL) {
        sharc_tp_ucx_abort(tp); /* nothing may stay on an endpoint that closes */
    }
    if (tp->eps != NULL) {
        sharc_tp_ucx_close_eps(tp);
    }
    if (tp->worker != NULL) {
        ucp_worker_destroy(tp->worker);
    }
    if (tp->context != NULL) {
        ucp_cleanup(tp->context);
    }
    sharc_tp_base_fini(&tp->base);
    free(tp->eps);
    free(tp->peer_failed);
    free(tp);
}

static sharc_status_t sharc_tp_ucx_comm_create(const sharc_tp_comm_params_t *params,
                                               sharc_tp_comm_t **tp_p)
{
    ucp_params_t ucp_params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                      UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_TAG,
        .request_size = 0,
        .mt_workers_shared = 0,
    };
    ucp_worker_params_t worker_params = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED, /* tp->base.lock serializes */
    };
    sharc_tp_comm_t *tp;
    ucs_status_t ustatus;
    sharc_status_t status;
    char *addrs = NULL;
    size_t stride = 0;

    if (params->size > SHARC_UCX_MAX_RANKS) {
        sharc_error("ucx: %d ranks exceed the transport's limit of %d", params->size,
                    SHARC_UCX_MAX_RANKS);
        return SHARC_ERR_UNSUPPORTED;
    }
    tp = calloc(1, sizeof(*tp));
    if (tp == NULL) {
        return SHARC_ERR_NOMEM;
    }
    sharc_tp_base_init(&tp->base, params);
    tp->timeout = sharc_boot_cfg(params->cfg)->timeout;
    tp->eps = calloc((size_t)tp->base.size, sizeof(*tp->eps));
    tp->peer_failed = calloc((size_t)tp->base.size, sizeof(*tp->peer_failed));
    if (tp->eps == NULL || tp->peer_failed == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_destroy;
    }
    /* Configuration comes from UCX_* variables, read by ucp_init as UCX documents. */
    ustatus = ucp_init(&ucp_params, NULL, &tp->context);
    if (ustatus != UCS_OK) {
        sharc_error("ucx: ucp_init failed: %s", ucs_status_string(ustatus));
        status = sharc_tp_ucx_status(ustatus);
        goto err_destroy;
    }
    ustatus = ucp_worker_create(tp->context, &worker_params, &tp->worker);
    if (ustatus != UCS_OK) {
        sharc_error("ucx: ucp_worker_create failed: %s", ucs_status_string(ustatus));
        status = sharc_tp_ucx_status(ustatus);
        goto err_destroy;
    }
    status = sharc_tp_ucx_exchange(tp, params->boot, &addrs, &stride);
    if (status != SHARC_OK) {
        goto err_destroy;
    }
    status = sharc_tp_ucx_connect(tp, addrs, stride, params->node_of);
    free(addrs);
    if (status != SHARC_OK) {
        goto err_destroy;
    }
    *tp_p = tp;
    return SHARC_OK;

err_destroy:
    sharc_tp_ucx_comm_destroy(tp);
    return status;
}

static const sharc_tp_p2p_ops_t sharc_tp_ucx_p2p_ops = {
    .send = sharc_tp_ucx_send,
    .recv = sharc_tp_ucx_recv,
    .recv_any = sharc_tp_ucx_recv_any,
    .probe = sharc_tp_ucx_probe,
};

const sharc_tp_ops_t sharc_tp_ucx_ops = {
    .version = SHARC_TP_OPS_VERSION,
    .name = "ucx",
    .caps = SHARC_TP_CAP_HOST_MEM | SHARC_TP_CAP_REMOTE,
    .query = NULL,
    .comm_create = sharc_tp_ucx_comm_create,
    .comm_destroy = sharc_tp_ucx_comm_destroy,
    .mem_reg = sharc_tp_ucx_mem_reg,
    .mem_dereg = sharc_tp_ucx_mem_dereg,
    .progress = sharc_tp_ucx_progress,
    .abort = sharc_tp_ucx_abort,
    .p2p = &sharc_tp_ucx_p2p_ops,
};
