/*
 * topo_out.c: printing a topology and its recommendations: a matrix like
 * `nvidia-smi topo -m` with the NICs, fabric and rails; shell exports; an env file in the
 * /etc/nccl.conf format; JSON (json-c). Also the doctor's findings.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#ifdef HAVE_JSONC
#include <json-c/json.h>
#endif

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../src/base/log.h"
#include "../../src/base/util.h"
#include "topo_tool.h"

static const char *const sharc_topo_severity_names[] = {
    [SHARC_TOPO_FINDING_OK] = "ok",           [SHARC_TOPO_FINDING_STALE] = "stale",
    [SHARC_TOPO_FINDING_HARMFUL] = "HARMFUL", [SHARC_TOPO_FINDING_SUGGEST] = "suggest",
    [SHARC_TOPO_FINDING_DIFFERS] = "differs", [SHARC_TOPO_FINDING_WARN] = "warn",
    [SHARC_TOPO_FINDING_NOTE] = "note",
};

static const char *sharc_topo_cell(sharc_topo_link_t link, int nvlinks, char *buf, size_t size)
{
    if (link == SHARC_TOPO_LINK_NV && nvlinks > 0) {
        snprintf(buf, size, "NV%d", nvlinks);
    } else {
        snprintf(buf, size, "%s", sharc_topo_link_name(link));
    }
    return buf;
}

/* The active ports' rate in total; *unknown_p: some active port's rate is unknown. */
static double sharc_topo_nic_rate(const sharc_topo_nic_t *nic, int *active_p, int *unknown_p)
{
    double gbps = 0;

    *active_p = *unknown_p = 0;
    for (int p = 0; p < nic->nports; p++) {
        if (nic->ports[p].active) {
            gbps += nic->ports[p].rate_gbps;
            (*active_p)++;
            *unknown_p |= !(nic->ports[p].rate_gbps > 0);
        }
    }
    return gbps;
}

/* The CPU list of a GPU's NUMA node, or NULL. */
static const char *sharc_topo_gpu_cpus(const sharc_topo_t *topo, int i)
{
    int numa = topo->gpus[i].pci.numa;

    if (numa >= 0 && numa < SHARC_TOPO_MAX_NUMA && topo->cpu.cpulist[numa][0] != '\0') {
        return topo->cpu.cpulist[numa];
    }
    return NULL;
}

static void sharc_topo_print_matrix(const sharc_topo_t *topo, FILE *out)
{
    /* the CPU affinity column is as wide as its longest list, plus two spaces before NUMA */
    int cpus_width = (int)strlen("CPU Affinity");
    char cell[16];

    for (int i = 0; i < topo->ngpus; i++) {
        const char *cpus = sharc_topo_gpu_cpus(topo, i);

        if (cpus != NULL) {
            cpus_width = SHARC_MAX(cpus_width, (int)strlen(cpus));
        }
    }
    cpus_width += 2;
    fprintf(out, "%-7s", "");
    for (int j = 0; j < topo->ngpus; j++) {
        fprintf(out, "GPU%-4d", j);
    }
    for (int k = 0; k < topo->nnics; k++) {
        fprintf(out, "NIC%-4d", k);
    }
    fprintf(out, "%-*sNUMA\n", cpus_width, "CPU Affinity");
    for (int i = 0; i < topo->ngpus; i++) {
        const char *cpus = sharc_topo_gpu_cpus(topo, i);
        int numa = topo->gpus[i].pci.numa;

        fprintf(out, "GPU%-4d", i);
        for (int j = 0; j < topo->ngpus; j++) {
            fprintf(out, "%-7s",
                    sharc_topo_cell(topo->gpu_gpu[i][j], topo->nvlinks[i][j], cell, sizeof(cell)));
        }
        for (int k = 0; k < topo->nnics; k++) {
            fprintf(out, "%-7s", sharc_topo_link_name(topo->gpu_nic[i][k]));
        }
        fprintf(out, "%-*s", cpus_width, cpus != NULL ? cpus : "N/A");
        fprintf(out, numa >= 0 ? "%d\n" : "N/A\n", numa);
    }
    for (int k = 0; k < topo->nnics; k++) {
        fprintf(out, "NIC%-4d", k);
        for (int j = 0; j < topo->ngpus; j++) {
            fprintf(out, "%-7s", sharc_topo_link_name(topo->gpu_nic[j][k]));
        }
        for (int l = 0; l < topo->nnics; l++) {
            fprintf(out, "%-7s",
                    l == k ? "X"
                           : sharc_topo_link_name(
                                 sharc_topo_pci_distance(&topo->nics[k].pci, &topo->nics[l].pci)));
        }
        fprintf(out, "\n");
    }
}

