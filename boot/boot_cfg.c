/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * boot_cfg.c: the bootstrap's knobs (SHARC_BOOTSTRAP_*): their table (boot.h's
 * sharc_boot_cfg_t).
 */
#include "config.h"

#include <stddef.h>

#include "../base/util.h"
#include "boot.h"

static const sharc_cfg_field_t sharc_boot_cfg_fields[] = {
    {.name = "BOOTSTRAP",
     .dflt = "auto",
     .type = SHARC_CFG_ENUM,
     .offset = offsetof(sharc_boot_cfg_t, mode),
     .names = sharc_bootstrap_names,
     .nnames = SHARC_BOOTSTRAP_LAST,
     .doc = "How ranks find each other: auto (mpirun, then torchrun-style env, then Slurm, else a "
            "single process), mpi, env, slurm, explicit or single."},
    {.name = "BOOTSTRAP_TIMEOUT",
     .dflt = "120s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_boot_cfg_t, timeout),
     .doc = "Longest wait for any bootstrap step (other ranks arriving, the store answering), "
            "e.g. 500ms, 30s, 2m."},
    {.name = "BOOTSTRAP_TOKEN",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_boot_cfg_t, token),
     .doc = "Job token every rank presents to the store; empty: derived from the launch "
            "environment (MASTER_ADDR/PORT, WORLD_SIZE, run or job id). Guards against stray and "
            "stale clients; set a secret value to also keep out other users."},
    {.name = "BOOTSTRAP_BIND_ADDR",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_boot_cfg_t, bind_addr),
     .doc = "Address rank 0's store listens on: empty for the store address itself "
            "(MASTER_ADDR), * for every interface, or an address."},
    {.name = "BOOTSTRAP_PORT",
     .dflt = "0",
     .type = SHARC_CFG_INT,
     .min = 0,
     .max = 65535,
     .offset = offsetof(sharc_boot_cfg_t, port),
     .doc = "Store port; 0 derives it: MASTER_PORT (MASTER_PORT+1 under torchrun, whose agent "
            "holds MASTER_PORT), or 12000 + SLURM_JOB_ID % 20000 under Slurm without "
            "MASTER_PORT."},
    {.name = "BOOTSTRAP_MAX_MSG",
     .dflt = "64m",
     .type = SHARC_CFG_SIZE,
     .min = 4096,
     .max = 1L << 30,
     .offset = offsetof(sharc_boot_cfg_t, max_msg),
     .doc = "Largest message the store accepts; bigger ones are rejected as garbage."},
    {.name = "BOOTSTRAP_HEARTBEAT",
     .dflt = "2s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_boot_cfg_t, heartbeat),
     .doc = "How often each rank of a store-based communicator tells the store it is alive, "
            "from a thread of its own (the store answers, which tells the rank the store is "
            "alive too)."},
    {.name = "BOOTSTRAP_HEARTBEAT_TIMEOUT",
     .dflt = "15s",
     .type = SHARC_CFG_TIME,
     .offset = offsetof(sharc_boot_cfg_t, heartbeat_timeout),
     .doc = "A silence this long names a rank gone (the store tells its communicators, whose "
            "collectives then fail naming it and its host) or, seen from a rank, the store "
            "(rank 0's node unreachable): a node cut off by a partition or a dead link is found "
            "in this time, not at SHARC_TIMEOUT. A process that stops this long (a debugger, "
            "SIGSTOP) counts as gone."},
};

const sharc_cfg_table_t sharc_boot_cfg_table =
    SHARC_CFG_TABLE("bootstrap (boot)", sharc_boot_cfg_fields, sharc_boot_cfg_t);
