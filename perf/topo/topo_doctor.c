/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_doctor.c: the doctor: the rules that check the settings in force (environment over
 * the NCCL conf file) against the topology and the recommendation. Pure functions of their
 * inputs; the rules of sharc's and UCX's transports are in topo_doc_ucx.c, those of EFA nodes
 * and their libraries in topo_efa.c, the syntax of the settings (device lists, the conf file)
 * in topo_conf.c, printing in topo_out.c.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_doc.h"
#include "topo_tool.h"

/* ---- the doctor */

static int sharc_topo_rdma_fabric(sharc_topo_fabric_t f)
{
    return f == SHARC_TOPO_FABRIC_IB || f == SHARC_TOPO_FABRIC_ROCE;
}

static void sharc_topo_doc_ib_disable(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    int rdma = sharc_topo_rdma_fabric(doc->topo->fabric);

    if (sharc_topo_truthy(set->value) && rdma) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "this is a %s node: NCCL falls back to TCP sockets, a fraction of the "
                        "RDMA bandwidth",
                        sharc_topo_fabric_name(doc->topo->fabric));
    } else {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "fits a %s node",
                        sharc_topo_fabric_name(doc->topo->fabric));
    }
}

static void sharc_topo_doc_ifname(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    const sharc_topo_t *topo = doc->topo;
    sharc_topo_spec_t spec;
    int bad = 0;

    if (topo->nifaces == 0) {
        return; /* the input did not list interfaces: nothing to judge by */
    }
    sharc_topo_spec_parse(set->value, &spec);
    for (int e = 0; e < spec.nentries; e++) {
        int matched = 0, up = 0, usable = 0;
        const char *master = NULL;

        for (int i = 0; i < topo->nifaces; i++) {
            if (sharc_topo_spec_entry_matches(&spec, e, topo->ifaces[i].name)) {
                matched++;
                up += topo->ifaces[i].up;
                if (topo->ifaces[i].up && topo->ifaces[i].master[0] != '\0') {
                    master = topo->ifaces[i].master;
                } else {
                    usable += topo->ifaces[i].up;
                }
            }
        }
        if (matched == 0) {
            sharc_topo_find(
                doc, spec.exclude ? SHARC_TOPO_FINDING_STALE : SHARC_TOPO_FINDING_HARMFUL, set,
                "no interface %s '%s' exists here%s", spec.exact ? "named" : "starting with",
                spec.entries[e].name, spec.exclude ? " (nothing to exclude)" : "");
            bad = 1;
        } else if (up == 0 && !spec.exclude) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "every interface matching '%s' is down", spec.entries[e].name);
            bad = 1;
        } else if (usable == 0 && !spec.exclude) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "'%s' names a port of %s, which has no address of its own: NCCL "
                            "finds nothing to bind to; name %s",
                            spec.entries[e].name, master, master);
            bad = 1;
        }
    }
    if (!bad) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "names existing interfaces that are up");
    }
}

static void sharc_topo_doc_hca(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    const sharc_topo_t *topo = doc->topo;
    sharc_topo_severity_t missing =
        topo->nnics > 0 ? SHARC_TOPO_FINDING_HARMFUL : SHARC_TOPO_FINDING_STALE;
    sharc_topo_spec_t spec;
    int bad = 0;

    sharc_topo_spec_parse(set->value, &spec);
    for (int e = 0; e < spec.nentries; e++) {
        int matched = 0, port_found = 0, active = 0;
        char others[160] = ""; /* devices the prefix selects beyond its own name */
        size_t olen = 0;

        for (int k = 0; k < topo->nnics; k++) {
            const sharc_topo_nic_t *nic = &topo->nics[k];

            if (!sharc_topo_spec_entry_matches(&spec, e, nic->name)) {
                continue;
            }
            matched++;
            if (strcmp(nic->name, spec.entries[e].name) != 0 && olen < sizeof(others)) {
                olen += (size_t)snprintf(others + olen, sizeof(others) - olen, "%s%s",
                                         olen > 0 ? ", " : "", nic->name);
            }
            for (int p = 0; p < nic->nports; p++) {
                if (spec.entries[e].port < 0 || spec.entries[e].port == nic->ports[p].num) {
                    port_found++;
                    active += nic->ports[p].active;
                }
            }
        }
        if (matched == 0) {
            sharc_topo_find(doc, spec.exclude ? SHARC_TOPO_FINDING_STALE : missing, set,
                            "no RDMA device %s '%s' exists here%s",
                            spec.exact ? "named" : "starting with", spec.entries[e].name,
                            topo->nnics == 0 ? " (there are none: NCCL uses sockets)" : "");
            bad = 1;
        } else if (spec.exclude) {
            continue;
        } else if (port_found == 0) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "%s has no port %d",
                            spec.entries[e].name, spec.entries[e].port);
            bad = 1;
        } else if (active == 0) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "the port(s) of '%s' are down",
                            spec.entries[e].name);
            bad = 1;
        } else if (!spec.exact && matched > 1 &&
                   isdigit((unsigned char)spec.entries[e].name[strlen(spec.entries[e].name) - 1])) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                            "'%s' is a prefix and selects %d devices (%s too); put '=' in "
                            "front for exact names",
                            spec.entries[e].name, matched, others);
            bad = 1;
        }
    }
    if (!bad) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "names existing, active ports");
    }
}

