/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state.c: a communicator's collective state, from its creation (with its progress driver)
 * to its end: what is still in flight is completed (or, on a failed communicator, ended)
 * before the transports go, and the tasks that failed are freed only after them.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <stdlib.h>

#include "../base/gpu.h"
#include "../base/log.h"
#include "../base/util.h"
#include "coll.h"
#include "diagnostics/metrics.h"

/*
 * The node layout from every rank's node (none given: one node): the nodes, and when each
 * has as many ranks, every node's ranks in rank order (node_ranks) and this rank's place.
 */
static sharc_status_t sharc_coll_layout(sharc_coll_comm_t *cc, const int *node_of)
{
    int n = cc->size, nnodes = 0, *count;

    for (int i = 0; i < n; i++) {
        nnodes = SHARC_MAX(nnodes, node_of != NULL ? node_of[i] + 1 : 1);
    }
    count = calloc((size_t)nnodes, sizeof(*count));
    if (count == NULL) {
        return SHARC_ERR_NOMEM;
    }
    cc->nnodes = nnodes;
    for (int i = 0; i < n; i++) {
        count[node_of != NULL ? node_of[i] : 0]++;
    }
    cc->node_size = (n % nnodes == 0) ? n / nnodes : 0;
    for (int k = 0; k < nnodes; k++) {
        cc->node_size = (count[k] == cc->node_size) ? cc->node_size : 0;
        count[k] = 0; /* from here: ranks placed so far */
    }
    if (cc->node_size > 0) {
        cc->node_ranks = malloc(sizeof(*cc->node_ranks) * (size_t)n);
        for (int i = 0; cc->node_ranks != NULL && i < n; i++) {
            int k = node_of != NULL ? node_of[i] : 0;

            if (i == cc->rank) {
                cc->node_index = k;
                cc->local_index = count[k];
            }
            cc->node_ranks[k * cc->node_size + count[k]++] = i;
        }
    }
    free(count);
    return (cc->node_size > 0 && cc->node_ranks == NULL) ? SHARC_ERR_NOMEM : SHARC_OK;
}

sharc_status_t sharc_coll_comm_create(const sharc_coll_comm_params_t *params,
                                      sharc_coll_comm_t **cc_p)
{
    sharc_coll_comm_t *cc = calloc(1, sizeof(*cc));
    sharc_status_t status;

    if (cc == NULL) {
        return SHARC_ERR_NOMEM;
    }
    cc->rank = params->rank;
    cc->size = params->size;
    cc->cfg = sharc_coll_cfg(params->cfg);
    cc->tune = params->tune;
    cc->boot = params->boot;
    cc->diag = &sharc_coll_diag_ops;
    cc->tp_ops = params->tp_ops;
    cc->tp = params->tp;
    cc->cuda_ops = params->cuda_ops;
    cc->cuda_tp = params->cuda_tp;
    cc->cuda_failed = params->cuda_failed;
    cc->hosts = params->hosts;
    cc->spin_yield = sharc_coll_spin_yields(cc->cfg, params->local_size);
    cc->name = params->name != NULL ? params->name : "comm";
    cc->verdict_ordinal = cc->stall_asked = UINT64_MAX;
    cc->verdict_rank = cc->lost_rank = -1;
    cc->local_rank = params->local_rank;
    cc->tp_name = params->tp_ops != NULL ? params->tp_ops->name : "none";
    cc->seq = cc->cfg->seq_start;
    status = sharc_coll_layout(cc, params->node_of);
    if (status != SHARC_OK) {
        free(cc);
        return status;
    }
    /* recursive: transport callbacks inside progress may reach the engine again */
    sharc_mutex_init_recursive(&cc->lock);
    pthread_cond_init(&cc->cond, NULL);
    status = sharc_coll_fr_init(&cc->fr, (size_t)cc->cfg->flight_recorder);
    if (status == SHARC_OK) {
        status = sharc_coll_driver_start(cc);
    }
    if (status == SHARC_OK && params->exporter != NULL) {
        status = sharc_coll_exporter_add(params->exporter, cc);
        if (status != SHARC_OK) {
            sharc_coll_driver_stop(cc);
        }
    }
    if (status == SHARC_OK && params->watchdog != NULL) {
        status = sharc_coll_watchdog_add(params->watchdog, cc);
        if (status != SHARC_OK) {
            if (cc->exporter != NULL) {
                sharc_coll_exporter_remove(cc->exporter, cc);
            }
            sharc_coll_driver_stop(cc);
        }
    }
    if (status != SHARC_OK) {
        free(cc->metrics);
        sharc_coll_fr_fini(&cc->fr);
        pthread_cond_destroy(&cc->cond);
        pthread_mutex_destroy(&cc->lock);
        free(cc->node_ranks);
        free(cc);
        return status;
    }
    *cc_p = cc;
    return SHARC_OK;
}

