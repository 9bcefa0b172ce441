/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/comm.h: communicators. A communicator is a group of ranks created from a bootstrap
 * (how the processes find each other) and split into sub-communicators (intra-node,
 * inter-node, HSDP shard and replica groups). Every communicator knows each rank's node, its
 * local rank and the local size.
 */
#ifndef SHARC_COMM_H
#define SHARC_COMM_H

#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/context.h>

SHARC_BEGIN_DECLS

typedef struct sharc_comm *sharc_comm_h;

/** How the processes of a job find each other. */
typedef enum {
    /**
     * Decide from the environment, in this order: OpenMPI's mpirun (OMPI_COMM_WORLD_SIZE;
     * needs sharc built with MPI), torchrun / Kubeflow PyTorchJob variables (RANK and
     * WORLD_SIZE), a Slurm job step (SLURM_PROCID and SLURM_NTASKS), else one process alone.
     * The SHARC_BOOTSTRAP knob may name a mode instead.
     */
    SHARC_BOOTSTRAP_AUTO = 0,
    /** MPI_COMM_WORLD of the MPI library sharc was built with (initialized if needed). */
    SHARC_BOOTSTRAP_MPI = 1,
    /**
     * RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (required) and LOCAL_RANK, LOCAL_WORLD_SIZE,
     * GROUP_RANK (optional) as torchrun and Kubeflow's PyTorchJob set them; rank 0 serves a
     * TCP store at MASTER_ADDR.
     */
    SHARC_BOOTSTRAP_ENV = 2,
    /**
     * SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID as srun sets them; the store is
     * served by rank 0 at MASTER_ADDR, or at the first host of SLURM_STEP_NODELIST
     * (SLURM_JOB_NODELIST) when MASTER_ADDR is unset.
     */
    SHARC_BOOTSTRAP_SLURM = 3,
    /** Rank, size and store address given in sharc_comm_params_t. */
    SHARC_BOOTSTRAP_EXPLICIT = 4,
    /** One process alone: rank 0 of 1. */
    SHARC_BOOTSTRAP_SINGLE = 5,
    SHARC_BOOTSTRAP_LAST
} sharc_bootstrap_t;

/** Which fields of sharc_comm_params_t are set. */
enum {
    SHARC_COMM_PARAM_BOOTSTRAP = 1u << 0,  /**< bootstrap */
    SHARC_COMM_PARAM_RANK = 1u << 1,       /**< rank and size */
    SHARC_COMM_PARAM_STORE_ADDR = 1u << 2, /**< store_addr */
    SHARC_COMM_PARAM_TOKEN = 1u << 3,      /**< token */
    SHARC_COMM_PARAM_LOCAL = 1u << 4,      /**< node_id, local_rank, local_size */
};

/** Parameters of sharc_comm_create; only the fields named in field_mask are read. */
typedef struct {
    unsigned field_mask;         /**< SHARC_COMM_PARAM_* bits */
    sharc_bootstrap_t bootstrap; /**< default: the SHARC_BOOTSTRAP knob (auto) */
    int rank;                    /**< explicit: this process's rank, 0 <= rank < size */
    int size;                    /**< explicit: number of ranks */
    /**
     * explicit (and an override for env/slurm): "host:port" or "[v6addr]:port" of the store,
     * served by rank 0 and reached by every rank.
     */
    const char *store_addr;
    /** Job token every rank presents to the store; default: SHARC_BOOTSTRAP_TOKEN, else
     *  derived from the launch environment. */
    const char *token;
    /**
     * This rank's node (any integer that is equal for ranks on one node), local rank and
     * local size as the caller's launcher knows them; otherwise sharc derives them from the
     * host names of all ranks.
     */
    int node_id, local_rank, local_size;
} sharc_comm_params_t;

/** Color that leaves a rank out of every group of sharc_comm_split. */
#define SHARC_COMM_SPLIT_NOCOLOR (-1)

/**
 * Create a communicator over all ranks of the job. Collective: every rank of the job calls
 * it. Waits at most SHARC_BOOTSTRAP_TIMEOUT for the other ranks.
 * @param[in]  ctx     context the communicator belongs to (it holds a reference).
 * @param[in]  params  NULL for the defaults.
 * @param[out] comm_p  the new communicator; set only on success.
 * @return SHARC_OK; SHARC_ERR_INVALID (missing, inconsistent or garbage launch variables,
 *         rank >= size, duplicate ranks: the log names the variable or the rank);
 *         SHARC_ERR_TIMEOUT (a rank did not arrive in time: the log names it);
 *         SHARC_ERR_IO (the store could not be served or reached: the log names the address);
 *         SHARC_ERR_UNSUPPORTED (a bootstrap that was not built in);
 *         SHARC_ERR_REMOTE (the store rejected this rank, or a peer disagrees);
 *         SHARC_ERR_NOMEM, SHARC_ERR_BACKEND.
 * On failure nothing is left behind.
 */
SHARC_API sharc_status_t sharc_comm_create(sharc_context_h ctx, const sharc_comm_params_t *params,
                                           sharc_comm_h *comm_p);

/**
 * Split a communicator like MPI_Comm_split: ranks that pass the same @p color form a new
 * communicator, ordered by @p key and then by their rank in @p comm. Collective over @p comm.
 * @param[in]  color      >= 0, or SHARC_COMM_SPLIT_NOCOLOR to join no group.
 * @param[out] newcomm_p  the new communicator, or NULL for SHARC_COMM_SPLIT_NOCOLOR.
 * @return as sharc_comm_create; SHARC_ERR_INVALID for a negative color other than NOCOLOR.
 * The new communicator is independent of @p comm: either may be destroyed first.
 */
