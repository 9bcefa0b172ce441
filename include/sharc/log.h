/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/log.h: log levels. Logging is the one process-wide setting in sharc (as in NCCL and
 * UCX): every context applies SHARC_LOG_LEVEL, SHARC_LOG_SUBSYS and SHARC_LOG_FILE from its
 * configuration when it is created, so the most recently created context wins.
 */
#ifndef SHARC_LOG_H
#define SHARC_LOG_H

#include <stddef.h>
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

/**
 * The errors sharc logged in this process after the first @p since of them: the message of
 * each ERROR line (without the line's host, pid and rank prefix), oldest first, one a line,
 * of the last 8 at most, and of those the most recent that fit in @p size bytes with the NUL
 * (when even the newest does not fit, its beginning). For a binding that turns a failed call
 * into an exception carrying sharc's message: take the count before the call (@p buf NULL,
 * @p size 0), and the messages after it when the call failed. Errors of every thread count
 * (sharc's progress thread's too), whatever the log level and SHARC_LOG_FILE.
 * @param[in]  since  errors to leave out: the count an earlier call returned, or 0.
 * @param[out] buf    the messages, NUL-terminated ("" when there are none); may be NULL when
 *                    @p size is 0.
 * @return the number of errors logged in this process so far. Thread safe.
 */
SHARC_API unsigned long sharc_log_errors(unsigned long since, char *buf, size_t size);

SHARC_END_DECLS

#endif
