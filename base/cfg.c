/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cfg.c: the configuration object over a list of knob tables (config_int.h): every knob's
 * text as set, parsed at once into its table's struct; set and get by name, print with the
 * docs, copy, and the check for SHARC_* variables that name no knob. The tables are the
 * layers'; the list is the library root's (lib/knobs.c), which also creates the object.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_int.h"
#include "log.h"
#include "util.h"

struct sharc_cfg {
    const sharc_cfg_table_t *const *tables;
    size_t ntables;
    void **parsed; /* [ntables]: each table's struct */
};

struct sharc_config {
    sharc_cfg_t cfg;
    size_t *first; /* [ntables]: the index of each table's first knob in values */
    char **values; /* every knob's text, as set */
};

/* A knob of a configuration: its table's index and its field. */
typedef struct {
    size_t table;
    const sharc_cfg_field_t *f;
    size_t value; /* index into values */
} sharc_cfg_knob_t;

const void *sharc_cfg_get(const sharc_cfg_t *cfg, const sharc_cfg_table_t *table)
{
    for (size_t t = 0; t < cfg->ntables; t++) {
        if (cfg->tables[t] == table) {
            return cfg->parsed[t];
        }
    }
    return NULL;
}

/* The knob SHARC_@p name (with or without the prefix, any case) of @p tables; 0 or -1. */
static int sharc_cfg_find(const sharc_cfg_table_t *const *tables, size_t ntables, const char *name,
                          sharc_cfg_knob_t *knob_p)
{
    size_t value = 0;

    if (name == NULL) {
        return -1;
    }
    if (strncasecmp(name, "SHARC_", 6) == 0) {
        name += 6;
    }
    for (size_t t = 0; t < ntables; t++) {
        for (size_t i = 0; i < tables[t]->nfields; i++, value++) {
            if (strcasecmp(tables[t]->fields[i].name, name) == 0) {
                *knob_p = (sharc_cfg_knob_t){t, &tables[t]->fields[i], value};
                return 0;
            }
        }
    }
    return -1;
}

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

/* What an ENUM knob accepts: "one of a, b, c". */
static void sharc_cfg_enum_accepts(const sharc_cfg_field_t *f, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    for (int i = 0, count = sharc_cfg_enum_count(f); i < count; i++) {
        int n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "one of ",
                         sharc_cfg_enum_name(f, i) ? sharc_cfg_enum_name(f, i) : "?");
        if (n < 0 || (size_t)n >= size - len) {
            break;
        }
        len += (size_t)n;
    }
}

static const char *sharc_cfg_accepts(const sharc_cfg_field_t *f, char *buf, size_t size)
{
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
    case SHARC_CFG_ENUM: sharc_cfg_enum_accepts(f, buf, size); break;
    }
    return buf;
}

