/*
 * config_int.h: the parsed form of sharc's configuration, read by the rest of the library.
 * The table that fills it (names, defaults, docs, parsers) is in config.c.
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
    int transport;            /* sharc_cfg_transport_t */
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
    int shard_prefetch;       /* units gathered ahead */
    int shard_max_unsharded;  /* bound on gathered units; 0: derived */
    int shard_reshard_after_forward;
    /* SHARC_{ALLGATHER,REDUCE_SCATTER,ALLREDUCE,BROADCAST,ALLTOALL}_ALGO, indexed by
     * sharc_coll_type_t; 0 = auto */
    int algo[5];
    const char *tune_file; /* SHARC_TUNE_FILE: "" for none */
} sharc_cfg_t;

/* SHARC_TRANSPORT values; the registry in transport/ maps them to backends. */
typedef enum {
    SHARC_CFG_TRANSPORT_AUTO = 0,
    SHARC_CFG_TRANSPORT_SELF,
    SHARC_CFG_TRANSPORT_UCX,
    SHARC_CFG_TRANSPORT_SHM,
    SHARC_CFG_TRANSPORT_IB,
    SHARC_CFG_TRANSPORT_NCCL,
    SHARC_CFG_TRANSPORT_LAST
} sharc_cfg_transport_t;

extern SHARC_HIDDEN const char *const sharc_cfg_transport_names[];

/* SHARC_CUDA_BACKEND's values: auto, nccl, staged. */
extern SHARC_HIDDEN const char *const sharc_cfg_cuda_backends[];

/* Algorithm names each SHARC_<COLL>_ALGO accepts ("auto" first), NULL-terminated. */
extern SHARC_HIDDEN const char *const sharc_cfg_allgather_algos[];
extern SHARC_HIDDEN const char *const sharc_cfg_reduce_scatter_algos[];
extern SHARC_HIDDEN const char *const sharc_cfg_allreduce_algos[];
extern SHARC_HIDDEN const char *const sharc_cfg_broadcast_algos[];
extern SHARC_HIDDEN const char *const sharc_cfg_alltoall_algos[];

/** The parsed view of a configuration. */
SHARC_HIDDEN const sharc_cfg_t *sharc_config_parsed(sharc_config_h config);

/** A deep copy (used by contexts so the caller may free theirs). */
SHARC_HIDDEN sharc_status_t sharc_config_dup(sharc_config_h config, sharc_config_h *copy_p);

/** Warn about SHARC_* environment variables that name no knob (typos). */
SHARC_HIDDEN void sharc_config_warn_unknown_env(void);

/*
 * The value parsers, exposed for the unit tests. Each returns 0 and sets *out_p, or -1 for
 * a value it does not accept: empty, garbage, trailing characters, out of range, overflow.
 */
SHARC_HIDDEN int sharc_cfg_parse_long(const char *s, long min, long max, long *out_p);
SHARC_HIDDEN int sharc_cfg_parse_size(const char *s, size_t *out_p);
SHARC_HIDDEN int sharc_cfg_parse_time(const char *s, double *out_p);
SHARC_HIDDEN int sharc_cfg_parse_bool(const char *s, int *out_p);

#endif
