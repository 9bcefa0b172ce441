/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hybrid.h: the transport that routes each peer to a node-local or a remote transport
 * (hybrid.c). Only the registry builds one.
 */
#ifndef SHARC_TP_HYBRID_H
#define SHARC_TP_HYBRID_H

#include "transport.h"

extern SHARC_HIDDEN const sharc_tp_ops_t sharc_tp_hybrid_ops;

/**
 * Join two transports set up on the same communicator: @p local_tp serves the ranks of this
 * node, @p remote_tp the others. On success the hybrid owns both (its comm_destroy destroys
 * them); on failure the caller still does. Local, not collective.
 */
SHARC_HIDDEN sharc_status_t sharc_tp_hybrid_create(const sharc_tp_comm_params_t *params,
                                                   const sharc_tp_ops_t *local_ops,
                                                   sharc_tp_comm_t *local_tp,
                                                   const sharc_tp_ops_t *remote_ops,
                                                   sharc_tp_comm_t *remote_tp,
                                                   sharc_tp_comm_t **tp_p);

#endif