/* Where the GID to use is, or that there is none. */
static const char *sharc_topo_gid_hint(const sharc_topo_port_t *port, char *buf, size_t size)
{
    int v2 = sharc_topo_roce_v2_ipv4(port);

    if (v2 >= 0) {
        snprintf(buf, size, "RoCE v2 with IPv4 is at %d", v2);
    } else {
        snprintf(buf, size,
                 "the port has no RoCE v2 GID with an IPv4 address: configure an "
                 "IPv4 address on its interface");
    }
    return buf;
}

static void sharc_topo_doc_gid(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    const sharc_topo_t *topo = doc->topo;
    char *end, hint[160];
    long index = strtol(set->value, &end, 10);
    int bad = 0, checked = 0;

    if (end == set->value || *end != '\0') {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "not a number");
        return;
    }
    if (topo->fabric == SHARC_TOPO_FABRIC_IB) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "InfiniBand ports route by LID; the GID index matters only on RoCE");
        return;
    }
    if (topo->fabric != SHARC_TOPO_FABRIC_ROCE || index < 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "no RoCE port to check it against");
        return;
    }
    for (int k = 0; k < topo->nnics && !bad; k++) {
        const sharc_topo_nic_t *nic = &topo->nics[k];

        for (int p = 0; p < nic->nports && nic->fabric == SHARC_TOPO_FABRIC_ROCE; p++) {
            const sharc_topo_port_t *port = &nic->ports[p];
            const sharc_topo_gid_t *gid = NULL;

            if (!port->active) {
                continue;
            }
            checked++;
            for (int g = 0; g < port->ngids; g++) {
                if (port->gids[g].index == index) {
                    gid = &port->gids[g];
                }
            }
            if (gid == NULL) {
                sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                                "%s port %d has no GID %ld (empty entry: no address)", nic->name,
                                port->num, index);
                bad = 1;
            } else if (strcmp(gid->type, "RoCE v2") != 0) {
                sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                                "GID %ld of %s port %d is %s, not RoCE v2: not routable across "
                                "subnets; %s",
                                index, nic->name, port->num, gid->type[0] ? gid->type : "untyped",
                                sharc_topo_gid_hint(port, hint, sizeof(hint)));
                bad = 1;
            } else if (strncmp(gid->gid, "fe80:", 5) == 0) {
                /* with no IPv4 GID on the port, link-local RoCE v2 is the best there is */
                sharc_topo_find(doc,
                                sharc_topo_roce_v2_ipv4(port) < 0 ? SHARC_TOPO_FINDING_STALE
                                                                  : SHARC_TOPO_FINDING_HARMFUL,
                                set,
                                "GID %ld of %s port %d has only a link-local address, which "
                                "does not route beyond the subnet; %s",
                                index, nic->name, port->num,
                                sharc_topo_gid_hint(port, hint, sizeof(hint)));
                bad = 1;
            }
            if (bad) {
                break;
            }
        }
    }
    if (!bad && checked > 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set,
                        "a RoCE v2 GID with an address on every active port");
    }
}

/*
 * NCCL_SOCKET_NTHREADS (1..16) and NCCL_NSOCKS_PERTHREAD: NCCL's socket transport only, so
 * stale where NCCL runs over RDMA; NCCL clamps the threads to 16 and cuts the sockets per
 * thread when their product passes 64.
 */
