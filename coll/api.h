/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api.h: the collective layer as the layers above it use it: the core makes a collective
 * state per communicator and posts the public collectives through it; the sharding engine
 * posts its own on its streams and asks of a request whether the device follows it and when
 * it finished. Everything else of coll/ (tasks, algorithms, the queue) stays in coll.h.
 */
#ifndef SHARC_COLL_API_H
#define SHARC_COLL_API_H

#include <stddef.h>
#include <sharc/coll.h>

#include "../base/config_int.h"
#include "../base/def_int.h"
#include "../boot/boot.h"
#include "../transport/transport.h"

typedef struct sharc_coll_comm sharc_coll_comm_t;         /* one communicator's collective state */
typedef struct sharc_coll_watchdog sharc_coll_watchdog_t; /* a context's watchdog */
typedef struct sharc_coll_exporter sharc_coll_exporter_t; /* a context's metrics exporter */

/* The collective layer's knobs (cfg.c holds their table). */
typedef struct {
    double timeout;      /* SHARC_TIMEOUT: seconds a collective may take */
    size_t chunk;        /* bytes per pipelined chunk of the ring and chain algorithms */
    size_t stage_chunk;  /* bytes per chunk of CUDA buffers staged through host memory */
    int progress_thread; /* a thread per communicator progresses its collectives */
    double wait_spin;    /* seconds a poller with nothing to do spins before it blocks */
    int wait_yield;      /* sharc_coll_wait_yield_t: whether a spinning poller yields */
    int check;           /* compare every collective's arguments across ranks first */
    /* SHARC_{ALLGATHER,REDUCE_SCATTER,ALLREDUCE,BROADCAST,ALLTOALL}_ALGO, indexed by
     * sharc_coll_type_t; 0 = auto */
    int algo[5];
    const char *tune_file;    /* SHARC_TUNE_FILE: "" for none */
    int flight_recorder;      /* entries of each communicator's flight recorder; 0: off */
    const char *flight_dir;   /* where recorders are dumped; "": nowhere */
    int flight_signal;        /* SIGUSR1 dumps every recorder */
    double stall_warn;        /* seconds a collective may wait before the ranks compare notes */
    size_t seq_start;         /* the first collective's sequence number (tests of the wrap) */
    int metrics_port;         /* SHARC_METRICS_PORT: HTTP's base port; 0: no endpoint */
    const char *metrics_addr; /* SHARC_METRICS_ADDR: the endpoint's address; "": all */
    const char *metrics_file; /* SHARC_METRICS_FILE: the textfile; "": none */
    double metrics_interval;  /* SHARC_METRICS_INTERVAL: seconds between its rewrites */
} sharc_coll_cfg_t;

/* SHARC_WAIT_YIELD's values. */
typedef enum {
    SHARC_COLL_WAIT_YIELD_AUTO, /* where the node's pollers outnumber its cores */
    SHARC_COLL_WAIT_YIELD_YES,
    SHARC_COLL_WAIT_YIELD_NO,
} sharc_coll_wait_yield_t;

extern SHARC_HIDDEN const sharc_cfg_table_t sharc_coll_cfg_table;

static inline const sharc_coll_cfg_t *sharc_coll_cfg(const sharc_cfg_t *cfg)
{
    return (const sharc_coll_cfg_t *)sharc_cfg_get(cfg, &sharc_coll_cfg_table);
}
typedef struct sharc_coll_tune sharc_coll_tune_t; /* SHARC_TUNE_FILE's rules */

