/*
 * comm.h: the communicator as the layers above the core see it.
 */
#ifndef SHARC_COMM_INT_H
#define SHARC_COMM_INT_H

#include <sharc/comm.h>

#include "../transport/transport.h"
#include "boot/boot.h"
#include "context.h"

/* The collective layer's per-communicator state (coll/coll.h). */
typedef struct sharc_coll_comm sharc_coll_comm_t;

/* Made and released with the communicator; destroy completes what is still in flight. */
SHARC_HIDDEN sharc_status_t sharc_coll_comm_create(struct sharc_comm *comm);
SHARC_HIDDEN void sharc_coll_comm_destroy(struct sharc_comm *comm);

struct sharc_comm {
    sharc_context_h ctx;
    sharc_boot_t *boot;
    sharc_bootstrap_t mode;
    int rank, size;
    int node, nnodes, local_rank, local_size;
    int *node_of;                 /* [size]: node index of every rank */
    const sharc_tp_ops_t *tp_ops; /* NULL: bootstrap only */
    sharc_tp_comm_t *tp;
    sharc_coll_comm_t *coll;
};

#endif
