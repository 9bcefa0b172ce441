/*
 * config.c: the one table of sharc's knobs (SHARC_<NAME>), their parsers and the
 * configuration object. Add a knob here and in sharc_cfg_t; nothing else reads the
 * environment.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sharc/sharc.h>

#include "../coll/api.h"
#include "../transport/transport.h"
#include "../src/base/config_int.h"
#include "../src/base/log.h"
#include "../src/base/util.h"
#include "context.h"

typedef enum {
    SHARC_CFG_INT,    /* decimal integer within [min, max] */
    SHARC_CFG_AUTO,   /* as INT, or "auto" (stored as -1) */
    SHARC_CFG_SIZE,   /* bytes, with an optional k/m/g/t suffix (powers of 1024) */
    SHARC_CFG_TIME,   /* seconds, with an optional ms/s/m/h suffix */
    SHARC_CFG_BOOL,   /* y/yes/1/on/true or n/no/0/off/false */
    SHARC_CFG_ENUM,   /* one of names[] */
    SHARC_CFG_STRING, /* any text */
    SHARC_CFG_SUBSYS, /* a log subsystem list */
} sharc_cfg_type_t;

typedef struct {
    const char *name; /* without the SHARC_ prefix */
    const char *dflt;
    const char *doc;
    sharc_cfg_type_t type;
    size_t offset;            /* into sharc_cfg_t */
    const char *const *names; /* ENUM: its values, */
    int nnames;
    long min, max;
    /* or, for values another layer owns (coll's algorithm table), the @p i-th of @p arg */
    const char *(*choice)(int arg, int i);
    int arg;
} sharc_cfg_field_t;

static const char *const sharc_cfg_cuda_backends[] = {
    [SHARC_CUDA_BACKEND_AUTO] = "auto",
    [SHARC_CUDA_BACKEND_NCCL] = "nccl",
    [SHARC_CUDA_BACKEND_STAGED] = "staged",
};

#define SHARC_CFG_OFF(_field) offsetof(sharc_cfg_t, _field)

