/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch.c: reads what the launcher told this process (mpirun, torchrun / Kubeflow
 * PyTorchJob, srun, or the caller) into a sharc_launch_t: mode, rank, size, node and local
 * hints, the store address and the job token. Every error names the variable and its value.
 * This is the only file that reads the variables a bootstrap uses (comm/launch_info.c reports
 * them publicly through it, with the few that only the report gives: mpirun's ranks, nodes).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/log.h"
#include "../base/util.h"
#include "boot.h"
#include "sock.h"

#define SHARC_SLURM_PORT_BASE 12000 /* below Linux's ephemeral ports (32768+) */
#define SHARC_SLURM_PORT_SPAN 20000

int sharc_launch_int(const char *mode, const char *var, long min, long max, int required,
                     int *out_p)
{
    const char *s = getenv(var);
    long v;

    if (s == NULL) {
        if (required) {
            sharc_error("%s bootstrap: %s is not set", mode, var);
            return -1;
        }
        return 1;
    }
    if (sharc_cfg_parse_long(s, min, max, &v) != 0) {
        sharc_error("%s bootstrap: %s='%s' is not an integer in [%ld, %ld]", mode, var, s, min,
                    max);
        return -1;
    }
    *out_p = (int)v;
    return 0;
}

sharc_launcher_t sharc_launch_launcher(int mpirun)
{
    if (mpirun && getenv("OMPI_COMM_WORLD_SIZE") != NULL) {
        return SHARC_LAUNCHER_MPIRUN;
    }
    if (getenv("RANK") != NULL || getenv("WORLD_SIZE") != NULL) {
        return SHARC_LAUNCHER_ENV; /* a half-set pair is reported by the env reader */
    }
    /* SLURM_STEP_ID: inside an srun step, not merely inside an allocation's shell */
    if (getenv("SLURM_PROCID") != NULL && getenv("SLURM_NTASKS") != NULL &&
        getenv("SLURM_STEP_ID") != NULL) {
        return SHARC_LAUNCHER_SLURM;
    }
    return SHARC_LAUNCHER_NONE;
}

sharc_bootstrap_t sharc_launch_mode(sharc_launcher_t launcher)
{
    static const sharc_bootstrap_t modes[SHARC_LAUNCHER_LAST] = {
        [SHARC_LAUNCHER_NONE] = SHARC_BOOTSTRAP_SINGLE,
        [SHARC_LAUNCHER_MPIRUN] = SHARC_BOOTSTRAP_MPI,
        [SHARC_LAUNCHER_ENV] = SHARC_BOOTSTRAP_ENV,
        [SHARC_LAUNCHER_SLURM] = SHARC_BOOTSTRAP_SLURM,
    };

    return modes[launcher];
}

static sharc_bootstrap_t sharc_launch_detect(void)
{
    sharc_launcher_t launcher = sharc_launch_launcher(1);

#ifndef HAVE_MPI
    if (launcher == SHARC_LAUNCHER_MPIRUN) {
        sharc_warn("launched by mpirun, but sharc was built without MPI: trying the other "
                   "bootstraps (rebuild with --with-mpi to use mpirun)");
        launcher = sharc_launch_launcher(0);
    }
#endif
    return sharc_launch_mode(launcher);
}

static int sharc_launch_env(const sharc_cfg_t *cfg, sharc_launch_t *l)
{
    const char *addr = getenv("MASTER_ADDR"), *agent_store = getenv("TORCHELASTIC_USE_AGENT_STORE");
    int port = 0, group;

    if (sharc_launch_int("env", "WORLD_SIZE", 1, INT_MAX, 1, &l->size) < 0 ||
        sharc_launch_int("env", "RANK", 0, INT_MAX, 1, &l->rank) < 0 ||
        sharc_launch_int("env", "LOCAL_RANK", 0, INT_MAX, 0, &l->local_rank) < 0 ||
        sharc_launch_int("env", "LOCAL_WORLD_SIZE", 1, INT_MAX, 0, &l->local_size) < 0) {
        return -1;
    }
    switch (sharc_launch_int("env", "GROUP_RANK", 0, INT_MAX, 0, &group)) {
    case -1: return -1;
    case 0: l->node_hint = group; break;
    }
    if (l->size == 1) {
        return 0;
    }
    if (addr == NULL || *addr == '\0') {
        sharc_error("env bootstrap: MASTER_ADDR is not set (WORLD_SIZE=%d)", l->size);
        return -1;
    }
    if (sharc_launch_int("env", "MASTER_PORT", 1, 65535, 1, &port) < 0) {
        return -1;
    }
    snprintf(l->store_host, sizeof(l->store_host), "%s", addr);
    l->store_port = port;
    l->store_from = "MASTER_ADDR:MASTER_PORT";
    /* torchrun's agent serves its own TCPStore on MASTER_PORT: take the next one. */
    if (agent_store != NULL && strcasecmp(agent_store, "true") == 0 && port < 65535) {
        l->store_port = port + 1;
        l->store_from = "MASTER_ADDR:MASTER_PORT+1 (torchrun's agent holds MASTER_PORT)";
    }
    return 0;
}

/* First host of the step's (or job's) node list: where srun starts task 0. */
static int sharc_launch_slurm_master(sharc_launch_t *l)
{
    static const char *const vars[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                                       "SLURM_NODELIST"};
    char **hosts;
    size_t n;

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(vars); i++) {
        const char *list = getenv(vars[i]);

        if (list == NULL) {
            continue;
        }
        if (sharc_nodelist_expand(list, 1u << 20, &hosts, &n) != SHARC_OK) {
            sharc_error("slurm bootstrap: %s='%s' is not a valid Slurm host list", vars[i], list);
            return -1;
        }
        snprintf(l->store_host, sizeof(l->store_host), "%s", hosts[0]);
        sharc_nodelist_free(hosts, n);
        l->store_from = vars[i];
        return 0;
    }
    sharc_error("slurm bootstrap: neither MASTER_ADDR nor SLURM_STEP_NODELIST / "
                "SLURM_JOB_NODELIST is set");
    return -1;
}

