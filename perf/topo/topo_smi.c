/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_smi.c: parser of `nvidia-smi topo -m` text. The tool prints a header row of column
 * names (GPU0.., NIC0.. or device names, then "CPU Affinity", "NUMA Affinity"...), one row
 * per GPU and NIC with cells X, NV#, PIX, PXB, PHB, NODE, SYS (SOC in old drivers), a
 * legend, and a "NIC Legend" naming each NICn. Tabs may have become spaces and terminal
 * escapes may be in the capture; both are accepted. The text is untrusted (a user's
 * attachment): every length is bounded and bad cells become warnings.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_tool.h"

#define SHARC_SMI_TOKEN_MAX 64
#define SHARC_SMI_MAX_COLS  (SHARC_TOPO_MAX_GPUS + SHARC_TOPO_MAX_NICS)
#define SHARC_SMI_MAX_NICS  SHARC_TOPO_MAX_NICS

typedef struct {
    const char *pos, *end; /* the rest of the line */
} sharc_smi_line_t;

/* The next whitespace-separated token, escapes removed, cut at SHARC_SMI_TOKEN_MAX - 1
 * characters. Returns 0 at the end of the line. */
static int sharc_smi_token(sharc_smi_line_t *line, char *tok, int *truncated_p)
{
    size_t n = 0;

    *truncated_p = 0;
    /* a token made of escapes only is no token: go on to the next one */
    while (n == 0 && !*truncated_p) {
        while (line->pos < line->end && isspace((unsigned char)*line->pos)) {
            line->pos++;
        }
        if (line->pos == line->end) {
            return 0;
        }
        while (line->pos < line->end && !isspace((unsigned char)*line->pos)) {
            if (*line->pos == '\033') { /* ESC [ params letter: a terminal attribute */
                line->pos++;
                if (line->pos < line->end && *line->pos == '[') {
                    line->pos++;
                    while (line->pos < line->end && !isalpha((unsigned char)*line->pos)) {
                        line->pos++;
                    }
                    if (line->pos < line->end) {
                        line->pos++;
                    }
                }
                continue;
            }
            if (n < SHARC_SMI_TOKEN_MAX - 1) {
                tok[n++] = *line->pos;
            } else {
                *truncated_p = 1;
            }
            line->pos++;
        }
    }
    tok[n] = '\0';
    return 1;
}

/* Split text into lines; calls back with [start, end). */
static const char *sharc_smi_next_line(const char *pos, const char *end, sharc_smi_line_t *line)
{
    const char *nl;

    if (pos >= end) {
        return NULL;
    }
    nl = memchr(pos, '\n', (size_t)(end - pos));
    line->pos = pos;
    line->end = (nl != NULL) ? nl : end;
    return (nl != NULL) ? nl + 1 : end;
}

/* "GPU12" -> 12; -1 if not a GPU name */
static int sharc_smi_gpu_index(const char *tok)
{
    char *end;
    long n;

    if (strncmp(tok, "GPU", 3) != 0 || !isdigit((unsigned char)tok[3])) {
        return -1;
    }
    n = strtol(tok + 3, &end, 10);
    return (*end == '\0' && n < SHARC_TOPO_MAX_GPUS) ? (int)n : -1;
}

static int sharc_smi_cell(const char *tok, sharc_topo_link_t *link_p, int *count_p)
{
    static const struct {
        const char *name;
        sharc_topo_link_t link;
    } cells[] = {
        {"X", SHARC_TOPO_LINK_X},     {"PIX", SHARC_TOPO_LINK_PIX},   {"PXB", SHARC_TOPO_LINK_PXB},
        {"PHB", SHARC_TOPO_LINK_PHB}, {"NODE", SHARC_TOPO_LINK_NODE}, {"SYS", SHARC_TOPO_LINK_SYS},
        {"SOC", SHARC_TOPO_LINK_SYS},
    };

    *count_p = 0;
    if (strncmp(tok, "NV", 2) == 0 && isdigit((unsigned char)tok[2])) {
        char *end;
        long n = strtol(tok + 2, &end, 10);

        if (*end != '\0' || n <= 0 || n > 1000) {
            return -1;
        }
        *link_p = SHARC_TOPO_LINK_NV;
        *count_p = (int)n;
        return 0;
    }
    for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
        if (strcmp(tok, cells[i].name) == 0) {
            *link_p = cells[i].link;
            return 0;
        }
    }
    return -1;
}

