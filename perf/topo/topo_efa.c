/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_efa.c: the doctor on EFA nodes. NCCL reaches EFA only through a NET plugin (aws-ofi-nccl)
 * over libfabric's efa provider; when any link of that chain is missing NCCL falls back to its
 * TCP sockets over the ENA interfaces without an error, at a fraction of the bandwidth. The
 * rules here check the chain (the plugin NCCL would load, libfabric and its efa provider,
 * FI_PROVIDER, NCCL_NET and NCCL_NET_PLUGIN) and whether the instance can do GPUDirect RDMA.
 * The facts come from topo_libs.c; the generic rules are in topo_doctor.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_doc.h"
#include "topo_tool.h"

/* libfabric's version, from the library or from fi_info; 0 unknown. */
static int sharc_efa_fabric_version(const sharc_topo_libs_t *libs, int *major, int *minor)
{
    if (libs != NULL && libs->fabric.major > 0) {
        *major = libs->fabric.major;
        *minor = libs->fabric.minor;
        return 1;
    }
    if (libs != NULL && libs->fi.have && libs->fi.info.major > 0) {
        *major = libs->fi.info.major;
        *minor = libs->fi.info.minor;
        return 1;
    }
    return 0;
}

/*
 * Before its API 1.18 libfabric leaves device RDMA off on EFA devices 0xefa0 and 0xefa1 unless
 * FI_EFA_USE_DEVICE_RDMA asks for it (from 1.18 on it follows the device's RDMA read). With an
 * older libfabric on an instance that has RDMA read, GPUDirect needs the variable set.
 */
static int sharc_efa_needs_device_rdma(const sharc_topo_t *topo, const sharc_topo_libs_t *libs,
                                       int *major, int *minor)
{
    char why[160];
    int n;
    unsigned device = sharc_topo_efa_device(topo, &n);

    return sharc_efa_fabric_version(libs, major, minor) && (*major == 1 && *minor < 18) &&
           (device == 0xefa0 || device == 0xefa1) &&
           sharc_topo_efa_rdma_read(topo, why, sizeof(why)) == 1;
}

void sharc_topo_recommend_libs(const sharc_topo_t *topo, const sharc_topo_libs_t *libs,
                               sharc_topo_recs_t *recs)
{
    int major, minor;

    if (topo->fabric != SHARC_TOPO_FABRIC_EFA || libs == NULL || !libs->probed) {
        return;
    }
    if (!libs->plugin.loads && !libs->plugin.disabled && libs->plugin.other[0] != '\0') {
        sharc_topo_rec_set(recs, "NCCL_NET_PLUGIN", 0, libs->plugin.other_suffix,
                           "NCCL looks for %s and finds none; aws-ofi-nccl is at %s, a name "
                           "NCCL loads when NCCL_NET_PLUGIN=%s",
                           libs->plugin.tried, libs->plugin.other, libs->plugin.other_suffix);
    }
    if (sharc_efa_needs_device_rdma(topo, libs, &major, &minor)) {
        sharc_topo_rec_set(recs, "FI_EFA_USE_DEVICE_RDMA", 0, "1",
                           "libfabric %d.%d is older than 1.18: on this EFA generation it "
                           "leaves device RDMA, and with it GPUDirect RDMA, off unless asked",
                           major, minor);
    }
}

/* The names aws-ofi-nccl answers to: "Libfabric" (1.12 on), "AWS Libfabric" (before), and
 * from 1.12 on the other two when NCCL_NET asks for them. */
static int sharc_efa_libfabric_name(const char *name)
{
    return strcasecmp(name, "Libfabric") == 0 || strcasecmp(name, "AWS Libfabric") == 0 ||
           strcasecmp(name, "OFI") == 0;
}

/* ---- rules by key */