static int sharc_launch_slurm(const sharc_cfg_t *cfg, sharc_launch_t *l)
{
    const char *addr = getenv("MASTER_ADDR");
    int node, port, job = 0;

    if (sharc_launch_int("slurm", "SLURM_NTASKS", 1, INT_MAX, 1, &l->size) < 0 ||
        sharc_launch_int("slurm", "SLURM_PROCID", 0, INT_MAX, 1, &l->rank) < 0 ||
        sharc_launch_int("slurm", "SLURM_LOCALID", 0, INT_MAX, 0, &l->local_rank) < 0) {
        return -1;
    }
    switch (sharc_launch_int("slurm", "SLURM_NODEID", 0, INT_MAX, 0, &node)) {
    case -1: return -1;
    case 0: l->node_hint = node; break;
    }
    if (l->size > 1) {
        if (addr != NULL && *addr != '\0') {
            snprintf(l->store_host, sizeof(l->store_host), "%s", addr);
            l->store_from = "MASTER_ADDR";
        } else if (sharc_launch_slurm_master(l) != 0) {
            return -1;
        }
    }
    switch (sharc_launch_int("slurm", "MASTER_PORT", 1, 65535, 0, &port)) {
    case -1: return -1;
    case 0: l->store_port = port; return 0;
    }
    /* One task needs no store, nor a job id; its port is still the rule's, for a framework
     * whose own store takes one on every launch (torch's, through sharc_launch_query): two
     * one-task jobs on a node then do not meet on one port. */
    switch (sharc_launch_int("slurm", "SLURM_JOB_ID", 0, INT_MAX, l->size > 1, &job)) {
    case -1: return -1;
    case 0: l->store_port = SHARC_SLURM_PORT_BASE + job % SHARC_SLURM_PORT_SPAN; break;
    }
    return 0;
}

static int sharc_launch_explicit(const sharc_comm_params_t *params, sharc_launch_t *l)
{
    if (params == NULL || !(params->field_mask & SHARC_COMM_PARAM_RANK)) {
        sharc_error("explicit bootstrap: sharc_comm_params_t has no rank and size "
                    "(SHARC_COMM_PARAM_RANK)");
        return -1;
    }
    if (params->size < 1) {
        sharc_error("explicit bootstrap: size %d is not positive", params->size);
        return -1;
    }
    l->rank = params->rank;
    l->size = params->size;
    if (l->size > 1 && !(params->field_mask & SHARC_COMM_PARAM_STORE_ADDR)) {
        sharc_error(
            "explicit bootstrap: %d ranks need a store address (SHARC_COMM_PARAM_STORE_ADDR)",
            l->size);
        return -1;
    }
    return 0;
}