static void sharc_topo_print_text(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                  FILE *out)
{
    fprintf(out, "source: %s\n\n", topo->source[0] ? topo->source : "?");
    if (topo->ngpus + topo->nnics > 0) {
        sharc_topo_print_matrix(topo, out);
        fprintf(out, "\n");
    }
    fprintf(out, "GPUs: %d", topo->ngpus);
    for (int i = 0; i < topo->ngpus; i++) {
        const sharc_topo_gpu_t *gpu = &topo->gpus[i];

        char ids[16] = "id ?";

        if (gpu->vendor != 0 && gpu->device != 0) {
            snprintf(ids, sizeof(ids), "%04x:%04x", gpu->vendor & 0xffff, gpu->device & 0xffff);
        }
        fprintf(out, "\n GPU%d %s [%s] %s", i, gpu->pci.busid[0] ? gpu->pci.busid : "(bus id ?)",
                ids, gpu->model[0] ? gpu->model : "(model ?)");
    }
    fprintf(out, "\nNICs: %d\n", topo->nnics);
    for (int k = 0; k < topo->nnics; k++) {
        const sharc_topo_nic_t *nic = &topo->nics[k];
        int active, unknown;
        double gbps = sharc_topo_nic_rate(nic, &active, &unknown);
        char rate[64] = "ports and rate unknown"; /* a capture that names the NIC only */

        if (!nic->captured || nic->nports > 0) {
            snprintf(rate, sizeof(rate), "%d/%d ports active, ", active, nic->nports);
            snprintf(rate + strlen(rate), sizeof(rate) - strlen(rate),
                     unknown ? "rate unknown" : "%.0f Gb/s", gbps);
        }
        fprintf(out, "  NIC%d: %-12s %-10s %s%s%s%s%s\n", k, nic->name,
                sharc_topo_fabric_name(nic->fabric), rate, nic->driver[0] ? ", driver " : "",
                nic->driver, nic->netdev[0] ? ", " : "", nic->netdev);
    }
    fprintf(out, "network interfaces: %d\n", topo->nnetdevs);
    for (int d = 0; d < topo->nnetdevs; d++) {
        const sharc_topo_netdev_t *nd = &topo->netdevs[d];
        char speed[32] = "speed unknown";

        if (nd->speed_mbps >= 0) {
            snprintf(speed, sizeof(speed), "%d Mb/s", nd->speed_mbps);
        }
        fprintf(out, "  %-12s %s, %s, driver %s%s%s%s%s%s%s\n", nd->name, nd->up ? "up" : "down",
                speed, nd->driver[0] ? nd->driver : "?", nd->ipoib ? ", IPoIB" : "",
                nd->rdma[0] ? ", RDMA " : "", nd->rdma, nd->master[0] ? ", port of " : "",
                nd->master,
                nd->ipv4 < 0 ? ""
                : nd->ipv4   ? ", IPv4"
                             : ", no IPv4");
    }
    fprintf(out, "CPU: %d socket(s), %d NUMA node(s); NVSwitches: %d\n", topo->cpu.nsockets,
            topo->cpu.nnuma, topo->nvswitches);
    if (topo->product[0] != '\0') {
        fprintf(out, "machine: %s%s%s\n", topo->sys_vendor, topo->sys_vendor[0] ? " " : "",
                topo->product);
    }
    fprintf(out, "intra-node: %s\ninter-node: %s", sharc_topo_intra_name(topo->intra),
            sharc_topo_fabric_name(topo->fabric));
    if (topo->fabric == SHARC_TOPO_FABRIC_ETH) {
        fprintf(out, " (TCP on ");
        for (int s = 0; s < topo->nsocket_ifs; s++) {
            fprintf(out, "%s%s", s > 0 ? "," : "", topo->netdevs[topo->socket_ifs[s]].name);
        }
        fprintf(out, ")");
    }
    fprintf(out, "\n");
    for (int i = 0; i < topo->ngpus; i++) {
        const sharc_topo_gpu_t *gpu = &topo->gpus[i];

        fprintf(out, "  GPU%d rails:", i);
        if (topo->fabric == SHARC_TOPO_FABRIC_ETH && gpu->eth_nrails > 0) {
            /* several interfaces of the fastest class: the nearest are this GPU's */
            for (int r = 0; r < gpu->eth_nnearest; r++) {
                fprintf(out, " %s", topo->netdevs[gpu->eth_rails[r]].name);
            }
            fprintf(out, " (%s)",
                    sharc_topo_link_name(
                        sharc_topo_pci_distance(&gpu->pci, &topo->netdevs[gpu->eth_rails[0]].pci)));
        } else if (topo->fabric == SHARC_TOPO_FABRIC_ETH) {
            /* no RDMA NIC, so no rail of its own: the GPUs share one interface */
            fprintf(out, " none, TCP on %s shared by %d GPU(s)", topo->netdevs[topo->eth_best].name,
                    topo->ngpus);
        } else if (gpu->nrails == 0) {
            fprintf(out, " none");
        }
        for (int r = 0; r < gpu->nnearest; r++) {
            fprintf(out, " %s", topo->nics[gpu->rails[r]].name);
        }
        if (gpu->nrails > 0) {
            fprintf(out, " (%s)", sharc_topo_link_name(topo->gpu_nic[i][gpu->rails[0]]));
        }
        if (gpu->net_gbps < 0) {
            fprintf(out, ", bandwidth unknown\n");
        } else if (topo->fabric == SHARC_TOPO_FABRIC_NONE) {
            fprintf(out, ", no network\n");
        } else {
            fprintf(out, ", %.0f Gb/s expected\n", gpu->net_gbps);
        }
    }
    fprintf(out, "\nbackend (SHARC_TRANSPORT=%s): ", recs->transport);
    if (topo->ngpus > 0) {
        fprintf(out, "%s for GPU buffers, %s for host buffers", recs->gpu_backend,
                recs->host_backend);
    } else {
        fprintf(out, "%s for host buffers (no GPU)", recs->host_backend);
    }
    if (recs->not_built[0] != '\0') {
        fprintf(out, "; not in this build: %s", recs->not_built);
    }
    fprintf(out, "\nrecommended:\n");
    for (int r = 0; r < recs->nrecs; r++) {
        const sharc_topo_rec_t *rec = &recs->recs[r];

        if (rec->unset) {
            fprintf(out, "  unset %s\n      # %s\n", rec->key, rec->reason);
        } else {
            fprintf(out, "  %s=%s\n      # %s\n", rec->key, rec->value, rec->reason);
        }
    }
    if (recs->nnotes > 0) {
        fprintf(out, "notes:\n");
        for (int i = 0; i < recs->nnotes; i++) {
            fprintf(out, "  %s: %s\n", recs->notes[i].key, recs->notes[i].text);
        }
    }
    if (topo->nwarnings > 0) {
        fprintf(out, "\nwarnings (%d):\n", topo->nwarnings);
        for (int w = 0; w < topo->nwarnings; w++) {
            fprintf(out, "  %s\n", topo->warnings[w]);
        }
    }
}

