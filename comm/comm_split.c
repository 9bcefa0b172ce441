/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_split.c: sharc_comm_split: every rank's color and key through the parent's
 * bootstrap, the child's bootstrap (and CUDA backend, split from the parent's); and
 * what a split and a group (comm_group.c) share: a communicator of some of the parent's ranks,
 * its node layout from the parent's, its transport and collective state.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "comm.h"

/* Marks a rank's bad split arguments in the exchange (below every valid color). */
#define SHARC_COMM_SPLIT_BAD_ARG (-2)

typedef struct {
    int32_t key;
    int rank; /* in the parent */
} sharc_comm_member_t;

static int sharc_comm_member_cmp(const void *a, const void *b)
{
    const sharc_comm_member_t *x = a, *y = b;

    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return (x->rank > y->rank) - (x->rank < y->rank);
}

sharc_status_t sharc_comm_sub_layout(sharc_comm_h parent, sharc_comm_h sub, const int *members)
{
    int *map = calloc((size_t)parent->nnodes, sizeof(int)); /* parent node -> new node + 1 */

    if (map == NULL) {
        return SHARC_ERR_NOMEM;
    }
    /* the parent's nodes, renumbered by their lowest new rank */
    sub->nnodes = 0;
    for (int r = 0; r < sub->size; r++) {
        int pn = parent->node_of[members[r]];

        if (map[pn] == 0) {
            map[pn] = ++sub->nnodes;
        }
        sub->node_of[r] = map[pn] - 1;
        memcpy(sub->hosts[r], parent->hosts[members[r]], SHARC_HOST_MAX);
    }
    sub->node = sub->node_of[sub->rank];
    sub->local_rank = sub->local_size = 0;
    for (int r = 0; r < sub->size; r++) {
        if (sub->node_of[r] == sub->node) {
            sub->local_rank += r < sub->rank;
            sub->local_size++;
        }
    }
    free(map);
    return SHARC_OK;
}

/* The parent ranks of a split communicator in its order: the ranks that passed @p color
 * ordered by (key, parent rank); @p all holds every parent rank's (color, key). */
static int *sharc_comm_split_members(sharc_comm_h parent, int color, const int32_t (*all)[2],
                                     int new_size)
{
    sharc_comm_member_t *members = calloc((size_t)new_size, sizeof(*members));
    int *ranks = calloc((size_t)new_size, sizeof(int));
    int n = 0;

    if (members == NULL || ranks == NULL) {
        free(members);
        free(ranks);
        return NULL;
    }
    for (int i = 0; i < parent->size && n < new_size; i++) {
        if (all[i][0] == color) {
            members[n++] = (sharc_comm_member_t){.key = all[i][1], .rank = i};
        }
    }
    qsort(members, (size_t)n, sizeof(*members), sharc_comm_member_cmp);
    for (int r = 0; r < n; r++) {
        ranks[r] = members[r].rank;
    }
    free(members);
    return ranks;
}

/*
 * Every rank's (color, key) to every rank, and the parent ranks of this rank's color in the
 * child's order (*members_p, NULL for NOCOLOR), this rank's place among them and their count.
 * Bad arguments are still taken to the exchange, marked, so that every rank fails together
 * instead of the others waiting for this one until the timeout.
 */
