/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_cfg.c: the communicators' knob: where collectives on CUDA buffers run. The configuration's
 * mechanism is base's (base/cfg.c); the list of every layer's tables is the library
 * root's (lib/knobs.c).
 */
#include "config.h"

#include "../base/util.h"
#include "context.h"

static const char *const sharc_cfg_cuda_backends[] = {
    [SHARC_CUDA_BACKEND_AUTO] = "auto",
    [SHARC_CUDA_BACKEND_NCCL] = "nccl",
    [SHARC_CUDA_BACKEND_STAGED] = "staged",
};

static const sharc_cfg_field_t sharc_core_cfg_fields[] = {
    {.name = "CUDA_BACKEND",
     .dflt = "auto",
     .type = SHARC_CFG_ENUM,
     .offset = offsetof(sharc_core_cfg_t, cuda_backend),
     .names = sharc_cfg_cuda_backends,
     .nnames = SHARC_ARRAY_SIZE(sharc_cfg_cuda_backends),
     .doc = "Collectives on CUDA buffers: auto (NCCL where it can run, else staged), nccl (NCCL "
            "or fail), or staged (through page-locked host memory over the host transports)."},
};

const sharc_cfg_table_t sharc_core_cfg_table =
    SHARC_CFG_TABLE("communicators (core)", sharc_core_cfg_fields, sharc_core_cfg_t);
