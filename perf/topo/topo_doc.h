/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_doc.h: what the doctor's rule files share (topo_doctor.c: NCCL's and CUDA's rules and
 * the comparison with the recommendation; topo_doc_ucx.c: sharc's transport and UCX's devices
 * and transports; topo_efa.c: the EFA node's libraries and settings): the state of one doctor
 * run and the way a finding is made. Internal to perf/topo/.
 */
#ifndef SHARC_TOPO_DOC_H
#define SHARC_TOPO_DOC_H

#include "topo_tool.h"

typedef struct {
    const sharc_topo_t *topo;
    const sharc_topo_libs_t *libs; /* NULL: not known */
    const sharc_topo_setting_t *settings;
    int nsettings;
    sharc_topo_finding_t *findings;
    int n, max, harmful;
} sharc_topo_doc_t;

/** A finding about setting @p set. */
SHARC_HIDDEN void sharc_topo_find(sharc_topo_doc_t *doc, sharc_topo_severity_t severity,
                                  const sharc_topo_setting_t *set, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** A finding about the node under @p key, with no value (a library, the instance type). */
SHARC_HIDDEN void sharc_topo_find_node(sharc_topo_doc_t *doc, sharc_topo_severity_t severity,
                                       const char *key, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/** The value of @p key in force, or NULL. */
SHARC_HIDDEN const char *sharc_topo_doc_value(const sharc_topo_doc_t *doc, const char *key);

/** "1", "y", "yes", "true", "on" (any case). */
SHARC_HIDDEN int sharc_topo_truthy(const char *v);

/* Rules of topo_doc_ucx.c, by key: SHARC_TRANSPORT, UCX_NET_DEVICES, UCX_TLS. */
SHARC_HIDDEN void sharc_topo_doc_transport(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set);
SHARC_HIDDEN void sharc_topo_doc_ucx_devices(sharc_topo_doc_t *doc,
                                             const sharc_topo_setting_t *set);
SHARC_HIDDEN void sharc_topo_doc_ucx_tls(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set);

/* Rules of topo_efa.c, by key; and the node's findings on EFA nodes. */
SHARC_HIDDEN void sharc_topo_doc_efa(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set);
SHARC_HIDDEN void sharc_topo_doc_fi_provider(sharc_topo_doc_t *doc,
                                             const sharc_topo_setting_t *set);
SHARC_HIDDEN void sharc_topo_doc_nccl_net(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set);
SHARC_HIDDEN void sharc_topo_doc_net_plugin(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set);
SHARC_HIDDEN void sharc_topo_doc_efa_node(sharc_topo_doc_t *doc);

#endif
