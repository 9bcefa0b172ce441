/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.c: the topology object (lifecycle, warnings), GPU models by PCI id, and the PCI
 * distance between two devices from their paths. The readers fill it (topo_sysfs.c,
 * topo_net.c); classification, recommendations and output are sharc-topo's (perf/topo/).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo.h"

/* Beyond this many warnings the input is garbage; keep the report readable. */
#define SHARC_TOPO_MAX_WARNINGS 200

/* GPU models by PCI device id: the datacenter parts people build clusters from. */
static const struct {
    unsigned device;
    const char *model;
    int sm;
    int nvlinks; /* on an NVSwitch baseboard; 0 for PCIe cards */
} sharc_topo_gpu_models[] = {
    {0x1db1, "V100 SXM2 16GB", 70, 6},
    {0x1db5, "V100 SXM2 32GB", 70, 6},
    {0x1db4, "V100 PCIe 16GB", 70, 0},
    {0x1eb8, "T4", 75, 0},
    {0x20b0, "A100 SXM4 40GB", 80, 12},
    {0x20b2, "A100 SXM4 80GB", 80, 12},
    {0x20b3, "A100 SXM 64GB", 80, 12},
    {0x20b5, "A100 PCIe 80GB", 80, 0},
    {0x20f1, "A100 PCIe 40GB", 80, 0},
    {0x20b7, "A30", 80, 0},
    {0x2236, "A10", 86, 0},
    {0x2237, "A10G", 86, 0},
    {0x26b9, "L40S", 89, 0},
    {0x27b8, "L4", 89, 0},
    {0x2330, "H100 SXM5 80GB", 90, 18},
    {0x2331, "H100 PCIe", 90, 0},
    {0x2321, "H100 NVL", 90, 0},
    {0x2324, "H800 SXM5", 90, 8},
    {0x2335, "H200 SXM 141GB", 90, 18},
    {0x2901, "B200", 100, 18},
};

void sharc_topo_gpu_identify(sharc_topo_gpu_t *gpu)
{
    if (gpu->vendor != SHARC_TOPO_PCI_VENDOR_NVIDIA) {
        return;
    }
    for (size_t m = 0; m < SHARC_ARRAY_SIZE(sharc_topo_gpu_models); m++) {
        if (sharc_topo_gpu_models[m].device == gpu->device) {
            snprintf(gpu->model, sizeof(gpu->model), "%s", sharc_topo_gpu_models[m].model);
            if (gpu->sm == 0) {
                gpu->sm = sharc_topo_gpu_models[m].sm;
            }
            gpu->nvlinks_max = sharc_topo_gpu_models[m].nvlinks;
        }
    }
}

sharc_status_t sharc_topo_create(sharc_topo_t **topo_p)
{
    sharc_topo_t *topo = calloc(1, sizeof(*topo));

    if (topo == NULL) {
        sharc_error("cannot allocate %zu bytes for a topology", sizeof(*topo));
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < SHARC_TOPO_MAX_GPUS; i++) {
        for (int j = 0; j < SHARC_TOPO_MAX_GPUS; j++) {
            topo->gpu_gpu[i][j] = (i == j) ? SHARC_TOPO_LINK_X : SHARC_TOPO_LINK_UNKNOWN;
        }
        for (int k = 0; k < SHARC_TOPO_MAX_NICS; k++) {
            topo->gpu_nic[i][k] = SHARC_TOPO_LINK_UNKNOWN;
        }
    }
    topo->eth_best = -1;
    *topo_p = topo;
    return SHARC_OK;
}

void sharc_topo_destroy(sharc_topo_t *topo)
{
    if (topo == NULL) {
        return;
    }
    for (int i = 0; i < topo->nwarnings; i++) {
        free(topo->warnings[i]);
    }
    free(topo->warnings);
    free(topo);
}

void sharc_topo_warn(sharc_topo_t *topo, const char *fmt, ...)
{
    char line[512];
    char **grown;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    sharc_debug("%s", line);
    if (topo->nwarnings >= SHARC_TOPO_MAX_WARNINGS) {
        return;
    }
    grown = realloc(topo->warnings, (topo->nwarnings + 1) * sizeof(*grown));
    if (grown == NULL) {
        return; /* a lost warning is not worth failing the report for */
    }
    topo->warnings = grown;
    topo->warnings[topo->nwarnings] = strdup(line);
    if (topo->warnings[topo->nwarnings] != NULL) {
        topo->nwarnings++;
    }
}

/* "dddd:bb:dd.f" as one number in PCI order; -1 when it does not parse. */
static long long sharc_topo_busid_key(const char *busid)
{
    unsigned domain, bus, dev, fn;
    char end;

    if (busid == NULL || sscanf(busid, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &end) != 4 ||
        domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 0x7) {
        return -1;
    }
    return ((long long)domain << 16) | (bus << 8) | (dev << 3) | fn;
}

int sharc_topo_busid_cmp(const char *a, const char *b)
{
    long long ka = sharc_topo_busid_key(a), kb = sharc_topo_busid_key(b);

    if (ka < 0 || kb < 0) {
        return (ka < 0) - (kb < 0); /* unknown addresses last, among themselves equal */
    }
    return (ka > kb) - (ka < kb);
}

