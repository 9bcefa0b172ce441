/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc/config.h: sharc's settings. Every knob is declared once, with its default and a line
 * of documentation, in one table; `sharc-info -c` prints it. A configuration object starts
 * from the defaults, takes SHARC_<NAME> environment variables when asked, and can be changed
 * through sharc_config_set before a context is created from it. Values are parsed once, when
 * set; nothing reads the environment after that.
 */
#ifndef SHARC_CONFIG_H
#define SHARC_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include <sharc/def.h>
#include <sharc/status.h>

SHARC_BEGIN_DECLS

typedef struct sharc_config *sharc_config_h;

/** Flags of sharc_config_create. */
enum {
    SHARC_CONFIG_NO_ENV = 1u << 0, /**< defaults only: ignore SHARC_* environment variables */
};

/** Flags of sharc_config_print. */
enum {
    SHARC_CONFIG_PRINT_DOC = 1u << 0, /**< each knob with its documentation and default */
};

/**
 * Create a configuration holding every knob's default, overlaid with the SHARC_<NAME>
 * environment variables unless SHARC_CONFIG_NO_ENV is given.
 * @param[in]  flags     SHARC_CONFIG_* flags.
 * @param[out] config_p  the new configuration; set only on success.
 * @return SHARC_OK; SHARC_ERR_INVALID when an environment variable holds a value its knob
 *         does not accept (the log names the variable, the value and what is accepted);
 *         SHARC_ERR_NOMEM.
 */
SHARC_API sharc_status_t sharc_config_create(unsigned flags, sharc_config_h *config_p);

/**
 * Set one knob. @p name is the knob's name with or without the SHARC_ prefix, in any case
 * ("BOOTSTRAP_TIMEOUT", "SHARC_BOOTSTRAP_TIMEOUT", "bootstrap_timeout").
 * @return SHARC_OK; SHARC_ERR_INVALID for an unknown name or a value the knob does not
 *         accept (the knob keeps its previous value); SHARC_ERR_NOMEM.
 */
SHARC_API sharc_status_t sharc_config_set(sharc_config_h config, const char *name,
                                          const char *value);

/**
 * Read one knob's current value as text into @p value (NUL-terminated, at most @p size bytes).
 * @return SHARC_OK; SHARC_ERR_INVALID for an unknown name or a buffer too small.
 */
SHARC_API sharc_status_t sharc_config_get(sharc_config_h config, const char *name, char *value,
                                          size_t size);

/**
 * Print every knob as SHARC_NAME=value lines (with SHARC_CONFIG_PRINT_DOC: preceded by its
 * documentation and default, like `ucx_info -c`). @p config may be NULL for the defaults.
 */
SHARC_API void sharc_config_print(sharc_config_h config, FILE *stream, unsigned flags);

/**
 * The values an enumerated knob accepts, one at a time: the @p index-th (from 0) of knob
 * @p name (named as in sharc_config_set), e.g. "auto", "self", "ucx", ... for TRANSPORT, or
 * "auto", "ring", ... for ALLGATHER_ALGO. Thread-safe; the string is constant.
 * @return the value, or NULL past the last one, for a knob that is not enumerated and for an
 *         unknown name.
 */
SHARC_API const char *sharc_config_choice(const char *name, int index);

/** Free a configuration. NULL is a no-op. */
SHARC_API void sharc_config_destroy(sharc_config_h config);

SHARC_END_DECLS

#endif
