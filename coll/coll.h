/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll.h: the top of the collective layer: what its calls do before the engine runs them
 * (the checks on the calling rank, routing to a host algorithm or the device path, the post),
 * the requests callers hold, the knobs, and a communicator's collective state from its
 * creation (where the engine gets its diagnostics) to its end. Built on the engine
 * (engine.h), the algorithms (algorithms.h), the device path (device.h) and the diagnostics
 * (diagnostics.h).
 */
#ifndef SHARC_COLL_LAYER_H
#define SHARC_COLL_LAYER_H

#include "device/device.h"
#include "diagnostics/diagnostics.h"

/* ---- the checks on the calling rank (check.c) */

/* The checks every rank makes on its own collective before communicating (each refusal
 * logged, SHARC_ERR_INVALID): dtype, op, root, sizes, NULL buffers, overlaps. */
SHARC_HIDDEN sharc_status_t sharc_coll_check(const sharc_coll_comm_t *cc,
                                             const sharc_coll_args_t *a);
/* The bytes of sendbuf this rank reads and of recvbuf it writes (a root's buffers: only on
 * the root); SHARC_ERR_INVALID (logged) when they overflow or an uneven one lacks counts. */
SHARC_HIDDEN sharc_status_t sharc_coll_bytes(const sharc_coll_comm_t *cc,
                                             const sharc_coll_args_t *a, size_t *send_p,
                                             size_t *recv_p);

/* ---- posting (post.c) */

/*
 * Post a NEW, routed task: with a progress thread in a pass, hand it over (HANDED; the pass
 * starts it as it ends, and an error it meets then reaches the caller through test and
 * wait); else take the lock, compare it across ranks (SHARC_CHECK), start it and let it
 * move. SHARC_OK: the caller holds its request. An error: the task was released, nothing
 * was sent.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_task_post(sharc_coll_task_t *task);

/* ---- the public sends and receives (sendrecv_post.c) */

/* Free what an open group holds, at the communicator's end. */
SHARC_HIDDEN void sharc_coll_group_clear(sharc_coll_comm_t *cc);

#endif