/* NCCL_PROTO and FI_EFA_USE_DEVICE_RDMA */
void sharc_topo_doc_efa(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    int efa = (doc->topo->fabric == SHARC_TOPO_FABRIC_EFA), major, minor;
    char why[192];
    int rdma;

    if (strcmp(set->key, "NCCL_PROTO") == 0) {
        if (efa && strcasecmp(set->value, "simple") == 0) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "advice for old aws-ofi-nccl; current plugins support LL128 and "
                            "forcing Simple costs small-message latency");
        } else {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "no EFA rule applies");
        }
        return;
    }
    if (!efa) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set, "no EFA device on this node");
        return;
    }
    rdma = sharc_topo_efa_rdma_read(doc->topo, why, sizeof(why));
    if (!sharc_topo_truthy(set->value) && strcmp(set->value, "0") != 0 &&
        strcasecmp(set->value, "n") != 0 && strcasecmp(set->value, "no") != 0 &&
        strcasecmp(set->value, "false") != 0 && strcasecmp(set->value, "off") != 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "not a boolean (1/0, yes/no, true/false, on/off): libfabric aborts");
    } else if (!sharc_topo_truthy(set->value)) {
        if (rdma == 0) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set, "%s: nothing to turn off", why);
        } else {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "turns GPUDirect RDMA off: GPU buffers are staged through host "
                            "memory");
        }
    } else if (rdma == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "%s: libfabric aborts the job when device RDMA is asked for", why);
    } else if (sharc_efa_needs_device_rdma(doc->topo, doc->libs, &major, &minor)) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set,
                        "needed: libfabric %d.%d (older than 1.18) leaves device RDMA off on "
                        "this EFA generation unless asked",
                        major, minor);
    } else {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "libfabric 1.18+ enables device RDMA by itself on EFA that supports it");
    }
}

/* FI_PROVIDER: a comma-separated list of providers libfabric offers, "^" excluding. */
void sharc_topo_doc_fi_provider(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    int efa = (doc->topo->fabric == SHARC_TOPO_FABRIC_EFA), names_efa = 0;
    sharc_topo_spec_t spec;

    sharc_topo_spec_parse(set->value, &spec);
    for (int e = 0; e < spec.nentries; e++) {
        names_efa |= strcasecmp(spec.entries[e].name, "efa") == 0;
    }
    if (!efa) {
        if (names_efa && !spec.exclude) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                            "no EFA device on this node: libfabric finds no efa provider here");
        }
        return;
    }
    if (names_efa && !spec.exclude) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "libfabric offers its EFA provider");
    } else {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "%s: the OFI plugin gets no EFA provider and runs over what is left (TCP: "
                        "a fraction of the bandwidth) or finds nothing, and NCCL falls back to "
                        "its sockets",
                        spec.exclude ? "excludes efa"
                                     : "offers libfabric providers other than efa");
    }
}

/* The plugin NCCL loads, as words: "libnccl-net.so (/x/libnccl-net.so)". */
static const char *sharc_efa_plugin_where(const sharc_topo_libs_t *libs, char *buf, size_t size)
{
    snprintf(buf, size, "%s", libs->plugin.file[0] ? libs->plugin.file : libs->plugin.tried);
    return buf;
}

/*
 * NCCL_NET names the network NCCL must use, case-insensitively: "IB", "Socket", or a
 * plugin's; NCCL then never falls back, and fails when that network is not there.
 */
void sharc_topo_doc_nccl_net(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    const sharc_topo_t *topo = doc->topo;
    const sharc_topo_libs_t *libs = doc->libs;
    int rdma = topo->fabric == SHARC_TOPO_FABRIC_IB || topo->fabric == SHARC_TOPO_FABRIC_ROCE;
    int efa = topo->fabric == SHARC_TOPO_FABRIC_EFA;
    char where[SHARC_TOPO_PATH_MAX];

    if (strcasecmp(set->value, "IB") == 0) {
        if (rdma || topo->fabric == SHARC_TOPO_FABRIC_UNKNOWN) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "NCCL's verbs transport");
        } else {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "no active InfiniBand or RoCE port here%s: NCCL fails to create "
                            "communicators (NCCL_NET allows no fallback)",
                            efa ? " (EFA is reached through the OFI plugin, not NCCL's verbs)"
                                : "");
        }
        return;
    }
    if (strcasecmp(set->value, "Socket") == 0) {
        if (rdma || efa) {
            sharc_topo_find(
                doc, SHARC_TOPO_FINDING_HARMFUL, set,
                "forces NCCL's TCP sockets on this %s node: a fraction of the bandwidth",
                sharc_topo_fabric_name(topo->fabric));
        } else {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "NCCL's TCP sockets");
        }
        return;
    }
    /* a plugin's network */
    if (libs == NULL || !libs->searched) {
        if (efa && sharc_efa_libfabric_name(set->value)) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set,
                            "the OFI plugin's network (whether the plugin loads is not known "
                            "here)");
        } else if (!efa && sharc_efa_libfabric_name(set->value)) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                            "the OFI plugin's network on a node without EFA: fine only where "
                            "libfabric has a provider for this %s fabric",
                            sharc_topo_fabric_name(topo->fabric));
        }
        return;
    }
    if (!libs->plugin.loads) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "names a plugin's network, but no NET plugin loads (%s%s): NCCL fails to "
                        "create communicators (NCCL_NET allows no fallback)",
                        libs->plugin.disabled ? "NCCL_NET_PLUGIN=none" : "tried ",
                        libs->plugin.disabled ? "" : libs->plugin.tried);
    } else if (strcasecmp(set->value, libs->plugin.name) == 0 ||
               (strcasecmp(libs->plugin.name, "Libfabric") == 0 &&
                sharc_efa_libfabric_name(set->value))) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "the network of the NET plugin %s",
                        sharc_efa_plugin_where(libs, where, sizeof(where)));
    } else {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "the NET plugin %s registers network '%s', not '%s': NCCL finds no such "
                        "network and fails to create communicators",
                        sharc_efa_plugin_where(libs, where, sizeof(where)), libs->plugin.name,
                        set->value);
    }
}

