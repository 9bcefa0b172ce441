/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h: internal logging. A file sets SHARC_THIS_SUBSYS before including this header; the
 * macros test the level and subsystem with two loads before formatting anything, so a
 * disabled debug line costs a branch. Output goes to stderr or SHARC_LOG_FILE.
 */
#ifndef SHARC_LOG_INT_H
#define SHARC_LOG_INT_H

#include <errno.h>
#include <stddef.h>
#include <sharc/log.h>

#include "def_int.h"

typedef enum {
    SHARC_SUBSYS_CORE = 0, /* context, config, comm */
    SHARC_SUBSYS_BOOT,     /* bootstrap and store */
    SHARC_SUBSYS_TP,       /* transports */
    SHARC_SUBSYS_COLL,     /* collective algorithms */
    SHARC_SUBSYS_SHARD,    /* FSDP engine */
    SHARC_SUBSYS_TOPO,     /* topology detection */
    SHARC_SUBSYS_KERN,     /* kernels */
    SHARC_SUBSYS_PERF,     /* benchmarks and tools */
    SHARC_SUBSYS_LAST
} sharc_subsys_t;

#ifndef SHARC_THIS_SUBSYS
#define SHARC_THIS_SUBSYS SHARC_SUBSYS_CORE
#endif

typedef struct {
    int level;     /* sharc_log_level_t: messages at or below it are printed */
    unsigned mask; /* bit per sharc_subsys_t */
} sharc_log_filter_t;

extern SHARC_HIDDEN sharc_log_filter_t sharc_log_filter;

#define sharc_log_enabled(_level, _subsys)                                                         \
    ((_level) == SHARC_LOG_ERROR ||                                                                \
     ((int)(_level) <= __atomic_load_n(&sharc_log_filter.level, __ATOMIC_RELAXED) &&               \
      (__atomic_load_n(&sharc_log_filter.mask, __ATOMIC_RELAXED) & (1u << (_subsys)))))

/* errno is saved so that %m in the format names the caller's error, not the logger's. */
#define sharc_log(_level, _fmt, ...)                                                               \
    do {                                                                                           \
        if (sharc_log_enabled(_level, SHARC_THIS_SUBSYS)) {                                        \
            int sharc_log_errno_ = errno;                                                          \
            sharc_log_emit(_level, SHARC_THIS_SUBSYS, __FILE__, __LINE__, sharc_log_errno_, _fmt,  \
                           ##__VA_ARGS__);                                                         \
            errno = sharc_log_errno_;                                                              \
        }                                                                                          \
    } while (0)

#define sharc_error(_fmt, ...) sharc_log(SHARC_LOG_ERROR, _fmt, ##__VA_ARGS__)
#define sharc_warn(_fmt, ...)  sharc_log(SHARC_LOG_WARN, _fmt, ##__VA_ARGS__)
#define sharc_info(_fmt, ...)  sharc_log(SHARC_LOG_INFO, _fmt, ##__VA_ARGS__)
#define sharc_debug(_fmt, ...) sharc_log(SHARC_LOG_DEBUG, _fmt, ##__VA_ARGS__)
#define sharc_trace(_fmt, ...) sharc_log(SHARC_LOG_TRACE, _fmt, ##__VA_ARGS__)

SHARC_HIDDEN void sharc_log_emit(int level, int subsys, const char *file, int line, int err,
                                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/**
 * Parse a SHARC_LOG_SUBSYS value: "all", or a comma-separated list of subsystem names
 * (core, boot, tp, coll, shard, topo, kern, perf), or "^" followed by such a list to mean
 * all but those. Returns 0 and sets *mask_p, or -1 for an unknown name.
 */
SHARC_HIDDEN int sharc_log_parse_subsys(const char *value, unsigned *mask_p);

/** Apply level, subsystems and file pattern (NULL or "" for stderr). Process-wide. */
SHARC_HIDDEN void sharc_log_configure(int level, unsigned mask, const char *file_pattern);

/**
 * Tell the logger this process's rank once it is known: it appears in each line, and a
 * file pattern with %r is opened under the rank's name from then on.
 */
SHARC_HIDDEN void sharc_log_set_rank(int rank);

/**
 * Expand a log file pattern: %r rank ("unknown" before it is known), %h host name,
 * %p process id, %% a percent sign. Returns 0, or -1 if the result does not fit.
 */
SHARC_HIDDEN int sharc_log_expand_path(const char *pattern, int rank, char *out, size_t size);

#endif
