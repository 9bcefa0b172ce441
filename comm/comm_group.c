/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_group.c: sharc_comm_create_group: a communicator of listed ranks of a parent, made by
 * those ranks only (MPI_Comm_create_group), where a split would need every rank of the
 * parent (torch creates a group on its members only). Its bootstrap comes from the parent's
 * (on a store: a namespace of the same server, no new rendezvous), named by what the members
 * know alike: the list, the tag, and how many groups of both came before.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
#include "comm.h"

/* How many groups of one (member list, tag) were made from a communicator. */
struct sharc_comm_groups_made {
    uint64_t key; /* hash of the list and the tag */
    unsigned count;
};

/* SHARC_OK when the arguments are good, and this rank's place in the list: *new_rank_p. */
static sharc_status_t sharc_comm_group_check(sharc_comm_h comm, const int *ranks, int n, int tag,
                                             sharc_comm_h *newcomm_p, int *new_rank_p)
{
    const char *call = "sharc_comm_create_group";
    int *seen, new_rank = -1;
    sharc_status_t status = SHARC_OK;

    if (sharc_comm_check(comm, call) != SHARC_OK) {
        return SHARC_ERR_INVALID;
    }
    if (ranks == NULL || newcomm_p == NULL || n <= 0 || n > comm->size || tag < 0) {
        sharc_error("%s: %s", call,
                    ranks == NULL       ? "ranks is NULL"
                    : newcomm_p == NULL ? "newcomm_p is NULL"
                    : tag < 0           ? "the tag is negative"
                                        : "nranks is not between 1 and the communicator's size");
        return SHARC_ERR_INVALID;
    }
    seen = calloc((size_t)comm->size, sizeof(*seen)); /* rank -> its index in the list + 1 */
    if (seen == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < n && status == SHARC_OK; i++) {
        if (ranks[i] < 0 || ranks[i] >= comm->size) {
            sharc_error("%s: ranks[%d] = %d is not a rank of the communicator (size %d)", call, i,
                        ranks[i], comm->size);
            status = SHARC_ERR_INVALID;
        } else if (seen[ranks[i]] != 0) {
            sharc_error("%s: rank %d is listed twice (ranks[%d] and ranks[%d])", call, ranks[i],
                        seen[ranks[i]] - 1, i);
            status = SHARC_ERR_INVALID;
        } else {
            seen[ranks[i]] = i + 1;
        }
    }
    if (status == SHARC_OK) {
        new_rank = seen[comm->rank] - 1;
        if (new_rank < 0) {
            sharc_error("%s: this rank (%d) is not in the list: only the members call it", call,
                        comm->rank);
            status = SHARC_ERR_INVALID;
        }
    }
    free(seen);
    if (status == SHARC_OK) {
        *new_rank_p = new_rank;
    }
    return status;
}

/*
 * The group's id, the same on every member: the list and the tag, and how many groups of
 * both this rank has made from @p comm before (the members make them in the same order). Two
 * groups of other lists or tags never share a name even when made at the same time.
 */
static sharc_status_t sharc_comm_group_id(sharc_comm_h comm, const int *ranks, int n, int tag,
                                          uint64_t *id_p)
{
    uint64_t key = sharc_hash64(SHARC_HASH_SEED, ranks, (size_t)n * sizeof(*ranks));
    struct sharc_comm_groups_made *made = NULL;

    key = sharc_hash64(key, &tag, sizeof(tag));
    for (size_t i = 0; i < comm->ngroups_made && made == NULL; i++) {
        made = (comm->groups_made[i].key == key) ? &comm->groups_made[i] : NULL;
    }
    if (made == NULL) {
        if (sharc_array_grow(&comm->groups_made, &comm->groups_made_cap, comm->ngroups_made,
                             sizeof(*comm->groups_made), 8) != 0) {
            return SHARC_ERR_NOMEM;
        }
        made = &comm->groups_made[comm->ngroups_made++];
        *made = (struct sharc_comm_groups_made){.key = key};
    }
    *id_p = sharc_hash64(key, &made->count, sizeof(made->count));
    made->count++;
    return SHARC_OK;
}

sharc_status_t sharc_comm_create_group(sharc_comm_h comm, const int *ranks, int nranks, int tag,
                                       sharc_comm_h *newcomm_p)
{
    sharc_comm_h newcomm = NULL;
    sharc_boot_t *boot = NULL;
    sharc_status_t status;
    sharc_boot_loss_t loss;
    int new_rank;
    uint64_t id;

    status = sharc_comm_group_check(comm, ranks, nranks, tag, newcomm_p, &new_rank);
    if (status != SHARC_OK) {
        return status;
    }
    /* a rank already known gone fails it at once, as it fails a split (the group's own
     * exchange would only learn it from the timeout) */
    if (sharc_boot_check(comm->boot, &loss) != SHARC_OK) {
        if (loss.lost < 0) {
            sharc_error("sharc_comm_create_group: this rank %s: no group is made", loss.store);
        } else {
            sharc_error("sharc_comm_create_group: rank %d of the communicator %s: no group is "
                        "made",
                        loss.lost, loss.lost == loss.by ? "died" : "was lost by a peer");
        }
        return SHARC_ERR_REMOTE;
    }
    status = sharc_comm_group_id(comm, ranks, nranks, tag, &id);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_boot_group(comm->boot, ranks, nranks, new_rank, id, &boot);
    if (status == SHARC_ERR_UNSUPPORTED) {
        sharc_error("sharc_comm_create_group: the %s bootstrap cannot make a group of some of "
                    "its ranks; use sharc_comm_split",
                    comm->boot->ops->name);
    }
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_comm_make_sub(comm, ranks, new_rank, nranks, boot, NULL, &newcomm);
    if (status != SHARC_OK) {
        return status;
    }
    sharc_debug("comm: group of %d ranks (tag %d): rank %d, node %d of %d, local %d of %d", nranks,
                tag, newcomm->rank, newcomm->node, newcomm->nnodes, newcomm->local_rank,
                newcomm->local_size);
    *newcomm_p = newcomm;
    return SHARC_OK;
}
