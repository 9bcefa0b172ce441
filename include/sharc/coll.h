/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/coll.h: collectives on a communicator. Every collective is nonblocking: the call
 * posts it and returns a request, which sharc_request_test / sharc_request_wait complete and
 * sharc_request_free releases. Passing NULL for req_p makes the call blocking instead.
 * Several collectives may be in flight on one communicator at once; they complete in the
 * order they were posted. Every rank of the communicator must post the same collectives in
 * the same order, with the same count, dtype, op and root.
 *
 * Buffers are host memory here (device memory comes with the CUDA backend). Any count,
 * including 0, and any alignment is accepted. The buffers must not be touched until the
 * request completes.
 */
#ifndef SHARC_COLL_H
#define SHARC_COLL_H

#include <stddef.h>
#include <sharc/def.h>
#include <sharc/status.h>
#include <sharc/types.h>
#include <sharc/comm.h>

SHARC_BEGIN_DECLS

typedef struct sharc_request *sharc_request_h;

/**
 * All-gather: rank i's @p count elements at @p sendbuf land at recvbuf + i * count on every
 * rank. recvbuf holds size * count elements. In place when sendbuf == recvbuf + rank * count
 * (as in NCCL); any other overlap is SHARC_ERR_INVALID.
 */
SHARC_API sharc_status_t sharc_allgather(const void *sendbuf, void *recvbuf, size_t count,
                                         sharc_dtype_t dtype, sharc_comm_h comm,
                                         sharc_request_h *req_p);

/**
 * Reduce-scatter: sendbuf holds size * recvcount elements; block i (elements
 * i * recvcount ..) of every rank's sendbuf is reduced with @p op into rank i's @p recvbuf
 * (recvcount elements). In place when recvbuf == sendbuf + rank * recvcount.
 */
SHARC_API sharc_status_t sharc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                              sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                                              sharc_request_h *req_p);

/** Which fields of sharc_coll_opts_t are set. */
enum {
    SHARC_COLL_OPT_WIRE = 1u << 0,  /**< wire */
    SHARC_COLL_OPT_BLOCK = 1u << 1, /**< block */
    SHARC_COLL_OPT_FLAT = 1u << 2,  /**< flat */
};

/**
 * Options of sharc_allgather_ex and sharc_reduce_scatter_ex; only the fields named in
 * field_mask are read, the rest default. NULL options are all defaults (the plain call).
 */
typedef struct {
    unsigned field_mask;
    /** How the values travel (sharc/types.h): SHARC_WIRE_FULL (default), _INT8 or _FP8. */
    sharc_wire_t wire;
    /** Values per scale of a quantized wire, 1 .. SHARC_WIRE_BLOCK_MAX (SHARC_WIRE_BLOCK). */
    size_t block;
    /**
     * Reduce-scatter over a quantized wire: 0 (default): the ranks of each node first
     * reduce-scatter among themselves in full precision, and only the hops between nodes are
     * quantized (ZeRO++'s hierarchical qgZ), so on one node the result is exact; 1: every
     * rank's blocks are quantized for every other rank (one all-to-all).
     */
    int flat;
} sharc_coll_opts_t;

/**
 * All-gather with options (as sharc_allgather when @p opts is NULL or its wire is
 * SHARC_WIRE_FULL). Over a quantized wire (dtype f32, f16 or bf16): each rank quantizes its
 * block once, the codes and scales are all-gathered (sharc_wire_size bytes per rank instead
 * of count * the dtype's size), and every rank dequantizes every block, its own included, so
 * that all ranks hold the same values, each within sharc_wire_t's bound of the original
 * (ZeRO++'s qwZ, FSDP2's float8 all-gather). Buffers and in-place rule as sharc_allgather.
 * Host memory; on CUDA buffers the CUDA backend (NCCL) moves the bytes and the
 * quantizers run on the communicator's stream (SHARC_ERR_UNSUPPORTED without a backend).
 * @return as sharc_allgather; SHARC_ERR_INVALID for an unknown wire or a block out of range,
 *         SHARC_ERR_UNSUPPORTED for a quantized wire with another dtype (the caller may fall
 *         back to SHARC_WIRE_FULL); all on the calling rank, before anything is sent.
 */