static int sharc_topo_nic_cmp(const sharc_topo_nic_t *a, const sharc_topo_nic_t *b)
{
    int c = sharc_topo_busid_cmp(a->pci.busid, b->pci.busid);

    return c != 0 ? c : strverscmp(a->name, b->name);
}

/*
 * The permutation that sorts n items, stable (insertion sort: n is at most 64); perm[new] =
 * old. Returns whether anything moved.
 */
static int sharc_topo_order(int n, int *perm, const sharc_topo_t *topo, int gpus)
{
    int moved = 0;

    for (int i = 0; i < n; i++) {
        int pos = i;

        while (pos > 0) {
            int c = gpus ? sharc_topo_busid_cmp(topo->gpus[perm[pos - 1]].pci.busid,
                                                topo->gpus[i].pci.busid)
                         : sharc_topo_nic_cmp(&topo->nics[perm[pos - 1]], &topo->nics[i]);

            if (c <= 0) {
                break;
            }
            perm[pos] = perm[pos - 1];
            pos--;
        }
        perm[pos] = i;
        moved |= (pos != i);
    }
    return moved;
}

void sharc_topo_sort(sharc_topo_t *topo)
{
    int perm[SHARC_TOPO_MAX_NICS]; /* at least SHARC_TOPO_MAX_GPUS */
    sharc_topo_t *old = malloc(sizeof(*old));

    if (old == NULL) {
        sharc_topo_warn(topo, "out of memory numbering devices by PCI address; input order kept");
        return;
    }
    memcpy(old, topo, sizeof(*old));
    if (sharc_topo_order(topo->ngpus, perm, old, 1)) {
        for (int i = 0; i < topo->ngpus; i++) {
            topo->gpus[i] = old->gpus[perm[i]];
            for (int j = 0; j < topo->ngpus; j++) {
                topo->gpu_gpu[i][j] = old->gpu_gpu[perm[i]][perm[j]];
                topo->nvlinks[i][j] = old->nvlinks[perm[i]][perm[j]];
            }
            memcpy(topo->gpu_nic[i], old->gpu_nic[perm[i]], sizeof(topo->gpu_nic[i]));
        }
        memcpy(old, topo, sizeof(*old));
    }
    if (sharc_topo_order(topo->nnics, perm, old, 0)) {
        for (int k = 0; k < topo->nnics; k++) {
            topo->nics[k] = old->nics[perm[k]];
            for (int i = 0; i < topo->ngpus; i++) {
                topo->gpu_nic[i][k] = old->gpu_nic[i][perm[k]];
            }
        }
        /* rails name nics[] indices: they are assigned by classification, after this; any
         * already there would point at other NICs now */
        for (int i = 0; i < topo->ngpus; i++) {
            topo->gpus[i].nrails = topo->gpus[i].nnearest = 0;
        }
    }
    free(old);
}

/* Split a PCI path into its components; returns how many (at most max). */
static int sharc_topo_split_path(const char *path, char comps[][24], int max)
{
    int n = 0;

    while (*path != '\0' && n < max) {
        const char *slash = strchr(path, '/');
        size_t len = (slash != NULL) ? (size_t)(slash - path) : strlen(path);

        if (len > 0) {
            snprintf(comps[n++], 24, "%.*s", (int)SHARC_MIN(len, 23), path);
        }
        path += len;
        if (*path == '/') {
            path++;
        }
    }
    return n;
}

/*
 * The rule, in nvidia-smi's terms, from the two devices' paths (host bridge, bridges,
 * device): different host bridges are NODE when both sit on one NUMA node (or neither
 * node is known) and SYS otherwise; one host bridge but no bridge in common is PHB; below a
 * common bridge, the two are PIX when the path stays inside one PCIe switch (the common
 * ancestor is a switch's upstream port or deeper and each side is at most its downstream
 * port and the device), or when they are functions of one device; PXB otherwise.
 */
sharc_topo_link_t sharc_topo_pci_distance(const sharc_topo_pci_t *a, const sharc_topo_pci_t *b)
{
    char ca[32][24], cb[32][24];
    int na, nb, common = 0, below_a, below_b;

    if (a->path[0] == '\0' || b->path[0] == '\0') {
        return SHARC_TOPO_LINK_UNKNOWN;
    }
    na = sharc_topo_split_path(a->path, ca, 32);
    nb = sharc_topo_split_path(b->path, cb, 32);
    if (na < 2 || nb < 2) {
        return SHARC_TOPO_LINK_UNKNOWN;
    }
    if (strcmp(ca[0], cb[0]) != 0) {
        return (a->numa == b->numa) ? SHARC_TOPO_LINK_NODE : SHARC_TOPO_LINK_SYS;
    }
    while (1 + common < na && 1 + common < nb && strcmp(ca[1 + common], cb[1 + common]) == 0) {
        common++;
    }
    if (common == 0) {
        return SHARC_TOPO_LINK_PHB;
    }
    below_a = na - 1 - common;
    below_b = nb - 1 - common;
    if (below_a == 0 || below_b == 0) {
        return SHARC_TOPO_LINK_PIX; /* one is behind the other */
    }
    if (below_a == 1 && below_b == 1) {
        return SHARC_TOPO_LINK_PIX; /* siblings on one bus */
    }
    if (common >= 2 && below_a <= 2 && below_b <= 2) {
        return SHARC_TOPO_LINK_PIX;
    }
    return SHARC_TOPO_LINK_PXB;
}