static void sharc_topo_doc_nsocks(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    const sharc_topo_t *topo = doc->topo;
    const char *other_key = strcmp(set->key, "NCCL_SOCKET_NTHREADS") == 0 ? "NCCL_NSOCKS_PERTHREAD"
                                                                          : "NCCL_SOCKET_NTHREADS";
    const char *other = sharc_topo_doc_value(doc, other_key);
    char *end;
    long v = strtol(set->value, &end, 10), w = 1;

    if (end == set->value || *end != '\0' || v < 1) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "not a positive number");
        return;
    }
    if (topo->fabric != SHARC_TOPO_FABRIC_ETH && topo->fabric != SHARC_TOPO_FABRIC_UNKNOWN &&
        topo->fabric != SHARC_TOPO_FABRIC_NONE) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "NCCL runs over %s here, not its TCP sockets: no effect",
                        sharc_topo_fabric_name(topo->fabric));
        return;
    }
    if (strcmp(set->key, "NCCL_SOCKET_NTHREADS") == 0 && v > 16) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set, "NCCL takes 16 threads at most");
        return;
    }
    if (other != NULL) {
        w = strtol(other, &end, 10);
        w = (end != other && *end == '\0' && w >= 1) ? w : 1;
    }
    if (v * w > 64) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "threads x sockets per thread is %ld: NCCL cuts it to 64 at most", v * w);
        return;
    }
    /* NCCL's sockets = threads x sockets per thread; with no thread (the default on NICs it
     * does not know) there is no extra socket at all */
    if (other == NULL && strcmp(set->key, "NCCL_NSOCKS_PERTHREAD") == 0 && topo->eth_best >= 0 &&
        topo->netdevs[topo->eth_best].vendor != 0x1d0f &&
        topo->netdevs[topo->eth_best].vendor != 0x1ae0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "NCCL runs no helper thread on this NIC by default, so it opens no "
                        "extra socket: set NCCL_SOCKET_NTHREADS too");
        return;
    }
    sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "%s",
                    other != NULL ? "within NCCL's limits (16 threads, 64 sockets per connection)"
                                  : "within NCCL's limits");
}

static void sharc_topo_doc_debug(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    if (strcasecmp(set->value, "INFO") == 0 || strcasecmp(set->value, "TRACE") == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "left on from debugging: every rank logs its setup and each "
                        "communicator, slowing start-up and flooding the job's log");
    } else {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "warnings only");
    }
}

static void sharc_topo_doc_cuda_visible(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    int ngpus = doc->topo->ngpus, count = 0, bad = 0;
    unsigned char seen[1024] = {0};
    char buf[256], *save = NULL;

    if (ngpus == 0) {
        /* a launcher may set it on every node; with no GPU it hides nothing */
        sharc_topo_find(doc, SHARC_TOPO_FINDING_NOTE, set, "no GPU on this node: it hides nothing");
        return;
    }
    snprintf(buf, sizeof(buf), "%s", set->value);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long idx = strtol(tok, &end, 10);

        count++;
        if (end == tok || *end != '\0') {
            continue; /* GPU-/MIG- UUIDs: cannot be checked against PCI */
        }
        if (idx < 0) {
            /* CUDA stops at the first invalid index */
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "'%ld' hides every GPU from that point on", idx);
            return;
        }
        if (idx >= ngpus) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "names GPU %ld; this node has %d, so CUDA stops at it", idx, ngpus);
            return;
        }
        if (idx < (long)sizeof(seen) && seen[idx]++) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "names GPU %ld twice", idx);
            return;
        }
    }
    if (count == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "empty: hides every GPU");
        bad = 1;
    } else if (count < ngpus) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "hides %d of the %d GPUs: fine when a launcher sets it per rank, stale "
                        "when exported for the whole job",
                        ngpus - count, ngpus);
        bad = 1;
    }
    if (!bad) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "shows every GPU");
    }
}

/*
 * A setting against its recommendation, after the rules for its key made the findings from
 * index @p first on. Where a rule found something wrong, its finding gains the recommended
 * value; where the rules found it fine or there is no rule, a value other than the
 * recommended one is a DIFFERS finding, which keeps the rule's remark.
 */
