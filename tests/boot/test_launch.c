/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_launch.c: sharc_launch_query against hand-set launch variables: none, torchrun's (and
 * its agent store), Slurm's (the node list, the port rule, MASTER_ADDR / MASTER_PORT,
 * SHARC_BOOTSTRAP_PORT), mpirun's, a bootstrap named by the configuration, and the errors.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sharc/sharc.h>

#include "../check.h"

/* every variable a launch is read from, cleared before each case */
static const char launch_vars[] =
    "RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR "
    "MASTER_PORT TORCHELASTIC_USE_AGENT_STORE SLURM_PROCID SLURM_NTASKS SLURM_LOCALID "
    "SLURM_NODEID SLURM_STEP_ID SLURM_JOB_ID SLURM_STEP_NODELIST SLURM_JOB_NODELIST "
    "SLURM_NODELIST SLURM_NNODES SLURM_STEP_NUM_NODES OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_RANK "
    "OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE OMPI_MCA_orte_num_nodes";

/* Clear every launch variable, then set @p vars ("NAME=value NAME=value ..."). */
static void launch_env(const char *vars)
{
    char buf[1024], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", launch_vars);
    for (char *name = strtok_r(buf, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
        unsetenv(name);
    }
    snprintf(buf, sizeof(buf), "%s", vars);
    for (char *var = strtok_r(buf, " ", &save); var; var = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(var, '=');

        *eq = '\0';
        setenv(var, eq + 1, 1);
    }
}

typedef struct {
    sharc_launcher_t launcher;
    sharc_bootstrap_t bootstrap;
    int rank, size, local_rank, local_size, node, nnodes;
    const char *store_host;
    int store_port;
} expect_t;

static void expect(const char *what, sharc_config_h config, const expect_t *e)
{
    sharc_launch_info_t info;
    sharc_status_t status = sharc_launch_query(config, &info);

    CHECK_MSG(status == SHARC_OK, "%s: %s", what, sharc_status_string(status));
    if (status != SHARC_OK) {
        return;
    }
    CHECK_MSG(info.launcher == e->launcher && info.bootstrap == e->bootstrap,
              "%s: launcher %s, bootstrap %s", what, sharc_launcher_name(info.launcher),
              sharc_bootstrap_name(info.bootstrap));
    CHECK_MSG(info.rank == e->rank && info.size == e->size && info.local_rank == e->local_rank &&
                  info.local_size == e->local_size && info.node == e->node &&
                  info.nnodes == e->nnodes,
              "%s: rank %d of %d, local %d of %d, node %d of %d", what, info.rank, info.size,
              info.local_rank, info.local_size, info.node, info.nnodes);
    CHECK_MSG(strcmp(info.store_host, e->store_host) == 0 && info.store_port == e->store_port,
              "%s: store '%s' port %d", what, info.store_host, info.store_port);
}

static void reject(const char *what, sharc_config_h config, sharc_status_t want)
{
    sharc_launch_info_t info = {.rank = 77};

    CHECK_MSG(sharc_launch_query(config, &info) == want, "%s", what);
    CHECK_MSG(info.rank == 77, "%s: the report was written on failure", what);
}

static void test_env(sharc_config_h cfg)
{
    const char *torchrun = "RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 "
                           "GROUP_WORLD_SIZE=2 MASTER_ADDR=node-a MASTER_PORT=29500";
    expect_t e = {SHARC_LAUNCHER_ENV, SHARC_BOOTSTRAP_ENV, 1, 4, 1, 2, 0, 2, "node-a", 29500};

    launch_env(torchrun);
    expect("torchrun", cfg, &e);
    setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
    e.store_port = 29501;
    expect("torchrun's agent store", cfg, &e);

    launch_env("RANK=0 WORLD_SIZE=1");
    expect("one rank under torchrun", cfg,
           &(expect_t){SHARC_LAUNCHER_ENV, SHARC_BOOTSTRAP_ENV, 0, 1, -1, -1, -1, -1, "", 0});
}

static void test_slurm(sharc_config_h cfg)
{
    const char *srun = "SLURM_PROCID=2 SLURM_NTASKS=4 SLURM_LOCALID=0 SLURM_NODEID=1 "
                       "SLURM_STEP_ID=0 SLURM_JOB_ID=123456 SLURM_NNODES=3 "
                       "SLURM_STEP_NODELIST=gpu[03-04]";
    /* the port rule: 12000 + 123456 % 20000 */
    expect_t e = {SHARC_LAUNCHER_SLURM, SHARC_BOOTSTRAP_SLURM, 2, 4, 0, -1, 1, 3, "gpu03", 15456};

    launch_env(srun);
    expect("srun: the step's node count is preferred", cfg, &e);
    setenv("SLURM_STEP_NUM_NODES", "2", 1);
    e.nnodes = 2;
    expect("srun", cfg, &e);
    setenv("MASTER_ADDR", "10.0.0.7", 1);
    setenv("MASTER_PORT", "23456", 1);
    e.store_host = "10.0.0.7";
    e.store_port = 23456;
    expect("srun with MASTER_ADDR and MASTER_PORT", cfg, &e);
    CHECK(sharc_config_set(cfg, "BOOTSTRAP_PORT", "14000") == SHARC_OK);
    e.store_port = 14000;
    expect("srun with SHARC_BOOTSTRAP_PORT", cfg, &e);
    CHECK(sharc_config_set(cfg, "BOOTSTRAP_PORT", "0") == SHARC_OK);

    /* an allocation's shell, outside any srun step: not a Slurm launch */
    launch_env("SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_JOB_ID=7");
    expect("salloc's shell", cfg,
           &(expect_t){SHARC_LAUNCHER_NONE, SHARC_BOOTSTRAP_SINGLE, 0, 1, 0, 1, 0, 1, "", 0});

    /* one task: no store, but the rule's port for a framework's own store */
    launch_env("SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_STEP_ID=0 SLURM_JOB_ID=123456");
    expect(
        "a one-task srun", cfg,
        &(expect_t){SHARC_LAUNCHER_SLURM, SHARC_BOOTSTRAP_SLURM, 0, 1, -1, -1, -1, -1, "", 15456});
    launch_env("SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_STEP_ID=0");
    expect("a one-task srun without a job id", cfg,
           &(expect_t){SHARC_LAUNCHER_SLURM, SHARC_BOOTSTRAP_SLURM, 0, 1, -1, -1, -1, -1, "", 0});

    launch_env("SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_ID=0 SLURM_JOB_NODELIST=a");
    reject("srun without SLURM_JOB_ID or MASTER_PORT", cfg, SHARC_ERR_INVALID);
    setenv("SLURM_JOB_ID", "7", 1);
    setenv("SLURM_NNODES", "two", 1);
    reject("a garbage SLURM_NNODES", cfg, SHARC_ERR_INVALID);
}

static void test_mpirun(sharc_config_h cfg)
{
    const char *mpirun =
        "OMPI_COMM_WORLD_SIZE=3 OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_LOCAL_RANK=0 "
        "OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_MCA_orte_num_nodes=3";
#ifdef HAVE_MPI
    sharc_bootstrap_t mode = SHARC_BOOTSTRAP_MPI;
#else
    sharc_bootstrap_t mode = SHARC_BOOTSTRAP_SINGLE; /* mpirun's variables are still reported */
#endif

    launch_env(mpirun);
    expect("mpirun", cfg, &(expect_t){SHARC_LAUNCHER_MPIRUN, mode, 2, 3, 0, 1, -1, 3, "", 0});
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    reject("mpirun: a rank beyond the size", cfg, SHARC_ERR_INVALID);
}

int main(void)
{
    sharc_config_h cfg;

    CHECK(sharc_config_create(SHARC_CONFIG_NO_ENV, &cfg) == SHARC_OK);

    launch_env("");
    expect("no launcher", cfg,
           &(expect_t){SHARC_LAUNCHER_NONE, SHARC_BOOTSTRAP_SINGLE, 0, 1, 0, 1, 0, 1, "", 0});
    expect("no launcher, the environment's configuration", NULL,
           &(expect_t){SHARC_LAUNCHER_NONE, SHARC_BOOTSTRAP_SINGLE, 0, 1, 0, 1, 0, 1, "", 0});
    test_env(cfg);
    test_slurm(cfg);
    test_mpirun(cfg);

    /* a bootstrap named by the configuration: the launcher's variables are still reported */
    launch_env("RANK=1 WORLD_SIZE=2 MASTER_ADDR=h MASTER_PORT=9");
    CHECK(sharc_config_set(cfg, "BOOTSTRAP", "single") == SHARC_OK);
    expect("SHARC_BOOTSTRAP=single under torchrun", cfg,
           &(expect_t){SHARC_LAUNCHER_ENV, SHARC_BOOTSTRAP_SINGLE, 1, 2, -1, -1, -1, -1, "", 0});
    CHECK(sharc_config_set(cfg, "BOOTSTRAP", "auto") == SHARC_OK);

    launch_env("RANK=4 WORLD_SIZE=4 MASTER_ADDR=h MASTER_PORT=9");
    reject("a rank beyond the size", cfg, SHARC_ERR_INVALID);
    launch_env("WORLD_SIZE=4");
    reject("WORLD_SIZE without RANK", cfg, SHARC_ERR_INVALID);
    CHECK(sharc_launch_query(cfg, NULL) == SHARC_ERR_INVALID);

    CHECK(strcmp(sharc_launcher_name(SHARC_LAUNCHER_NONE), "none") == 0);
    CHECK(strcmp(sharc_launcher_name(SHARC_LAUNCHER_MPIRUN), "mpirun") == 0);
    CHECK(strcmp(sharc_launcher_name(SHARC_LAUNCHER_ENV), "env") == 0);
    CHECK(strcmp(sharc_launcher_name(SHARC_LAUNCHER_SLURM), "slurm") == 0);
    CHECK(sharc_launcher_name(SHARC_LAUNCHER_LAST) == NULL);
    sharc_config_destroy(cfg);
    launch_env("");
    return check_result("test_launch");
}
