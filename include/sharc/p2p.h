/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/p2p.h: point-to-point messages on a communicator: sends and receives with tags,
 * receives from any rank, and groups of them for CUDA buffers. They use the request API of
 * sharc/coll.h (test, wait, free; NULL for req_p blocks), and the communicator's transports:
 * host memory over shm, UCX, verbs or their join; CUDA memory through NCCL.
 */
#ifndef SHARC_P2P_H
#define SHARC_P2P_H

#include <stddef.h>
#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/types.h>
#include <sharc/comm.h>
#include <sharc/coll.h>

SHARC_BEGIN_DECLS

/** A receive's peer: a message from any rank of the communicator (MPI_ANY_SOURCE). */
#define SHARC_ANY_SOURCE (-1)

/** The largest tag (tags are 0 .. SHARC_TAG_MAX: 31 bits, as a non-negative int). */
#define SHARC_TAG_MAX 0x7fffffff

/**
 * Send @p count elements of @p dtype at @p buf to rank @p peer, with @p tag.
 *
 * Matching (MPI's rules): a message matches a receive posted by @p peer that names this rank
 * (or SHARC_ANY_SOURCE) and the same tag. Messages do not overtake: two messages from one rank
 * to another with the same tag are received in the order they were sent, and a message goes
 * to the oldest receive posted that accepts it. Messages with other tags pass each other.
 * Sends and receives complete as soon as they are done, whatever was posted before them on the
 * communicator (collectives included); a wait for one never waits for another to complete.
 *
 * A send to this rank itself is a message like any other (post its receive first, or use a
 * request: as with MPI_Send, a blocking send may wait until its receive is posted). Zero
 * elements make a message of no data, which still matches a receive; it travels on the host
 * transport whatever its buffer (NULL, host or CUDA memory), as its receive does, so that
 * ranks whose empty buffers differ in kind still match.
 *
 * CUDA buffers (when the communicator has NCCL): the send is ncclSend on the communicator's
 * stream after the work queued on the stream of sharc_comm_set_cuda_stream; the peer's
 * receive must be on a CUDA buffer too and of the same count, and tags are not matched:
 * between two ranks, sends and receives on CUDA buffers match in the order they are posted
 * (NCCL's rule). Exchanges in both directions go inside sharc_p2p_group_start / end. Without
 * NCCL, CUDA buffers are refused (SHARC_ERR_UNSUPPORTED): there is no staging for them.
 *
 * @param[in]  buf    @p count elements; not written, and not to be written until the send
 *                    completes (it may be read until then); NULL only when count is 0
 * @param[in]  count  elements to send; 0 is valid
 * @param[in]  dtype  any sharc_dtype_t; the data are moved, not converted
 * @param[in]  peer   the receiving rank, 0 <= peer < size (this rank included)
 * @param[in]  tag    0 .. SHARC_TAG_MAX
 * @param[in]  comm   the communicator
 * @param[out] req_p  the request (sharc_request_test / wait / free), or NULL to block until
 *                    the send completes
 * @return SHARC_OK (posted, or done when blocking); SHARC_ERR_INVALID for a bad argument (on
 *         this rank, nothing sent; the log says which); SHARC_ERR_UNSUPPORTED (CUDA buffers
 *         without NCCL; no transport); SHARC_ERR_NOMEM; when blocking, the error that ended
 *         it: SHARC_ERR_REMOTE when a rank of the communicator is gone (a rank that dies fails
 *         the communicator: every send and receive pending on it, with any peer, fails, as
 *         its collectives do), SHARC_ERR_TIMEOUT past SHARC_TIMEOUT (the communicator is then
 *         failed too). Thread safety: as the collectives.
 */
SHARC_API sharc_status_t sharc_send(const void *buf, size_t count, sharc_dtype_t dtype, int peer,
                                    int tag, sharc_comm_h comm, sharc_request_h *req_p);

