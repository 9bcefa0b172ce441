/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * algorithms.h: the host algorithms (one folder per collective), their one table, the choice
 * among them, the ring engine several share, the sub-task a collective runs inside another,
 * and the host sends and receives. Each is a descriptor the engine drives (engine.h).
 */
#ifndef SHARC_COLL_ALGORITHMS_H
#define SHARC_COLL_ALGORITHMS_H

#include "../engine/engine.h"

/* ---- the one table of host algorithms (algos.c) */

/* The host algorithms of @p type in SHARC_<COLL>_ALGO's order ("auto" aside): the
 * @p index-th, or NULL past the last. */
SHARC_HIDDEN const sharc_coll_algo_t *sharc_coll_algo_at(sharc_coll_type_t type, int index);

/* The host algorithm of @p type that SHARC_<COLL>_ALGO calls @p name (any case), or NULL
 * ("auto" included). */
SHARC_HIDDEN const sharc_coll_algo_t *sharc_coll_algo_find(sharc_coll_type_t type,
                                                           const char *name);

/* Whether @p algo can run on @p nranks ranks (its constraints). */
SHARC_HIDDEN int sharc_coll_algo_fits(const sharc_coll_algo_t *algo, int nranks);

/* The knob naming each collective's algorithm ("SHARC_ALLGATHER_ALGO"), for messages. */
SHARC_HIDDEN const char *sharc_coll_algo_knob(sharc_coll_type_t type);

/* ---- selection (select.c) */

/*
 * The host algorithm for a collective: SHARC_<COLL>_ALGO's, else the tune file's, else the
 * built-in table's. Logs the choice and why at debug level.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_select(sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                              const sharc_coll_algo_t **algo_p);

/* nccl-tests' size of a collective: bytes of its larger side (alltoall: all blocks). */
SHARC_HIDDEN size_t sharc_coll_size(int nranks, const sharc_coll_args_t *a);

/*
 * A sub-task of @p task for @p args (host buffers): its algorithm selected and initialized,
 * tagged with @p task's sequence number + 1 + @p index (the parent's algorithm reserves
 * them, sharc_coll_algo_t.tags). Driven by the parent's progress, never queued (it stays
 * NEW), freed by the parent's finalize. On an error nothing is left.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_child_start(sharc_coll_task_t *task,
                                                   const sharc_coll_args_t *args, size_t index,
                                                   sharc_coll_task_t **child_p);

/* Progress a sub-task once (the parent waits for the peer it waits for); its scratch goes
 * back as soon as it is done. */
SHARC_HIDDEN sharc_status_t sharc_coll_child_progress(sharc_coll_task_t *task,
                                                      sharc_coll_task_t *child);

/* ---- the ring engine (ring.c): init, then progress until it returns something but
 * SHARC_INPROGRESS; cleanup in the algorithm's finalize */
SHARC_HIDDEN sharc_status_t sharc_coll_ring_init(sharc_coll_task_t *task, sharc_coll_ring_t *ring);
SHARC_HIDDEN sharc_status_t sharc_coll_ring_allgather(sharc_coll_task_t *task,
                                                      sharc_coll_ring_t *ring);
SHARC_HIDDEN sharc_status_t sharc_coll_ring_reduce_scatter(sharc_coll_task_t *task,
                                                           sharc_coll_ring_t *ring);
SHARC_HIDDEN void sharc_coll_ring_cleanup(sharc_coll_task_t *task, sharc_coll_ring_t *ring);

/* What an all-gather ring has received, for a caller that uses it as it arrives: @p fn is
 * called for each unit from *from_p to the first one whose receive has not completed (units
 * complete in any order; they are seen in unit order, chunk by chunk), with the block and the
 * bytes of vec it filled; *from_p moves past them. */
typedef void (*sharc_coll_ring_span_fn_t)(void *arg, int block, size_t off, size_t len);
SHARC_HIDDEN void sharc_coll_ring_arrived(const sharc_coll_ring_t *ring, size_t *from_p,
                                          sharc_coll_ring_span_fn_t fn, void *arg);

/* ---- the algorithms, one per file */
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgather_ring;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgather_recursive_doubling;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgather_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_recursive_halving;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allreduce_recursive_doubling;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatter_ring;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allreduce_ring;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_broadcast_chain;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_broadcast_binomial;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_alltoall_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_alltoall_pairwise;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_barrier_dissemination;
/* The rooted and uneven collectives: one algorithm each (the uneven ones share the even
 * ones' direct algorithms). */
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_binomial;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_gather_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_scatter_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_allgatherv_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_reduce_scatterv_direct;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_alltoallv_direct;
/* ---- the public sends and receives on host buffers (sendrecv.c) */

extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_send_host;
extern SHARC_HIDDEN const sharc_coll_algo_t sharc_coll_recv_host;

/* What every send or receive task shares, on host or CUDA buffers: its one transport request
 * (NULL: no memory), its progress (done when the request is: a receive then knows its sender
 * and size), and whether a failed one still holds its memory (its request is in flight). */
SHARC_HIDDEN sharc_tp_req_t *sharc_coll_p2p_req(sharc_coll_task_t *task);
SHARC_HIDDEN sharc_status_t sharc_coll_p2p_progress(sharc_coll_task_t *task);
SHARC_HIDDEN int sharc_coll_p2p_held(const sharc_coll_task_t *task);

#endif