/* What the collective layer needs of a communicator; everything outlives the state. */
typedef struct {
    int rank, size;
    const sharc_cfg_t *cfg;
    const sharc_coll_tune_t *tune; /* NULL: no tune file */
    sharc_boot_t *boot;            /* SHARC_CHECK compares collectives through it */
    const sharc_tp_ops_t *tp_ops;  /* the point-to-point transport, or NULL (bootstrap only) */
    sharc_tp_comm_t *tp;
    const sharc_tp_ops_t *cuda_ops; /* the CUDA backend, or NULL */
    sharc_tp_comm_t *cuda_tp;
    /* SHARC_OK, or why CUDA buffers must fail rather than be staged (SHARC_CUDA_BACKEND=nccl
     * and no NCCL) */
    sharc_status_t cuda_failed;
    const char (*hosts)[SHARC_HOST_MAX]; /* [size]: every rank's host, for messages */
    int local_size;                      /* its ranks on this rank's node */
    const char *name; /* the communicator's name, alike on every rank (its flight dumps) */
    sharc_coll_watchdog_t *watchdog; /* its context's, or NULL */
    sharc_coll_exporter_t *exporter; /* its context's metrics exporter, or NULL: metrics off */
    int local_rank;                  /* its place on its node (the metrics' labels) */
    const int *node_of; /* [size]: every rank's node (the quantized reduce-scatter's levels) */
} sharc_coll_comm_params_t;

/*
 * A context's watchdog (watchdog.c): a thread that keeps its communicators' store heartbeats
 * going, asks for and answers stall verdicts, and dumps the flight recorders on SIGUSR1
 * (SHARC_FLIGHT_SIGNAL). Communicators join it when made and leave it before their end.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_watchdog_create(const sharc_cfg_t *cfg,
                                                       sharc_coll_watchdog_t **wd_p);
/* After every communicator has left it. NULL is a no-op. */
SHARC_HIDDEN void sharc_coll_watchdog_destroy(sharc_coll_watchdog_t *wd);

/*
 * What a sharding group over a communicator reports into its metrics at each step's end
 * (shard/trace/shard_stats.c), summed over its steps; the exposition shows them as
 * sharc_shard_* with the communicator's labels. One writer (the group's caller), relaxed
 * atomic stores; read without a lock.
 */
typedef struct {
    uint64_t steps;
    uint64_t step_ns, comm_ns, exposed_ns, gather_wait_ns, engine_ns; /* nanoseconds */
    uint64_t bytes_gathered, bytes_reduced, prefetches, evictions;
    uint64_t prefetch_depth, peak_unsharded_bytes; /* the last step's (gauges) */
} sharc_coll_step_metrics_t;

/* @p cc's step figures, or NULL when metrics are off (SHARC_METRICS_PORT and _FILE unset). */
SHARC_HIDDEN sharc_coll_step_metrics_t *sharc_coll_step_metrics(sharc_coll_comm_t *cc);

/*
 * A context's metrics exporter (coll/diagnostics/metrics_export.c): SHARC_METRICS_FILE
 * rewritten every SHARC_METRICS_INTERVAL (its %r: @p rank, %l: @p local_rank) and /metrics
 * served over HTTP at SHARC_METRICS_PORT + @p local_rank. *ex_p is NULL when neither is set:
 * metrics are off, and cost nothing. A port already taken is SHARC_ERR_IO, a file name
 * without %r or %l on a node of @p local_size > 1 ranks (they would overwrite each other's)
 * SHARC_ERR_INVALID, logged.
 * Communicators join it when made (and count from then on) and leave it before their end.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_exporter_create(const sharc_cfg_t *cfg, int rank,
                                                       int local_rank, int local_size,
                                                       sharc_coll_exporter_t **ex_p);
/* After every communicator has left it. NULL is a no-op. */
SHARC_HIDDEN void sharc_coll_exporter_destroy(sharc_coll_exporter_t *ex);

/* Make a communicator's collective state (and its progress thread, if configured). */
SHARC_HIDDEN sharc_status_t sharc_coll_comm_create(const sharc_coll_comm_params_t *params,
                                                   sharc_coll_comm_t **cc_p);
/* Complete what is still in flight (a failed communicator: end it), and stop the progress
 * thread; before the transports go. NULL is a no-op. */