static const sharc_cfg_field_t sharc_cfg_table[] = {
    {"LOG_LEVEL", "warn", "Log level: error, warn, info, debug or trace.", SHARC_CFG_ENUM,
     SHARC_CFG_OFF(log_level), sharc_log_level_names, SHARC_LOG_LAST, 0, 0, NULL, 0},
    {"LOG_SUBSYS", "all",
     "Subsystems to log: all, a list of core,boot,tp,coll,shard,topo,kern,perf, or ^list for "
     "all but those. Errors are always logged.",
     SHARC_CFG_SUBSYS, SHARC_CFG_OFF(log_subsys), NULL, 0, 0, 0, NULL, 0},
    {"LOG_FILE", "",
     "Log to this file instead of stderr; %r is replaced by the rank, %h by the host name, %p "
     "by the process id (e.g. sharc.%h.%r.log).",
     SHARC_CFG_STRING, SHARC_CFG_OFF(log_file), NULL, 0, 0, 0, NULL, 0},
    {"BOOTSTRAP", "auto",
     "How ranks find each other: auto (mpirun, then torchrun-style env, then Slurm, else a "
     "single process), mpi, env, slurm, explicit or single.",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(bootstrap), sharc_bootstrap_names, SHARC_BOOTSTRAP_LAST, 0, 0,
     NULL, 0},
    {"BOOTSTRAP_TIMEOUT", "120s",
     "Longest wait for any bootstrap step (other ranks arriving, the store answering), e.g. "
     "500ms, 30s, 2m.",
     SHARC_CFG_TIME, SHARC_CFG_OFF(bootstrap_timeout), NULL, 0, 0, 0, NULL, 0},
    {"BOOTSTRAP_TOKEN", "",
     "Job token every rank presents to the store; empty: derived from the launch environment "
     "(MASTER_ADDR/PORT, WORLD_SIZE, run or job id). Guards against stray and stale clients; "
     "set a secret value to also keep out other users.",
     SHARC_CFG_STRING, SHARC_CFG_OFF(bootstrap_token), NULL, 0, 0, 0, NULL, 0},
    {"BOOTSTRAP_BIND_ADDR", "",
     "Address rank 0's store listens on: empty for the store address itself (MASTER_ADDR), "
     "* for every interface, or an address.",
     SHARC_CFG_STRING, SHARC_CFG_OFF(bootstrap_bind_addr), NULL, 0, 0, 0, NULL, 0},
    {"BOOTSTRAP_PORT", "0",
     "Store port; 0 derives it: MASTER_PORT (MASTER_PORT+1 under torchrun, whose agent holds "
     "MASTER_PORT), or 12000 + SLURM_JOB_ID % 20000 under Slurm without MASTER_PORT.",
     SHARC_CFG_INT, SHARC_CFG_OFF(bootstrap_port), NULL, 0, 0, 65535, NULL, 0},
    {"BOOTSTRAP_MAX_MSG", "64m",
     "Largest message the store accepts; bigger ones are rejected as garbage.", SHARC_CFG_SIZE,
     SHARC_CFG_OFF(bootstrap_max_msg), NULL, 0, 4096, 1L << 30, NULL, 0},
    {"TRANSPORT", "auto",
     "Data transport of communicators: auto, self, ucx, shm, ib or nccl (auto: self for one "
     "rank; shm between ranks of one node and ucx between nodes; ucx alone where shm cannot "
     "attach).",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(transport), sharc_tp_names, SHARC_TP_NAMES, 0, 0, NULL, 0},
    {"SHM_CMA", "yes",
     "Let the shm transport copy large messages straight from the sender's memory with "
     "process_vm_readv (one copy). It makes the process readable by other processes of its "
     "user (PR_SET_PTRACER), as Open MPI does; no streams every message through the shared "
     "FIFO (two copies).",
     SHARC_CFG_BOOL, SHARC_CFG_OFF(shm_cma), NULL, 0, 0, 0, NULL, 0},
    {"TIMEOUT", "10m",
     "Longest wait for a collective; past it the wait fails with a timeout naming the peer it "
     "waited for, and the communicator is failed.",
     SHARC_CFG_TIME, SHARC_CFG_OFF(timeout), NULL, 0, 0, 0, NULL, 0},
    {"IB_HCA", "",
     "The verbs transport (SHARC_TRANSPORT=ib): the RDMA device, and optionally its port, as "
     "mlx5_0 or mlx5_0:1; empty: an active port on the rank's NUMA node, the node's ranks "
     "spread over them.",
     SHARC_CFG_STRING, SHARC_CFG_OFF(ib_hca), NULL, 0, 0, 0, NULL, 0},
    {"IB_GID_INDEX", "-1",
     "The verbs transport on RoCE: the GID table entry to use; -1: the port's RoCE v2 entry "
     "with an IPv4 address (else any RoCE v2 entry).",
     SHARC_CFG_INT, SHARC_CFG_OFF(ib_gid_index), NULL, 0, -1, 255, NULL, 0},
    {"IB_TIMEOUT", "18",
     "The verbs transport: how long a QP waits for an acknowledgement before it sends again, "
     "4.096 us * 2^value (18: about 1 s; 7 tries, so a peer that vanished fails its "
     "operations within about 8 s); as NCCL_IB_TIMEOUT. Lower detects dead peers sooner but "
     "resends more under load.",
     SHARC_CFG_INT, SHARC_CFG_OFF(ib_timeout), NULL, 0, 1, 31, NULL, 0},
    {"IB_ZCOPY_MIN", "256k",
     "The verbs transport: messages at least this large whose send buffer is registered "
     "(sharc_mem_alloc memory, or a registration through the transport) go zero-copy: the "
     "receiver reads them with RDMA read straight into its buffer. Smaller ones, and others, "
     "are copied through registered slots. 0: never zero-copy.",
     SHARC_CFG_SIZE, SHARC_CFG_OFF(ib_zcopy_min), NULL, 0, 0, 1L << 40, NULL, 0},
    {"IB_REG_CACHE", "4g",
     "The verbs transport: bytes of memory registrations kept for reuse (pinned); past it the "
     "least recently used ones not in use are released. A buffer freed with sharc_mem_free "
     "leaves the cache at once.",
     SHARC_CFG_SIZE, SHARC_CFG_OFF(ib_reg_cache), NULL, 0, 0, 1L << 50, NULL, 0},
    {"COLL_CHUNK", "1m",
     "Bytes per chunk of the pipelined ring and chain algorithms: smaller starts forwarding "
     "sooner, larger costs fewer messages.",
     SHARC_CFG_SIZE, SHARC_CFG_OFF(coll_chunk), NULL, 0, 64, 1L << 30, NULL, 0},
    {"CUDA_BACKEND", "auto",
     "Collectives on CUDA buffers: auto (NCCL where it can run, else staged), nccl (NCCL or "
     "fail), or staged (through page-locked host memory over the host transports).",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(cuda_backend), sharc_cfg_cuda_backends, 3, 0, 0, NULL, 0},
    {"STAGE_CHUNK", "4m",
     "CUDA buffers of collectives that cannot run on the GPU (no NCCL, or alltoall) move "
     "through page-locked host memory in chunks of this many bytes per rank: the copy of one "
     "chunk overlaps the host collective of the one before.",
     SHARC_CFG_SIZE, SHARC_CFG_OFF(stage_chunk), NULL, 0, 4096, 1L << 30, NULL, 0},
    {"PROGRESS_THREAD", "no",
     "Progress collectives from a thread per communicator, so that a posted collective "
     "completes while the caller computes (costs a core while collectives are in flight).",
     SHARC_CFG_BOOL, SHARC_CFG_OFF(progress_thread), NULL, 0, 0, 0, NULL, 0},
    {"CHECK", "no",
     "Before each collective, compare its kind, dtype, op, count, root and sequence number "
     "across ranks (through the bootstrap: slow, for debugging); a mismatch fails every rank "
     "with a message naming the ranks instead of hanging or corrupting data.",
     SHARC_CFG_BOOL, SHARC_CFG_OFF(check), NULL, 0, 0, 0, NULL, 0},
    {"SHARD_BUCKET", "64m",
     "Sharding engine: bytes of gathered parameters per unit when units are packed "
     "automatically (a larger parameter gets a unit of its own).",
     SHARC_CFG_SIZE, SHARC_CFG_OFF(shard_bucket), NULL, 0, 4096, 1L << 40, NULL, 0},
    {"SHARD_PREFETCH", "1",
     "Sharding engine: units gathered ahead of the one in use, along the schedule recorded in "
     "the first step (0: gather each unit when it begins); auto: start at 1 and go deeper "
     "while the caller waits for gathers and the bound on unsharded units "
     "(SHARC_SHARD_MAX_UNSHARDED) admits it, decided alike on every rank from the waits the "
     "ranks exchange at each step's end.",
     SHARC_CFG_AUTO, SHARC_CFG_OFF(shard_prefetch), NULL, 0, 0, 1024, NULL, 0},
    {"SHARD_MAX_UNSHARDED", "0",
     "Sharding engine: most units with gathered parameters at once, the bound on unsharded "
     "memory; 0: prefetch + 1 when units are resharded after forward (4 with prefetch auto), "
     "else every unit.",
     SHARC_CFG_INT, SHARC_CFG_OFF(shard_max_unsharded), NULL, 0, 0, 1 << 20, NULL, 0},
    {"SHARD_RESHARD_AFTER_FORWARD", "yes",
     "Sharding engine: release a unit's gathered parameters after its forward and gather them "
     "again for its backward (no: keep them, trading memory for one all-gather per unit).",
     SHARC_CFG_BOOL, SHARC_CFG_OFF(shard_reshard_after_forward), NULL, 0, 0, 0, NULL, 0},
    {"SHARD_REDUCE_QUEUE", "yes",
     "Sharding engine: gradient reductions complete through a queue of their own, so that a "
     "prefetched all-gather never completes behind a reduce-scatter posted before it: on the "
     "host a completion lane of the shard group's communicator (its one progress thread "
     "drives both), on CUDA a communicator of their own (its own NCCL communicator and "
     "stream). no: one queue for both, in posting order.",
     SHARC_CFG_BOOL, SHARC_CFG_OFF(shard_reduce_queue), NULL, 0, 0, 0, NULL, 0},
    {"SHARD_TRACE", "",
     "Sharding engine: write a timeline of every rank's last steps to this file as Chrome trace "
     "JSON (open it in Perfetto or chrome://tracing; tools/trace-plot draws it as a PNG): "
     "per unit the post, start, end and completion of its collectives, the caller's waits, "
     "calls and compute, and the prefetch decisions; one track per rank and per queue. Rank "
     "0 creates the file with the group and writes it when the group is destroyed, which "
     "then is collective. Empty: no trace.",
     SHARC_CFG_STRING, SHARC_CFG_OFF(shard_trace), NULL, 0, 0, 0, NULL, 0},
    {"SHARD_TRACE_STEPS", "50",
     "Sharding engine: steps the trace keeps (the last ones; each step's events are kept in "
     "memory until the group is destroyed).",
     SHARC_CFG_INT, SHARC_CFG_OFF(shard_trace_steps), NULL, 0, 1, 1 << 20, NULL, 0},
    {"ALLGATHER_ALGO", "auto",
     "All-gather algorithm: auto picks one by size and rank count (the syntax line lists the "
     "others; recursive doubling needs a power-of-two rank count).",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(algo[SHARC_COLL_ALLGATHER]), NULL, 0, 0, 0,
     sharc_coll_algo_choice, SHARC_COLL_ALLGATHER},
    {"REDUCE_SCATTER_ALGO", "auto",
     "Reduce-scatter algorithm: auto picks one by size and rank count (recursive halving "
     "needs a power-of-two rank count).",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(algo[SHARC_COLL_REDUCE_SCATTER]), NULL, 0, 0, 0,
     sharc_coll_algo_choice, SHARC_COLL_REDUCE_SCATTER},
    {"ALLREDUCE_ALGO", "auto",
     "All-reduce algorithm: auto picks one by size and rank count (recursive doubling needs a "
     "power-of-two rank count).",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(algo[SHARC_COLL_ALLREDUCE]), NULL, 0, 0, 0,
     sharc_coll_algo_choice, SHARC_COLL_ALLREDUCE},
    {"BROADCAST_ALGO", "auto",
     "Broadcast algorithm: auto picks one by size (chain: pipelined, for large messages; "
     "binomial: for small ones).",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(algo[SHARC_COLL_BROADCAST]), NULL, 0, 0, 0,
     sharc_coll_algo_choice, SHARC_COLL_BROADCAST},
    {"ALLTOALL_ALGO", "auto",
     "All-to-all algorithm: auto picks one by size (direct: every exchange posted at once; "
     "pairwise: one peer per step, a few steps in flight, in place through a few blocks of "
     "scratch).",
     SHARC_CFG_ENUM, SHARC_CFG_OFF(algo[SHARC_COLL_ALLTOALL]), NULL, 0, 0, 0,
     sharc_coll_algo_choice, SHARC_COLL_ALLTOALL},
    {"TUNE_FILE", "",
     "A per-size algorithm table written by `sharc-perf tune` (format in the README, \"Tune "
     "file\"); its rules take precedence over the built-in table, SHARC_<COLL>_ALGO over both. "
     "Empty: none. Every rank must read the same rules.",
     SHARC_CFG_STRING, SHARC_CFG_OFF(tune_file), NULL, 0, 0, 0, NULL, 0},
};

