/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_progress.c: progress of the shm transport: each peer's inbound FIFO drained (every slot
 * handed to the receives, or to the sends its CTS or FIN names), what waits for room in its
 * outbound FIFO written, and the requests of a peer that exited failed. Everything runs under
 * tp->base.lock.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "shm.h"

#define SHARC_SHM_LIVENESS_PERIOD 1.0 /* seconds between checks that busy peers still exist */

static void shm_on_message(sharc_tp_comm_t *tp, sharc_shm_peer_t *p, const sharc_shm_hdr_t *hdr,
                           const void *payload)
{
    sharc_tp_req_t *req;

    switch (hdr->type) {
    case SHARC_SHM_EAGER_MSG:
    case SHARC_SHM_RTS: sharc_tp_shm_arrived(tp, p, hdr, payload); return;
    case SHARC_SHM_CTS:
        req = sharc_tp_queue_take(&p->wait_fin, sharc_tp_shm_has_cookie, hdr->scookie);
        if (req != NULL) {
            sharc_tp_shm_req(req)->sent = 0;
            sharc_tp_shm_req(req)->cookie = hdr->rcookie;
            sharc_tp_queue_push(&p->streaming, req);
            return;
        }
        break;
    case SHARC_SHM_FRAG: sharc_tp_shm_frag(tp, p, hdr, payload); return;
    case SHARC_SHM_FIN:
        req = sharc_tp_queue_take(&p->wait_fin, sharc_tp_shm_has_cookie, hdr->scookie);
        if (req != NULL) {
            /* a receive too short for the message is the receiver's error, not the sender's */
            sharc_tp_req_complete(
                req, hdr->status == SHARC_ERR_INVALID ? SHARC_OK : (sharc_status_t)hdr->status);
            return;
        }
        break;
    default: break;
    }
    sharc_error("shm: rank %d: message of type %u from rank %d names no pending request "
                "(protocol error)",
                tp->base.rank, hdr->type, p->rank);
}

/* Handle every slot the peer has written. */
static int shm_drain(sharc_tp_comm_t *tp, sharc_shm_peer_t *p)
{
    sharc_shm_fifo_t *f = p->in;
    uint64_t tail = __atomic_load_n(&f->tail, __ATOMIC_RELAXED);
    uint64_t head = __atomic_load_n(&f->head, __ATOMIC_ACQUIRE);
    int n = 0;

    for (; tail != head; tail++, n++) {
        const unsigned char *slot = f->slot[tail % SHARC_SHM_SLOTS];
        sharc_shm_hdr_t hdr;

        memcpy(&hdr, slot, sizeof(hdr));
        if (hdr.bytes > SHARC_SHM_EAGER &&
            (hdr.type == SHARC_SHM_EAGER_MSG || hdr.type == SHARC_SHM_FRAG)) {
            sharc_error("shm: rank %d: corrupt slot from rank %d (%llu payload bytes)",
                        tp->base.rank, p->rank, (unsigned long long)hdr.bytes);
        } else {
            shm_on_message(tp, p, &hdr, slot + SHARC_SHM_HDR_BYTES);
        }
        __atomic_store_n(&f->tail, tail + 1, __ATOMIC_RELEASE); /* the slot is free again */
    }
    /* a sender that found the FIFO full may block until there is room: tell it (the tail is
     * stored before want_room is read; the sender's side is in shm_ep.c) */
    if (n > 0) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (__atomic_load_n(&f->want_room, __ATOMIC_RELAXED) &&
            __atomic_exchange_n(&f->want_room, 0, __ATOMIC_SEQ_CST)) {
            sharc_tp_shm_ring(p->out_seg);
        }
    }
    return n;
}

/* ---- failure ------------------------------------------------------------------------- */

void sharc_tp_shm_fail_queue(sharc_tp_queue_t *q, sharc_status_t status)
{
    sharc_tp_req_t *r;

    while ((r = sharc_tp_queue_pop(q)) != NULL) {
        sharc_tp_req_complete(r, status);
    }
}

void sharc_tp_shm_fail_peer(sharc_shm_peer_t *p, sharc_status_t status)
{
    sharc_tp_shm_fail_queue(&p->sendq, status);
    sharc_tp_shm_fail_queue(&p->wait_fin, status);
    sharc_tp_shm_fail_queue(&p->streaming, status);
    sharc_tp_shm_fail_queue(&p->posted, status);
    sharc_tp_shm_fail_queue(&p->frag_recv, status);
}

/* Does this rank wait for the peer? (Not for a receive from any peer: a peer that finished
 * and left is no failure, and one that died is the store's news, which fails the
 * communicator and so the receive.) */
static int shm_busy(const sharc_shm_peer_t *p)
{
    return p->sendq.head || p->wait_fin.head || p->streaming.head || p->posted.head ||
           p->frag_recv.head;
}

/* Fail the requests of local peers that no longer exist (a crash leaves no other trace). */
static void shm_check_liveness(sharc_tp_comm_t *tp)
{
    double now = sharc_time_now();

    if (!tp->same_pidns || now < tp->next_liveness) {
        return;
    }
    tp->next_liveness = now + SHARC_SHM_LIVENESS_PERIOD;
    for (int i = 0; i < tp->nlocal; i++) {
        sharc_shm_peer_t *p = &tp->peers[i];

        if (p->failed || !shm_busy(p) || kill(p->pid, 0) == 0 || errno != ESRCH) {
            continue;
        }
        sharc_error("shm: rank %d's peer rank %d (pid %d, this node) has exited: its operations "
                    "fail",
                    tp->base.rank, p->rank, (int)p->pid);
        p->failed = 1;
        sharc_boot_report(tp->base.boot, p->rank); /* every rank of the communicator hears of it */
        sharc_tp_shm_fail_peer(p, SHARC_ERR_REMOTE);
    }
}

/*
 * The communicator failed: every request in flight fails now, and nothing more is matched or
 * landed (an arriving message would be written into a buffer its owner has been told is
 * free), so progress leaves the FIFOs alone from here on.
 */
void sharc_tp_shm_abort(sharc_tp_comm_t *tp)
{
    pthread_mutex_lock(&tp->base.lock);
    tp->aborted = 1;
    for (int i = 0; i < tp->nlocal; i++) {
        sharc_tp_shm_fail_peer(&tp->peers[i], SHARC_ERR_REMOTE);
    }
    sharc_tp_shm_fail_queue(&tp->any_posted, SHARC_ERR_REMOTE);
    pthread_mutex_unlock(&tp->base.lock);
    sharc_tp_shm_wake(tp); /* a thread blocked on this rank's doorbell sees its requests end */
}

int sharc_tp_shm_progress(sharc_tp_comm_t *tp)
{
    int n = 0;

    pthread_mutex_lock(&tp->base.lock);
    for (int i = 0; i < tp->nlocal && !tp->aborted; i++) {
        if (!tp->peers[i].failed) {
            n += shm_drain(tp, &tp->peers[i]);
            n += sharc_tp_shm_flush(tp, &tp->peers[i]);
        }
    }
    shm_check_liveness(tp);
    pthread_mutex_unlock(&tp->base.lock);
    return n > 0;
}
