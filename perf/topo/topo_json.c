/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_json.c: sharc-topo's JSON output (json-c): the topology, its classification and
 * recommendations (--json), and the doctor's findings (doctor --json). Built only with json-c
 * (topo_json_none.c otherwise).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "topo_tool.h"

static const char *const sharc_topo_netdev_kinds[] = {
    [SHARC_TOPO_NETDEV_PORT] = "port",
    [SHARC_TOPO_NETDEV_BOND] = "bond",
    [SHARC_TOPO_NETDEV_BRIDGE] = "bridge",
};

static json_object *sharc_topo_json_str(const char *s)
{
    return json_object_new_string(s);
}

/* "a,b" as ["a", "b"]; "" as [] */
static json_object *sharc_topo_json_list(const char *csv)
{
    json_object *arr = json_object_new_array();

    while (*csv != '\0') {
        size_t len = strcspn(csv, ",");

        json_object_array_add(arr, json_object_new_string_len(csv, (int)len));
        csv += len + (csv[len] == ',');
    }
    return arr;
}

static json_object *sharc_topo_json_pci(json_object *obj, const sharc_topo_pci_t *pci)
{
    json_object_object_add(obj, "busid", sharc_topo_json_str(pci->busid));
    json_object_object_add(obj, "numa", json_object_new_int(pci->numa));
    json_object_object_add(obj, "pci_path", sharc_topo_json_str(pci->path));
    return obj;
}

/* "vvvv:dddd", or "" when either is unknown. */
static json_object *sharc_topo_json_ids(unsigned vendor, unsigned device)
{
    char ids[16];

    snprintf(ids, sizeof(ids), "%04x:%04x", vendor & 0xffff, device & 0xffff);
    return sharc_topo_json_str(vendor != 0 && device != 0 ? ids : "");
}

static json_object *sharc_topo_json_nic(const sharc_topo_nic_t *nic)
{
    json_object *obj = json_object_new_object(), *ports = json_object_new_array();

    json_object_object_add(obj, "name", sharc_topo_json_str(nic->name));
    json_object_object_add(obj, "driver", sharc_topo_json_str(nic->driver));
    json_object_object_add(obj, "fabric", sharc_topo_json_str(sharc_topo_fabric_name(nic->fabric)));
    json_object_object_add(obj, "pci_id", sharc_topo_json_ids(nic->vendor, nic->device));
    json_object_object_add(obj, "netdev", sharc_topo_json_str(nic->netdev));
    sharc_topo_json_pci(obj, &nic->pci);
    for (int p = 0; p < nic->nports; p++) {
        const sharc_topo_port_t *port = &nic->ports[p];
        json_object *po = json_object_new_object(), *gids = json_object_new_array();

        json_object_object_add(po, "port", json_object_new_int(port->num));
        json_object_object_add(po, "active", json_object_new_boolean(port->active));
        json_object_object_add(po, "state", sharc_topo_json_str(port->state));
        json_object_object_add(po, "link_layer", sharc_topo_json_str(port->link_layer));
        json_object_object_add(po, "rate_gbps", json_object_new_double(port->rate_gbps));
        for (int g = 0; g < port->ngids; g++) {
            json_object *go = json_object_new_object();

            json_object_object_add(go, "index", json_object_new_int(port->gids[g].index));
            json_object_object_add(go, "gid", sharc_topo_json_str(port->gids[g].gid));
            json_object_object_add(go, "type", sharc_topo_json_str(port->gids[g].type));
            json_object_object_add(go, "ndev", sharc_topo_json_str(port->gids[g].ndev));
            json_object_object_add(go, "ipv4", json_object_new_boolean(port->gids[g].ipv4));
            json_object_array_add(gids, go);
        }
        json_object_object_add(po, "gids", gids);
        json_object_array_add(ports, po);
    }
    json_object_object_add(obj, "ports", ports);
    return obj;
}

/* A GPU's rails (@p n names) into "rails", the first @p nnearest of them into
 * "nearest_nics". */
static void sharc_topo_json_rails(json_object *obj, const char *const *names, int n, int nnearest)
{
    json_object *rails = json_object_new_array(), *nearest = json_object_new_array();

    for (int r = 0; r < n; r++) {
        json_object *name = sharc_topo_json_str(names[r]);

        json_object_array_add(rails, name);
        if (r < nnearest) {
            json_object_array_add(nearest, json_object_get(name));
        }
    }
    json_object_object_add(obj, "rails", rails);
    json_object_object_add(obj, "nearest_nics", nearest);
}

