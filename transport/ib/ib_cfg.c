/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ib_cfg.c: the verbs transport's knob table (SHARC_IB_*), built with or without verbs.
 */
#include "config.h"

#include "../../base/util.h"
#include "../transport.h"
#include "ib_cfg.h"

static const sharc_cfg_field_t sharc_tp_ib_cfg_fields[] = {
    {.name = "IB_HCA",
     .dflt = "",
     .type = SHARC_CFG_STRING,
     .offset = offsetof(sharc_tp_ib_cfg_t, hca),
     .doc = "The verbs transport (SHARC_TRANSPORT=ib): the RDMA device, and optionally its "
            "port, as mlx5_0 or mlx5_0:1; empty: an active port on the rank's NUMA node, the "
            "node's ranks spread over them."},
    {.name = "IB_GID_INDEX",
     .dflt = "-1",
     .type = SHARC_CFG_INT,
     .min = -1,
     .max = 255,
     .offset = offsetof(sharc_tp_ib_cfg_t, gid_index),
     .doc = "The verbs transport on RoCE: the GID table entry to use; -1: the port's RoCE v2 "
            "entry with an IPv4 address (else any RoCE v2 entry)."},
    {.name = "IB_TIMEOUT",
     .dflt = "18",
     .type = SHARC_CFG_INT,
     .min = 1,
     .max = 31,
     .offset = offsetof(sharc_tp_ib_cfg_t, timeout),
     .doc = "The verbs transport: how long a QP waits for an acknowledgement before it sends "
            "again, 4.096 us * 2^value (18: about 1 s; 7 tries, so a peer that vanished fails "
            "its operations within about 8 s); as NCCL_IB_TIMEOUT. Lower detects dead peers "
            "sooner but resends more under load."},
    {.name = "IB_ZCOPY_MIN",
     .dflt = "256k",
     .type = SHARC_CFG_SIZE,
     .min = 0,
     .max = 1L << 40,
     .offset = offsetof(sharc_tp_ib_cfg_t, zcopy_min),
     .doc = "The verbs transport: messages at least this large whose send buffer is registered "
            "(sharc_mem_alloc memory, or a registration through the transport) go zero-copy: "
            "the receiver reads them with RDMA read straight into its buffer. Smaller ones, and "
            "others, are copied through registered slots. 0: never zero-copy."},
    {.name = "IB_REG_CACHE",
     .dflt = "4g",
     .type = SHARC_CFG_SIZE,
     .min = 0,
     .max = 1L << 50,
     .offset = offsetof(sharc_tp_ib_cfg_t, reg_cache),
     .doc = "The verbs transport: bytes of memory registrations kept for reuse (pinned); past "
            "it the least recently used ones not in use are released. A buffer freed with "
            "sharc_mem_free leaves the cache at once."},
};

const sharc_cfg_table_t sharc_tp_ib_cfg_table =
    SHARC_CFG_TABLE("transport: ib (verbs)", sharc_tp_ib_cfg_fields, sharc_tp_ib_cfg_t);