static sharc_status_t sharc_comm_split_exchange(sharc_comm_h comm, int color, int key, int bad_args,
                                                int **members_p, int *new_rank_p, int *new_size_p)
{
    int32_t mine[2] = {bad_args ? SHARC_COMM_SPLIT_BAD_ARG : color, key}, (*all)[2];
    int new_rank = 0, new_size = 0, n = comm->size, *members = NULL;
    sharc_status_t status;

    all = calloc((size_t)n, sizeof(*all));
    if (all == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status = sharc_boot_allgather(comm->boot, mine, all, sizeof(mine));
    for (int i = 0; status == SHARC_OK && i < n; i++) {
        if (all[i][0] < SHARC_COMM_SPLIT_NOCOLOR) {
            if (i != comm->rank) {
                sharc_error("sharc_comm_split: rank %d passed a bad argument; every rank fails", i);
            }
            status = SHARC_ERR_INVALID;
        }
    }
    for (int i = 0; status == SHARC_OK && i < n && color != SHARC_COMM_SPLIT_NOCOLOR; i++) {
        new_size += all[i][0] == color;
    }
    if (status == SHARC_OK && new_size > 0) {
        members = sharc_comm_split_members(comm, color, (const int32_t(*)[2])all, new_size);
        status = (members != NULL) ? SHARC_OK : SHARC_ERR_NOMEM;
        while (members != NULL && members[new_rank] != comm->rank) {
            new_rank++;
        }
    }
    free(all);
    if (status == SHARC_OK) {
        *members_p = members;
        *new_rank_p = new_rank;
        *new_size_p = new_size;
    }
    return status;
}

/* The child's bootstrap, and its CUDA backend when the parent's splits its own (NCCL:
 * collective over every parent rank, NOCOLOR included; its order, key then parent rank, is
 * sharc's). On an error neither is left. */
static sharc_status_t sharc_comm_split_backends(sharc_comm_h comm, int color, int key, int new_rank,
                                                int new_size, sharc_boot_t **boot_p,
                                                sharc_tp_comm_t **gpu_p)
{
    sharc_tp_comm_params_t params = {.cfg = comm->ctx->cfg,
                                     .timeout = sharc_coll_cfg(comm->ctx->cfg)->timeout,
                                     .rank = new_rank,
                                     .size = new_size,
                                     .mem = comm->ctx->mem};
    sharc_status_t status;

    *gpu_p = NULL;
    status = sharc_boot_split(comm->boot, color, key, new_rank, new_size, boot_p);
    if (status != SHARC_OK || comm->cuda_tp == NULL || comm->cuda_ops->comm_split == NULL) {
        return status;
    }
    status = comm->cuda_ops->comm_split(comm->cuda_tp, color, key, &params, gpu_p);
    if (status != SHARC_OK) {
        sharc_boot_destroy(*boot_p);
    }
    return status;
}

sharc_status_t sharc_comm_make_sub(sharc_comm_h comm, const int *members, int new_rank,
                                   int new_size, sharc_boot_t *boot, sharc_tp_comm_t *gpu_child,
                                   sharc_comm_h *newcomm_p)
{
    sharc_comm_h newcomm;
    sharc_status_t status;

    status = sharc_comm_alloc(comm->ctx, new_rank, new_size, &newcomm);
    if (status != SHARC_OK) {
        sharc_boot_destroy(boot);
        if (gpu_child != NULL) {
            comm->cuda_ops->comm_destroy(gpu_child);
        }
        return status;
    }
    newcomm->boot = boot;
    newcomm->mode = comm->mode;
    newcomm->stream = comm->stream;
    newcomm->cuda_failed = comm->cuda_failed;
    if (gpu_child != NULL) {
        newcomm->cuda_ops = comm->cuda_ops;
        newcomm->cuda_tp = gpu_child;
    }
    status = sharc_comm_sub_layout(comm, newcomm, members);
    if (status == SHARC_OK) {
        status = sharc_comm_open_transport(newcomm);
    }
    if (status == SHARC_OK && gpu_child == NULL && comm->cuda_tp != NULL) {
        /* the parent's backend runs on every rank of the parent, so on every member */
        status = sharc_comm_open_gpu(newcomm, comm->cuda_ops, 1);
    }
    if (status == SHARC_OK) {
        status = sharc_comm_open_coll(newcomm);
    }
    if (status != SHARC_OK) {
        sharc_comm_free(newcomm);
        return status;
    }
    *newcomm_p = newcomm;
    return SHARC_OK;
}

sharc_status_t sharc_comm_split(sharc_comm_h comm, int color, int key, sharc_comm_h *newcomm_p)
{
    int new_rank = 0, new_size = 0, bad_args, *members = NULL;
    sharc_boot_t *boot = NULL;
    sharc_tp_comm_t *gpu_child = NULL;
    sharc_comm_h newcomm = NULL;
    sharc_status_t status;

    if (sharc_comm_check(comm, "sharc_comm_split") != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    bad_args = newcomm_p == NULL || (color < 0 && color != SHARC_COMM_SPLIT_NOCOLOR);
    if (bad_args) {
        sharc_error("sharc_comm_split: %s", newcomm_p == NULL
                                                ? "newcomm_p is NULL"
                                                : "color is negative (use "
                                                  "SHARC_COMM_SPLIT_NOCOLOR to join no group)");
    }
    status = sharc_comm_split_exchange(comm, color, key, bad_args, &members, &new_rank, &new_size);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_comm_split_backends(comm, color, key, new_rank, new_size, &boot, &gpu_child);
    if (status == SHARC_OK && color != SHARC_COMM_SPLIT_NOCOLOR) {
        status = sharc_comm_make_sub(comm, members, new_rank, new_size, boot, gpu_child, &newcomm);
    }
    free(members);
    if (status != SHARC_OK) {
        return status;
    }
    if (newcomm != NULL) {
        sharc_debug("comm: split color %d key %d: rank %d of %d, node %d of %d, local %d of %d",
                    color, key, newcomm->rank, newcomm->size, newcomm->node, newcomm->nnodes,
                    newcomm->local_rank, newcomm->local_size);
    }
    *newcomm_p = newcomm;
    return SHARC_OK;
}