/* NCCL_NET_PLUGIN: "none", or names (suffixes, library names, paths) NCCL tries in order. */
void sharc_topo_doc_net_plugin(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    const sharc_topo_libs_t *libs = doc->libs;
    int efa = doc->topo->fabric == SHARC_TOPO_FABRIC_EFA;
    char where[SHARC_TOPO_PATH_MAX];

    if (strcasecmp(set->value, "none") == 0) {
        sharc_topo_find(doc, efa ? SHARC_TOPO_FINDING_HARMFUL : SHARC_TOPO_FINDING_OK, set,
                        "loads no NET plugin: NCCL uses its own transports%s",
                        efa ? ", which on EFA means TCP sockets over the ENA interfaces" : "");
        return;
    }
    if (libs == NULL || !libs->searched) {
        return; /* nothing known to check the name against */
    }
    if (libs->plugin.loads) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "loads %s (network '%s')",
                        sharc_efa_plugin_where(libs, where, sizeof(where)), libs->plugin.name);
    } else if (libs->plugin.found) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "%s does not load (%s): NCCL falls back to its own transports",
                        libs->plugin.file, libs->plugin.error);
    } else {
        sharc_topo_find(doc, efa ? SHARC_TOPO_FINDING_HARMFUL : SHARC_TOPO_FINDING_STALE, set,
                        "NCCL finds none of %s in %s: it falls back to its own transports%s",
                        libs->plugin.tried, libs->where, efa ? " (TCP sockets on EFA)" : "");
    }
}

/* ---- the node's findings */

