/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c: communicators: creation from a bootstrap, the node layout (which ranks share a
 * node, local ranks), split, the bootstrap barrier, and the opening of the transports (the
 * data transport, and the CUDA backend) and of the collective state
 * over them. The public collective calls that post through it are in comm_coll.c.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "../base/log.h"
#include "../base/util.h"

#define SHARC_COMM_PEER_MAGIC 0x73686334u /* "shc4": bump when sharc_comm_peer_t changes */

/* What each rank tells the others at creation (fixed layout, same on every rank). */
typedef struct {
    uint32_t magic;
    int32_t rank;
    int32_t node_hint, local_rank, local_size; /* launcher's, or -1 */
    uint32_t gpu;                   /* a CUDA backend can run here (sharc_tp_cuda_find) */
    uint64_t host;                  /* hash of the host's identity (sharc_comm_host_id) */
    char host_name[SHARC_HOST_MAX]; /* for messages that name a rank's host */
} sharc_comm_peer_t;

/*
 * This host's identity: a hash of its full name (Kubernetes pod names run to 63 characters),
 * or of the kernel's boot id when the name cannot be read, so that two hosts never share
 * an identity because both failed.
 */
static uint64_t sharc_comm_host_id(void)
{
    char name[1024] = "";
    FILE *f;

    if (gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') {
        return sharc_hash64(SHARC_HASH_SEED, name, strlen(name));
    }
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(name, sizeof(name), f) == NULL) {
            name[0] = '\0';
        }
        fclose(f);
    }
    sharc_warn("comm: cannot read the host name (%m); telling hosts apart by boot id");
    return sharc_hash64(SHARC_HASH_SEED ^ 1, name, strlen(name));
}

