/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/launch.h: what the launcher told this process, as sharc's bootstrap reads it: which
 * launcher started it (mpirun, torchrun / Kubeflow PyTorchJob, srun), its rank and size, its
 * place on its node, and the store address a communicator would use. For bindings and tools
 * that need the launch variables themselves (e.g. to set torch's RANK and MASTER_ADDR under
 * mpirun or srun) without reading them a second way. It creates nothing and connects nowhere.
 */
#ifndef SHARC_LAUNCH_H
#define SHARC_LAUNCH_H

#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/config.h>
#include <sharc/comm.h>

SHARC_BEGIN_DECLS

/** The launcher whose variables this process sees, in the order SHARC_BOOTSTRAP_AUTO looks. */
typedef enum {
    SHARC_LAUNCHER_NONE = 0,   /**< none of the below: one process alone */
    SHARC_LAUNCHER_MPIRUN = 1, /**< OpenMPI's mpirun (OMPI_COMM_WORLD_SIZE) */
    SHARC_LAUNCHER_ENV = 2,    /**< torchrun / Kubeflow PyTorchJob (RANK or WORLD_SIZE) */
    SHARC_LAUNCHER_SLURM = 3,  /**< a Slurm job step (SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_ID) */
    SHARC_LAUNCHER_LAST
} sharc_launcher_t;

/** Size of sharc_launch_info_t's store_host, with the NUL. */
#define SHARC_LAUNCH_HOST_MAX 256

/** What sharc_launch_query reports. -1 marks what the launcher does not say. */
typedef struct {
    /** The launcher detected, whether or not sharc was built with MPI. */
    sharc_launcher_t launcher;
    /** The bootstrap sharc_comm_create would use with this configuration and no params
     *  (never AUTO; under mpirun without MPI built in, the next launcher's or single). */
    sharc_bootstrap_t bootstrap;
    /**
     * This process's rank and the job's size as the launcher gives them: RANK / WORLD_SIZE,
     * SLURM_PROCID / SLURM_NTASKS, OMPI_COMM_WORLD_RANK / _SIZE (the mpi bootstrap asks MPI,
     * which reads these); 0 and 1 for none.
     */
    int rank, size;
    /** Rank on this node and ranks on this node (LOCAL_RANK / LOCAL_WORLD_SIZE,
     *  SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE), or -1; 0 and 1 for none. */
    int local_rank, local_size;
    /** This node's index (GROUP_RANK, SLURM_NODEID) and the number of nodes (GROUP_WORLD_SIZE,
     *  SLURM_STEP_NUM_NODES or SLURM_NNODES, OMPI_MCA_orte_num_nodes), or -1; 0 and 1 for
     *  none. */
    int node, nnodes;
    /**
     * The store the bootstrap would serve on rank 0 and reach from every rank, as its
     * communicator would: MASTER_ADDR, or under Slurm the first host of the step's node list;
     * MASTER_PORT (the next port under torchrun's agent store), or under Slurm
     * 12000 + SLURM_JOB_ID % 20000; SHARC_BOOTSTRAP_PORT overrides the port. "" and 0 where
     * the bootstrap has no store (mpi, single, and one rank), except that a one-task Slurm
     * step still reports its port by the rule (with "" as host): a framework that serves a
     * store of its own on every launch (torch's) takes it, and two one-task jobs of a node
     * then do not meet on one port.
     */
    char store_host[SHARC_LAUNCH_HOST_MAX];
    int store_port;
} sharc_launch_info_t;

/**
 * Read the launch variables as sharc_comm_create would, without creating anything.
 * @param[in]  config  the settings (SHARC_BOOTSTRAP names a bootstrap instead of auto;
 *                     SHARC_BOOTSTRAP_PORT), or NULL for the defaults overlaid with the SHARC_*
 *                     environment variables.
 * @param[out] info_p  the report; set only on success.
 * @return SHARC_OK; SHARC_ERR_INVALID for missing or garbage launch variables (the log names
 *         the variable and its value, as sharc_comm_create's would) or a NULL @p info_p;
 *         SHARC_ERR_UNSUPPORTED when SHARC_BOOTSTRAP names mpi and sharc was built without it;
 *         SHARC_ERR_NOMEM.
 * Thread safety: safe, as long as no thread changes the environment meanwhile.
 */
SHARC_API sharc_status_t sharc_launch_query(sharc_config_h config, sharc_launch_info_t *info_p);

/** "none", "mpirun", "env", "slurm"; NULL for an invalid value. */
SHARC_API const char *sharc_launcher_name(sharc_launcher_t launcher);

SHARC_END_DECLS

#endif