/* The "NIC Legend" section: "  NIC0: mlx5_0". Fills names[n] for NICn. */
static void sharc_smi_read_legend(sharc_topo_t *topo, const char *text, const char *end,
                                  char names[][SHARC_TOPO_NAME_MAX])
{
    sharc_smi_line_t line;
    const char *pos = text;
    int in_legend = 0;

    while ((pos = sharc_smi_next_line(pos, end, &line)) != NULL) {
        char tok[SHARC_SMI_TOKEN_MAX], name[SHARC_SMI_TOKEN_MAX];
        int trunc, trunc2;
        long n;
        char *num_end;

        if (!sharc_smi_token(&line, tok, &trunc)) {
            continue;
        }
        if (strcmp(tok, "NIC") == 0 && sharc_smi_token(&line, tok, &trunc) &&
            strcmp(tok, "Legend:") == 0) {
            in_legend = 1;
            continue;
        }
        if (!in_legend || strncmp(tok, "NIC", 3) != 0 || tok[strlen(tok) - 1] != ':') {
            continue;
        }
        n = strtol(tok + 3, &num_end, 10);
        if (num_end == tok + 3 || *num_end != ':' || n < 0 || n >= SHARC_SMI_MAX_NICS) {
            sharc_topo_warn(topo, "nvidia-smi: NIC legend entry '%s' not understood", tok);
            continue;
        }
        if (!sharc_smi_token(&line, name, &trunc2) || trunc2 ||
            strlen(name) >= SHARC_TOPO_NAME_MAX) {
            sharc_topo_warn(topo, "nvidia-smi: NIC legend entry %s has no usable name", tok);
            continue;
        }
        snprintf(names[n], SHARC_TOPO_NAME_MAX, "%s", name);
    }
}

static int sharc_smi_nic_index(sharc_topo_t *topo, const char *name)
{
    for (int k = 0; k < topo->nnics; k++) {
        if (strcmp(topo->nics[k].name, name) == 0) {
            return k;
        }
    }
    if (topo->nnics == SHARC_TOPO_MAX_NICS) {
        sharc_topo_warn(topo, "nvidia-smi: more than %d NICs; %s ignored", SHARC_TOPO_MAX_NICS,
                        name);
        return -1;
    }
    memset(&topo->nics[topo->nnics], 0, sizeof(topo->nics[0]));
    snprintf(topo->nics[topo->nnics].name, SHARC_TOPO_NAME_MAX, "%s", name);
    topo->nics[topo->nnics].fabric = SHARC_TOPO_FABRIC_UNKNOWN;
    topo->nics[topo->nnics].captured = 1;
    topo->nics[topo->nnics].pci.numa = -1;
    return topo->nnics++;
}

static int sharc_smi_gpu_add(sharc_topo_t *topo, int n)
{
    while (topo->ngpus <= n) {
        sharc_topo_gpu_t *gpu = &topo->gpus[topo->ngpus++];

        memset(gpu, 0, sizeof(*gpu));
        gpu->pci.numa = -1;
    }
    return n;
}

/* A GPU row: cells for each column, then CPU affinity and NUMA affinity (into *numa_p: the
 * capture's NUMA node, -1 when it gives none). A GPU read from sysfs (gpu < nsys) keeps its
 * NUMA node: the capture's is compared with it afterwards. */