SHARC_API sharc_status_t sharc_allgather_ex(const void *sendbuf, void *recvbuf, size_t count,
                                            sharc_dtype_t dtype, const sharc_coll_opts_t *opts,
                                            sharc_comm_h comm, sharc_request_h *req_p);

/**
 * Reduce-scatter with options (as sharc_reduce_scatter when @p opts is NULL or its wire is
 * SHARC_WIRE_FULL). Over a quantized wire (dtype f32, f16 or bf16; op SUM or AVG) as ZeRO++'s
 * qgZ: blocks are quantized once per hop, exchanged by all-to-all, dequantized, and summed
 * locally in f32 with this rank's own block at full precision, then rounded once into the
 * dtype (AVG: scaled by 1 / size once). With opts->flat 0, each node first sums at full
 * precision (see sharc_coll_opts_t.flat). Each element is within n_q * sharc_wire_t's
 * bound of the full-precision result, n_q being the quantized contributions (the other
 * nodes' partial sums, or the other ranks' blocks when flat). Buffers and in-place rule as
 * sharc_reduce_scatter. Host memory; on CUDA buffers (NCCL) always flat.
 * @return as sharc_allgather_ex; SHARC_ERR_UNSUPPORTED also for another op.
 */
SHARC_API sharc_status_t sharc_reduce_scatter_ex(const void *sendbuf, void *recvbuf,
                                                 size_t recvcount, sharc_dtype_t dtype,
                                                 sharc_op_t op, const sharc_coll_opts_t *opts,
                                                 sharc_comm_h comm, sharc_request_h *req_p);

/**
 * All-reduce: every rank's @p count elements are reduced with @p op and the result lands in
 * every rank's @p recvbuf. Every rank gets the same bits. In place when sendbuf == recvbuf.
 */
SHARC_API sharc_status_t sharc_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                         sharc_dtype_t dtype, sharc_op_t op, sharc_comm_h comm,
                                         sharc_request_h *req_p);

/**
 * Broadcast: @p root's sendbuf (count elements) lands in every rank's recvbuf. sendbuf is
 * read on the root only. In place when sendbuf == recvbuf on the root.
 */
SHARC_API sharc_status_t sharc_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                         sharc_dtype_t dtype, int root, sharc_comm_h comm,
                                         sharc_request_h *req_p);

/**
 * All-to-all: sendbuf and recvbuf each hold size * @p count elements, one block of @p count
 * per rank. Block j of rank i's sendbuf (elements j * count ..) lands in block i of rank j's
 * recvbuf (as ncclAlltoAll); a rank's own block is copied locally. In place when
 * sendbuf == recvbuf: every block is sent before the block that replaces it is written (sharc
 * copies the outgoing blocks to scratch: the whole buffer for small messages, a few blocks
 * otherwise); any other overlap is SHARC_ERR_INVALID.
 *
 * @param[in]  sendbuf  size * count elements; block j goes to rank j
 * @param[out] recvbuf  size * count elements; block i comes from rank i
 * @param[in]  count    elements per block (per peer); 0 is valid
 * @param[in]  dtype    any sharc_dtype_t (the data are moved, not combined)
 * @param[in]  comm     the communicator; every rank posts the same count and dtype
 * @param[out] req_p    the request, or NULL to block until the collective completes
 * @return SHARC_OK (posted, or done when blocking); SHARC_ERR_INVALID for a bad argument, on
 *         the calling rank alone and before any communication; SHARC_ERR_NOMEM; or the error
 *         that ended the collective (a blocking call).
 */
SHARC_API sharc_status_t sharc_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                                        sharc_dtype_t dtype, sharc_comm_h comm,
                                        sharc_request_h *req_p);

/** Completes once every rank has posted it. */
SHARC_API sharc_status_t sharc_barrier(sharc_comm_h comm, sharc_request_h *req_p);

/* ---- rooted collectives ------------------------------------------------------------------ */

/**
 * Reduce: every rank's @p count elements are reduced with @p op (AVG: the sum over the ranks
 * divided by their number) into @p root's @p recvbuf (MPI_Reduce, ncclReduce). recvbuf is
 * written on the root only and may be NULL elsewhere. In place on the root when
 * sendbuf == recvbuf. The reduction's order is fixed by the tree (a binomial tree on the host),
 * so the root gets the same bits every time for the same inputs.
 *
 * @param[in]  sendbuf  @p count elements, on every rank
 * @param[out] recvbuf  @p count elements on the root; ignored elsewhere
 * @param[in]  root     0 <= root < size, the same on every rank
 * @return as sharc_allreduce; SHARC_ERR_INVALID for a root out of range, an op the dtype
 *         lacks, a NULL buffer with a nonzero count (on the rank that passes it).
 */
