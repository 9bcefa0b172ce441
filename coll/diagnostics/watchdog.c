/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.c: a context's watchdog, a thread that looks after its communicators whatever
 * their callers do (compute, a data loader, a debugger): it keeps each store connection's
 * heartbeats going (so a rank or a node that falls silent is named gone, not waited for
 * until SHARC_TIMEOUT), notices a collective that has waited past SHARC_STALL_WARN and asks
 * the ranks for a verdict, answers the verdict rounds (stall.c), and dumps every flight
 * recorder on SIGUSR1 when SHARC_FLIGHT_SIGNAL asks for it.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "diagnostics.h"

struct sharc_coll_watchdog {
    pthread_mutex_t lock; /* the list, and a tick: a communicator leaves between ticks */
    pthread_cond_t cond;
    pthread_t thread;
    int running, stop;
    sharc_coll_comm_t **comms;
    size_t ncomms, cap;
    double interval, silent_max, tick; /* heartbeats (the bootstrap's knobs), the tick's */
    unsigned signals_seen;
};

/* SIGUSR1s received (SHARC_FLIGHT_SIGNAL): the handler counts, the watchdogs dump. */
static unsigned sharc_coll_signals;
static struct sigaction sharc_coll_sig_old;
static int sharc_coll_sig_installed;

static void sharc_coll_on_signal(int sig, siginfo_t *info, void *uc)
{
    __atomic_add_fetch(&sharc_coll_signals, 1, __ATOMIC_RELAXED);
    /* the application's handler, if it had one, still runs */
    if ((sharc_coll_sig_old.sa_flags & SA_SIGINFO) && sharc_coll_sig_old.sa_sigaction != NULL) {
        sharc_coll_sig_old.sa_sigaction(sig, info, uc);
    } else if (!(sharc_coll_sig_old.sa_flags & SA_SIGINFO) &&
               sharc_coll_sig_old.sa_handler != SIG_DFL &&
               sharc_coll_sig_old.sa_handler != SIG_IGN) {
        sharc_coll_sig_old.sa_handler(sig);
    }
}

/* SHARC_FLIGHT_SIGNAL: SIGUSR1 dumps the recorders (installed once per process). */
static void sharc_coll_signal_install(void)
{
    struct sigaction sa;

    if (__atomic_exchange_n(&sharc_coll_sig_installed, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = sharc_coll_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, &sharc_coll_sig_old) != 0) {
        sharc_warn("flight recorder: cannot install the SIGUSR1 handler "
                   "(SHARC_FLIGHT_SIGNAL): %m");
    }
}

/* One communicator's turn (the list's lock held). */
static void sharc_coll_watch_comm(sharc_coll_watchdog_t *wd, sharc_coll_comm_t *cc, int dump)
{
    if (cc->boot != NULL) {
        sharc_boot_keepalive(cc->boot, wd->interval, wd->silent_max);
    }
    if (dump) {
        sharc_coll_lock(cc);
        sharc_coll_fr_dump(cc, cc->cfg->flight_dir, "signal");
        sharc_coll_unlock(cc);
    }
    sharc_coll_stall_check(cc);
}

static void *sharc_coll_watchdog_thread(void *arg)
{
    sharc_coll_watchdog_t *wd = arg;

    pthread_mutex_lock(&wd->lock);
    while (!wd->stop) {
        unsigned signals = __atomic_load_n(&sharc_coll_signals, __ATOMIC_RELAXED);
        int dump = signals != wd->signals_seen;
        double until = sharc_time_now() + wd->tick;
        struct timespec ts;

        wd->signals_seen = signals;
        for (size_t i = 0; i < wd->ncomms; i++) {
            sharc_coll_watch_comm(wd, wd->comms[i], dump);
        }
        clock_gettime(CLOCK_REALTIME, &ts); /* (the condition variable's clock) */
        until -= sharc_time_now();
        ts.tv_sec += (time_t)until;
        ts.tv_nsec += (long)((until - (double)(time_t)until) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!wd->stop && until > 0) {
            pthread_cond_timedwait(&wd->cond, &wd->lock, &ts);
        }
    }
    pthread_mutex_unlock(&wd->lock);
    return NULL;
}

sharc_status_t sharc_coll_watchdog_create(const sharc_cfg_t *cfg, sharc_coll_watchdog_t **wd_p)
{
    const sharc_boot_cfg_t *bc = sharc_boot_cfg(cfg);
    sharc_coll_watchdog_t *wd = calloc(1, sizeof(*wd));

    if (wd == NULL) {
        return SHARC_ERR_NOMEM;
    }
    wd->interval = bc->heartbeat;
    wd->silent_max = bc->heartbeat_timeout;
    if (wd->silent_max < 3 * wd->interval) {
        sharc_warn("SHARC_BOOTSTRAP_HEARTBEAT_TIMEOUT (%.1f s) is under 3 heartbeats (%.1f s "
                   "each): %.1f s is used",
                   wd->silent_max, wd->interval, 3 * wd->interval);
        wd->silent_max = 3 * wd->interval;
    }
    wd->tick = SHARC_MIN(0.5, wd->interval / 2);
    wd->signals_seen = __atomic_load_n(&sharc_coll_signals, __ATOMIC_RELAXED);
    pthread_mutex_init(&wd->lock, NULL);
    pthread_cond_init(&wd->cond, NULL);
    if (sharc_coll_cfg(cfg)->flight_signal) {
        sharc_coll_signal_install();
    }
    *wd_p = wd;
    return SHARC_OK;
}

sharc_status_t sharc_coll_watchdog_add(sharc_coll_watchdog_t *wd, sharc_coll_comm_t *cc)
{
    sharc_status_t status = SHARC_OK;
    int ret;

    pthread_mutex_lock(&wd->lock);
    if (sharc_array_grow(&wd->comms, &wd->cap, wd->ncomms, sizeof(*wd->comms), 8) != 0) {
        status = SHARC_ERR_NOMEM;
    } else if (!wd->running) {
        ret = pthread_create(&wd->thread, NULL, sharc_coll_watchdog_thread, wd);
        if (ret != 0) {
            errno = ret;
            sharc_error("cannot start the watchdog thread (heartbeats, stall verdicts): %m");
            status = SHARC_ERR_NOMEM;
        }
        wd->running = ret == 0;
    }
    if (status == SHARC_OK) {
        wd->comms[wd->ncomms++] = cc;
        cc->watchdog = wd;
    }
    pthread_mutex_unlock(&wd->lock);
    return status;
}

void sharc_coll_watchdog_remove(sharc_coll_watchdog_t *wd, sharc_coll_comm_t *cc)
{
    pthread_mutex_lock(&wd->lock); /* (waits for a tick that looks at it to end) */
    for (size_t i = 0; i < wd->ncomms; i++) {
        if (wd->comms[i] == cc) {
            wd->comms[i] = wd->comms[--wd->ncomms];
            break;
        }
    }
    cc->watchdog = NULL;
    pthread_mutex_unlock(&wd->lock);
}

void sharc_coll_watchdog_destroy(sharc_coll_watchdog_t *wd)
{
    if (wd == NULL) {
        return;
    }
    pthread_mutex_lock(&wd->lock);
    wd->stop = 1;
    pthread_cond_signal(&wd->cond);
    pthread_mutex_unlock(&wd->lock);
    if (wd->running) {
        pthread_join(wd->thread, NULL);
    }
    free(wd->comms);
    pthread_cond_destroy(&wd->cond);
    pthread_mutex_destroy(&wd->lock);
    free(wd);
}
