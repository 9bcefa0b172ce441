/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_doc_ucx.c: the doctor's rules of the settings of sharc's own transports: which backend
 * SHARC_TRANSPORT forces, and the devices (UCX_NET_DEVICES) and transports (UCX_TLS) UCX is
 * told to use, against the topology. The framework and NCCL's rules are in topo_doctor.c,
 * EFA's in topo_efa.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../../base/util.h"
#include "topo_doc.h"
#include "topo_tool.h"

/* An RDMA port named by UCX ("mlx5_0:1"): 0 found and active, else a finding was made. */
static int sharc_topo_doc_ucx_port(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set,
                                   const char *name, int num)
{
    const sharc_topo_t *topo = doc->topo;

    for (int k = 0; k < topo->nnics; k++) {
        const sharc_topo_nic_t *nic = &topo->nics[k];

        if (strcmp(nic->name, name) != 0) {
            continue;
        }
        if (nic->captured && nic->nports == 0) {
            return 0; /* known by name only: nothing to judge by */
        }
        for (int p = 0; p < nic->nports; p++) {
            if (nic->ports[p].num == num) {
                if (nic->ports[p].active) {
                    return 0;
                }
                sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                                "%s port %d is down (%s): UCX finds no usable device there", name,
                                num, nic->ports[p].state);
                return -1;
            }
        }
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "%s has no port %d", name, num);
        return -1;
    }
    sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "no RDMA device named '%s' exists here",
                    name);
    return -1;
}

/* An interface named by UCX ("eth0"): 0 found and up, else a finding was made. */
static int sharc_topo_doc_ucx_iface(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set,
                                    const char *name)
{
    const sharc_topo_t *topo = doc->topo;

    for (int i = 0; i < topo->nifaces; i++) {
        if (strcmp(topo->ifaces[i].name, name) == 0) {
            if (!topo->ifaces[i].up) {
                sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "interface %s is down", name);
                return -1;
            }
            if (topo->ifaces[i].master[0] != '\0') {
                sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                                "%s is a port of %s and has no address of its own: name %s", name,
                                topo->ifaces[i].master, topo->ifaces[i].master);
                return -1;
            }
            return 0;
        }
    }
    for (int k = 0; k < topo->nnics; k++) {
        if (strcmp(topo->nics[k].name, name) == 0) {
            sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                            "UCX names RDMA devices with their port (%s:1): '%s' matches "
                            "nothing",
                            name, name);
            return -1;
        }
    }
    if (topo->nifaces == 0) {
        return 0; /* the input did not list interfaces: nothing to judge by */
    }
    sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "no interface named '%s' exists here",
                    name);
    return -1;
}

/* UCX_NET_DEVICES: "all", or RDMA ports (mlx5_0:1) and interfaces (eth0), exact names. */
void sharc_topo_doc_ucx_devices(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    sharc_topo_spec_t spec;
    int bad = 0;

    if (strcmp(set->value, "all") == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "UCX's default: every device");
        return;
    }
    sharc_topo_spec_parse(set->value, &spec);
    for (int e = 0; e < spec.nentries; e++) {
        if (spec.entries[e].port >= 0) {
            bad |= sharc_topo_doc_ucx_port(doc, set, spec.entries[e].name, spec.entries[e].port);
        } else {
            bad |= sharc_topo_doc_ucx_iface(doc, set, spec.entries[e].name);
        }
    }
    if (spec.nentries == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set, "empty: UCX has no device to use");
    } else if (!bad) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set, "names existing devices that are up");
    }
}

/* Active InfiniBand or RoCE ports: what UCX's verbs transports (rc, ud, dc) need. */
static int sharc_topo_verbs_ports(const sharc_topo_t *topo)
{
    int n = 0;

    for (int k = 0; k < topo->nnics; k++) {
        const sharc_topo_nic_t *nic = &topo->nics[k];

        for (int p = 0; p < nic->nports; p++) {
            n += nic->ports[p].active &&
                 (nic->fabric == SHARC_TOPO_FABRIC_IB || nic->fabric == SHARC_TOPO_FABRIC_ROCE);
        }
    }
    return n;
}