SHARC_HIDDEN void sharc_coll_comm_quiesce(sharc_coll_comm_t *cc);
/* Dump @p cc's flight recorder to @p dir (NULL: SHARC_FLIGHT_DIR); SHARC_ERR_INVALID when
 * neither names a directory. */
SHARC_HIDDEN sharc_status_t sharc_coll_comm_dump(sharc_coll_comm_t *cc, const char *dir);

/* Whether the communicator failed (a peer gone, a timeout, a transport error). */
SHARC_HIDDEN int sharc_coll_comm_failed(const sharc_coll_comm_t *cc);
/* Release it, after the transports (tasks that failed may have left requests with them
 * until then). NULL is a no-op. */
SHARC_HIDDEN void sharc_coll_comm_destroy(sharc_coll_comm_t *cc);

/* One collective; buffer contracts as in sharc/coll.h. */
typedef struct {
    sharc_coll_type_t type;
    const void *sendbuf;
    void *recvbuf;
    /* allgather, gather, scatter: per rank; alltoall: per block (peer); reduce_scatter: per
     * rank (recvcount); the uneven ones: the sum of counts[]; else total */
    size_t count;
    sharc_dtype_t dtype;
    sharc_op_t op;
    int root;
    void *stream; /* CUDA buffers: the stream whose queued work the collective follows */
    /* allgather, reduce_scatter: the values' wire format (SHARC_WIRE_FULL: the dtype itself,
     * what a zero-initialized args gets), values per scale (1 .. SHARC_WIRE_BLOCK_MAX with a
     * quantized wire), and for a reduce-scatter whether every hop is quantized (flat) or each
     * node first sums in full precision (0; sharc_coll_opts_t.flat) */
    sharc_wire_t wire;
    size_t block;
    int flat;
    /* the uneven collectives (allgatherv, reduce_scatterv, alltoallv): [size] element counts
     * and displacements of the blocks, one per rank: recvbuf's (reduce_scatterv: sendbuf's),
     * and alltoallv's sendbuf's in scounts / sdispls; NULL displacements: packed. A task keeps
     * its own copy, displacements filled in (sharc_coll_task_new); NULL counts: even blocks */
    const size_t *counts, *displs, *scounts, *sdispls;
} sharc_coll_args_t;

/*
 * Post a collective: the checks every rank makes, routing (host algorithm, the collective
 * backend for CUDA buffers, or staging), queueing. Blocks until it completes when @p req_p
 * is NULL.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_post(sharc_coll_comm_t *cc, const sharc_coll_args_t *args,
                                            sharc_request_h *req_p);

/* Completion lanes of a communicator (sharc_coll_post posts in lane 0). */
#define SHARC_COLL_LANES 4

/*
 * sharc_coll_post in completion lane @p lane (0 .. SHARC_COLL_LANES - 1): the collective
 * completes, as test and wait see it, once it and every collective posted before it in its
 * lane are done; lanes pass each other, so a collective need not wait for a slower one of
 * another lane posted before it. Every rank still posts the same collectives in the same
 * order on a communicator, lanes included: a lane changes when a collective is seen
 * complete, not what runs, nor how messages match.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_post_lane(sharc_coll_comm_t *cc,
                                                 const sharc_coll_args_t *args, int lane,
                                                 sharc_request_h *req_p);

/* One send or receive of the public point-to-point calls (sharc/p2p.h's contract). */
typedef struct {
    int is_send;
    void *buf; /* a send's is only read */
    size_t count;
    sharc_dtype_t dtype;
    int peer; /* a receive: or SHARC_ANY_SOURCE */
    int tag;
    void *stream; /* CUDA buffers: the stream whose queued work it follows */
    int blocking; /* the caller will wait for it at once (refused inside a group) */
} sharc_coll_p2p_args_t;

/*
 * Post a send or a receive: the checks on this rank, routing (the point-to-point transport;
 * CUDA buffers through the CUDA backend), the task, its request in *req_p. It
 * completes as soon as it is done, not in order with what was posted before it. (A blocking
 * call is the caller's wait and free after it.)
 */