SHARC_API sharc_status_t sharc_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                      sharc_dtype_t dtype, sharc_op_t op, int root,
                                      sharc_comm_h comm, sharc_request_h *req_p);

/**
 * Gather: rank i's @p count elements at @p sendbuf land at recvbuf + i * count on @p root
 * (MPI_Gather). recvbuf (size * count elements) is written on the root only and may be NULL
 * elsewhere. In place on the root when sendbuf == recvbuf + root * count.
 */
SHARC_API sharc_status_t sharc_gather(const void *sendbuf, void *recvbuf, size_t count,
                                      sharc_dtype_t dtype, int root, sharc_comm_h comm,
                                      sharc_request_h *req_p);

/**
 * Scatter: block i of @p root's sendbuf (size * count elements; block i at i * count) lands in
 * rank i's @p recvbuf (@p count elements) (MPI_Scatter). sendbuf is read on the root only and
 * may be NULL elsewhere. In place on the root when recvbuf == sendbuf + root * count.
 */
SHARC_API sharc_status_t sharc_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                       sharc_dtype_t dtype, int root, sharc_comm_h comm,
                                       sharc_request_h *req_p);

/* ---- uneven collectives: a count per rank -------------------------------------------------- */

/**
 * All-gather of blocks of different sizes (MPI_Allgatherv): rank i's @p recvcounts[i] elements
 * at its sendbuf land at recvbuf + displs[i] on every rank. Every rank passes the same
 * @p recvcounts and @p displs; sharc copies both, so they may change once the call returns.
 * In place when sendbuf == recvbuf + displs[rank]. The blocks of recvbuf may not overlap.
 *
 * @param[in]  sendbuf     recvcounts[rank] elements
 * @param[out] recvbuf     room for every block: max over i of displs[i] + recvcounts[i]
 * @param[in]  recvcounts  [size] elements per rank (0 is valid)
 * @param[in]  displs      [size] where each rank's block starts in recvbuf, in elements; NULL:
 *                         the blocks one after another from 0
 * @return as sharc_allgather; SHARC_ERR_INVALID also for NULL recvcounts, overlapping blocks.
 */
SHARC_API sharc_status_t sharc_allgatherv(const void *sendbuf, void *recvbuf,
                                          const size_t *recvcounts, const size_t *displs,
                                          sharc_dtype_t dtype, sharc_comm_h comm,
                                          sharc_request_h *req_p);

/**
 * Reduce-scatter of blocks of different sizes (MPI_Reduce_scatter): sendbuf holds the sum of
 * @p recvcounts elements, block i (recvcounts[i] elements) after blocks 0 .. i-1; block i of
 * every rank's sendbuf is reduced with @p op (AVG: divided by size) into rank i's recvbuf
 * (recvcounts[i] elements). Every rank passes the same @p recvcounts (copied by sharc). In
 * place when recvbuf == sendbuf + (recvcounts[0] + .. + recvcounts[rank-1]). Within a block
 * the ranks' values are reduced in rank order, the same on every rank.
 */
SHARC_API sharc_status_t sharc_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                               const size_t *recvcounts, sharc_dtype_t dtype,
                                               sharc_op_t op, sharc_comm_h comm,
                                               sharc_request_h *req_p);

/**
 * All-to-all of blocks of different sizes (MPI_Alltoallv): the @p sendcounts[j] elements at
 * sendbuf + sdispls[j] go to rank j, which receives them at its recvbuf + rdispls[i] (i this
 * rank), @p recvcounts[i] elements: sendcounts[j] on rank i equals recvcounts[i] on rank j (a
 * longer message fails the receive, naming both sizes). The arrays are copied by sharc; NULL
 * displacements: the blocks one after another from 0. Not in place: sendbuf and recvbuf may
 * not overlap, nor the blocks of recvbuf each other.
 */