/* Single quotes for the shell: ' becomes '\'' */
static void sharc_topo_print_quoted(const char *value, FILE *out)
{
    fputc('\'', out);
    for (; *value != '\0'; value++) {
        if (*value == '\'') {
            fputs("'\\''", out);
        } else {
            fputc(*value, out);
        }
    }
    fputc('\'', out);
}

static void sharc_topo_print_env(const sharc_topo_recs_t *recs, int shell, FILE *out)
{
    for (int i = 0; i < recs->nnotes; i++) {
        fprintf(out, "# note on %s: %s\n", recs->notes[i].key, recs->notes[i].text);
    }
    for (int r = 0; r < recs->nrecs; r++) {
        const sharc_topo_rec_t *rec = &recs->recs[r];

        fprintf(out, "# %s\n", rec->reason);
        if (rec->unset) {
            fprintf(out, shell ? "unset %s\n" : "# %s: leave unset\n", rec->key);
        } else if (shell) {
            fprintf(out, "export %s=", rec->key);
            sharc_topo_print_quoted(rec->value, out);
            fputc('\n', out);
        } else {
            fprintf(out, "%s=%s\n", rec->key, rec->value);
        }
    }
}

#ifdef HAVE_JSONC
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

static json_object *sharc_topo_json_nic(const sharc_topo_nic_t *nic)
{
    json_object *obj = json_object_new_object(), *ports = json_object_new_array();
    char ids[16];

    json_object_object_add(obj, "name", sharc_topo_json_str(nic->name));
    json_object_object_add(obj, "driver", sharc_topo_json_str(nic->driver));
    json_object_object_add(obj, "fabric", sharc_topo_json_str(sharc_topo_fabric_name(nic->fabric)));
    snprintf(ids, sizeof(ids), "%04x:%04x", nic->vendor & 0xffff, nic->device & 0xffff);
    json_object_object_add(obj, "pci_id",
                           sharc_topo_json_str(nic->vendor != 0 && nic->device != 0 ? ids : ""));
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

static json_object *sharc_topo_json(const sharc_topo_t *topo, const sharc_topo_recs_t *recs)
{
    json_object *root = json_object_new_object();
    json_object *gpus = json_object_new_array(), *nics = json_object_new_array();
    json_object *netdevs = json_object_new_array(), *gg = json_object_new_array();
    json_object *gn = json_object_new_array(), *recs_json = json_object_new_array();
    json_object *warnings = json_object_new_array(), *cpu = json_object_new_object();
    json_object *backend = json_object_new_object(), *notes = json_object_new_array();
    json_object *socket_ifs = json_object_new_array(), *machine = json_object_new_object();
    char cell[16], ids[16];

    json_object_object_add(root, "source", sharc_topo_json_str(topo->source));
    for (int i = 0; i < topo->ngpus; i++) {
        const sharc_topo_gpu_t *gpu = &topo->gpus[i];
        json_object *obj = json_object_new_object(), *rails = json_object_new_array();
        json_object *nearest = json_object_new_array(), *row = json_object_new_array();
        json_object *nrow = json_object_new_array();

        json_object_object_add(obj, "index", json_object_new_int(i));
        sharc_topo_json_pci(obj, &gpu->pci);
        snprintf(ids, sizeof(ids), "%04x:%04x", gpu->vendor & 0xffff, gpu->device & 0xffff);
        json_object_object_add(
            obj, "pci_id", sharc_topo_json_str(gpu->vendor != 0 && gpu->device != 0 ? ids : ""));
        json_object_object_add(obj, "model", sharc_topo_json_str(gpu->model));
        json_object_object_add(obj, "sm", json_object_new_int(gpu->sm));
        json_object_object_add(obj, "nvlinks_switch", json_object_new_int(gpu->nvlinks_switch));
        for (int r = 0; r < gpu->nrails; r++) {
            json_object *name = sharc_topo_json_str(topo->nics[gpu->rails[r]].name);

            json_object_array_add(rails, name);
            if (r < gpu->nnearest) {
                json_object_array_add(nearest, json_object_get(name));
            }
        }
        /* on a multi-NIC Ethernet node the rails are interfaces (no RDMA NIC has one) */
        for (int r = 0; r < gpu->eth_nrails && gpu->nrails == 0; r++) {
            json_object *name = sharc_topo_json_str(topo->netdevs[gpu->eth_rails[r]].name);

            json_object_array_add(rails, name);
            if (r < gpu->eth_nnearest) {
                json_object_array_add(nearest, json_object_get(name));
            }
        }
        json_object_object_add(obj, "rails", rails);
        json_object_object_add(obj, "nearest_nics", nearest);
        json_object_object_add(obj, "net_gbps",
                               gpu->net_gbps < 0 ? NULL : json_object_new_double(gpu->net_gbps));
        json_object_array_add(gpus, obj);
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
        const sharc_topo_netdev_t *nd = &topo->netdevs[d];
        json_object *obj = json_object_new_object();

        json_object_object_add(obj, "name", sharc_topo_json_str(nd->name));
        json_object_object_add(obj, "driver", sharc_topo_json_str(nd->driver));
        json_object_object_add(obj, "speed_mbps", json_object_new_int(nd->speed_mbps));
        json_object_object_add(obj, "up", json_object_new_boolean(nd->up));
        json_object_object_add(obj, "rdma", sharc_topo_json_str(nd->rdma));
        json_object_object_add(obj, "kind", sharc_topo_json_str(sharc_topo_netdev_kinds[nd->kind]));
        json_object_object_add(obj, "master", sharc_topo_json_str(nd->master));
        json_object_object_add(obj, "ipv4",
                               nd->ipv4 < 0 ? NULL : json_object_new_boolean(nd->ipv4));
        json_object_object_add(obj, "ipoib", json_object_new_boolean(nd->ipoib));
        snprintf(ids, sizeof(ids), "%04x", nd->vendor & 0xffff);
        json_object_object_add(obj, "pci_vendor", sharc_topo_json_str(nd->vendor != 0 ? ids : ""));
        sharc_topo_json_pci(obj, &nd->pci);
        json_object_array_add(netdevs, obj);
    }
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
    for (int w = 0; w < topo->nwarnings; w++) {
        json_object_array_add(warnings, sharc_topo_json_str(topo->warnings[w]));
    }
    json_object_object_add(cpu, "sockets", json_object_new_int(topo->cpu.nsockets));
    json_object_object_add(cpu, "numa_nodes", json_object_new_int(topo->cpu.nnuma));
    json_object_object_add(backend, "transport", sharc_topo_json_str(recs->transport));
    json_object_object_add(backend, "gpu", sharc_topo_json_str(recs->gpu_backend));
    json_object_object_add(backend, "host", sharc_topo_json_str(recs->host_backend));
    json_object_object_add(backend, "not_built", sharc_topo_json_list(recs->not_built));
    json_object_object_add(root, "gpus", gpus);
    json_object_object_add(root, "nics", nics);
    json_object_object_add(root, "netdevs", netdevs);
    json_object_object_add(root, "cpu", cpu);
    json_object_object_add(root, "nvswitches", json_object_new_int(topo->nvswitches));
    json_object_object_add(root, "gpu_gpu", gg);
    json_object_object_add(root, "gpu_nic", gn);
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
    json_object_object_add(root, "machine", machine);
    json_object_object_add(machine, "product", sharc_topo_json_str(topo->product));
    json_object_object_add(machine, "vendor", sharc_topo_json_str(topo->sys_vendor));
    json_object_object_add(root, "backend", backend);
    json_object_object_add(root, "recommendations", recs_json);
    json_object_object_add(root, "notes", notes);
    json_object_object_add(root, "warnings", warnings);
    return root;
}
#endif

sharc_status_t sharc_topo_print(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                sharc_topo_fmt_t fmt, FILE *out)
{
    switch (fmt) {
    case SHARC_TOPO_FMT_TEXT: sharc_topo_print_text(topo, recs, out); break;
    case SHARC_TOPO_FMT_SHELL: sharc_topo_print_env(recs, 1, out); break;
    case SHARC_TOPO_FMT_ENV: sharc_topo_print_env(recs, 0, out); break;
    case SHARC_TOPO_FMT_JSON: {
#ifdef HAVE_JSONC
        json_object *root = sharc_topo_json(topo, recs);

        fprintf(out, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
        json_object_put(root);
        break;
#else
        sharc_error("JSON output needs json-c, which this build lacks");
        return SHARC_ERR_UNSUPPORTED;
#endif
    }
    }
    return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
}

sharc_status_t sharc_topo_print_doctor(const sharc_topo_finding_t *findings, int n, int json,
                                       FILE *out)
{
    if (json) {
#ifdef HAVE_JSONC
        json_object *arr = json_object_new_array();

        for (int i = 0; i < n; i++) {
            json_object *obj = json_object_new_object();

            json_object_object_add(
                obj, "severity",
                json_object_new_string(sharc_topo_severity_names[findings[i].severity]));
            json_object_object_add(obj, "key", json_object_new_string(findings[i].key));
            json_object_object_add(
                obj, "value",
                findings[i].no_value ? NULL : json_object_new_string(findings[i].value));
            json_object_object_add(obj, "source", json_object_new_string(findings[i].source));
            json_object_object_add(obj, "reason", json_object_new_string(findings[i].reason));
            json_object_array_add(arr, obj);
        }
        fprintf(out, "%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY));
        json_object_put(arr);
        return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
#else
        sharc_error("JSON output needs json-c, which this build lacks");
        return SHARC_ERR_UNSUPPORTED;
#endif
    }
    for (int i = 0; i < n; i++) {
        const sharc_topo_finding_t *f = &findings[i];

        fprintf(out, "%-7s %s%s%s (%s): %s\n", sharc_topo_severity_names[f->severity], f->key,
                f->no_value ? "" : "=", f->no_value ? "" : f->value, f->source, f->reason);
    }
    return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
}
