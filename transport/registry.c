/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c: the one list of transport backends built into this library, in order of
 * preference, and the selection rule. `#ifdef HAVE_<backend>` appears here and in the build
 * files only.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TP

#include <string.h>

#include <sharc/version.h>

#include "../base/log.h"
#include "../base/util.h"
#include "hybrid.h"
#include "transport.h"

extern const sharc_tp_ops_t sharc_tp_self_ops;
extern const sharc_tp_ops_t sharc_tp_shm_ops;
#ifdef HAVE_UCX
extern const sharc_tp_ops_t sharc_tp_ucx_ops;
#endif
#ifdef HAVE_VERBS
extern const sharc_tp_ops_t sharc_tp_ib_ops;
#endif
#ifdef HAVE_NCCL
extern const sharc_tp_ops_t sharc_tp_nccl_ops;
#endif

const char *const sharc_tp_names[SHARC_TP_NAMES] = {"auto", "self", "ucx", "shm", "ib", "nccl"};

static const sharc_cfg_field_t sharc_tp_cfg_fields[] = {
    {.name = "TRANSPORT",
     .dflt = "auto",
     .type = SHARC_CFG_ENUM,
     .offset = offsetof(sharc_tp_cfg_t, transport),
     .names = sharc_tp_names,
     .nnames = SHARC_TP_NAMES,
     .doc = "Data transport of communicators: auto, self, ucx, shm, ib or nccl (auto: self for "
            "one rank; shm between ranks of one node and ucx between nodes; ucx alone where shm "
            "cannot attach)."},
};

const sharc_cfg_table_t sharc_tp_cfg_table =
    SHARC_CFG_TABLE("transport", sharc_tp_cfg_fields, sharc_tp_cfg_t);

/* In order of preference (ib only when SHARC_TRANSPORT=ib names it: UCX comes first). */
static const sharc_tp_ops_t *const sharc_tp_backends[] = {
    &sharc_tp_self_ops,
    &sharc_tp_shm_ops,
#ifdef HAVE_UCX
    &sharc_tp_ucx_ops,
#endif
#ifdef HAVE_VERBS
    &sharc_tp_ib_ops,
#endif
#ifdef HAVE_NCCL
    &sharc_tp_nccl_ops,
#endif
    NULL,
};

const sharc_tp_ops_t *sharc_tp_find(const char *name)
{
    for (size_t i = 0; sharc_tp_backends[i] != NULL; i++) {
        if (sharc_name_index(&sharc_tp_backends[i]->name, 1, name) == 0) {
            return sharc_tp_backends[i];
        }
    }
    return NULL;
}

int sharc_build_has_transport(const char *name)
{
    return name != NULL && sharc_tp_find(name) != NULL;
}

/* Could this backend serve a communicator of @p size here? */
static int sharc_tp_fits(const sharc_tp_ops_t *ops, const sharc_cfg_t *cfg, int size)
{
    if (ops->version != SHARC_TP_OPS_VERSION) {
        sharc_warn("transport %s was written for ops version %u, this library has %u: skipped",
                   ops->name, ops->version, SHARC_TP_OPS_VERSION);
        return 0;
    }
    if (size > 1 && strcmp(ops->name, "self") == 0) {
        return 0; /* self reaches only its own rank */
    }
    return ops->query == NULL || ops->query(cfg) == SHARC_OK;
}

/* The first usable backend in order of preference that reaches other nodes, or NULL. */
static const sharc_tp_ops_t *sharc_tp_remote(const sharc_cfg_t *cfg, int size)
{
    for (size_t i = 0; sharc_tp_backends[i] != NULL; i++) {
        const sharc_tp_ops_t *ops = sharc_tp_backends[i];

        if ((ops->caps & SHARC_TP_CAP_REMOTE) && ops->p2p != NULL &&
            sharc_tp_fits(ops, cfg, size)) {
            return ops;
        }
    }
    return NULL;
}

/* The communicator's layout, the same on every rank: is any node shared, any rank remote? */
static void sharc_tp_layout(const sharc_tp_comm_params_t *params, int *shared_p, int *remote_p)
{
    *shared_p = *remote_p = 0;
    for (int r = 1; r < params->size; r++) {
        *remote_p |= params->node_of[r] != params->node_of[0];
        for (int q = 0; q < r && !*shared_p; q++) {
            *shared_p = params->node_of[q] == params->node_of[r];
        }
    }
}