#define SHARC_CFG_NKNOBS SHARC_ARRAY_SIZE(sharc_cfg_table)

struct sharc_config {
    char *values[SHARC_CFG_NKNOBS]; /* text of each knob, as set */
    sharc_cfg_t parsed;
};

/* The @p i-th value of an ENUM knob (NULL: none there), and how many there are. */
static const char *sharc_cfg_enum_name(const sharc_cfg_field_t *f, int i)
{
    if (f->choice != NULL) {
        return f->choice(f->arg, i);
    }
    return (i >= 0 && i < f->nnames) ? f->names[i] : NULL;
}

static int sharc_cfg_enum_count(const sharc_cfg_field_t *f)
{
    int n = 0;

    if (f->choice == NULL) {
        return f->nnames;
    }
    while (f->choice(f->arg, n) != NULL) {
        n++;
    }
    return n;
}

/* The index of @p value among an ENUM knob's values (any case), or -1. */
static int sharc_cfg_enum_index(const sharc_cfg_field_t *f, const char *value)
{
    for (int i = 0, n = sharc_cfg_enum_count(f); value != NULL && i < n; i++) {
        const char *name = sharc_cfg_enum_name(f, i);

        if (name != NULL && strcasecmp(name, value) == 0) {
            return i;
        }
    }
    return -1;
}

