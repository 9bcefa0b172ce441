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
    /* the collective backend for CUDA buffers (nccl), opened by the first collective on
     * them (or inherited by a split), and whether opening it was tried */
    const sharc_tp_ops_t *gpu_ops;
    sharc_tp_comm_t *gpu_tp;
    int gpu_tried;
    sharc_status_t gpu_failed; /* SHARC_CUDA_BACKEND=nccl and it could not be opened */
    void *stream; /* sharc_comm_set_cuda_stream: the caller's stream (NULL: legacy default) */
};

/* sharc/sharc_cuda.h, with the stream as a pointer (CUDA's headers stay out of the core). */
SHARC_API sharc_status_t sharc_comm_set_cuda_stream(sharc_comm_h comm, void *stream);

/*
 * The collective backend for CUDA buffers, opened now if this is the first time: collective
 * over the communicator (every rank posts the same collective on CUDA memory). NULL when
 * none can run here or SHARC_CUDA_BACKEND=staged (CUDA buffers are then staged through host
 * memory); *status_p is an error when SHARC_CUDA_BACKEND=nccl and NCCL could not be opened.
 */
SHARC_HIDDEN const sharc_tp_ops_t *sharc_comm_gpu_backend(sharc_comm_h comm,
                                                          sharc_status_t *status_p);

#endif