SHARC_API sharc_status_t sharc_alltoallv(const void *sendbuf, const size_t *sendcounts,
                                         const size_t *sdispls, void *recvbuf,
                                         const size_t *recvcounts, const size_t *rdispls,
                                         sharc_dtype_t dtype, sharc_comm_h comm,
                                         sharc_request_h *req_p);

/**
 * Progress the communicator and report the request: SHARC_INPROGRESS, SHARC_OK, or the
 * error that ended it. Does not block. Thread safety: one thread per request.
 */
SHARC_API sharc_status_t sharc_request_test(sharc_request_h req);

/**
 * Progress until the request completes, or until SHARC_TIMEOUT (then SHARC_ERR_TIMEOUT,
 * naming the collective and the peers still awaited, and the communicator is failed).
 */
SHARC_API sharc_status_t sharc_request_wait(sharc_request_h req);

/**
 * Wait until one of @p n requests completes (MPI_Waitany): a binding that completes the
 * futures of many requests, in whatever order they finish, with one thread.
 *
 * @param[in]  reqs     @p n requests of one communicator (collectives, sends and receives);
 *                      NULL entries are skipped. None is freed or changed.
 * @param[in]  n        entries of @p reqs
 * @param[in]  timeout  seconds this call waits at most (0: progress once and look), or
 *                      negative for no bound of its own. Either way a request in flight
 *                      longer than SHARC_TIMEOUT since it was posted ends the wait as in
 *                      sharc_request_wait.
 * @param[out] index_p  the index of a complete request (test, wait or free it for its
 *                      outcome); on SHARC_ERR_TIMEOUT the one that timed out
 * @return SHARC_OK (*index_p complete, successfully or not); SHARC_INPROGRESS when none
 *         completed within @p timeout; SHARC_ERR_TIMEOUT when one ran past SHARC_TIMEOUT (the
 *         communicator is then failed, as by sharc_request_wait); SHARC_ERR_INVALID for no
 *         request, requests of several communicators, one still held in an open group, or a
 *         NULL @p index_p. Thread safety: as sharc_request_wait, for each request.
 */
SHARC_API sharc_status_t sharc_request_wait_any(const sharc_request_h *reqs, size_t n,
                                                double timeout, size_t *index_p);

/**
 * Release a request. A request still in progress is completed first (as by
 * sharc_request_wait) so that its buffers are no longer used. NULL is a no-op. Free every
 * request of a communicator before destroying it.
 */
SHARC_API void sharc_request_free(sharc_request_h req);

/* ---- what the collectives are and which algorithms run them (for tools and bindings) */

/** The collectives, as selection, tune files and sharc-perf name them. */
typedef enum {
    SHARC_COLL_ALLGATHER = 0,
    SHARC_COLL_REDUCE_SCATTER,
    SHARC_COLL_ALLREDUCE,
    SHARC_COLL_BROADCAST,
    SHARC_COLL_ALLTOALL,
    SHARC_COLL_BARRIER,
    SHARC_COLL_REDUCE,
    SHARC_COLL_GATHER,
    SHARC_COLL_SCATTER,
    SHARC_COLL_ALLGATHERV,
    SHARC_COLL_REDUCE_SCATTERV,
    SHARC_COLL_ALLTOALLV,
    SHARC_COLL_LAST
} sharc_coll_type_t;

/** A collective's name ("allgather", "reduce_scatter", ...), or NULL for no collective. */
SHARC_API const char *sharc_coll_name(sharc_coll_type_t coll);

/** SHARC_COLL_ALGO_POW2: the algorithm needs a power-of-two rank count. */
#define SHARC_COLL_ALGO_POW2 (1u << 0)

/** One host algorithm of a collective. */
typedef struct {
    const char *name; /**< as SHARC_<COLL>_ALGO and tune files spell it */
    unsigned flags;   /**< SHARC_COLL_ALGO_* */
} sharc_coll_algo_info_t;

/**
 * The host algorithms of @p coll, one at a time: the @p index-th (from 0), in the order
 * SHARC_<COLL>_ALGO lists them. Constant data; thread-safe.
 * @return the algorithm, or NULL past the last one (and for the barrier, which has one
 *         algorithm and no knob).
 */
SHARC_API const sharc_coll_algo_info_t *sharc_coll_algo(sharc_coll_type_t coll, int index);

SHARC_END_DECLS

#endif