/* Token every rank of one job derives alike, unless SHARC_BOOTSTRAP_TOKEN or params set it. */
static void sharc_launch_token(const sharc_cfg_t *cfg, const sharc_comm_params_t *params,
                               sharc_launch_t *l)
{
    static const char *const vars[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID",
                                       "OMPI_MCA_ess_base_jobid"};
    const char *token = sharc_boot_cfg(cfg)->token;
    size_t off;

    if (params != NULL && (params->field_mask & SHARC_COMM_PARAM_TOKEN) && params->token != NULL) {
        snprintf(l->token, sizeof(l->token), "%s", params->token);
        return;
    }
    if (token[0] != '\0') {
        snprintf(l->token, sizeof(l->token), "%s", token);
        return;
    }
    off = (size_t)snprintf(l->token, sizeof(l->token), "%s|%d|%s|%d", sharc_bootstrap_name(l->mode),
                           l->size, l->store_host, l->store_port);
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(vars) && off < sizeof(l->token); i++) {
        const char *v = getenv(vars[i]);
        off += (size_t)snprintf(l->token + off, sizeof(l->token) - off, "|%s", v ? v : "");
    }
}

sharc_status_t sharc_launch_read(const sharc_cfg_t *cfg, const sharc_comm_params_t *params,
                                 sharc_launch_t *l)
{
    int ret = 0, port = sharc_boot_cfg(cfg)->port;

    memset(l, 0, sizeof(*l));
    l->node_hint = l->local_rank = l->local_size = -1;
    l->size = 1;
    l->mode = (sharc_bootstrap_t)sharc_boot_cfg(cfg)->mode;
    if (params != NULL && (params->field_mask & SHARC_COMM_PARAM_BOOTSTRAP)) {
        if ((unsigned)params->bootstrap >= SHARC_BOOTSTRAP_LAST) {
            sharc_error("comm: bootstrap %d is not a sharc_bootstrap_t", (int)params->bootstrap);
            return SHARC_ERR_INVALID;
        }
        l->mode = params->bootstrap;
    }
    if (l->mode == SHARC_BOOTSTRAP_AUTO) {
        l->mode = (params != NULL && (params->field_mask & SHARC_COMM_PARAM_RANK))
                      ? SHARC_BOOTSTRAP_EXPLICIT
                      : sharc_launch_detect();
    }
    switch (l->mode) {
    case SHARC_BOOTSTRAP_ENV: ret = sharc_launch_env(cfg, l); break;
    case SHARC_BOOTSTRAP_SLURM: ret = sharc_launch_slurm(cfg, l); break;
    case SHARC_BOOTSTRAP_EXPLICIT: ret = sharc_launch_explicit(params, l); break;
    case SHARC_BOOTSTRAP_MPI:
#ifndef HAVE_MPI
        sharc_error("the mpi bootstrap was requested, but sharc was built without MPI");
        return SHARC_ERR_UNSUPPORTED;
#endif
        break;
    default: break;
    }
    if (ret != 0) {
        return SHARC_ERR_INVALID;
    }
    if (l->rank >= l->size) {
        sharc_error("%s bootstrap: rank %d is not below the size %d", sharc_bootstrap_name(l->mode),
                    l->rank, l->size);
        return SHARC_ERR_INVALID;
    }
    if (l->local_rank >= 0 && l->local_size > 0 && l->local_rank >= l->local_size) {
        sharc_error("%s bootstrap: local rank %d is not below the local size %d",
                    sharc_bootstrap_name(l->mode), l->local_rank, l->local_size);
        return SHARC_ERR_INVALID;
    }
    if (params != NULL && (params->field_mask & SHARC_COMM_PARAM_LOCAL)) {
        l->node_hint = params->node_id;
        l->local_rank = params->local_rank;
        l->local_size = params->local_size;
    }
    if (params != NULL && (params->field_mask & SHARC_COMM_PARAM_STORE_ADDR) &&
        l->mode != SHARC_BOOTSTRAP_MPI && l->mode != SHARC_BOOTSTRAP_SINGLE) {
        if (params->store_addr == NULL ||
            sharc_sock_parse_addr(params->store_addr, l->store_host, sizeof(l->store_host),
                                  &l->store_port) != SHARC_OK) {
            sharc_error("comm: store address '%s' is not host:port",
                        params->store_addr ? params->store_addr : "(null)");
            return SHARC_ERR_INVALID;
        }
        l->store_from = "the store address given by the caller";
    }
    if (port != 0 && l->store_from != NULL) {
        l->store_port = port;
    }
    sharc_launch_token(cfg, params, l);
    return SHARC_OK;
}
