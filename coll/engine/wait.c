/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wait.c: how a poller with nothing to do waits, after a progress pass that moved nothing: a
 * caller blocked in sharc_request_wait, or the progress thread. It polls on for
 * SHARC_WAIT_SPIN (a message about to arrive is taken at once), then blocks on the transport
 * until a peer writes to this rank or a completion or post wakes it (shm's doorbell), or,
 * where the transport cannot block, sleeps in steps that grow to a cap. Not who polls
 * (thread.c, request.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "../../base/util.h"
#include "engine.h"

/* Longest block on the transport: the poller wakes at least this often (a rank the store
 * declares gone, SHARC_TIMEOUT, a stalled peer's liveness are seen within it); a wake-up
 * costs a few microseconds, so 100 a second is well under 1% of a core. */
#define SHARC_COLL_BLOCK_MAX_S 0.01
/* Where the transport cannot block: sleeps from 10 us, doubling, to this cap (a short
 * nanosleep lasts the timer slack, 50 us, more). */
#define SHARC_COLL_NAP_MAX_US 200
/* A spinning poller that keeps its core pauses this many times between passes: a pass reads
 * the peers' FIFO heads, which their writers need back. */
#define SHARC_COLL_RELAX 16
/* Work on the GPU (NCCL, staging copies) finishes on its own, without this process: polling
 * its events takes no peer's core, and a sleep only adds to its latency (a short nanosleep
 * lasts the timer slack, 50 us, more: seen as +35-50 us on 64 MiB NCCL all-gathers). So the
 * pollers of GPU work yield for longer (about a millisecond), then sleep briefly. */
#define SHARC_COLL_IDLE_GPU_US    10
#define SHARC_COLL_IDLE_GPU_SPINS 2048

int sharc_coll_spin_yields(const sharc_coll_cfg_t *cfg, int local_size)
{
    long cpus;

    switch ((sharc_coll_wait_yield_t)cfg->wait_yield) {
    case SHARC_COLL_WAIT_YIELD_YES: return 1;
    case SHARC_COLL_WAIT_YIELD_NO: return 0;
    case SHARC_COLL_WAIT_YIELD_AUTO: break;
    }
    /* The node's cores, not this process's affinity: a launcher that binds each rank to a core
     * (mpirun) leaves one CPU in each mask, yet every rank has a core to itself. */
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && (long)local_size * (cfg->progress_thread ? 2 : 1) > cpus;
}

static void sharc_coll_relax(void)
{
    for (int i = 0; i < SHARC_COLL_RELAX; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
    }
}

static void sharc_coll_nap(long us)
{
    struct timespec ts = {0, 1000L * us};

    nanosleep(&ts, NULL);
}

/* The GPU's pollers: yields, then short sleeps (see above). */
static void sharc_coll_idle_gpu(sharc_coll_idle_t *idle)
{
    if (++idle->passes <= SHARC_COLL_IDLE_GPU_SPINS) {
        sched_yield();
    } else {
        sharc_coll_nap(SHARC_COLL_IDLE_GPU_US);
    }
}

void sharc_coll_idle(sharc_coll_comm_t *cc, sharc_coll_idle_t *idle, int moved, int gpu,
                     int (*ready)(void *arg), void *arg)
{
    double now;

    if (moved) {
        *idle = (sharc_coll_idle_t){0};
        return;
    }
    if (gpu) {
        sharc_coll_idle_gpu(idle);
        return;
    }
    now = sharc_time_now();
    if (idle->passes++ == 0) {
        idle->since = now;
    }
    if (now - idle->since < cc->cfg->wait_spin) {
        /* A yield lets the rank with work run where ranks outnumber cores; where they do not,
         * it only risks the core: on a busy node the scheduler may give it to another
         * process for a whole time slice (milliseconds, seen on a loaded 2-core machine). */
        if (cc->spin_yield) {
            sched_yield();
        } else {
            sharc_coll_relax();
        }
    } else if (cc->tp_ops != NULL && cc->tp_ops->block != NULL) {
        cc->tp_ops->block(cc->tp, SHARC_COLL_BLOCK_MAX_S, ready, arg);
    } else {
        sharc_coll_nap(SHARC_MIN(SHARC_COLL_NAP_MAX_US, 10L << SHARC_MIN(idle->naps, 5)));
        idle->naps++;
    }
}

void sharc_coll_wake(sharc_coll_comm_t *cc)
{
    if (cc->tp_ops != NULL && cc->tp_ops->wake != NULL) {
        cc->tp_ops->wake(cc->tp);
    }
}