/* The NET plugin NCCL would load. Returns whether NCCL can use it for EFA. */
static int sharc_efa_plugin_finding(sharc_topo_doc_t *doc, char *cause, size_t size)
{
    const sharc_topo_libs_t *libs = doc->libs;
    char version[80] = "";

    if (libs->plugin.disabled) {
        snprintf(cause, size, "NCCL_NET_PLUGIN=none");
        return 0; /* the NCCL_NET_PLUGIN rule said it */
    }
    if (!libs->plugin.found) {
        snprintf(cause, size, "no NET plugin");
        if (libs->plugin.other[0] != '\0') {
            sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NET plugin", libs->where,
                                 "NCCL looks for %s and finds none: aws-ofi-nccl is at %s, a "
                                 "name NCCL does not try; set NCCL_NET_PLUGIN=%s",
                                 libs->plugin.tried, libs->plugin.other, libs->plugin.other_suffix);
        } else {
            sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NET plugin", libs->where,
                                 "NCCL looks for %s and finds none: without the aws-ofi-nccl "
                                 "plugin it cannot reach EFA and uses TCP sockets over the ENA "
                                 "interfaces, a fraction of the bandwidth; install aws-ofi-nccl "
                                 "or put its directory on LD_LIBRARY_PATH",
                                 libs->plugin.tried);
        }
        return 0;
    }
    if (!libs->plugin.loads) {
        snprintf(cause, size, "the NET plugin does not load");
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NET plugin", libs->plugin.file,
                             "does not load (%s): NCCL falls back to TCP sockets over the ENA "
                             "interfaces",
                             libs->plugin.error);
        return 0;
    }
    if (libs->plugin.api_max == 0) {
        snprintf(cause, size, "the NET plugin is no NET plugin");
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NET plugin", libs->plugin.file,
                             "loads but has no ncclNetPlugin_vN symbol: not a NET plugin, and "
                             "NCCL falls back to TCP sockets");
        return 0;
    }
    if (!sharc_efa_libfabric_name(libs->plugin.name)) {
        snprintf(cause, size, "the NET plugin is for network '%s'", libs->plugin.name);
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NET plugin", libs->plugin.file,
                             "registers network '%s', not libfabric's: EFA needs the "
                             "aws-ofi-nccl plugin (network 'Libfabric'), and NCCL falls back to "
                             "TCP sockets",
                             libs->plugin.name);
        return 0;
    }
    if (libs->plugin.version[0] != '\0') {
        snprintf(version, sizeof(version), ", aws-ofi-nccl %s", libs->plugin.version);
    }
    sharc_topo_find_node(doc, SHARC_TOPO_FINDING_OK, "NET plugin", libs->plugin.file,
                         "loads: network '%s'%s, NCCL NET API v%d to v%d", libs->plugin.name,
                         version, libs->plugin.api_min, libs->plugin.api_max);
    return 1;
}

/* libfabric and its efa provider. Returns whether the provider is usable (or not known). */
static int sharc_efa_fabric_finding(sharc_topo_doc_t *doc, char *cause, size_t size)
{
    const sharc_topo_libs_t *libs = doc->libs;
    const sharc_topo_fi_info_t *fi = &libs->fi.info;
    int ndev;

    (void)sharc_topo_efa_device(doc->topo, &ndev);
    if (libs->fi.have) {
        if (fi->nefa == 0) {
            snprintf(cause, size, "libfabric has no efa provider");
            sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "libfabric", libs->fi.source,
                                 "no efa provider (%s): this libfabric was built without EFA or "
                                 "finds no device; the plugin cannot reach EFA and NCCL falls "
                                 "back to TCP sockets",
                                 fi->error[0] ? fi->error : "no 'provider: efa' entry");
            return 0;
        }
        if (fi->nrdm == 0) {
            snprintf(cause, size, "libfabric's efa provider has no RDM endpoints");
            sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "libfabric", libs->fi.source,
                                 "the efa provider offers no reliable datagram endpoint "
                                 "(FI_EP_RDM), which the plugin needs");
            return 0;
        }
        if (fi->ndomains < ndev) {
            sharc_topo_find_node(doc, SHARC_TOPO_FINDING_WARN, "libfabric", libs->fi.source,
                                 "the efa provider has %d RDM domain(s) (%s), sysfs %d EFA "
                                 "devices: the others are not used",
                                 fi->ndomains, fi->domains, ndev);
        } else {
            char version[32] = "";

            if (fi->major > 0) {
                snprintf(version, sizeof(version), " of libfabric %d.%d", fi->major, fi->minor);
            }
            sharc_topo_find_node(doc, SHARC_TOPO_FINDING_OK, "libfabric", libs->fi.source,
                                 "the efa provider%s, %d RDM domain(s): %s", version, fi->ndomains,
                                 fi->domains);
        }
        return 1;
    }
    if (!libs->searched) {
        return 1;
    }
    if (!libs->fabric.found) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_WARN, "libfabric", libs->where,
                             "no libfabric.so.1 found%s",
                             libs->plugin.loads ? " (the plugin may find its own by its RUNPATH)"
                                                : ": the plugin cannot load without it");
        return 1;
    }
    if (!libs->fabric.loads) {
        snprintf(cause, size, "libfabric does not load");
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "libfabric", libs->fabric.file,
                             "does not load (%s): the plugin cannot run", libs->fabric.error);
        return 0;
    }
    sharc_topo_find_node(doc, SHARC_TOPO_FINDING_OK, "libfabric", libs->fabric.file,
                         "libfabric %d.%d loads; whether its efa provider finds the devices "
                         "takes fi_info (not found: install libfabric's tools, or pass "
                         "--fi-info)",
                         libs->fabric.major, libs->fabric.minor);
    return 1;
}