static void sharc_smi_read_row(sharc_topo_t *topo, sharc_smi_line_t *line, int gpu, int nsys,
                               const int *col_gpu, const int *col_nic, int ncols, int *numa_p)
{
    char tok[SHARC_SMI_TOKEN_MAX];
    int trunc, col;

    for (col = 0; col < ncols && sharc_smi_token(line, tok, &trunc); col++) {
        sharc_topo_link_t link;
        int count;

        if (trunc || sharc_smi_cell(tok, &link, &count) != 0) {
            sharc_topo_warn(topo, "nvidia-smi: GPU%d: cell '%.16s' not understood", gpu, tok);
            continue;
        }
        if (col_gpu[col] >= 0 && col_gpu[col] < topo->ngpus) {
            if ((link == SHARC_TOPO_LINK_X) != (col_gpu[col] == gpu)) {
                sharc_topo_warn(topo, "nvidia-smi: GPU%d: '%s' against GPU%d ignored", gpu, tok,
                                col_gpu[col]);
                continue;
            }
            topo->gpu_gpu[gpu][col_gpu[col]] = link;
            topo->nvlinks[gpu][col_gpu[col]] = count;
        } else if (col_nic[col] >= 0) {
            if (link == SHARC_TOPO_LINK_X) {
                sharc_topo_warn(topo, "nvidia-smi: GPU%d: X against a NIC ignored", gpu);
                continue;
            }
            topo->gpu_nic[gpu][col_nic[col]] = link;
        }
    }
    if (col < ncols) {
        sharc_topo_warn(topo, "nvidia-smi: GPU%d: row has %d of %d cells", gpu, col, ncols);
        return;
    }
    /* CPU affinity ("0-55,112-167"), then NUMA affinity ("0", or "N/A") */
    char cpus[SHARC_SMI_TOKEN_MAX];
    if (sharc_smi_token(line, cpus, &trunc) && sharc_smi_token(line, tok, &trunc)) {
        char *end;
        long numa = strtol(tok, &end, 10);

        if (end != tok && *end == '\0' && numa >= 0 && numa < SHARC_TOPO_MAX_NUMA) {
            *numa_p = (int)numa;
            if (gpu >= nsys || topo->gpus[gpu].pci.numa < 0) {
                topo->gpus[gpu].pci.numa = (int)numa;
            }
            if (topo->cpu.cpulist[numa][0] == '\0') {
                snprintf(topo->cpu.cpulist[numa], sizeof(topo->cpu.cpulist[numa]), "%s", cpus);
            }
        }
    }
}

/* How well capture row @p row agrees with the GPU read from sysfs as @p gpu: its cells
 * against the NICs sysfs placed (PCI distance of the two), and its NUMA affinity. */
static int sharc_smi_agreement(const sharc_topo_t *topo, int row, int gpu, int numa)
{
    int score = (numa >= 0 && numa == topo->gpus[gpu].pci.numa);

    for (int k = 0; k < topo->nnics; k++) {
        sharc_topo_link_t cell = topo->gpu_nic[row][k];

        if (cell != SHARC_TOPO_LINK_UNKNOWN && topo->nics[k].pci.path[0] != '\0') {
            score += (cell == sharc_topo_pci_distance(&topo->gpus[gpu].pci, &topo->nics[k].pci));
        }
    }
    return score;
}

/*
 * With sysfs read first, GPUs are numbered by PCI address; nvidia-smi numbers them the same
 * way, so the capture's GPUn is sysfs's GPUn. Where a row agrees better with another GPU (its
 * NIC distances and NUMA node are that GPU's), the capture was numbered otherwise or taken on
 * another machine: say so rather than renumber in silence. The capture's cells stay as given.
 */
static void sharc_smi_check_order(sharc_topo_t *topo, int nsys, int ncap, const int *numa)
{
    if (nsys == 0) {
        return; /* no sysfs GPUs: the capture's numbering is all there is */
    }
    if (ncap != nsys) {
        sharc_topo_warn(topo,
                        "nvidia-smi: the capture has %d GPU(s), sysfs %d: taken from "
                        "another machine, or GPUs are missing from one of them",
                        ncap, nsys);
    }
    for (int row = 0; row < nsys && row < ncap; row++) {
        int best = row, own, best_score;

        if (numa[row] == -2 || topo->gpus[row].pci.path[0] == '\0') {
            continue; /* no such row, or nothing known of the GPU to compare with */
        }
        if (numa[row] >= 0 && topo->gpus[row].pci.numa >= 0 &&
            numa[row] != topo->gpus[row].pci.numa) {
            sharc_topo_warn(topo,
                            "nvidia-smi: GPU%d (%s): NUMA affinity %d in the capture, %d "
                            "in sysfs; sysfs kept",
                            row, topo->gpus[row].pci.busid, numa[row], topo->gpus[row].pci.numa);
        }
        own = best_score = sharc_smi_agreement(topo, row, row, numa[row]);
        for (int gpu = 0; gpu < nsys; gpu++) {
            int score = sharc_smi_agreement(topo, row, gpu, numa[row]);

            if (score > best_score) {
                best = gpu;
                best_score = score;
            }
        }
        if (best != row) {
            sharc_topo_warn(topo,
                            "nvidia-smi: the capture's GPU%d looks like the GPU at %s "
                            "(GPU%d by PCI address; %d cells agree, %d with %s): the capture "
                            "numbers GPUs in another order or was taken on another machine; GPUs "
                            "stay numbered by PCI address and the capture's cells are used as "
                            "given",
                            row, topo->gpus[best].pci.busid, best, best_score, own,
                            topo->gpus[row].pci.busid);
        }
    }
}