SHARC_API sharc_status_t sharc_comm_split(sharc_comm_h comm, int color, int key,
                                          sharc_comm_h *newcomm_p);

/**
 * Make a communicator of some ranks of @p comm, called by those ranks only (as
 * MPI_Comm_create_group; sharc_comm_split is collective over every rank of @p comm). Rank i
 * of the new communicator is rank @p ranks[i] of @p comm. It is made over @p comm's
 * bootstrap (on a store: the same store, no new rendezvous) and takes its node layout; it
 * sets up its own transport and collective state. Waits at most SHARC_BOOTSTRAP_TIMEOUT for
 * the other members. Not thread-safe with other calls making communicators from @p comm.
 * @param[in]  ranks      @p nranks distinct ranks of @p comm, this rank among them; every
 *                        member passes the same list.
 * @param[in]  tag        >= 0. Members make the groups of one list and tag in the same order;
 *                        groups made at the same time by overlapping sets of ranks in another
 *                        order need tags of their own (MPI's rule).
 * @param[out] newcomm_p  the new communicator; set only on success.
 * @return SHARC_OK; SHARC_ERR_INVALID (a rank out of range or listed twice, this rank not
 *         listed, a negative tag: the log says which; nothing was sent);
 *         SHARC_ERR_TIMEOUT (a member did not arrive: the log names it; a member that passed
 *         another list is one that never arrives); SHARC_ERR_REMOTE (a rank of @p comm is
 *         known to be gone: at once); SHARC_ERR_UNSUPPORTED (the bootstrap
 *         cannot make groups of some ranks: split instead); others as sharc_comm_create.
 * The new communicator is independent of @p comm: either may be destroyed first.
 */
SHARC_API sharc_status_t sharc_comm_create_group(sharc_comm_h comm, const int *ranks, int nranks,
                                                 int tag, sharc_comm_h *newcomm_p);

/**
 * Wait until every rank of @p comm has called it, through the bootstrap (no collective
 * backend needed; meant for startup and tests, not for hot paths).
 * @return SHARC_OK, SHARC_ERR_TIMEOUT (the log names the ranks that did not arrive),
 *         SHARC_ERR_IO / SHARC_ERR_REMOTE (the store went away).
 */
SHARC_API sharc_status_t sharc_comm_barrier(sharc_comm_h comm);

/**
 * Dump @p comm's flight recorder (the last SHARC_FLIGHT_RECORDER collectives this rank
 * started on it: op, dtype, count, lane, algorithm, state, times, and for a running one the
 * peers whose data has not arrived) as JSON to @p dir/sharc-flight.<comm>.r<rank>.json, the
 * file `sharc-perf why` merges. Not collective; may be called while collectives are in
 * flight, from any thread.
 * @param[in] dir  a directory, or NULL for SHARC_FLIGHT_DIR.
 * @return SHARC_OK; SHARC_ERR_INVALID for a NULL @p comm or no directory; SHARC_ERR_IO
 *         when the file cannot be written (logged).
 */
SHARC_API sharc_status_t sharc_comm_dump(sharc_comm_h comm, const char *dir);

/**
 * The stall verdict of a job from its flight dumps (sharc_comm_dump, SHARC_FLIGHT_DIR): for
 * every communicator with dumps in @p dir, one line that says which collective stalled and
 * why, worked out as the live ranks work it out (ranks that left no dump, ranks that have
 * not posted the stalled collective and what they last did, ranks that posted another, or
 * whose data did not arrive). For jobs their scheduler killed: `sharc-perf why DIR`.
 * @param[out] buf  the lines (NUL-terminated; cut at @p size bytes).
 * @return SHARC_OK; SHARC_ERR_INVALID when @p dir holds no dumps or an argument is NULL;
 *         SHARC_ERR_IO when it cannot be read; SHARC_ERR_UNSUPPORTED in a build without
 *         json-c.
 */
SHARC_API sharc_status_t sharc_flight_why(const char *dir, char *buf, size_t size);

/**
 * Destroy a communicator. Not collective, but rank 0 of a store-based communicator waits
 * (at most SHARC_BOOTSTRAP_TIMEOUT) until the other ranks have left the store before it
 * closes it. NULL is a no-op.
 */
SHARC_API void sharc_comm_destroy(sharc_comm_h comm);

/** This process's rank in @p comm. */
SHARC_API int sharc_comm_rank(sharc_comm_h comm);
/** Number of ranks in @p comm. */
SHARC_API int sharc_comm_size(sharc_comm_h comm);
/** Index of this rank's node among the nodes of @p comm, 0 .. nnodes-1, numbered in the
 *  order of their lowest rank. */
SHARC_API int sharc_comm_node(sharc_comm_h comm);
/** Number of nodes spanned by @p comm. */
SHARC_API int sharc_comm_nnodes(sharc_comm_h comm);
/** This rank's index among the ranks of @p comm on its node. */
SHARC_API int sharc_comm_local_rank(sharc_comm_h comm);
/** Number of ranks of @p comm on this rank's node. */
SHARC_API int sharc_comm_local_size(sharc_comm_h comm);
/** Node of another rank of @p comm, or -1 for a rank out of range. */
SHARC_API int sharc_comm_node_of(sharc_comm_h comm, int rank);
/** The bootstrap the communicator was created with (never AUTO). */
SHARC_API sharc_bootstrap_t sharc_comm_bootstrap(sharc_comm_h comm);
/** "auto", "mpi", "env", "slurm", "explicit", "single"; NULL for an invalid value. */
SHARC_API const char *sharc_bootstrap_name(sharc_bootstrap_t bootstrap);

SHARC_END_DECLS

#endif
