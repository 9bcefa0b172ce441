/*
 * comm_split.c: sharc_comm_split: every rank's color and key through the parent's
 * bootstrap, the child's bootstrap (and collective backend, split from the parent's), its
 * node layout from the parent's, its transport and collective state.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/base/log.h"
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

/*
 * Nodes of a split communicator: those of the parent, renumbered by their lowest new rank.
 * @p all holds every parent rank's (color, key); the members of @p color ordered by (key,
 * parent rank) are the new ranks.
 */
static sharc_status_t sharc_comm_split_layout(sharc_comm_h parent, sharc_comm_h sub, int color,
                                              const int32_t (*all)[2])
{
    sharc_comm_member_t *members = calloc((size_t)sub->size, sizeof(*members));
    int *map = calloc((size_t)parent->nnodes, sizeof(int)); /* parent node -> new node + 1 */
    int n = 0;

    if (members == NULL || map == NULL) {
        free(members);
        free(map);
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < parent->size && n < sub->size; i++) {
        if (all[i][0] == color) {
            members[n++] = (sharc_comm_member_t){.key = all[i][1], .rank = i};
        }
    }
    qsort(members, (size_t)n, sizeof(*members), sharc_comm_member_cmp);
    sub->nnodes = 0;
    for (int r = 0; r < n; r++) {
        int pn = parent->node_of[members[r].rank];

        if (map[pn] == 0) {
            map[pn] = ++sub->nnodes;
        }
        sub->node_of[r] = map[pn] - 1;
        memcpy(sub->hosts[r], parent->hosts[members[r].rank], SHARC_HOST_MAX);
    }
    sub->node = sub->node_of[sub->rank];
    sub->local_rank = sub->local_size = 0;
    for (int r = 0; r < n; r++) {
        if (sub->node_of[r] == sub->node) {
            sub->local_rank += r < sub->rank;
            sub->local_size++;
        }
    }
    free(members);
    free(map);
    return SHARC_OK;
}

/*
 * Every rank's (color, key) to every rank: *all_p, and this rank's place in its color
 * (new rank, size). Bad arguments are still taken to the exchange, marked, so that every
 * rank fails together instead of the others waiting for this one until the timeout.
 */
static sharc_status_t sharc_comm_split_exchange(sharc_comm_h comm, int color, int key, int bad_args,
                                                int32_t (**all_p)[2], int *new_rank_p,
                                                int *new_size_p)
{
    int32_t mine[2] = {bad_args ? SHARC_COMM_SPLIT_BAD_ARG : color, key}, (*all)[2];
    int new_rank = 0, new_size = 0, n = comm->size;
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
    if (status != SHARC_OK) {
        free(all);
        return status;
    }
    /* New rank: members of my color ordered by (key, old rank). */
    for (int i = 0; i < n && color != SHARC_COMM_SPLIT_NOCOLOR; i++) {
        if (all[i][0] != color) {
            continue;
        }
        new_size++;
        if (all[i][1] < key || (all[i][1] == key && i < comm->rank)) {
            new_rank++;
        }
    }
    *all_p = all;
    *new_rank_p = new_rank;
    *new_size_p = new_size;
    return SHARC_OK;
}

/* The child's bootstrap, and its collective backend when the parent's splits its own (NCCL:
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
    if (status != SHARC_OK || comm->gpu_tp == NULL || comm->gpu_ops->comm_split == NULL) {
        return status;
    }
    status = comm->gpu_ops->comm_split(comm->gpu_tp, color, key, &params, gpu_p);
    if (status != SHARC_OK) {
        sharc_boot_destroy(*boot_p);
    }
    return status;
}

/* The child communicator over its bootstrap and backend (which it owns from here, failures
 * included): its layout, transport and collective state. */
static sharc_status_t sharc_comm_split_make(sharc_comm_h comm, int color, const int32_t (*all)[2],
                                            int new_rank, int new_size, sharc_boot_t *boot,
                                            sharc_tp_comm_t *gpu_child, sharc_comm_h *newcomm_p)
{
    sharc_comm_h newcomm;
    sharc_status_t status;

    status = sharc_comm_alloc(comm->ctx, new_rank, new_size, &newcomm);
    if (status != SHARC_OK) {
        sharc_boot_destroy(boot);
        if (gpu_child != NULL) {
            comm->gpu_ops->comm_destroy(gpu_child);
        }
        return status;
    }
    newcomm->boot = boot;
    newcomm->mode = comm->mode;
    newcomm->stream = comm->stream;
    newcomm->gpu_failed = comm->gpu_failed;
    if (gpu_child != NULL) {
        newcomm->gpu_ops = comm->gpu_ops;
        newcomm->gpu_tp = gpu_child;
    }
    status = sharc_comm_split_layout(comm, newcomm, color, all);
    if (status == SHARC_OK) {
        status = sharc_comm_open_transport(newcomm);
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
    int32_t(*all)[2] = NULL;
    int new_rank = 0, new_size = 0, bad_args;
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
    status = sharc_comm_split_exchange(comm, color, key, bad_args, &all, &new_rank, &new_size);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_comm_split_backends(comm, color, key, new_rank, new_size, &boot, &gpu_child);
    if (status == SHARC_OK && color != SHARC_COMM_SPLIT_NOCOLOR) {
        status = sharc_comm_split_make(comm, color, (const int32_t(*)[2])all, new_rank, new_size,
                                       boot, gpu_child, &newcomm);
    }
    free(all);
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
