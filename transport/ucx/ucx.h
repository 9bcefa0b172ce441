/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx.h: the UCX transport's state. One UCP context and worker per communicator: no tags or
 * locks are shared between communicators, and a communicator's failure (a dead peer) stays
 * its own. Point-to-point messages use UCP's tag matching, with the sender's rank in the top
 * bits of the tag so that a receive names its peer exactly.
 */
#ifndef SHARC_TP_UCX_H
#define SHARC_TP_UCX_H

#include <pthread.h>
#include <ucp/api/ucp.h>

#include "../backend.h"

/* UCP tag = source rank (24 bits) | sharc tag (40 bits). */
#define SHARC_UCX_TAG_BITS  SHARC_TP_TAG_BITS
#define SHARC_UCX_MAX_RANKS (1 << (64 - SHARC_TP_TAG_BITS))
#define SHARC_UCX_ANY       (-1) /* a request's peer: a receive from any peer */

struct sharc_tp_comm {
    /* its lock guards the worker (UCS_THREAD_MODE_SERIALIZED): posts may come from the caller
     * while a progress thread progresses; boot: a peer lost is reported through it */
    sharc_tp_base_t base;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h *eps;    /* [size] */
    int *peer_failed; /* [size]: set by the endpoint error handler */
    double timeout;   /* seconds, for closing endpoints */
    /* requests UCP has not completed yet (a list through next and their prev), so that an
     * abort can cancel them: a failed communicator's transport must not be left holding any */
    sharc_tp_req_t *inflight;
    int aborted; /* everything in flight was cancelled: the communicator failed */
    int closing; /* being destroyed: a peer closing its side is no failure */
};

struct sharc_tp_mem {
    ucp_mem_h memh;
    void *addr;
    size_t bytes;
};

/* What a request remembers while in flight (its backend space). */
typedef struct {
    sharc_tp_comm_t *tp;  /* while on tp->inflight; NULL: not linked (completed in its post) */
    sharc_tp_req_t *prev; /* on tp->inflight (next is the request's own) */
    void *ureq;           /* UCP's request, while in flight */
    int peer;             /* or SHARC_UCX_ANY */
    int is_recv;          /* receives can be cancelled */
} sharc_tp_ucx_req_t;

SHARC_TP_REQ_PRIV_FITS(sharc_tp_ucx_req_t);

static inline sharc_tp_ucx_req_t *sharc_tp_ucx_req(sharc_tp_req_t *req)
{
    return sharc_tp_req_priv(req);
}

/* UCX status -> sharc status, at this boundary only. */
static inline sharc_status_t sharc_tp_ucx_status(ucs_status_t status)
{
    switch (status) {
    case UCS_OK: return SHARC_OK;
    case UCS_INPROGRESS: return SHARC_INPROGRESS;
    case UCS_ERR_NO_MEMORY: return SHARC_ERR_NOMEM;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_MESSAGE_TRUNCATED: return SHARC_ERR_INVALID;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_UNREACHABLE: return SHARC_ERR_UNSUPPORTED;
    case UCS_ERR_TIMED_OUT: return SHARC_ERR_TIMEOUT;
    case UCS_ERR_ENDPOINT_TIMEOUT: /* the peer stopped answering: UCX declared it lost */
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_CANCELED: return SHARC_ERR_REMOTE;
    default: return SHARC_ERR_BACKEND;
    }
}

SHARC_HIDDEN sharc_tp_send_fn_t sharc_tp_ucx_send;
SHARC_HIDDEN sharc_tp_recv_fn_t sharc_tp_ucx_recv;
SHARC_HIDDEN sharc_tp_recv_any_fn_t sharc_tp_ucx_recv_any;
SHARC_HIDDEN sharc_tp_probe_fn_t sharc_tp_ucx_probe;
SHARC_HIDDEN sharc_tp_mem_reg_fn_t sharc_tp_ucx_mem_reg;
SHARC_HIDDEN sharc_tp_mem_dereg_fn_t sharc_tp_ucx_mem_dereg;
SHARC_HIDDEN sharc_tp_progress_fn_t sharc_tp_ucx_progress;

/* Cancel every receive in flight (they complete with an error; sends end when their endpoint
 * closes), after a failure and before the endpoints close. tp->base.lock held or not. */
SHARC_HIDDEN sharc_tp_abort_fn_t sharc_tp_ucx_abort;

#endif
