/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * backend.h: what the backends share, for their own use (the layers above see transport.h
 * only): a view of a request's backend space as a struct of the backend's own, the state
 * every point-to-point backend's communicator starts with, and a FIFO of requests. Plain
 * helpers a backend calls, not a base class: no backend's state is known here.
 */
#ifndef SHARC_TP_BACKEND_H
#define SHARC_TP_BACKEND_H

#include <pthread.h>

#include "../base/util.h"
#include "transport.h"

/*
 * A backend's per-request state is a struct of its own, declared in its header, followed by
 * SHARC_TP_REQ_PRIV_FITS(its type): the build fails if the struct outgrows a request's
 * backend space or needs more alignment than it has. The backend reaches it through an
 * accessor of its own that returns sharc_tp_req_priv(req).
 */
#define SHARC_TP_REQ_PRIV_FITS(_type)                                                              \
    _Static_assert(sizeof(_type) <= sizeof(sharc_tp_req_priv_t),                                   \
                   #_type " outgrows a request's backend space (sharc_tp_req_priv_t)");            \
    _Static_assert(_Alignof(_type) <= _Alignof(sharc_tp_req_priv_t),                               \
                   #_type " needs more alignment than a request's backend space")

static inline void *sharc_tp_req_priv(sharc_tp_req_t *req)
{
    return req->tp_priv.bytes;
}

/* What a point-to-point backend's communicator state starts with (its member `base`). */
typedef struct {
    /* posts come from the caller and a progress thread; recursive, because completion
     * callbacks run inside progress and may post */
    pthread_mutex_t lock;
    sharc_boot_t *boot; /* the communicator's: a peer found lost is reported through it */
    int rank, size;
} sharc_tp_base_t;

static inline void sharc_tp_base_init(sharc_tp_base_t *base, const sharc_tp_comm_params_t *params)
{
    sharc_mutex_init_recursive(&base->lock);
    base->boot = params->boot;
    base->rank = params->rank;
    base->size = params->size;
}

static inline void sharc_tp_base_fini(sharc_tp_base_t *base)
{
    pthread_mutex_destroy(&base->lock);
}

/* Requests in order, linked through their next member; not locked (the backend's lock is). */
typedef struct {
    sharc_tp_req_t *head, *tail;
} sharc_tp_queue_t;

/* Is @p req the one sharc_tp_queue_take looks for (its tag, its cookie: @p key)? */
typedef int sharc_tp_req_match_fn_t(sharc_tp_req_t *req, uint64_t key);

/* Matching a request by its address (sharc_tp_queue_take on a request known to be queued). */
static inline int sharc_tp_queue_is(sharc_tp_req_t *req, uint64_t addr)
{
    return (uint64_t)(uintptr_t)req == addr;
}

static inline void sharc_tp_queue_push(sharc_tp_queue_t *q, sharc_tp_req_t *req)
{
    req->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = req;
    } else {
        q->head = req;
    }
    q->tail = req;
}

/* The oldest request, unlinked; NULL when the queue is empty. */
static inline sharc_tp_req_t *sharc_tp_queue_pop(sharc_tp_queue_t *q)
{
    sharc_tp_req_t *req = q->head;

    if (req != NULL) {
        q->head = req->next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        req->next = NULL;
    }
    return req;
}

/* The oldest request that @p match accepts with @p key, left where it is; NULL if none does. */
static inline sharc_tp_req_t *sharc_tp_queue_find(const sharc_tp_queue_t *q,
                                                  sharc_tp_req_match_fn_t *match, uint64_t key)
{
    for (sharc_tp_req_t *req = q->head; req != NULL; req = req->next) {
        if (match(req, key)) {
            return req;
        }
    }
    return NULL;
}

/* The oldest request that @p match accepts with @p key, unlinked; NULL if none does. */
static inline sharc_tp_req_t *sharc_tp_queue_take(sharc_tp_queue_t *q,
                                                  sharc_tp_req_match_fn_t *match, uint64_t key)
{
    for (sharc_tp_req_t **p = &q->head, *prev = NULL; *p != NULL; prev = *p, p = &(*p)->next) {
        sharc_tp_req_t *req = *p;

        if (match(req, key)) {
            *p = req->next;
            if (q->tail == req) {
                q->tail = prev;
            }
            req->next = NULL;
            return req;
        }
    }
    return NULL;
}

#endif
