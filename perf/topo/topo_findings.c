/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_findings.c: what the doctor's rules write and read: a finding with its reason (about a
 * setting or the node), a setting's value in force, and what counts as a true value. The
 * rules are topo_doctor.c's, topo_doc_ucx.c's and topo_efa.c's.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "topo_doc.h"
#include "topo_tool.h"

/* The next finding of the doctor's, with its reason; @p value NULL for a finding about the
 * node. Dropped (but counted as harmful where it is) when the list is full. */
static void sharc_topo_vfind(sharc_topo_doc_t *doc, sharc_topo_severity_t severity, const char *key,
                             const char *value, const char *source, const char *fmt, va_list ap)
{
    sharc_topo_finding_t *f;

    doc->harmful |= (severity == SHARC_TOPO_FINDING_HARMFUL);
    if (doc->n == doc->max) {
        return;
    }
    f = &doc->findings[doc->n++];
    memset(f, 0, sizeof(*f));
    f->severity = severity;
    vsnprintf(f->reason, sizeof(f->reason), fmt, ap);
    f->no_value = value == NULL;
    snprintf(f->key, sizeof(f->key), "%s", key);
    snprintf(f->value, sizeof(f->value), "%s", value != NULL ? value : "");
    snprintf(f->source, sizeof(f->source), "%s", source);
}

void sharc_topo_find(sharc_topo_doc_t *doc, sharc_topo_severity_t severity,
                     const sharc_topo_setting_t *set, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    sharc_topo_vfind(doc, severity, set->key, set->value, set->source, fmt, ap);
    va_end(ap);
}

void sharc_topo_find_node(sharc_topo_doc_t *doc, sharc_topo_severity_t severity, const char *key,
                          const char *source, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    sharc_topo_vfind(doc, severity, key, NULL, source, fmt, ap);
    va_end(ap);
}

const char *sharc_topo_doc_value(const sharc_topo_doc_t *doc, const char *key)
{
    for (int s = 0; s < doc->nsettings; s++) {
        if (strcmp(doc->settings[s].key, key) == 0) {
            return doc->settings[s].value;
        }
    }
    return NULL;
}

int sharc_topo_truthy(const char *v)
{
    return strcmp(v, "1") == 0 || strcasecmp(v, "y") == 0 || strcasecmp(v, "yes") == 0 ||
           strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0;
}