static const char *sharc_cfg_accepts(const sharc_cfg_field_t *f, char *buf, size_t size)
{
    size_t len = 0;

    switch (f->type) {
    case SHARC_CFG_INT: snprintf(buf, size, "an integer in [%ld, %ld]", f->min, f->max); break;
    case SHARC_CFG_AUTO:
        snprintf(buf, size, "auto, or an integer in [%ld, %ld]", f->min, f->max);
        break;
    case SHARC_CFG_SIZE:
        if (f->max > 0) {
            snprintf(buf, size, "a byte count in [%ld, %ld], like 64k, 16m, 1g", f->min, f->max);
        } else {
            snprintf(buf, size, "a byte count like 4096, 64k, 16m, 1g");
        }
        break;
    case SHARC_CFG_TIME: snprintf(buf, size, "a positive time like 500ms, 30s, 2m"); break;
    case SHARC_CFG_BOOL: snprintf(buf, size, "yes or no"); break;
    case SHARC_CFG_SUBSYS:
        snprintf(buf, size, "all, or a list of core,boot,tp,coll,shard,topo,kern,perf");
        break;
    case SHARC_CFG_STRING: snprintf(buf, size, "any text"); break;
    case SHARC_CFG_ENUM:
        buf[0] = '\0';
        for (int i = 0, count = sharc_cfg_enum_count(f); i < count; i++) {
            int n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "one of ",
                             sharc_cfg_enum_name(f, i) ? sharc_cfg_enum_name(f, i) : "?");
            if (n < 0 || (size_t)n >= size - len) {
                break;
            }
            len += (size_t)n;
        }
        break;
    }
    return buf;
}

