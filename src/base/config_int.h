/*
 * config_int.h: the parsed form of sharc's configuration, read by every layer, and the value
 * parsers (parse.c). The table that fills it (names, defaults, docs) and the configuration
 * object are the core's (core/config.c).
 */
#ifndef SHARC_CONFIG_INT_H
#define SHARC_CONFIG_INT_H

#include <stddef.h>
#include <sharc/config.h>

#include "def_int.h"

/* Every knob, parsed. Strings point into the owning sharc_config's storage. */
typedef struct {
    int log_level;            /* sharc_log_level_t */
    unsigned log_subsys;      /* bit mask of sharc_subsys_t */
    const char *log_file;     /* "" for stderr */
    int bootstrap;            /* sharc_bootstrap_t */
    double bootstrap_timeout; /* seconds */
    const char *bootstrap_token;
    const char *bootstrap_bind_addr;
    int bootstrap_port;       /* 0: derive */
    size_t bootstrap_max_msg; /* bytes */
    int transport;            /* index into sharc_tp_names (transport/transport.h); 0: auto */
    int shm_cma;              /* the shm transport may copy with process_vm_readv */
    const char *ib_hca;       /* verbs: device[:port], "" for the first active */
    int ib_gid_index;         /* verbs on RoCE: GID index, -1 for automatic */
    int ib_timeout;           /* verbs: QP ACK timeout, 4.096 us * 2^ib_timeout per try */
    size_t ib_zcopy_min;      /* verbs: messages this large go zero-copy (0: never) */
    size_t ib_reg_cache;      /* verbs: bytes the registration cache keeps pinned */
    double timeout;           /* seconds a collective may take */
    size_t coll_chunk;        /* bytes per pipelined chunk of the ring and chain algorithms */
    size_t stage_chunk;       /* bytes per chunk of CUDA buffers staged through host memory */
    int cuda_backend;         /* SHARC_CUDA_BACKEND: 0 auto, 1 nccl, 2 staged */
    int progress_thread;      /* a thread per communicator progresses its collectives */
    int check;                /* compare every collective's arguments across ranks first */
    size_t shard_bucket;      /* bytes per automatically packed unit */
    int shard_prefetch;       /* units gathered ahead; -1: auto */
    int shard_max_unsharded;  /* bound on gathered units; 0: derived */
    int shard_reshard_after_forward;
    int shard_reduce_queue;  /* reductions through a communicator of their own */
    const char *shard_trace; /* SHARC_SHARD_TRACE: the trace file, "" for none */
    int shard_trace_steps;   /* steps the trace keeps */
    /* SHARC_{ALLGATHER,REDUCE_SCATTER,ALLREDUCE,BROADCAST,ALLTOALL}_ALGO, indexed by
     * sharc_coll_type_t; 0 = auto */
    int algo[5];
    const char *tune_file; /* SHARC_TUNE_FILE: "" for none */
} sharc_cfg_t;

/*
 * The value parsers (parse.c), for the knob table (core/config.c) and for whoever reads
 * numbers of its own (the launcher's variables, the tune file). Each returns 0 and sets
 * *out_p, or -1 for a value it does not accept: empty, garbage, trailing characters, out of
 * range, overflow.
 */
SHARC_HIDDEN int sharc_cfg_parse_long(const char *s, long min, long max, long *out_p);
SHARC_HIDDEN int sharc_cfg_parse_size(const char *s, size_t *out_p);
SHARC_HIDDEN int sharc_cfg_parse_time(const char *s, double *out_p);
SHARC_HIDDEN int sharc_cfg_parse_bool(const char *s, int *out_p);

#endif
