/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_wait.c: the shm transport's blocking wait, a doorbell in each rank's segment. A thread
 * with nothing to do sleeps on its rank's bell, a futex word in shared memory; a peer that
 * writes a slot to the rank, or frees room in a FIFO the rank waits to write to, rings the
 * bell when it finds sleepers there. Not the FIFOs themselves (shm_ep.c, shm_progress.c).
 *
 * An eventcount: the sleeper reads the bell, counts itself in sleepers, looks for work once
 * more, and sleeps only while the bell still holds the value it read; a writer publishes its
 * slot, then looks at sleepers, and bumps the bell before it wakes them. A full barrier on
 * both sides between the store and the load makes at least one of them see the other.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "shm.h"

/* Not FUTEX_PRIVATE_FLAG: the word is in memory shared between processes. 0 or -1 (errno). */
static long shm_futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

void sharc_tp_shm_ring(sharc_shm_seg_hdr_t *seg)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* what was published, before sleepers is read */
    if (__atomic_load_n(&seg->sleepers, __ATOMIC_RELAXED) == 0) {
        return;
    }
    __atomic_add_fetch(&seg->bell, 1, __ATOMIC_SEQ_CST);
    shm_futex(&seg->bell, FUTEX_WAKE, INT_MAX, NULL);
}

/* Would progress move something now: a slot to read, or room for what waits to be written?
 * (tp->base.lock held) */
static int shm_has_work(sharc_tp_comm_t *tp)
{
    for (int i = 0; i < tp->nlocal && !tp->aborted; i++) {
        sharc_shm_peer_t *p = &tp->peers[i];
        uint64_t out_head = __atomic_load_n(&p->out->head, __ATOMIC_RELAXED);

        if (p->failed) {
            continue;
        }
        if (__atomic_load_n(&p->in->head, __ATOMIC_ACQUIRE) !=
            __atomic_load_n(&p->in->tail, __ATOMIC_RELAXED)) {
            return 1;
        }
        if ((p->ctrl_head != NULL || p->sendq.head != NULL || p->streaming.head != NULL) &&
            out_head - __atomic_load_n(&p->out->tail, __ATOMIC_ACQUIRE) < SHARC_SHM_SLOTS) {
            return 1;
        }
    }
    return 0;
}

/* Is there work for this rank, or is its poller's wait over? */
static int shm_woken(sharc_tp_comm_t *tp, int (*ready)(void *arg), void *arg)
{
    int work;

    pthread_mutex_lock(&tp->base.lock);
    work = shm_has_work(tp);
    pthread_mutex_unlock(&tp->base.lock);
    return work || (ready != NULL && ready(arg));
}

/* A block ran out its time: if there is work, yet the bell has not moved since it was read,
 * someone published without ringing (a lost wake-up costs a whole block). A writer rings
 * after it publishes, so one that was preempted between the two is still to ring: the bell
 * gets up to 100 ms (yielding the core, which such a writer may be waiting for: on a node with
 * many more busy processes than cores it waits that long for its turn) before the wake-up
 * counts as lost. Said once. */
static void shm_check_lost(sharc_tp_comm_t *tp, uint32_t bell, int (*ready)(void *arg), void *arg)
{
    const uint32_t *word = &((sharc_shm_seg_hdr_t *)tp->seg)->bell;
    double until;

    if (tp->lost_wake || !shm_woken(tp, ready, arg)) {
        return;
    }
    until = sharc_time_now() + 0.1;
    while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == bell) {
        if (sharc_time_now() > until) {
            tp->lost_wake = 1;
            sharc_warn("shm: rank %d slept through a wake-up: work came without its doorbell "
                       "ringing (found at the end of a block; a bug)",
                       tp->base.rank);
            return;
        }
        sched_yield();
    }
}

void sharc_tp_shm_block(sharc_tp_comm_t *tp, double timeout, int (*ready)(void *arg), void *arg)
{
    sharc_shm_seg_hdr_t *seg = tp->seg;
    uint32_t bell = __atomic_load_n(&seg->bell, __ATOMIC_ACQUIRE);

    __atomic_add_fetch(&seg->sleepers, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* counted, before the FIFOs are looked at */
    if (!shm_woken(tp, ready, arg)) {
        struct timespec ts = {(time_t)timeout, (long)((timeout - (double)(time_t)timeout) * 1e9)};

        /* returns at once when the bell moved since it was read (a ring in between) */
        if (shm_futex(&seg->bell, FUTEX_WAIT, bell, &ts) != 0 && errno == ETIMEDOUT) {
            shm_check_lost(tp, bell, ready, arg);
        }
    }
    __atomic_sub_fetch(&seg->sleepers, 1, __ATOMIC_RELEASE);
}

void sharc_tp_shm_wake(sharc_tp_comm_t *tp)
{
    sharc_tp_shm_ring(tp->seg);
}