/* Parse @p value into the field of @p parsed; 0 or -1. Strings are stored by the caller. */
static int sharc_cfg_parse_field(const sharc_cfg_field_t *f, const char *value, sharc_cfg_t *parsed)
{
    void *dst = (char *)parsed + f->offset;
    long l;
    int idx;

    switch (f->type) {
    case SHARC_CFG_AUTO:
    case SHARC_CFG_INT:
        if (f->type == SHARC_CFG_AUTO && strcasecmp(value, "auto") == 0) {
            *(int *)dst = -1;
            return 0;
        }
        if (sharc_cfg_parse_long(value, f->min, f->max, &l) != 0) {
            return -1;
        }
        *(int *)dst = (int)l;
        return 0;
    case SHARC_CFG_SIZE: {
        size_t v;
        if (sharc_cfg_parse_size(value, &v) != 0 ||
            (f->max > 0 && (v < (size_t)f->min || v > (size_t)f->max))) {
            return -1;
        }
        *(size_t *)dst = v;
        return 0;
    }
    case SHARC_CFG_TIME: return sharc_cfg_parse_time(value, (double *)dst);
    case SHARC_CFG_BOOL: return sharc_cfg_parse_bool(value, (int *)dst);
    case SHARC_CFG_SUBSYS: return sharc_log_parse_subsys(value, (unsigned *)dst);
    case SHARC_CFG_ENUM:
        idx = sharc_cfg_enum_index(f, value);
        if (idx < 0) {
            return -1;
        }
        *(int *)dst = idx;
        return 0;
    case SHARC_CFG_STRING: return 0;
    }
    return -1;
}