/* SHARC_TRANSPORT names one backend: it serves every rank or the communicator fails. */
static sharc_status_t sharc_tp_open_named(const sharc_tp_comm_params_t *params,
                                          const sharc_tp_ops_t **ops_p, sharc_tp_comm_t **tp_p)
{
    const char *name = sharc_tp_names[sharc_tp_cfg(params->cfg)->transport];
    const sharc_tp_ops_t *ops = sharc_tp_find(name);
    int shared, remote;

    if (ops == NULL) {
        sharc_error("SHARC_TRANSPORT=%s: this sharc was built without it", name);
        return SHARC_ERR_UNSUPPORTED;
    }
    if (ops->p2p == NULL) {
        sharc_error("SHARC_TRANSPORT=%s: %s runs collectives on CUDA buffers only and is used "
                    "for them whatever SHARC_TRANSPORT says; host collectives need a "
                    "point-to-point transport (auto, shm, ucx)",
                    name, name);
        return SHARC_ERR_UNSUPPORTED;
    }
    sharc_tp_layout(params, &shared, &remote);
    if (!sharc_tp_fits(ops, params->cfg, params->size) ||
        (remote && !(ops->caps & SHARC_TP_CAP_REMOTE))) {
        sharc_error("SHARC_TRANSPORT=%s cannot serve this communicator of %d ranks%s", name,
                    params->size, remote ? " on several nodes" : "");
        return SHARC_ERR_UNSUPPORTED;
    }
    *ops_p = ops;
    return ops->comm_create(params, tp_p);
}

sharc_status_t sharc_tp_open(const sharc_tp_comm_params_t *params, const sharc_tp_ops_t **ops_p,
                             sharc_tp_comm_t **tp_p)
{
    const sharc_tp_ops_t *local = NULL, *remote_ops;
    sharc_tp_comm_t *local_tp = NULL, *remote_tp;
    sharc_status_t status;
    int shared, remote;

    *ops_p = NULL;
    *tp_p = NULL;
    if (sharc_tp_cfg(params->cfg)->transport != 0) { /* not auto */
        status = sharc_tp_open_named(params, ops_p, tp_p);
        if (status != SHARC_OK) {
            *ops_p = NULL;
        }
        return status;
    }
    if (params->size == 1) {
        *ops_p = &sharc_tp_self_ops;
        return sharc_tp_self_ops.comm_create(params, tp_p);
    }
    /* Every rank takes the same steps: each comm_create below is collective. */
    sharc_tp_layout(params, &shared, &remote);
    if (shared) {
        status = sharc_tp_shm_ops.comm_create(params, &local_tp);
        if (status == SHARC_OK) {
            local = &sharc_tp_shm_ops;
        } else if (status != SHARC_ERR_UNSUPPORTED) {
            return status;
        }
    }
    if (local != NULL && !remote) {
        *ops_p = local;
        *tp_p = local_tp;
        return SHARC_OK;
    }
    remote_ops = sharc_tp_remote(params->cfg, params->size);
    if (remote_ops == NULL) {
        if (local != NULL) {
            local->comm_destroy(local_tp);
        }
        sharc_info("no data transport reaches every rank of this communicator of %d ranks; it "
                   "has its bootstrap only",
                   params->size);
        return SHARC_OK;
    }
    status = remote_ops->comm_create(params, &remote_tp);
    if (status == SHARC_OK && local != NULL) {
        status = sharc_tp_hybrid_create(params, local, local_tp, remote_ops, remote_tp, tp_p);
        if (status == SHARC_OK) {
            *ops_p = &sharc_tp_hybrid_ops;
            return SHARC_OK;
        }
        remote_ops->comm_destroy(remote_tp);
    }
    if (local != NULL) {
        local->comm_destroy(local_tp);
    }
    if (status == SHARC_OK) {
        *ops_p = remote_ops;
        *tp_p = remote_tp;
    }
    return status;
}

const sharc_tp_ops_t *sharc_tp_cuda_find(const sharc_cfg_t *cfg)
{
    for (size_t i = 0; sharc_tp_backends[i] != NULL; i++) {
        const sharc_tp_ops_t *ops = sharc_tp_backends[i];

        if (ops->coll != NULL && (ops->caps & SHARC_TP_CAP_CUDA_MEM) &&
            ops->version == SHARC_TP_OPS_VERSION &&
            (ops->query == NULL || ops->query(cfg) == SHARC_OK)) {
            return ops;
        }
    }
    return NULL;
}