/* Parse @p value into the field at @p dst; 0 or -1. Strings are stored by the caller. */
static int sharc_cfg_parse_field(const sharc_cfg_field_t *f, const char *value, void *dst)
{
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

/* Set @p knob; on failure it keeps its value. @p origin says where the value came from. */
static sharc_status_t sharc_cfg_set_knob(sharc_config_h config, const sharc_cfg_knob_t *knob,
                                         const char *value, const char *origin)
{
    const sharc_cfg_field_t *f = knob->f;
    char *dst = (char *)config->cfg.parsed[knob->table] + f->offset;
    union {
        int i;
        unsigned u;
        size_t z;
        double d;
    } parsed = {0}; /* the value, as its type stores it */
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
    free(config->values[knob->value]);
    config->values[knob->value] = copy;
    switch (f->type) {
    case SHARC_CFG_STRING: *(const char **)dst = copy; break;
    case SHARC_CFG_SIZE: *(size_t *)dst = parsed.z; break;
    case SHARC_CFG_TIME: *(double *)dst = parsed.d; break;
    case SHARC_CFG_SUBSYS: *(unsigned *)dst = parsed.u; break;
    default: *(int *)dst = parsed.i; break;
    }
    return SHARC_OK;
}

/* Every knob of @p config, in listing order, to @p fn (which stops the walk with non-OK). */
typedef sharc_status_t (*sharc_cfg_walk_fn_t)(sharc_config_h config, const sharc_cfg_knob_t *knob,
                                              void *arg);

static sharc_status_t sharc_cfg_walk(sharc_config_h config, sharc_cfg_walk_fn_t fn, void *arg)
{
    const sharc_cfg_t *cfg = &config->cfg;
    sharc_status_t status = SHARC_OK;

    for (size_t t = 0; t < cfg->ntables && status == SHARC_OK; t++) {
        for (size_t i = 0; i < cfg->tables[t]->nfields && status == SHARC_OK; i++) {
            sharc_cfg_knob_t knob = {t, &cfg->tables[t]->fields[i], config->first[t] + i};

            status = fn(config, &knob, arg);
        }
    }
    return status;
}

static sharc_status_t sharc_cfg_set_default(sharc_config_h config, const sharc_cfg_knob_t *knob,
                                            void *arg)
{
    return sharc_cfg_set_knob(config, knob, knob->f->dflt, "default");
}

static sharc_status_t sharc_cfg_set_env(sharc_config_h config, const sharc_cfg_knob_t *knob,
                                        void *arg)
{
    const char *value;
    char var[64];

    snprintf(var, sizeof(var), "SHARC_%s", knob->f->name);
    value = getenv(var);
    return value ? sharc_cfg_set_knob(config, knob, value, "environment variable") : SHARC_OK;
}

/* An empty configuration of @p tables: every struct zeroed, no values yet. */
static sharc_status_t sharc_cfg_alloc(const sharc_cfg_table_t *const *tables, size_t ntables,
                                      sharc_config_h *config_p)
{
    sharc_config_h config = calloc(1, sizeof(*config));
    size_t nknobs = 0;

    if (config == NULL) {
        return SHARC_ERR_NOMEM;
    }
    config->cfg.tables = tables;
    config->cfg.ntables = ntables;
    config->cfg.parsed = calloc(ntables, sizeof(void *));
    config->first = calloc(ntables, sizeof(size_t));
    for (size_t t = 0; config->first != NULL && t < ntables; t++) {
        config->first[t] = nknobs;
        nknobs += tables[t]->nfields;
    }
    config->values = calloc(nknobs + 1, sizeof(char *));
    for (size_t t = 0; config->cfg.parsed != NULL && t < ntables; t++) {
        config->cfg.parsed[t] = calloc(1, tables[t]->size);
        if (config->cfg.parsed[t] == NULL) {
            break;
        }
    }
    if (config->cfg.parsed == NULL || config->first == NULL || config->values == NULL ||
        (ntables > 0 && config->cfg.parsed[ntables - 1] == NULL)) {
        sharc_config_destroy(config);
        return SHARC_ERR_NOMEM;
    }
    *config_p = config;
    return SHARC_OK;
}

sharc_status_t sharc_cfg_create(const sharc_cfg_table_t *const *tables, size_t ntables,
                                unsigned flags, sharc_config_h *config_p)
{
    sharc_config_h config;
    sharc_status_t status;

    if (config_p == NULL) {
        sharc_error("config: sharc_config_create: config_p is NULL");
        return SHARC_ERR_INVALID;
    }
    status = sharc_cfg_alloc(tables, ntables, &config);
    if (status != SHARC_OK) {
        return status;
    }
    status = sharc_cfg_walk(config, sharc_cfg_set_default, NULL);
    if (status == SHARC_OK && !(flags & SHARC_CONFIG_NO_ENV)) {
        status = sharc_cfg_walk(config, sharc_cfg_set_env, NULL);
    }
    if (status != SHARC_OK) {
        sharc_config_destroy(config);
        return status;
    }
    *config_p = config;
    return SHARC_OK;
}

sharc_status_t sharc_config_set(sharc_config_h config, const char *name, const char *value)
{
    sharc_cfg_knob_t knob;

    if (config == NULL ||
        sharc_cfg_find(config->cfg.tables, config->cfg.ntables, name, &knob) != 0) {
        sharc_error("config: sharc_config_set: %s '%s'",
                    config == NULL ? "NULL configuration for" : "no knob is named",
                    name ? name : "(null)");
        return SHARC_ERR_INVALID;
    }
    return sharc_cfg_set_knob(config, &knob, value, "value for");
}

sharc_status_t sharc_config_get(sharc_config_h config, const char *name, char *value, size_t size)
{
    sharc_cfg_knob_t knob;

    if (config == NULL || value == NULL ||
        sharc_cfg_find(config->cfg.tables, config->cfg.ntables, name, &knob) != 0) {
        sharc_error("config: sharc_config_get: bad argument (knob '%s')", name ? name : "(null)");
        return SHARC_ERR_INVALID;
    }
    if (sharc_snprintf(value, size, "%s", config->values[knob.value]) != 0) {
        sharc_error("config: sharc_config_get: %zu bytes are too few for SHARC_%s='%s'", size,
                    knob.f->name, config->values[knob.value]);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

const char *sharc_cfg_choice(const sharc_cfg_table_t *const *tables, size_t ntables,
                             const char *name, int index)
{
    sharc_cfg_knob_t knob;

    if (sharc_cfg_find(tables, ntables, name, &knob) != 0 || knob.f->type != SHARC_CFG_ENUM) {
        return NULL;
    }
    return sharc_cfg_enum_name(knob.f, index);
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

void sharc_cfg_print(const sharc_cfg_table_t *const *tables, size_t ntables, sharc_config_h config,
                     FILE *stream, unsigned flags)
{
    char accepts[256];

    for (size_t t = 0, value = 0; t < ntables; t++) {
        if (flags & SHARC_CONFIG_PRINT_DOC) {
            fprintf(stream, "# ---- %s\n\n", tables[t]->layer);
        }
        for (size_t i = 0; i < tables[t]->nfields; i++, value++) {
            const sharc_cfg_field_t *f = &tables[t]->fields[i];

            if (flags & SHARC_CONFIG_PRINT_DOC) {
                fprintf(stream, "#\n");
                sharc_cfg_print_wrapped(stream, f->doc);
                fprintf(stream, "#\n# syntax:  %s\n# default: %s\n#\n",
                        sharc_cfg_accepts(f, accepts, sizeof(accepts)), f->dflt);
            }
            fprintf(stream, "SHARC_%s=%s\n", f->name, config ? config->values[value] : f->dflt);
            if (flags & SHARC_CONFIG_PRINT_DOC) {
                fprintf(stream, "\n");
            }
        }
    }
}

void sharc_config_destroy(sharc_config_h config)
{
    size_t nknobs = 0;

    if (config == NULL) {
        return;
    }
    for (size_t t = 0; t < config->cfg.ntables; t++) {
        nknobs += config->cfg.tables[t]->nfields;
        free(config->cfg.parsed ? config->cfg.parsed[t] : NULL);
    }
    for (size_t i = 0; config->values != NULL && i < nknobs; i++) {
        free(config->values[i]);
    }
    free(config->values);
    free(config->first);
    free(config->cfg.parsed);
    free(config);
}

const sharc_cfg_t *sharc_config_parsed(sharc_config_h config)
{
    return &config->cfg;
}

static sharc_status_t sharc_cfg_copy_value(sharc_config_h copy, const sharc_cfg_knob_t *knob,
                                           void *arg)
{
    sharc_config_h from = arg;

    return sharc_cfg_set_knob(copy, knob, from->values[knob->value], "copied");
}

sharc_status_t sharc_config_dup(sharc_config_h config, sharc_config_h *copy_p)
{
    sharc_config_h copy;
    sharc_status_t status;

    status = sharc_cfg_alloc(config->cfg.tables, config->cfg.ntables, &copy);
    if (status == SHARC_OK) {
        status = sharc_cfg_walk(copy, sharc_cfg_copy_value, config);
    }
    if (status != SHARC_OK) {
        sharc_config_destroy(copy);
        return status;
    }
    *copy_p = copy;
    return SHARC_OK;
}

/* Variables of sharc's own tools, not knobs: tools/nodes.sh hands its commands the first two,
 * the build and test scripts read the others. */
static int sharc_cfg_tool_var(const char *name)
{
    static const char *const names[] = {"SHARC_NODES", "SHARC_NODES_PREFIX", "SHARC_BUILD_DIR",
                                        "SHARC_CONFIGURE_FLAGS", "SHARC_TEST_LIMIT"};

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(names); i++) {
        if (strcmp(name, names[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

void sharc_config_warn_unknown_env(sharc_config_h config)
{
    extern char **environ;

    for (char **e = environ; *e != NULL; e++) {
        char name[128];
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        sharc_cfg_knob_t knob;

        if (strncmp(*e, "SHARC_", 6) != 0 || len >= sizeof(name)) {
            continue;
        }
        memcpy(name, *e, len);
        name[len] = '\0';
        if (!sharc_cfg_tool_var(name) &&
            sharc_cfg_find(config->cfg.tables, config->cfg.ntables, name, &knob) != 0) {
            sharc_warn("config: environment variable %s names no sharc knob (see sharc-info -c)",
                       name);
        }
    }
}