sharc_status_t sharc_comm_check(sharc_comm_h comm, const char *call)
{
    if (comm == NULL) {
        sharc_error("%s: communicator is NULL", call);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

/*
 * Derive nodes and local ranks from the peers' records: the launcher's node indices when all
 * ranks have one, else host names. Nodes are numbered by their lowest rank. The launcher's
 * local ranks and sizes, where given, must agree with the result.
 */
static sharc_status_t sharc_comm_layout(sharc_comm_h comm, const sharc_comm_peer_t *peers)
{
    int n = comm->size, with_hint = 0, nnodes = 0;
    int *count;

    if (n <= 0) {
        return SHARC_ERR_INVALID; /* cannot happen: bootstraps have at least one rank */
    }

    for (int i = 0; i < n; i++) {
        if (peers[i].magic != SHARC_COMM_PEER_MAGIC || peers[i].rank != i) {
            sharc_error("comm: rank %d sent a malformed startup record (rank field %d): "
                        "mismatched sharc versions?",
                        i, peers[i].rank);
            return SHARC_ERR_REMOTE;
        }
        with_hint += peers[i].node_hint >= 0;
    }
    if (with_hint != 0 && with_hint != n) {
        sharc_error("comm: %d of %d ranks know their node index from the launcher "
                    "(SLURM_NODEID / GROUP_RANK / params) and the others do not",
                    with_hint, n);
        return SHARC_ERR_REMOTE;
    }
    count = calloc((size_t)n, sizeof(*count));
    if (count == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        int j;

        for (j = 0; j < i; j++) {
            int same = with_hint ? peers[i].node_hint == peers[j].node_hint
                                 : peers[i].host == peers[j].host;
            if (same) {
                break;
            }
        }
        comm->node_of[i] = (j < i) ? comm->node_of[j] : nnodes++;
        count[comm->node_of[i]]++;
    }
    comm->nnodes = nnodes;
    comm->node = comm->node_of[comm->rank];
    comm->local_size = count[comm->node];
    comm->local_rank = 0;
    for (int i = 0; i < comm->rank; i++) {
        comm->local_rank += comm->node_of[i] == comm->node;
    }
    /* Check the launcher's local numbering on every node, so every rank reports alike. */
    for (int i = 0; i < n; i++) {
        const sharc_comm_peer_t *p = &peers[i];
        int ls = count[comm->node_of[i]];

        if (p->local_size >= 0 && p->local_size != ls) {
            sharc_error("comm: rank %d was told its node has %d ranks, but %d ranks share node %d",
                        i, p->local_size, ls, comm->node_of[i]);
            free(count);
            return SHARC_ERR_REMOTE;
        }
        if (p->local_rank >= ls) {
            sharc_error("comm: rank %d has local rank %d, but only %d ranks share its node", i,
                        p->local_rank, ls);
            free(count);
            return SHARC_ERR_REMOTE;
        }
        for (int j = 0; j < i; j++) {
            if (p->local_rank >= 0 && comm->node_of[j] == comm->node_of[i] &&
                peers[j].local_rank == p->local_rank) {
                sharc_error("comm: ranks %d and %d on node %d both have local rank %d", j, i,
                            comm->node_of[i], p->local_rank);
                free(count);
                return SHARC_ERR_REMOTE;
            }
        }
    }
    if (peers[comm->rank].local_rank >= 0) {
        comm->local_rank = peers[comm->rank].local_rank;
    }
    free(count);
    return SHARC_OK;
}

sharc_status_t sharc_comm_alloc(sharc_context_h ctx, int rank, int size, sharc_comm_h *comm_p)
{
    sharc_comm_h comm = calloc(1, sizeof(*comm));

    if (comm == NULL) {
        return SHARC_ERR_NOMEM;
    }
    comm->node_of = calloc((size_t)size, sizeof(*comm->node_of));
    comm->hosts = calloc((size_t)size, sizeof(*comm->hosts));
    if (comm->node_of == NULL || comm->hosts == NULL) {
        free(comm->node_of);
        free(comm->hosts);
        free(comm);
        return SHARC_ERR_NOMEM;
    }
    comm->rank = rank;
    comm->size = size;
    comm->ctx = ctx;
    sharc_context_get(ctx);
    *comm_p = comm;
    return SHARC_OK;
}

void sharc_comm_free(sharc_comm_h comm)
{
    sharc_coll_comm_quiesce(comm->coll); /* before the transports its tasks use */
    if (comm->boot != NULL && sharc_coll_comm_failed(comm->coll)) {
        comm->boot->failed = 1;
    }
    if (comm->cuda_tp != NULL) {
        comm->cuda_ops->comm_destroy(comm->cuda_tp);
    }
    if (comm->tp != NULL) {
        comm->tp_ops->comm_destroy(comm->tp);
    }
    sharc_coll_comm_destroy(comm->coll);
    sharc_boot_destroy(comm->boot);
    sharc_context_put(comm->ctx);
    free(comm->node_of);
    free(comm->hosts);
    free(comm->groups_made);
    free(comm);
}

static sharc_tp_comm_params_t sharc_comm_tp_params(sharc_comm_h comm)
{
    sharc_tp_comm_params_t params = {
        .boot = comm->boot,
        .cfg = comm->ctx->cfg,
        .timeout = sharc_coll_cfg(comm->ctx->cfg)->timeout,
        .rank = comm->rank,
        .size = comm->size,
        .node_of = comm->node_of,
        .mem = comm->ctx->mem,
    };

    return params;
}

/* The CUDA backend this rank could run (NULL: none, or SHARC_CUDA_BACKEND=staged). */
static const sharc_tp_ops_t *sharc_comm_gpu_here(const sharc_cfg_t *cfg)
{
    return (sharc_core_cfg(cfg)->cuda_backend != SHARC_CUDA_BACKEND_STAGED)
               ? sharc_tp_cuda_find(cfg)
               : NULL;
}

/*
 * Open the CUDA backend when every rank can run it (@p everywhere,
 * from the creation records, so that every rank takes the same step: comm_create is
 * collective). Without it CUDA buffers are staged through host memory, or, with
 * SHARC_CUDA_BACKEND=nccl, fail.
 */
sharc_status_t sharc_comm_open_gpu(sharc_comm_h comm, const sharc_tp_ops_t *ops, int everywhere)
{
    int forced = sharc_core_cfg(comm->ctx->cfg)->cuda_backend == SHARC_CUDA_BACKEND_NCCL;
    sharc_tp_comm_params_t params = sharc_comm_tp_params(comm);
    sharc_status_t status = SHARC_ERR_UNSUPPORTED;

    if (ops != NULL && everywhere) {
        status = ops->comm_create(&params, &comm->cuda_tp);
        if (status == SHARC_OK) {
            comm->cuda_ops = ops;
            sharc_info("comm: collectives on CUDA buffers run on %s", ops->name);
            return SHARC_OK;
        }
        comm->cuda_tp = NULL;
    }
    if (forced) {
        sharc_warn("comm: SHARC_CUDA_BACKEND=nccl, but NCCL cannot run %s (%s): collectives "
                   "on CUDA buffers will fail",
                   ops == NULL ? "here" : "on every rank", sharc_status_string(status));
        comm->cuda_failed = status;
    } else if (ops != NULL) { /* (without one here, the backend's query has said why) */
        sharc_info(
            "comm: no CUDA backend (for collectives on CUDA buffers)%s (%s): they are staged "
            "through host memory",
            !everywhere ? " on every rank" : "", sharc_status_string(status));
    }
    return SHARC_OK;
}

/* The collective state over the communicator's transports, as the last step of making it. */
sharc_status_t sharc_comm_open_coll(sharc_comm_h comm)
{
    sharc_coll_comm_params_t params = {
        .rank = comm->rank,
        .size = comm->size,
        .cfg = comm->ctx->cfg,
        .tune = comm->ctx->tune,
        .boot = comm->boot,
        .tp_ops = comm->tp_ops,
        .tp = comm->tp,
        .cuda_ops = comm->cuda_ops,
        .cuda_tp = comm->cuda_tp,
        .cuda_failed = comm->cuda_failed,
        .hosts = (const char(*)[SHARC_HOST_MAX])comm->hosts,
        .local_size = comm->local_size,
        .name = comm->boot->name,
        .node_of = comm->node_of,
        .local_rank = comm->local_rank,
    };
    sharc_status_t status = sharc_context_watchdog(comm->ctx, &params.watchdog);

    if (status == SHARC_OK) {
        status = sharc_context_exporter(comm->ctx, comm->rank, comm->local_rank, comm->local_size,
                                        &params.exporter);
    }
    return (status == SHARC_OK) ? sharc_coll_comm_create(&params, &comm->coll) : status;
}

sharc_status_t sharc_comm_stream_set(sharc_comm_h comm, void *stream)
{
    if (sharc_comm_check(comm, "sharc_comm_set_cuda_stream") != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    comm->stream = stream;
    return SHARC_OK;
}

/* Pick and set up the data transport: collective over the bootstrap. */
sharc_status_t sharc_comm_open_transport(sharc_comm_h comm)
{
    sharc_tp_comm_params_t params = sharc_comm_tp_params(comm);
    sharc_status_t status = sharc_tp_open(&params, &comm->tp_ops, &comm->tp);

    if (status != SHARC_OK) {
        comm->tp_ops = NULL;
        comm->tp = NULL;
    }
    return status;
}

sharc_status_t sharc_comm_create(sharc_context_h ctx, const sharc_comm_params_t *params,
                                 sharc_comm_h *comm_p)
{
    sharc_comm_peer_t me, *peers;
    sharc_launch_t launch;
    sharc_status_t status;
    sharc_boot_t *boot;
    sharc_comm_h comm;
    const sharc_tp_ops_t *gpu;
    int gpu_everywhere = 1;

    if (ctx == NULL || comm_p == NULL) {
        sharc_error("sharc_comm_create: %s is NULL", ctx == NULL ? "ctx" : "comm_p");
        return SHARC_ERR_INVALID;
    }
    status = sharc_launch_read(ctx->cfg, params, &launch);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_boot_create(ctx->cfg, &launch, &boot);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_comm_alloc(ctx, boot->rank, boot->size, &comm);
    if (status != SHARC_OK) {
        sharc_boot_destroy(boot);
        return status;
    }
    comm->boot = boot;
    comm->mode = launch.mode;
    sharc_log_set_rank(comm->rank);

    memset(&me, 0, sizeof(me));
    me.magic = SHARC_COMM_PEER_MAGIC;
    me.rank = comm->rank;
    me.node_hint = launch.node_hint;
    me.local_rank = launch.local_rank;
    me.local_size = launch.local_size;
    me.host = sharc_comm_host_id();
    if (gethostname(me.host_name, sizeof(me.host_name) - 1) != 0 || me.host_name[0] == '\0') {
        snprintf(me.host_name, sizeof(me.host_name), "unknown host");
    }
    gpu = sharc_comm_gpu_here(ctx->cfg);
    me.gpu = gpu != NULL;
    peers = calloc((size_t)comm->size, sizeof(*peers));
    if (peers == NULL) {
        status = SHARC_ERR_NOMEM;
        goto err_free_comm;
    }
    status = sharc_boot_allgather(boot, &me, peers, sizeof(me));
    if (status == SHARC_OK) {
        status = sharc_comm_layout(comm, peers);
    }
    for (int r = 0; status == SHARC_OK && r < comm->size; r++) {
        gpu_everywhere &= peers[r].gpu != 0;
        memcpy(comm->hosts[r], peers[r].host_name, SHARC_HOST_MAX);
        comm->hosts[r][SHARC_HOST_MAX - 1] = '\0';
    }
    free(peers);
    if (status != SHARC_OK) {
        goto err_free_comm;
    }
    status = sharc_comm_open_transport(comm);
    if (status == SHARC_OK) {
        status = sharc_comm_open_gpu(comm, gpu, gpu_everywhere);
    }
    if (status == SHARC_OK) {
        status = sharc_comm_open_coll(comm);
    }
    if (status != SHARC_OK) {
        goto err_free_comm;
    }
    sharc_info("comm: rank %d of %d, node %d of %d, local rank %d of %d (bootstrap %s, "
               "transport %s)",
               comm->rank, comm->size, comm->node, comm->nnodes, comm->local_rank, comm->local_size,
               sharc_bootstrap_name(comm->mode), comm->tp_ops ? comm->tp_ops->name : "none");
    *comm_p = comm;
    return SHARC_OK;

err_free_comm:
    sharc_comm_free(comm);
    return status;
}

sharc_status_t sharc_comm_dump(sharc_comm_h comm, const char *dir)
{
    if (sharc_comm_check(comm, "sharc_comm_dump") != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    return sharc_coll_comm_dump(comm->coll, dir);
}

sharc_status_t sharc_comm_barrier(sharc_comm_h comm)
{
    if (sharc_comm_check(comm, "sharc_comm_barrier") != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    return sharc_boot_barrier(comm->boot);
}

void sharc_comm_destroy(sharc_comm_h comm)
{
    if (comm != NULL) {
        sharc_comm_free(comm);
    }
}

int sharc_comm_rank(sharc_comm_h comm)
{
    return comm ? comm->rank : -1;
}

int sharc_comm_size(sharc_comm_h comm)
{
    return comm ? comm->size : -1;
}

int sharc_comm_node(sharc_comm_h comm)
{
    return comm ? comm->node : -1;
}

int sharc_comm_nnodes(sharc_comm_h comm)
{
    return comm ? comm->nnodes : -1;
}

int sharc_comm_local_rank(sharc_comm_h comm)
{
    return comm ? comm->local_rank : -1;
}

int sharc_comm_local_size(sharc_comm_h comm)
{
    return comm ? comm->local_size : -1;
}

int sharc_comm_node_of(sharc_comm_h comm, int rank)
{
    return (comm && rank >= 0 && rank < comm->size) ? comm->node_of[rank] : -1;
}

sharc_bootstrap_t sharc_comm_bootstrap(sharc_comm_h comm)
{
    return comm ? comm->mode : SHARC_BOOTSTRAP_AUTO;
}