SHARC_HIDDEN sharc_status_t sharc_coll_p2p_post(sharc_coll_comm_t *cc,
                                                const sharc_coll_p2p_args_t *args,
                                                sharc_request_h *req_p);

/* sharc_p2p_group_start / end (sharc/p2p.h) on @p cc. */
SHARC_HIDDEN sharc_status_t sharc_coll_group_start(sharc_coll_comm_t *cc);
SHARC_HIDDEN sharc_status_t sharc_coll_group_end(sharc_coll_comm_t *cc);

/* What the layers above ask of a request (request.c). */

/* Whether the device follows @p req: it runs on the CUDA backend's stream, and a
 * stream may wait for it (sharc_coll_request_wait_stream) without the host. */
SHARC_HIDDEN int sharc_coll_request_on_device(sharc_request_h req);

/* When @p req's collective finished, on sharc_time_now's clock (0 before it has). */
SHARC_HIDDEN double sharc_coll_request_done_time(sharc_request_h req);

/* When a request's collective first ran (its algorithm's first progress), finished, and
 * became complete (it and every collective posted before it in its lane are done: what a
 * test or wait sees), on sharc_time_now's clock; 0 for what has not happened yet. Host
 * tasks only: a collective of the device backend finishes on the device. */
typedef struct {
    double start, done, complete;
} sharc_coll_request_times_t;

/* @p req's times (read after a test or wait saw it complete, or they may be 0). */
SHARC_HIDDEN void sharc_coll_request_times(sharc_request_h req,
                                           sharc_coll_request_times_t *times_p);

/* Whether a stream waits for @p req on the device, so that freeing it need not wait. */
SHARC_HIDDEN int sharc_coll_request_stream_waited(sharc_request_h req);

/* Let @p stream (a cudaStream_t) wait for @p req on the device; for host tasks, wait on the
 * host. sharc_request_wait_stream (sharc/sharc_cuda.h) is this, typed. */
SHARC_HIDDEN sharc_status_t sharc_coll_request_wait_stream(sharc_request_h req, void *stream);

/* Device memory for collectives on CUDA buffers (cuda_backend.c): from the CUDA backend
 * and registered with it where it can (NCCL's zero-copy collectives), else plain device
 * memory. All or nothing: NCCL's behaviour is undefined when some ranks pass registered
 * buffers to a collective and others do not, so only "unsupported" (alike on every rank)
 * falls back; any other failure is an error (logged). Set only on success. */
typedef struct {
    void *ptr;
    sharc_tp_mem_t *reg; /* the backend's registration, or NULL */
    int backend;         /* from the backend's allocator (else cudaMalloc's) */
} sharc_coll_devmem_t;
SHARC_HIDDEN sharc_status_t sharc_coll_devmem_alloc(sharc_coll_comm_t *cc, size_t bytes,
                                                    sharc_coll_devmem_t *mem_p);
/* Back to where it came from, deregistered first. */
SHARC_HIDDEN void sharc_coll_devmem_free(sharc_coll_comm_t *cc, const sharc_coll_devmem_t *mem);

/*
 * The @p index-th value SHARC_<COLL>_ALGO accepts for collective @p coll (an int for the
 * configuration table): "auto" first, then the algorithms of the one table; NULL past them.
 */
SHARC_HIDDEN const char *sharc_coll_algo_choice(int coll, int index);

/*
 * Read the tune file at @p path (tune.c, which describes the format). Any fault is logged
 * with the file, line and cause and gives SHARC_ERR_INVALID; *tune_p is set only on success.
 */
SHARC_HIDDEN sharc_status_t sharc_coll_tune_load(const char *path, sharc_coll_tune_t **tune_p);
SHARC_HIDDEN void sharc_coll_tune_destroy(sharc_coll_tune_t *tune); /* NULL: no-op */

#endif