static int sharc_cfg_find(const char *name)
{
    if (name == NULL) {
        return -1;
    }
    if (strncasecmp(name, "SHARC_", 6) == 0) {
        name += 6;
    }
    for (size_t i = 0; i < SHARC_CFG_NKNOBS; i++) {
        if (strcasecmp(sharc_cfg_table[i].name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* Set knob i; on failure the knob keeps its value. @p origin says where the value came from. */
static sharc_status_t sharc_cfg_set_index(sharc_config_h config, int i, const char *value,
                                          const char *origin)
{
    const sharc_cfg_field_t *f = &sharc_cfg_table[i];
    sharc_cfg_t parsed = config->parsed;
    char accepts[256];
    char *copy;

    if (value == NULL || sharc_cfg_parse_field(f, value, &parsed) != 0) {
        sharc_error("config: %s SHARC_%s='%s' is not valid: expected %s", origin, f->name,
                    value ? value : "(null)", sharc_cfg_accepts(f, accepts, sizeof(accepts)));
        return SHARC_ERR_INVALID;
    }
    copy = strdup(value);
    if (copy == NULL) {
        return SHARC_ERR_NOMEM;
    }
    free(config->values[i]);
    config->values[i] = copy;
    if (f->type == SHARC_CFG_STRING) {
        *(const char **)((char *)&parsed + f->offset) = copy;
    }
    config->parsed = parsed;
    return SHARC_OK;
}

sharc_status_t sharc_config_create(unsigned flags, sharc_config_h *config_p)
{
    sharc_config_h config;
    sharc_status_t status;

    if (config_p == NULL) {
        sharc_error("config: sharc_config_create: config_p is NULL");
        return SHARC_ERR_INVALID;
    }
    config = calloc(1, sizeof(*config));
    if (config == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (size_t i = 0; i < SHARC_CFG_NKNOBS; i++) {
        status = sharc_cfg_set_index(config, (int)i, sharc_cfg_table[i].dflt, "default");
        if (status != SHARC_OK) {
            goto err_destroy;
        }
    }
    if (!(flags & SHARC_CONFIG_NO_ENV)) {
        for (size_t i = 0; i < SHARC_CFG_NKNOBS; i++) {
            char var[64];
            const char *value;

            snprintf(var, sizeof(var), "SHARC_%s", sharc_cfg_table[i].name);
            value = getenv(var);
            if (value == NULL) {
                continue;
            }
            status = sharc_cfg_set_index(config, (int)i, value, "environment variable");
            if (status != SHARC_OK) {
                goto err_destroy;
            }
        }
    }
    *config_p = config;
    return SHARC_OK;

err_destroy:
    sharc_config_destroy(config);
    return status;
}

sharc_status_t sharc_config_set(sharc_config_h config, const char *name, const char *value)
{
    int i = sharc_cfg_find(name);

    if (config == NULL || i < 0) {
        sharc_error("config: sharc_config_set: %s '%s'",
                    config == NULL ? "NULL configuration for" : "no knob is named",
                    name ? name : "(null)");
        return SHARC_ERR_INVALID;
    }
    return sharc_cfg_set_index(config, i, value, "value for");
}

sharc_status_t sharc_config_get(sharc_config_h config, const char *name, char *value, size_t size)
{
    int i = sharc_cfg_find(name);

    if (config == NULL || value == NULL || i < 0) {
        sharc_error("config: sharc_config_get: bad argument (knob '%s')", name ? name : "(null)");
        return SHARC_ERR_INVALID;
    }
    if (sharc_snprintf(value, size, "%s", config->values[i]) != 0) {
        sharc_error("config: sharc_config_get: %zu bytes are too few for SHARC_%s='%s'", size,
                    sharc_cfg_table[i].name, config->values[i]);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

const char *sharc_config_choice(const char *name, int index)
{
    int i = sharc_cfg_find(name);

    if (i < 0 || sharc_cfg_table[i].type != SHARC_CFG_ENUM) {
        return NULL;
    }
    return sharc_cfg_enum_name(&sharc_cfg_table[i], index);
}

/* Print @p text as "# " comment lines of at most ~90 columns, broken at spaces. */
static void sharc_cfg_print_wrapped(FILE *stream, const char *text)
{
    const int width = 88;

    while (*text != '\0') {
        int len = (int)strlen(text), cut = len;

        if (len > width) {
            for (cut = width; cut > 0 && text[cut] != ' '; cut--) {
            }
            if (cut == 0) {
                cut = width; /* one long word */
            }
        }
        fprintf(stream, "# %.*s\n", cut, text);
        text += cut;
        while (*text == ' ') {
            text++;
        }
    }
}

void sharc_config_print(sharc_config_h config, FILE *stream, unsigned flags)
{
    char accepts[256];

    for (size_t i = 0; i < SHARC_CFG_NKNOBS; i++) {
        const sharc_cfg_field_t *f = &sharc_cfg_table[i];
        const char *value = config ? config->values[i] : f->dflt;

        if (flags & SHARC_CONFIG_PRINT_DOC) {
            fprintf(stream, "#\n");
            sharc_cfg_print_wrapped(stream, f->doc);
            fprintf(stream, "#\n# syntax:  %s\n# default: %s\n#\n",
                    sharc_cfg_accepts(f, accepts, sizeof(accepts)), f->dflt);
        }
        fprintf(stream, "SHARC_%s=%s\n", f->name, value);
        if (flags & SHARC_CONFIG_PRINT_DOC) {
            fprintf(stream, "\n");
        }
    }
}

void sharc_config_destroy(sharc_config_h config)
{
    if (config == NULL) {
        return;
    }
    for (size_t i = 0; i < SHARC_CFG_NKNOBS; i++) {
        free(config->values[i]);
    }
    free(config);
}

const sharc_cfg_t *sharc_config_parsed(sharc_config_h config)
{
    return &config->parsed;
}

sharc_status_t sharc_config_dup(sharc_config_h config, sharc_config_h *copy_p)
{
    sharc_config_h copy;
    sharc_status_t status;

    status = sharc_config_create(SHARC_CONFIG_NO_ENV, &copy);
    if (status != SHARC_OK) {
        return status;
    }
    for (size_t i = 0; i < SHARC_CFG_NKNOBS; i++) {
        status = sharc_cfg_set_index(copy, (int)i, config->values[i], "copied");
        if (status != SHARC_OK) {
            sharc_config_destroy(copy);
            return status;
        }
    }
    *copy_p = copy;
    return SHARC_OK;
}

void sharc_config_warn_unknown_env(void)
{
    extern char **environ;

    for (char **e = environ; *e != NULL; e++) {
        char name[128];
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);

        if (strncmp(*e, "SHARC_", 6) != 0 || len >= sizeof(name)) {
            continue;
        }
        memcpy(name, *e, len);
        name[len] = '\0';
        if (sharc_cfg_find(name) < 0) {
            sharc_warn("config: environment variable %s names no sharc knob (see sharc-info -c)",
                       name);
        }
    }
}
