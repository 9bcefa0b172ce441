/*
 * sharc/log.h: log levels. Logging is the one process-wide setting in sharc (as in NCCL and
 * UCX): every context applies SHARC_LOG_LEVEL, SHARC_LOG_SUBSYS and SHARC_LOG_FILE from its
 * configuration when it is created, so the most recently created context wins.
 */
#ifndef SHARC_LOG_H
#define SHARC_LOG_H

#include <sharc/def.h>
#include <sharc/status.h>

SHARC_BEGIN_DECLS

typedef enum {
    SHARC_LOG_ERROR = 0, /**< failures returned to the caller; always printed */
    SHARC_LOG_WARN = 1,  /**< something is off but sharc goes on (the default level) */
    SHARC_LOG_INFO = 2,  /**< one-time facts: chosen bootstrap, transport, topology */
    SHARC_LOG_DEBUG = 3, /**< per-operation detail */
    SHARC_LOG_TRACE = 4, /**< per-message detail */
    SHARC_LOG_LAST
} sharc_log_level_t;

/** "error", "warn", "info", "debug", "trace"; NULL for an invalid level. */
SHARC_API const char *sharc_log_level_name(sharc_log_level_t level);

SHARC_END_DECLS

#endif
