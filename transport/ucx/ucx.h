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

#include "../transport.h"

/* UCP tag = source rank (24 bits) | sharc tag (40 bits). */
#define SHARC_UCX_TAG_BITS  SHARC_TP_TAG_BITS
#define SHARC_UCX_MAX_RANKS (1 << (64 - SHARC_TP_TAG_BITS))

/* A request's peer (the first of its transport words; ucx_ep.c keeps the others). */
#define SHARC_UCX_PEER(_req) ((_req)->tp_priv[0].u64)

struct sharc_tp_comm {
    /*
     * Guards the worker: posts may come from the caller while a progress thread progresses.
     * Recursive, because completion callbacks run inside progress and may post.
     */
    pthread_mutex_t lock;
    sharc_boot_t *boot; /* the communicator's: a peer lost is reported through it */
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h *eps;    /* [size] */
    int *peer_failed; /* [size]: set by the endpoint error handler */
    int rank, size;
    double timeout; /* seconds, for closing endpoints */
    /* requests UCP has not completed yet (a list through tp_priv), so that an abort can
     * cancel them: a failed communicator's transport must not be left holding any */
    sharc_tp_req_t *inflight;
    int aborted; /* everything in flight was cancelled: the communicator failed */
    int closing; /* being destroyed: a peer closing its side is no failure */
};

struct sharc_tp_mem {
    ucp_mem_h memh;
    void *addr;
    size_t bytes;
};

/* UCX status -> sharc status, at this boundary only. */
SHARC_HIDDEN sharc_status_t sharc_tp_ucx_status(ucs_status_t status);

SHARC_HIDDEN sharc_status_t sharc_tp_ucx_send(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                              const void *buf, size_t bytes, sharc_tp_mem_t *mem,
                                              sharc_tp_req_t *req);
SHARC_HIDDEN sharc_status_t sharc_tp_ucx_recv(sharc_tp_comm_t *tp, int peer, uint64_t tag,
                                              void *buf, size_t bytes, sharc_tp_mem_t *mem,
                                              sharc_tp_req_t *req);
SHARC_HIDDEN sharc_status_t sharc_tp_ucx_mem_reg(sharc_tp_comm_t *tp, void *addr, size_t bytes,
                                                 sharc_memtype_t memtype, sharc_tp_mem_t **mem_p);
SHARC_HIDDEN void sharc_tp_ucx_mem_dereg(sharc_tp_comm_t *tp, sharc_tp_mem_t *mem);
SHARC_HIDDEN int sharc_tp_ucx_progress(sharc_tp_comm_t *tp);

/* Cancel every receive in flight (they complete with an error; sends end when their endpoint
 * closes), after a failure and before the endpoints close. tp->lock held or not. */
SHARC_HIDDEN void sharc_tp_ucx_abort(sharc_tp_comm_t *tp);

#endif