/* Complete what the caller left in flight (a failed communicator: end it in one more pass),
 * then release what was freed; a task the caller has not freed is the caller's leak. */
static void sharc_coll_drain(sharc_coll_comm_t *cc)
{
    int unfreed = 0;

    for (sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
        unfreed += !t->freed; /* freed ones are only waiting to be seen done */
    }
    if (unfreed > 0) {
        sharc_warn("rank %d: communicator destroyed with %d collective(s) in flight; "
                   "completing them",
                   cc->rank, unfreed);
    }
    while (cc->head != NULL && sharc_request_wait(cc->head) == SHARC_OK) {
    }
    sharc_coll_lock(cc);
    if (cc->failed != SHARC_OK && cc->head != NULL) {
        sharc_coll_progress(cc);
    }
    sharc_coll_unlock(cc);
    for (sharc_coll_task_t *t = cc->head, *next; t != NULL; t = next) {
        next = t->next;
        if (t->freed) {
            sharc_coll_task_release(t);
        }
    }
}

void sharc_coll_comm_quiesce(sharc_coll_comm_t *cc)
{
    if (cc == NULL) {
        return;
    }
    sharc_coll_driver_stop(cc);
    sharc_coll_group_clear(cc);
    /* the drain may wait for peers (up to SHARC_TIMEOUT): the watchdog keeps this rank's
     * heartbeats and verdicts going meanwhile, or the store would name it gone */
    sharc_coll_drain(cc);
    if (cc->watchdog != NULL) { /* before the communicator's parts go */
        sharc_coll_watchdog_remove(cc->watchdog, cc);
    }
    if (cc->exporter != NULL) { /* its final figures, then no scrape reads it */
        sharc_coll_exporter_remove(cc->exporter, cc);
    }
}

sharc_status_t sharc_coll_comm_dump(sharc_coll_comm_t *cc, const char *dir)
{
    sharc_status_t status;

    if (dir == NULL) {
        dir = cc->cfg->flight_dir;
    }
    if (dir[0] == '\0') {
        sharc_error("sharc_comm_dump: no directory (pass one, or set SHARC_FLIGHT_DIR)");
        return SHARC_ERR_INVALID;
    }
    if (cc->fr.cap == 0) {
        sharc_warn("sharc_comm_dump: the flight recorder is off (SHARC_FLIGHT_RECORDER=0): the "
                   "dump holds no collectives");
    }
    sharc_coll_lock(cc);
    status = sharc_coll_fr_dump(cc, dir, "request");
    sharc_coll_unlock(cc);
    return status;
}

int sharc_coll_comm_failed(const sharc_coll_comm_t *cc)
{
    return cc != NULL && cc->failed != SHARC_OK;
}

void sharc_coll_comm_destroy(sharc_coll_comm_t *cc)
{
    if (cc == NULL) {
        return;
    }
    /* the transports are gone: nothing writes into the failed tasks' requests any more */
    while (cc->graveyard != NULL) {
        sharc_coll_task_t *t = cc->graveyard;

        cc->graveyard = t->next;
        sharc_coll_task_free(t);
    }
    /* the staging kept between collectives on CUDA buffers (staged.c) */
    sharc_gpu_host_free(cc->pinned);
    sharc_gpu_stream_destroy(cc->stage_stream);
    sharc_coll_fr_fini(&cc->fr);
    pthread_cond_destroy(&cc->cond);
    pthread_mutex_destroy(&cc->lock);
    if (!cc->scratch_busy) { /* else a task that never finished holds it: leaked with it */
        free(cc->scratch);
    }
    free(cc->metrics);
    free(cc->node_ranks);
    free(cc);
}
