/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.h: the communicator as the layers above the core see it (the sharding engine): its
 * bootstrap, node layout, transports, and the collective state it posts through (coll/api.h).
 */
#ifndef SHARC_COMM_INT_H
#define SHARC_COMM_INT_H

#include <sharc/comm.h>

#include "../coll/api.h"
#include "../transport/transport.h"
#include "../boot/boot.h"
#include "context.h"

struct sharc_comm {
    sharc_context_h ctx;
    sharc_boot_t *boot;
    sharc_bootstrap_t mode;
    int rank, size;
    int node, nnodes, local_rank, local_size;
    int *node_of;                  /* [size]: node index of every rank */
    char (*hosts)[SHARC_HOST_MAX]; /* [size]: host name of every rank, for messages */
    const sharc_tp_ops_t *tp_ops;  /* NULL: bootstrap only */
    sharc_tp_comm_t *tp;
    /* the CUDA backend (nccl), opened with the communicator when every
     * rank can run it (or split from the parent's), else NULL: CUDA buffers are staged */
    const sharc_tp_ops_t *cuda_ops;
    sharc_tp_comm_t *cuda_tp;
    sharc_status_t cuda_failed; /* SHARC_CUDA_BACKEND=nccl and it could not be opened */
    sharc_coll_comm_t *coll;   /* the collectives' state, over the transports above */
    void *stream; /* sharc_comm_set_cuda_stream: the caller's stream (NULL: legacy default) */
    /* sharc_comm_create_group: how many groups of each (member list, tag) were made from it,
     * so that the members of the next one agree on its name without talking (comm_group.c) */
    struct sharc_comm_groups_made *groups_made;
    size_t ngroups_made, groups_made_cap;
};

/* For the files of the communicator (comm.c, comm_split.c, comm_group.c). */

/* SHARC_OK when @p comm can be used by @p call (else logged, SHARC_ERR_INVALID). */
SHARC_HIDDEN sharc_status_t sharc_comm_check(sharc_comm_h comm, const char *call);
/* A communicator of @p ctx with its rank and size, and nothing opened yet. */
SHARC_HIDDEN sharc_status_t sharc_comm_alloc(sharc_context_h ctx, int rank, int size,
                                             sharc_comm_h *comm_p);
/* Release what a communicator holds, in reverse order of opening. */
SHARC_HIDDEN void sharc_comm_free(sharc_comm_h comm);
/* The communicator of some ranks of @p comm (split, group) over its bootstrap @p boot and its
 * CUDA backend @p gpu_child, if split from the parent's (it owns both from here,
 * failures included): rank r is rank @p members[r] of @p comm. Its layout comes from the
 * parent's; its transport, CUDA backend (if not given) and collective state are opened
 * over @p boot: collective over the members. */
SHARC_HIDDEN sharc_status_t sharc_comm_make_sub(sharc_comm_h comm, const int *members, int new_rank,
                                                int new_size, sharc_boot_t *boot,
                                                sharc_tp_comm_t *gpu_child,
                                                sharc_comm_h *newcomm_p);
/* The node layout of @p sub, a communicator of some ranks of @p parent: rank r of @p sub is
 * rank @p members[r] of @p parent (comm_split.c). */
SHARC_HIDDEN sharc_status_t sharc_comm_sub_layout(sharc_comm_h parent, sharc_comm_h sub,
                                                  const int *members);
/* Open the CUDA backend @p ops for CUDA buffers when @p everywhere (every rank can run
 * it); without it CUDA buffers are staged (or fail with SHARC_CUDA_BACKEND=nccl). */
SHARC_HIDDEN sharc_status_t sharc_comm_open_gpu(sharc_comm_h comm, const sharc_tp_ops_t *ops,
                                                int everywhere);
/* Pick and set up the data transport: collective over the bootstrap. */
SHARC_HIDDEN sharc_status_t sharc_comm_open_transport(sharc_comm_h comm);
/* The collective state over the communicator's transports, as the last step of making it. */
SHARC_HIDDEN sharc_status_t sharc_comm_open_coll(sharc_comm_h comm);

/* Set the stream @p comm's collectives on CUDA buffers follow (sharc_comm_set_cuda_stream
 * in sharc/sharc_cuda.h, which comm/comm_cuda.c defines over this). */
SHARC_HIDDEN sharc_status_t sharc_comm_stream_set(sharc_comm_h comm, void *stream);

#endif