static json_object *sharc_topo_json_gpu(const sharc_topo_t *topo, int i)
{
    const sharc_topo_gpu_t *gpu = &topo->gpus[i];
    json_object *obj = json_object_new_object();
    const char *names[SHARC_TOPO_MAX_NICS + SHARC_TOPO_MAX_NETDEVS];
    int n = 0, nnearest;

    json_object_object_add(obj, "index", json_object_new_int(i));
    sharc_topo_json_pci(obj, &gpu->pci);
    json_object_object_add(obj, "pci_id", sharc_topo_json_ids(gpu->vendor, gpu->device));
    json_object_object_add(obj, "model", sharc_topo_json_str(gpu->model));
    json_object_object_add(obj, "sm", json_object_new_int(gpu->sm));
    json_object_object_add(obj, "nvlinks_switch", json_object_new_int(gpu->nvlinks_switch));
    for (int r = 0; r < gpu->nrails; r++) {
        names[n++] = topo->nics[gpu->rails[r]].name;
    }
    nnearest = gpu->nnearest;
    /* on a multi-NIC Ethernet node the rails are interfaces (no RDMA NIC has one) */
    for (int r = 0; r < gpu->eth_nrails && gpu->nrails == 0; r++) {
        names[n++] = topo->netdevs[gpu->eth_rails[r]].name;
        nnearest = gpu->eth_nnearest;
    }
    sharc_topo_json_rails(obj, names, n, nnearest);
    json_object_object_add(obj, "net_gbps",
                           gpu->net_gbps < 0 ? NULL : json_object_new_double(gpu->net_gbps));
    return obj;
}

static json_object *sharc_topo_json_netdev(const sharc_topo_netdev_t *nd)
{
    json_object *obj = json_object_new_object();
    char ids[16];

    json_object_object_add(obj, "name", sharc_topo_json_str(nd->name));
    json_object_object_add(obj, "driver", sharc_topo_json_str(nd->driver));
    json_object_object_add(obj, "speed_mbps", json_object_new_int(nd->speed_mbps));
    json_object_object_add(obj, "up", json_object_new_boolean(nd->up));
    json_object_object_add(obj, "rdma", sharc_topo_json_str(nd->rdma));
    json_object_object_add(obj, "kind", sharc_topo_json_str(sharc_topo_netdev_kinds[nd->kind]));
    json_object_object_add(obj, "master", sharc_topo_json_str(nd->master));
    json_object_object_add(obj, "ipv4", nd->ipv4 < 0 ? NULL : json_object_new_boolean(nd->ipv4));
    json_object_object_add(obj, "ipoib", json_object_new_boolean(nd->ipoib));
    snprintf(ids, sizeof(ids), "%04x", nd->vendor & 0xffff);
    json_object_object_add(obj, "pci_vendor", sharc_topo_json_str(nd->vendor != 0 ? ids : ""));
    sharc_topo_json_pci(obj, &nd->pci);
    return obj;
}

/* The devices: "gpus", "nics", "netdevs", "cpu", "nvswitches", and the matrices of links
 * from each GPU to the GPUs ("gpu_gpu") and to the NICs ("gpu_nic"). */
static void sharc_topo_json_devices(json_object *root, const sharc_topo_t *topo)
{
    json_object *gpus = json_object_new_array(), *nics = json_object_new_array();
    json_object *netdevs = json_object_new_array(), *gg = json_object_new_array();
    json_object *gn = json_object_new_array(), *cpu = json_object_new_object();
    char cell[16];

    for (int i = 0; i < topo->ngpus; i++) {
        json_object *row = json_object_new_array(), *nrow = json_object_new_array();

        json_object_array_add(gpus, sharc_topo_json_gpu(topo, i));
        for (int j = 0; j < topo->ngpus; j++) {
            json_object_array_add(
                row, sharc_topo_json_str(sharc_topo_cell(topo->gpu_gpu[i][j], topo->nvlinks[i][j],
                                                         cell, sizeof(cell))));
        }
        json_object_array_add(gg, row);
        for (int k = 0; k < topo->nnics; k++) {
            json_object_array_add(nrow,
                                  sharc_topo_json_str(sharc_topo_link_name(topo->gpu_nic[i][k])));
        }
        json_object_array_add(gn, nrow);
    }
    for (int k = 0; k < topo->nnics; k++) {
        json_object_array_add(nics, sharc_topo_json_nic(&topo->nics[k]));
    }
    for (int d = 0; d < topo->nnetdevs; d++) {
        json_object_array_add(netdevs, sharc_topo_json_netdev(&topo->netdevs[d]));
    }
    json_object_object_add(cpu, "sockets", json_object_new_int(topo->cpu.nsockets));
    json_object_object_add(cpu, "numa_nodes", json_object_new_int(topo->cpu.nnuma));
    json_object_object_add(root, "gpus", gpus);
    json_object_object_add(root, "nics", nics);
    json_object_object_add(root, "netdevs", netdevs);
    json_object_object_add(root, "cpu", cpu);
    json_object_object_add(root, "nvswitches", json_object_new_int(topo->nvswitches));
    json_object_object_add(root, "gpu_gpu", gg);
    json_object_object_add(root, "gpu_nic", gn);
}