static void sharc_topo_doc_compare(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set,
                                   const sharc_topo_rec_t *rec, int first)
{
    char want[sizeof(rec->key) + sizeof(rec->value) + 8], remark[sizeof(doc->findings[0].reason)];

    if (!rec->unset && sharc_topo_same_value(set->key, set->value, rec->value)) {
        if (doc->n == first) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "as recommended: %s", rec->reason);
        }
        return;
    }
    if (rec->unset) {
        snprintf(want, sizeof(want), "to leave %s unset", rec->key);
    } else {
        snprintf(want, sizeof(want), "%s=%s", rec->key, rec->value);
    }
    for (int i = first; i < doc->n; i++) {
        sharc_topo_finding_t *f = &doc->findings[i];
        size_t len = strlen(f->reason);

        if (f->severity != SHARC_TOPO_FINDING_OK) {
            snprintf(f->reason + len, sizeof(f->reason) - len, "; recommended: %s", want);
            return;
        }
    }
    remark[0] = '\0';
    if (doc->n > first) {
        (void)sharc_snprintf(remark, sizeof(remark), "%s; ", doc->findings[first].reason);
        doc->n = first; /* the rules' "ok" gives way to the comparison */
    }
    sharc_topo_find(doc, SHARC_TOPO_FINDING_DIFFERS, set, "%srecommended %s: %s", remark, want,
                    rec->reason);
}

int sharc_topo_doctor(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                      const sharc_topo_libs_t *libs, const sharc_topo_setting_t *settings,
                      int nsettings, sharc_topo_finding_t *findings, int max, int *harmful_p)
{
    static const struct {
        const char *key;
        void (*check)(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set);
    } rules[] = {
        {"NCCL_IB_DISABLE", sharc_topo_doc_ib_disable},
        {"NCCL_SOCKET_IFNAME", sharc_topo_doc_ifname},
        {"NCCL_IB_HCA", sharc_topo_doc_hca},
        {"NCCL_IB_GID_INDEX", sharc_topo_doc_gid},
        {"NCCL_PROTO", sharc_topo_doc_efa},
        {"FI_EFA_USE_DEVICE_RDMA", sharc_topo_doc_efa},
        {"FI_PROVIDER", sharc_topo_doc_fi_provider},
        {"NCCL_NET", sharc_topo_doc_nccl_net},
        {"NCCL_NET_PLUGIN", sharc_topo_doc_net_plugin},
        {"NCCL_SOCKET_NTHREADS", sharc_topo_doc_nsocks},
        {"NCCL_NSOCKS_PERTHREAD", sharc_topo_doc_nsocks},
        {"NCCL_DEBUG", sharc_topo_doc_debug},
        {"CUDA_VISIBLE_DEVICES", sharc_topo_doc_cuda_visible},
        {"SHARC_TRANSPORT", sharc_topo_doc_transport},
        {"UCX_NET_DEVICES", sharc_topo_doc_ucx_devices},
        {"UCX_TLS", sharc_topo_doc_ucx_tls},
    };
    sharc_topo_doc_t doc = {topo, libs, settings, nsettings, findings, 0, max, 0};

    for (int s = 0; s < nsettings; s++) {
        int first = doc.n;

        for (size_t r = 0; r < SHARC_ARRAY_SIZE(rules); r++) {
            if (strcmp(settings[s].key, rules[r].key) == 0) {
                rules[r].check(&doc, &settings[s]);
            }
        }
        for (int r = 0; r < recs->nrecs; r++) {
            if (strcmp(recs->recs[r].key, settings[s].key) == 0) {
                sharc_topo_doc_compare(&doc, &settings[s], &recs->recs[r], first);
            }
        }
    }
    if (topo->fabric == SHARC_TOPO_FABRIC_EFA) {
        sharc_topo_doc_efa_node(&doc); /* the plugin, libfabric, GPUDirect, NCCL's network */
    }
    for (int r = 0; r < recs->nrecs; r++) {
        const sharc_topo_rec_t *rec = &recs->recs[r];
        int set = 0;

        for (int s = 0; s < nsettings; s++) {
            set |= (strcmp(settings[s].key, rec->key) == 0);
        }
        if (!set && !rec->unset) {
            sharc_topo_setting_t missing;

            snprintf(missing.key, sizeof(missing.key), "%s", rec->key);
            snprintf(missing.value, sizeof(missing.value), "%s", rec->value);
            snprintf(missing.source, sizeof(missing.source), "recommendation");
            sharc_topo_find(&doc, SHARC_TOPO_FINDING_SUGGEST, &missing, "%s", rec->reason);
        }
    }
    for (int i = 0; i < recs->nnotes; i++) {
        sharc_topo_find_node(&doc, SHARC_TOPO_FINDING_WARN, recs->notes[i].key, "topology", "%s",
                             recs->notes[i].text);
    }
    *harmful_p = doc.harmful;
    return doc.n;
}
