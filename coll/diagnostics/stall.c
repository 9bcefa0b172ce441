/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stall.c: the live stall verdict. When a collective of this rank has waited past
 * SHARC_STALL_WARN, the watchdog asks the store for a verdict round; the store announces it
 * to every rank of the communicator, whose watchdogs answer with their heads (what each
 * posted last, what it waits for) and gather everyone's; each rank then works out the same
 * verdict from the same heads (verdict.c) and logs it, and SHARC_TIMEOUT's error carries
 * it (the warning comes at SHARC_TIMEOUT / 2 at the latest). Needs a store-based bootstrap (env,
 * Slurm, explicit); under mpirun there is none, and `sharc-perf why` works from the flight dumps
 * instead.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "diagnostics.h"

/* How long the ranks' heads are gathered for: a rank's watchdog answers within a tick, so
 * the verdict is logged within SHARC_STALL_WARN + 4 s. */
#define SHARC_COLL_ROUND_S 3.0
/* A rank that gives up on a stalled collective waits for the other waiting ranks' own
 * timeouts at most this long (sharc_coll_stall_linger), and this much past the latest of
 * them as the heads tell it (they were taken up to a watchdog tick apart). */
#define SHARC_COLL_LINGER_MAX_S 5.0
#define SHARC_COLL_LINGER_PAD_S 0.6

/* When the last rank waiting in collective @p ordinal reaches its SHARC_TIMEOUT, on this
 * rank's clock, from the heads taken at @p now: each waits from about its post. */
static double sharc_coll_stall_ends(const sharc_coll_comm_t *cc, const sharc_coll_head_t *heads,
                                    uint64_t ordinal, double now)
{
    double ends = now;

    for (int r = 0; r < cc->size; r++) {
        if (heads[r].answered && heads[r].stalled == ordinal &&
            heads[r].stalled < heads[r].posted) {
            ends = SHARC_MAX(ends, now - heads[r].st_age + cc->cfg->timeout);
        }
    }
    return ends;
}

/* Answer verdict round @p round about @p ordinal: this rank's head, everyone's, the verdict. */
static void sharc_coll_stall_round(sharc_coll_comm_t *cc, uint32_t round, uint64_t ordinal)
{
    sharc_coll_head_t mine, *heads = calloc((size_t)cc->size, sizeof(*heads));
    unsigned char *present = calloc((size_t)cc->size, 1);
    char verdict[sizeof(cc->verdict)];
    sharc_status_t status = SHARC_ERR_NOMEM;
    double now = sharc_time_now();
    int culprit;

    if (heads != NULL && present != NULL) {
        sharc_coll_lock(cc);
        sharc_coll_head(cc, now, &mine);
        sharc_coll_unlock(cc);
        status = cc->boot->ops->exchange(cc->boot, round, &mine, heads, sizeof(mine),
                                         SHARC_COLL_ROUND_S, present);
    }
    if (status != SHARC_OK) {
        sharc_warn("rank %d: communicator %s: the ranks' notes on stalled collective #%llu "
                   "could not be gathered (%s)",
                   cc->rank, cc->name, (unsigned long long)ordinal, sharc_status_string(status));
        free(heads);
        free(present);
        return;
    }
    for (int r = 0; r < cc->size; r++) {
        heads[r].answered = present[r];
        heads[r].rank = r;
    }
    culprit = sharc_coll_verdict(heads, cc->size, cc->hosts, cc->name, 1, verdict, sizeof(verdict));
    sharc_warn("rank %d: stall verdict: %s", cc->rank, verdict);
    sharc_coll_lock(cc);
    snprintf(cc->verdict, sizeof(cc->verdict), "%s", verdict);
    cc->verdict_rank = culprit; /* (the metrics': read with verdict_ordinal, under the lock) */
    cc->verdict_ends = sharc_coll_stall_ends(cc, heads, ordinal, now);
    __atomic_store_n(&cc->verdict_ordinal, ordinal, __ATOMIC_RELEASE);
    sharc_coll_fr_dump(cc, cc->cfg->flight_dir, "stall");
    sharc_coll_unlock(cc);
    free(heads);
    free(present);
}

void sharc_coll_stall_check(sharc_coll_comm_t *cc)
{
    /* well before the timeout, so that its error can carry the verdict */
    double warn = SHARC_MIN(cc->cfg->stall_warn, cc->cfg->timeout / 2);
    const sharc_coll_task_t *oldest;
    uint64_t ordinal, ask = UINT64_MAX;
    uint32_t round;

    if (cc->boot == NULL || cc->boot->ops->stall == NULL) {
        return; /* (a bootstrap without a store: no live verdict) */
    }
    if (cc->boot->ops->round(cc->boot, &round, &ordinal)) {
        sharc_coll_stall_round(cc, round, ordinal);
    }
    sharc_coll_lock(cc);
    oldest = sharc_coll_oldest(cc);
    if (oldest != NULL && oldest->ordinal != cc->stall_asked &&
        sharc_time_now() - oldest->t_post > warn) {
        ask = cc->stall_asked = oldest->ordinal;
    }
    sharc_coll_unlock(cc);
    if (ask != UINT64_MAX) {
        cc->boot->ops->stall(cc->boot, ask);
    }
}

void sharc_coll_stall_linger(const sharc_coll_comm_t *cc, uint64_t ordinal)
{
    double now = sharc_time_now(), until;
    struct timespec ts;

    if (sharc_coll_verdict_on(cc, ordinal) == NULL) {
        return;
    }
    until = SHARC_MIN(cc->verdict_ends + SHARC_COLL_LINGER_PAD_S, now + SHARC_COLL_LINGER_MAX_S);
    if (until > now) {
        ts.tv_sec = (time_t)(until - now);
        ts.tv_nsec = (long)((until - now - (double)ts.tv_sec) * 1e9);
        nanosleep(&ts, NULL);
    }
}