/* The classification: "intra", "fabric", the interfaces sockets use, the machine. */
static void sharc_topo_json_fabric(json_object *root, const sharc_topo_t *topo)
{
    json_object *socket_ifs = json_object_new_array(), *machine = json_object_new_object();

    json_object_object_add(root, "intra", sharc_topo_json_str(sharc_topo_intra_name(topo->intra)));
    json_object_object_add(root, "fabric",
                           sharc_topo_json_str(sharc_topo_fabric_name(topo->fabric)));
    json_object_object_add(
        root, "eth_best",
        sharc_topo_json_str(topo->eth_best >= 0 ? topo->netdevs[topo->eth_best].name : ""));
    for (int s = 0; s < topo->nsocket_ifs; s++) {
        json_object_array_add(socket_ifs,
                              sharc_topo_json_str(topo->netdevs[topo->socket_ifs[s]].name));
    }
    json_object_object_add(root, "socket_ifs", socket_ifs);
    json_object_object_add(machine, "product", sharc_topo_json_str(topo->product));
    json_object_object_add(machine, "vendor", sharc_topo_json_str(topo->sys_vendor));
    json_object_object_add(root, "machine", machine);
}

/* The advice: "backend", "recommendations", "notes". */
static void sharc_topo_json_recs(json_object *root, const sharc_topo_recs_t *recs)
{
    json_object *backend = json_object_new_object(), *recs_json = json_object_new_array();
    json_object *notes = json_object_new_array();

    json_object_object_add(backend, "transport", sharc_topo_json_str(recs->transport));
    json_object_object_add(backend, "gpu", sharc_topo_json_str(recs->gpu_backend));
    json_object_object_add(backend, "host", sharc_topo_json_str(recs->host_backend));
    json_object_object_add(backend, "not_built", sharc_topo_json_list(recs->not_built));
    for (int r = 0; r < recs->nrecs; r++) {
        json_object *obj = json_object_new_object();

        json_object_object_add(obj, "key", sharc_topo_json_str(recs->recs[r].key));
        json_object_object_add(obj, "value", sharc_topo_json_str(recs->recs[r].value));
        json_object_object_add(obj, "unset", json_object_new_boolean(recs->recs[r].unset));
        json_object_object_add(obj, "reason", sharc_topo_json_str(recs->recs[r].reason));
        json_object_array_add(recs_json, obj);
    }
    for (int i = 0; i < recs->nnotes; i++) {
        json_object *obj = json_object_new_object();

        json_object_object_add(obj, "key", sharc_topo_json_str(recs->notes[i].key));
        json_object_object_add(obj, "text", sharc_topo_json_str(recs->notes[i].text));
        json_object_array_add(notes, obj);
    }
    json_object_object_add(root, "backend", backend);
    json_object_object_add(root, "recommendations", recs_json);
    json_object_object_add(root, "notes", notes);
}

static json_object *sharc_topo_json(const sharc_topo_t *topo, const sharc_topo_recs_t *recs)
{
    json_object *root = json_object_new_object(), *warnings = json_object_new_array();

    json_object_object_add(root, "source", sharc_topo_json_str(topo->source));
    sharc_topo_json_devices(root, topo);
    sharc_topo_json_fabric(root, topo);
    sharc_topo_json_recs(root, recs);
    for (int w = 0; w < topo->nwarnings; w++) {
        json_object_array_add(warnings, sharc_topo_json_str(topo->warnings[w]));
    }
    json_object_object_add(root, "warnings", warnings);
    return root;
}

sharc_status_t sharc_topo_print_json(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                     FILE *out)
{
    json_object *root = sharc_topo_json(topo, recs);

    fprintf(out, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
    json_object_put(root);
    return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
}

sharc_status_t sharc_topo_print_doctor_json(const sharc_topo_finding_t *findings, int n, FILE *out)
{
    json_object *arr = json_object_new_array();

    for (int i = 0; i < n; i++) {
        json_object *obj = json_object_new_object();

        json_object_object_add(
            obj, "severity",
            json_object_new_string(sharc_topo_severity_names[findings[i].severity]));
        json_object_object_add(obj, "key", json_object_new_string(findings[i].key));
        json_object_object_add(
            obj, "value", findings[i].no_value ? NULL : json_object_new_string(findings[i].value));
        json_object_object_add(obj, "source", json_object_new_string(findings[i].source));
        json_object_object_add(obj, "reason", json_object_new_string(findings[i].reason));
        json_object_array_add(arr, obj);
    }
    fprintf(out, "%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY));
    json_object_put(arr);
    return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
}
