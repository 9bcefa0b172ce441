/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_out.c: printing a topology and its recommendations: a matrix like
 * `nvidia-smi topo -m` with the NICs, fabric and rails; shell exports; an env file in the
 * /etc/nccl.conf format; JSON through topo_json.c. Also the doctor's findings.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_tool.h"

const char *const sharc_topo_severity_names[] = {
    [SHARC_TOPO_FINDING_OK] = "ok",           [SHARC_TOPO_FINDING_STALE] = "stale",
    [SHARC_TOPO_FINDING_HARMFUL] = "HARMFUL", [SHARC_TOPO_FINDING_SUGGEST] = "suggest",
    [SHARC_TOPO_FINDING_DIFFERS] = "differs", [SHARC_TOPO_FINDING_WARN] = "warn",
    [SHARC_TOPO_FINDING_NOTE] = "note",
};

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

/* The GPUs, the NICs and the network interfaces, one line each. */
static void sharc_topo_print_devices(const sharc_topo_t *topo, FILE *out)
{
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
}

/* GPU i's rails: its nearest NICs (or interfaces), how far, the bandwidth it should get. */
static void sharc_topo_print_rails(const sharc_topo_t *topo, int i, FILE *out)
{
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

/* The machine, the classification within and between nodes, and each GPU's rails. */
static void sharc_topo_print_fabric(const sharc_topo_t *topo, FILE *out)
{
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
        sharc_topo_print_rails(topo, i, out);
    }
}

/* The backends sharc picks, the recommended settings, the notes. */
static void sharc_topo_print_recs(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                  FILE *out)
{
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
}

static void sharc_topo_print_text(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                  FILE *out)
{
    fprintf(out, "source: %s\n\n", topo->source[0] ? topo->source : "?");
    if (topo->ngpus + topo->nnics > 0) {
        sharc_topo_print_matrix(topo, out);
        fprintf(out, "\n");
    }
    sharc_topo_print_devices(topo, out);
    sharc_topo_print_fabric(topo, out);
    sharc_topo_print_recs(topo, recs, out);
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

sharc_status_t sharc_topo_print(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                sharc_topo_fmt_t fmt, FILE *out)
{
    switch (fmt) {
    case SHARC_TOPO_FMT_TEXT: sharc_topo_print_text(topo, recs, out); break;
    case SHARC_TOPO_FMT_SHELL: sharc_topo_print_env(recs, 1, out); break;
    case SHARC_TOPO_FMT_ENV: sharc_topo_print_env(recs, 0, out); break;
    case SHARC_TOPO_FMT_JSON: return sharc_topo_print_json(topo, recs, out);
    }
    return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
}

sharc_status_t sharc_topo_print_doctor(const sharc_topo_finding_t *findings, int n, int json,
                                       FILE *out)
{
    if (json) {
        return sharc_topo_print_doctor_json(findings, n, out);
    }
    for (int i = 0; i < n; i++) {
        const sharc_topo_finding_t *f = &findings[i];

        fprintf(out, "%-7s %s%s%s (%s): %s\n", sharc_topo_severity_names[f->severity], f->key,
                f->no_value ? "" : "=", f->no_value ? "" : f->value, f->source, f->reason);
    }
    return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
}