/**
 * Receive a message with @p tag from rank @p peer, or from any rank (SHARC_ANY_SOURCE), into
 * @p buf, which holds up to @p count elements of @p dtype. Matching as for sharc_send. A
 * message shorter than the buffer fills its start (sharc_request_recv_info says how much); a
 * message longer than the buffer fails this receive with SHARC_ERR_INVALID, naming both sizes,
 * and only this receive (the sender's send completes, the communicator goes on).
 *
 * A receive from any rank completes with the first message with its tag that reaches this
 * rank and no older receive takes; sharc_request_recv_info then names the sender. It is not
 * failed by a peer that ends normally; a rank that dies fails the communicator, and with it
 * every pending receive, from any rank or not. CUDA buffers: SHARC_ERR_UNSUPPORTED (NCCL
 * receives from one named peer).
 *
 * @param[out] buf    room for @p count elements; written until the receive completes; NULL
 *                    only when count is 0
 * @param[in]  count  elements the buffer holds (the most that may arrive); 0 is valid
 * @param[in]  dtype  any sharc_dtype_t
 * @param[in]  peer   the sending rank (0 <= peer < size), or SHARC_ANY_SOURCE
 * @param[in]  tag    0 .. SHARC_TAG_MAX
 * @param[in]  comm   the communicator
 * @param[out] req_p  the request, or NULL to block until the receive completes (a blocking
 *                    caller that needs the sender's rank or the size uses a request, waits,
 *                    and asks sharc_request_recv_info)
 * @return as sharc_send; a blocking receive also SHARC_ERR_INVALID for a message longer than
 *         the buffer.
 */
SHARC_API sharc_status_t sharc_recv(void *buf, size_t count, sharc_dtype_t dtype, int peer, int tag,
                                    sharc_comm_h comm, sharc_request_h *req_p);

/** What a completed receive received (MPI_Status). */
typedef struct {
    int source;   /**< the sender's rank */
    int tag;      /**< the message's tag */
    size_t count; /**< whole elements of the receive's dtype received */
    size_t bytes; /**< bytes received */
} sharc_recv_info_t;

/**
 * The sender, tag and size of a receive that completed (sharc_request_test or _wait returned
 * SHARC_OK for it). Reads the request only; call it before sharc_request_free.
 *
 * @param[in]  req     a request of sharc_recv
 * @param[out] info_p  set on success
 * @return SHARC_OK; SHARC_INPROGRESS when it has not completed (nothing set); the error that
 *         ended it; SHARC_ERR_INVALID when @p req is NULL or not a receive.
 */
SHARC_API sharc_status_t sharc_request_recv_info(sharc_request_h req, sharc_recv_info_t *info_p);

/**
 * Open a group of sends and receives on @p comm (ncclGroupStart, per communicator): sends and
 * receives on CUDA buffers posted until the matching sharc_p2p_group_end are issued together
 * then (one NCCL group), so that a rank may send to and receive from the same peers without a
 * deadlock; their requests cannot be tested or waited for before the group ends. Sends and
 * receives on host memory are posted at once, as outside a group (host transports never make
 * a post wait). A group takes one kind of memory: a send or receive with data on host memory
 * in a group that holds some on CUDA buffers, or the reverse, is SHARC_ERR_INVALID at once
 * (messages of no data belong to neither). Groups nest: the outermost end issues. Inside a
 * group, sends and receives need a request (blocking ones are SHARC_ERR_INVALID), and
 * collectives on @p comm are SHARC_ERR_INVALID. The thread that opens a group ends it.
 *
 * @return SHARC_OK; SHARC_ERR_INVALID for a NULL communicator.
 */
SHARC_API sharc_status_t sharc_p2p_group_start(sharc_comm_h comm);

/**
 * End the group opened last on @p comm; the outermost end issues what the group holds.
 *
 * @return SHARC_OK; SHARC_ERR_INVALID when no group is open; or the error that kept the
 *         group's operations from being issued (each of their requests then completes with
 *         it).
 */
SHARC_API sharc_status_t sharc_p2p_group_end(sharc_comm_h comm);

SHARC_END_DECLS

#endif