/*
 * UCX_TLS: the transports between nodes it names must exist here. Naming only verbs
 * transports (rc, ud, dc and their variants, "ib") where no InfiniBand or RoCE port is active
 * leaves UCX nothing to reach other nodes with. "^" lists (exclusions) and "all" are fine.
 */
void sharc_topo_doc_ucx_tls(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    static const char *const verbs[] = {"rc", "ud", "dc", "ib"};
    sharc_topo_spec_t spec;
    int nverbs = 0, ntcp = 0, nall = 0;

    sharc_topo_spec_parse(set->value, &spec);
    if (spec.exclude) {
        return;
    }
    for (int e = 0; e < spec.nentries; e++) {
        const char *tl = spec.entries[e].name;

        for (size_t v = 0; v < SHARC_ARRAY_SIZE(verbs); v++) {
            size_t len = strlen(verbs[v]);

            nverbs += strncmp(tl, verbs[v], len) == 0 && (tl[len] == '\0' || tl[len] == '_');
        }
        ntcp += strcmp(tl, "tcp") == 0;
        nall += strcmp(tl, "all") == 0;
    }
    if (nverbs > 0 && ntcp == 0 && nall == 0 && sharc_topo_verbs_ports(doc->topo) == 0 &&
        doc->topo->fabric != SHARC_TOPO_FABRIC_UNKNOWN) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "names verbs transports only, and no InfiniBand or RoCE port is active "
                        "here: UCX has nothing to reach other nodes with");
    }
}

/*
 * SHARC_TRANSPORT names one backend for every buffer and every peer. auto is right
 * everywhere; a name is harmful when that backend cannot serve a job here at all (not built
 * in, self, or nccl, which carries GPU buffers only), stale when it works for some jobs only.
 * Forcing ucx works, so it gets no rule: the generic comparison says it differs.
 */
void sharc_topo_doc_transport(sharc_topo_doc_t *doc, const sharc_topo_setting_t *set)
{
    int ngpus = doc->topo->ngpus, known = 0;
    const char *v = set->value, *name;
    char names[128] = "";
    size_t len = 0;

    for (int i = 0; (name = sharc_config_choice("TRANSPORT", i)) != NULL; i++) {
        known |= strcasecmp(name, v) == 0;
        len += (size_t)snprintf(names + len, len < sizeof(names) ? sizeof(names) - len : 0, "%s%s",
                                i > 0 ? ", " : "", name);
    }
    if (!known) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "not a transport sharc knows (%s): creating a context fails", names);
    } else if (strcasecmp(v, "auto") == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_OK, set,
                        "%s host buffers through shm inside the node and ucx between nodes",
                        ngpus > 0 ? "GPU buffers through NCCL," : "no GPU:");
    } else if (strcasecmp(v, "nccl") == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "forces NCCL on every buffer, but NCCL carries GPU buffers only: %s%s; "
                        "auto sends GPU buffers through NCCL and host buffers through shm+ucx",
                        ngpus > 0 ? "host buffers have no transport"
                                  : "this node has no GPU, so nothing can use it",
                        !sharc_build_has_transport("nccl")
                            ? ", and this sharc has no nccl backend yet: every communicator fails"
                            : "");
    } else if (!sharc_build_has_transport(v)) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "this sharc was built without %s: every communicator fails", set->value);
    } else if (strcasecmp(v, "self") == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_HARMFUL, set,
                        "self reaches only the calling rank: every communicator of two or more "
                        "ranks fails");
    } else if (strcasecmp(v, "shm") == 0) {
        sharc_topo_find(doc, SHARC_TOPO_FINDING_STALE, set,
                        "shm reaches the ranks of this node only: a job over several nodes fails "
                        "to create its communicators%s; auto uses shm inside the node anyway",
                        ngpus > 0 ? ", and GPU buffers miss NCCL" : "");
    }
}
