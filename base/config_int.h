/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_int.h: the mechanism of sharc's configuration, which every layer uses and none
 * owns: a knob's description (name, default, parser, doc), a layer's table of them and the
 * plain struct they are parsed into, the configuration object over a list of tables, and
 * the value parsers (parse.c). Each layer declares its own table and struct beside its
 * code; the list of every table, the one `sharc-info -c` prints, is the library root's
 * (lib/knobs.c).
 */
#ifndef SHARC_CONFIG_INT_H
#define SHARC_CONFIG_INT_H

#include <stddef.h>
#include <stdio.h>
#include <sharc/config.h>

#include "def_int.h"

typedef enum {
    SHARC_CFG_INT,    /* decimal integer within [min, max] (an int) */
    SHARC_CFG_AUTO,   /* as INT, or "auto" (stored as -1) */
    SHARC_CFG_SIZE,   /* bytes (a size_t), with an optional k/m/g/t suffix (powers of 1024);
                       * within [min, max] when max > 0 */
    SHARC_CFG_TIME,   /* seconds (a double), with an optional ms/s/m/h suffix */
    SHARC_CFG_BOOL,   /* y/yes/1/on/true or n/no/0/off/false (an int) */
    SHARC_CFG_ENUM,   /* one of names[] or of choice()'s values (its index, an int) */
    SHARC_CFG_STRING, /* any text (a const char *, into the configuration's storage) */
    SHARC_CFG_SUBSYS, /* a log subsystem list (an unsigned mask) */
} sharc_cfg_type_t;

/* One knob, SHARC_<name>. Rows are written with designated initializers. */
typedef struct {
    const char *name; /* without the SHARC_ prefix, its module first: "IB_TIMEOUT" */
    const char *dflt;
    const char *doc;
    sharc_cfg_type_t type;
    size_t offset;            /* of its value in the table's parsed struct */
    const char *const *names; /* ENUM: its values, */
    int nnames;
    long min, max; /* INT, AUTO, SIZE */
    /* or, for values another layer owns (coll's algorithm table), the @p i-th of @p arg */
    const char *(*choice)(int arg, int i);
    int arg;
} sharc_cfg_field_t;

/* A layer's knobs and the struct (of @p size bytes) they are parsed into. */
typedef struct {
    const char *layer; /* where it lives, for sharc-info -c: "transport/ib" */
    const sharc_cfg_field_t *fields;
    size_t nfields;
    size_t size;
} sharc_cfg_table_t;

/* A layer's table of @p _fields (an array), parsed into a @p _type, listed as @p _layer. */
#define SHARC_CFG_TABLE(_layer, _fields, _type)                                                    \
    {                                                                                              \
        .layer = (_layer), .fields = (_fields), .nfields = sizeof(_fields) / sizeof((_fields)[0]), \
        .size = sizeof(_type)                                                                      \
    }

/* The parsed configuration: one struct per table. */
typedef struct sharc_cfg sharc_cfg_t;

/*
 * The parsed struct of @p table (a table of the list the configuration was made with; NULL
 * for another). Layers read it once, where they set up, through their own typed accessor.
 */
SHARC_HIDDEN const void *sharc_cfg_get(const sharc_cfg_t *cfg, const sharc_cfg_table_t *table);

/*
 * A configuration of the knobs of @p tables (its list, kept by reference: static tables),
 * at their defaults, overlaid with the SHARC_<NAME> environment variables unless flags has
 * SHARC_CONFIG_NO_ENV (sharc_config_create's contract).
 */
SHARC_HIDDEN sharc_status_t sharc_cfg_create(const sharc_cfg_table_t *const *tables, size_t ntables,
                                             unsigned flags, sharc_config_h *config_p);

/* The parsed view of a configuration. */
SHARC_HIDDEN const sharc_cfg_t *sharc_config_parsed(sharc_config_h config);

/* A deep copy (used by contexts, so that the caller may free theirs). */
SHARC_HIDDEN sharc_status_t sharc_config_dup(sharc_config_h config, sharc_config_h *copy_p);

/* Warn about SHARC_* environment variables that name no knob of @p config (typos). */
SHARC_HIDDEN void sharc_config_warn_unknown_env(sharc_config_h config);

/* sharc_config_print and sharc_config_choice over @p tables (@p config NULL: defaults). */
SHARC_HIDDEN void sharc_cfg_print(const sharc_cfg_table_t *const *tables, size_t ntables,
                                  sharc_config_h config, FILE *stream, unsigned flags);
SHARC_HIDDEN const char *sharc_cfg_choice(const sharc_cfg_table_t *const *tables, size_t ntables,
                                          const char *name, int index);

/*
 * The value parsers (parse.c), for the knob tables and for whoever reads numbers of its own
 * (the launcher's variables, the tune file). Each returns 0 and sets *out_p, or -1 for a
 * value it does not accept: empty, garbage, trailing characters, out of range, overflow.
 */
SHARC_HIDDEN int sharc_cfg_parse_long(const char *s, long min, long max, long *out_p);
SHARC_HIDDEN int sharc_cfg_parse_size(const char *s, size_t *out_p);
SHARC_HIDDEN int sharc_cfg_parse_time(const char *s, double *out_p);
SHARC_HIDDEN int sharc_cfg_parse_bool(const char *s, int *out_p);

#endif