sharc_status_t sharc_topo_parse_smi(sharc_topo_t *topo, const char *text, size_t len)
{
    char(*legend)[SHARC_TOPO_NAME_MAX];
    int col_gpu[SHARC_SMI_MAX_COLS], col_nic[SHARC_SMI_MAX_COLS], ncols = 0, rows = 0;
    const char *pos = text, *end = text + len;
    int nsys = topo->ngpus, numa[SHARC_TOPO_MAX_GPUS];
    sharc_smi_line_t line;
    int header = 0;

    for (int i = 0; i < SHARC_TOPO_MAX_GPUS; i++) {
        numa[i] = -2; /* no row */
    }

    legend = calloc(SHARC_SMI_MAX_NICS, sizeof(*legend));
    if (legend == NULL) {
        sharc_error("out of memory parsing nvidia-smi text");
        return SHARC_ERR_NOMEM;
    }
    sharc_smi_read_legend(topo, text, end, legend);

    while ((pos = sharc_smi_next_line(pos, end, &line)) != NULL) {
        char tok[SHARC_SMI_TOKEN_MAX];
        int trunc, gpu;

        if (!sharc_smi_token(&line, tok, &trunc)) {
            continue;
        }
        if (strcmp(tok, "Legend:") == 0 || (strcmp(tok, "NIC") == 0 && header)) {
            break;
        }
        if (!header) {
            if (sharc_smi_gpu_index(tok) != 0) {
                continue; /* banners before the matrix */
            }
            header = 1;
            do {
                int nicnum = -1;

                if (strcmp(tok, "CPU") == 0 || strcmp(tok, "NUMA") == 0) {
                    break;
                }
                if (ncols == SHARC_SMI_MAX_COLS) {
                    sharc_topo_warn(topo, "nvidia-smi: more than %d columns; the rest ignored",
                                    SHARC_SMI_MAX_COLS);
                    break;
                }
                col_gpu[ncols] = sharc_smi_gpu_index(tok);
                col_nic[ncols] = -1;
                if (col_gpu[ncols] >= 0) {
                    sharc_smi_gpu_add(topo, col_gpu[ncols]);
                } else if (trunc) {
                    sharc_topo_warn(topo, "nvidia-smi: column name too long; ignored");
                } else {
                    if (sscanf(tok, "NIC%d", &nicnum) == 1 && nicnum >= 0 &&
                        nicnum < SHARC_SMI_MAX_NICS && legend[nicnum][0] != '\0') {
                        col_nic[ncols] = sharc_smi_nic_index(topo, legend[nicnum]);
                    } else {
                        col_nic[ncols] = sharc_smi_nic_index(topo, tok);
                    }
                }
                ncols++;
            } while (sharc_smi_token(&line, tok, &trunc));
            continue;
        }
        gpu = sharc_smi_gpu_index(tok);
        if (gpu >= 0) {
            if (gpu >= topo->ngpus) {
                sharc_topo_warn(topo, "nvidia-smi: row GPU%d has no column; ignored", gpu);
                continue;
            }
            numa[gpu] = -1;
            sharc_smi_read_row(topo, &line, gpu, nsys, col_gpu, col_nic, ncols, &numa[gpu]);
            rows++;
        }
        /* NIC rows repeat the GPU rows' NIC cells; nothing new in them */
    }
    free(legend);
    if (!header || rows == 0) {
        sharc_error("no nvidia-smi topo -m matrix found (a header row 'GPU0 ...' and "
                    "GPU rows)");
        return SHARC_ERR_INVALID;
    }
    int ncap = 0; /* the capture's own GPU count: its GPU columns */
    for (int c = 0; c < ncols; c++) {
        ncap = SHARC_MAX(ncap, col_gpu[c] + 1);
    }
    sharc_smi_check_order(topo, nsys, ncap, numa);
    topo->links_given = 1;
    if (topo->source[0] == '\0') {
        snprintf(topo->source, sizeof(topo->source), "nvidia-smi topo -m");
    }
    return SHARC_OK;
}