/* GPUDirect RDMA by instance type or device generation. */
static void sharc_efa_gdr_finding(sharc_topo_doc_t *doc)
{
    char why[192];
    int rdma = sharc_topo_efa_rdma_read(doc->topo, why, sizeof(why));

    if (rdma == 1) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_OK, "GPUDirect RDMA", "topology",
                             "%s: GPU buffers move between the GPU and the EFA device directly",
                             why);
    } else if (rdma == 0) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_NOTE, "GPUDirect RDMA", "topology",
                             "%s: no GPUDirect RDMA; the plugin stages GPU buffers through host "
                             "memory",
                             why);
    } else {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_NOTE, "GPUDirect RDMA", "topology", "%s", why);
    }
}

/*
 * The chain on an EFA node, each link a finding, then what NCCL will use: the plugin over EFA
 * only when the plugin loads, speaks libfabric, libfabric has its efa provider, FI_PROVIDER
 * leaves it and NCCL_NET does not force another network.
 */
void sharc_topo_doc_efa_node(sharc_topo_doc_t *doc)
{
    const sharc_topo_libs_t *libs = doc->libs;
    const char *net = sharc_topo_doc_value(doc, "NCCL_NET");
    const char *provider = sharc_topo_doc_value(doc, "FI_PROVIDER");
    char cause[160] = "", cause2[160] = "";
    int plugin_ok, fabric_ok, ndev;

    sharc_efa_gdr_finding(doc);
    if (libs == NULL || !libs->probed) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_NOTE, "NET plugin", "not checked",
                             "the libraries of the machine the input describes are not known "
                             "here: give --lib-path DIRS (and --fi-info FILE, the text of "
                             "`fi_info -p efa`) to check the NET plugin and libfabric");
        return;
    }
    plugin_ok = !libs->searched || sharc_efa_plugin_finding(doc, cause, sizeof(cause));
    fabric_ok = sharc_efa_fabric_finding(doc, cause2, sizeof(cause2));
    if (!libs->searched) {
        return; /* fi_info only: no plugin to judge NCCL's network by */
    }
    (void)sharc_topo_efa_device(doc->topo, &ndev);
    if (plugin_ok && !fabric_ok) {
        snprintf(cause, sizeof(cause), "%s", cause2);
    }
    if (plugin_ok && fabric_ok && provider != NULL) {
        sharc_topo_spec_t spec;
        int names_efa = 0;

        sharc_topo_spec_parse(provider, &spec);
        for (int e = 0; e < spec.nentries; e++) {
            names_efa |= strcasecmp(spec.entries[e].name, "efa") == 0;
        }
        if (spec.exclude == names_efa) {
            snprintf(cause, sizeof(cause), "FI_PROVIDER=%s leaves no efa provider", provider);
            fabric_ok = 0;
        }
    }
    if (net != NULL && strcasecmp(net, "Socket") == 0) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NCCL network", "summary",
                             "NCCL_NET=%s: TCP sockets over the ENA interfaces, not EFA", net);
    } else if (net != NULL && strcasecmp(net, "IB") == 0) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NCCL network", "summary",
                             "NCCL_NET=%s: no such network here, communicators fail", net);
    } else if (net != NULL && plugin_ok && strcasecmp(net, libs->plugin.name) != 0 &&
               !(strcasecmp(libs->plugin.name, "Libfabric") == 0 &&
                 sharc_efa_libfabric_name(net))) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NCCL network", "summary",
                             "NCCL_NET=%s names no network here (the plugin's is '%s'): "
                             "communicators fail",
                             net, libs->plugin.name);
    } else if (plugin_ok && fabric_ok) {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_OK, "NCCL network", "summary",
                             "the NET plugin '%s' over EFA (%d device(s))", libs->plugin.name,
                             ndev);
    } else {
        sharc_topo_find_node(doc, SHARC_TOPO_FINDING_HARMFUL, "NCCL network", "summary",
                             "%s: NCCL %s", cause,
                             net != NULL ? "fails to create communicators (NCCL_NET allows no "
                                           "fallback)"
                                         : "falls back to TCP sockets over the ENA interfaces, a "
                                           "fraction of EFA's bandwidth");
    }
}
