/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_offload.c: offload in `sharc-perf predict`: the host link's rate (PCIe 4, PCIe 5,
 * NVLink-C2C presets from their specifications, or a measured figure), the CPU's rate for the
 * host's work on an offloaded shard (from the node's memory bandwidth: that work is a few
 * passes over memory), each offloaded unit's transfers and host work for the simulation
 * (predict_sim.c), and the memory a GPU and a node hold: does the model fit, and how fast.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "predict.h"

/*
 * Per direction, per GPU: PCIe 4.0 x16 is 16 GT/s x 16 lanes with 128b/130b coding, 31.5 GB/s
 * (PCI-SIG); PCIe 5.0 x16 twice that; NVLink-C2C of the Grace Hopper superchip 900 GB/s both
 * ways, 450 GB/s each (NVIDIA's GH200 data sheet). host_eff (0.8) is the share page-locked
 * copies reach of it.
 */
static const struct {
    const char *name;
    double bw;
} pred_links[] = {{"pcie4", 31.5e9}, {"pcie5", 63.0e9}, {"c2c", 450e9}};

/*
 * The presets' hosts: their GPU's link, the memory of a GPU and of a node, and the node's CPU
 * memory bandwidth the host's work gets: STREAM-like, about 70% of the DRAM channels' peak
 * (p4d: 2 x Xeon 8275CL, 12 channels of DDR4-2933, 281 GB/s peak; p5 and HGX H100: 2 x
 * Sapphire Rapids, 16 channels of DDR5-4800, 614 GB/s; GH200: Grace's LPDDR5X, 512 GB/s).
 * local: this machine, where none of it applies.
 */
static const struct {
    const char *preset, *link;
    double gpu_gib, host_gib, mem_bw;
} pred_hosts[] = {
    {"p4d", "pcie4", 40, 1152, 197e9},
    {"p5", "pcie5", 80, 2048, 430e9},
    {"hgx-h100-ib", "pcie5", 80, 2048, 430e9},
    {"gh200", "c2c", 96, 480, 358e9},
};

/* Bytes of host memory traffic per element: landing (read the slot, read and write the
 * gradient shard, read it again for the sum of squares: 16 in f32) and the update (AdamW
 * reads parameters, gradients and two moments and writes three: 28; the cast for the upload
 * reads 4 and writes 2). */
#define PRED_LAND_BYTES   16.0
#define PRED_UPDATE_BYTES 34.0

int pred_host_link(pred_cluster_t *c, const char *name, const char *where)
{
    for (size_t i = 0; i < sizeof(pred_links) / sizeof(pred_links[0]); i++) {
        if (strcmp(name, pred_links[i].name) == 0) {
            snprintf(c->host_link, sizeof(c->host_link), "%s", name);
            c->host_bw = pred_links[i].bw;
            return 0;
        }
    }
    fprintf(stderr, "sharc-perf predict: %s: host_link '%s' is not pcie4, pcie5 or c2c\n", where,
            name);
    return -1;
}

void pred_offload_preset(pred_cluster_t *c, const char *preset)
{
    c->host_eff = 0.8;
    c->gpu_overhead = 3.0 * (1 << 30); /* CUDA's context, NCCL's buffers, cuBLAS's workspace */
    for (size_t i = 0; i < sizeof(pred_hosts) / sizeof(pred_hosts[0]); i++) {
        if (strcmp(preset, pred_hosts[i].preset) == 0) {
            pred_host_link(c, pred_hosts[i].link, "preset");
            c->gpu_mem = pred_hosts[i].gpu_gib * (1 << 30);
            c->host_mem = pred_hosts[i].host_gib * (1 << 30);
            c->host_mem_bw = pred_hosts[i].mem_bw;
        }
    }
}

/* Bytes/s of host memory traffic one GPU's host work gets. */
static double pred_cpu_bw(const pred_cluster_t *c)
{
    if (c->cpu_optim_rate > 0) { /* given as parameters/s for landing and update together */
        return c->cpu_optim_rate * (PRED_LAND_BYTES + PRED_UPDATE_BYTES);
    }
    return c->host_mem_bw / c->gpus_per_node;
}

int pred_offload_set(pred_cluster_t *c, const char *key, double v)
{
    static const struct {
        const char *key;
        size_t offset;
        double unit;
    } keys[] = {
        {"host_GBps", offsetof(pred_cluster_t, host_bw), 1e9},
        {"host_eff", offsetof(pred_cluster_t, host_eff), 1},
        {"host_mem_GBps", offsetof(pred_cluster_t, host_mem_bw), 1e9},
        {"cpu_optim_Gparams", offsetof(pred_cluster_t, cpu_optim_rate), 1e9},
        {"gpu_mem_GiB", offsetof(pred_cluster_t, gpu_mem), 1 << 30},
        {"host_mem_GiB", offsetof(pred_cluster_t, host_mem), 1 << 30},
        {"gpu_overhead_GiB", offsetof(pred_cluster_t, gpu_overhead), 1 << 30},
    };

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (strcmp(key, keys[i].key) == 0) {
            *(double *)((char *)c + keys[i].offset) = v * keys[i].unit;
            if (strcmp(key, "host_GBps") == 0) {
                snprintf(c->host_link, sizeof(c->host_link), "custom");
            }
            return 1;
        }
    }
    return 0;
}

void pred_offload_units(const pred_cluster_t *c, const pred_engine_t *e, pred_sched_t *s)
{
    double eff = c->host_eff > 0 ? c->host_eff : 0.8, total = 0, kept = 0;
    double link = c->host_bw * eff, cpu = pred_cpu_bw(c);
    int host = 0;

    s->clip = e->clip;
    if (e->offload == 0) {
        return;
    }
    for (int u = 0; u < s->nunits; u++) {
        total += s->units[u].padded;
    }
    for (int u = 0; u < s->nunits; u++) { /* the engine's placement (shard_offload.c) */
        pred_unit_t *pu = &s->units[u];
        double n = pu->padded / s->shard; /* this rank's shard */

        host |= kept + pu->padded > (1.0 - e->offload_fraction) * total;
        kept += host ? 0 : pu->padded;
        pu->host = host;
        if (!host) {
            continue;
        }
        pu->land_s = cpu > 0 ? n * PRED_LAND_BYTES / cpu : 0;
        pu->update_s = cpu > 0 ? n * PRED_UPDATE_BYTES / cpu : 0;
        if (link <= 0) {
            continue;
        }
        if (e->offload == 1) { /* down in the reduce dtype, up in the param dtype */
            pu->down_s = n * e->rbytes / link;
            pu->up_s = n * e->pbytes / link;
        } else { /* managed: the accumulation and the gather's read cross the link */
            pu->down_s = n * 4.0 / link;
            pu->link_ag_s = n * 4.0 / link;
        }
    }
    s->optim_s *= total > 0 ? kept / total : 1; /* the GPU updates the units it keeps */
}

void pred_print_offload(FILE *out, const pred_cluster_t *c, const pred_engine_t *e)
{
    static const char *const modes[] = {"none", "host", "managed"};
    double cpu = pred_cpu_bw(c);

    fprintf(out,
            "# offload %s%s: host link %s %.0f GB/s per GPU and direction at %.0f%%; the host's "
            "work %.2f G params/s per GPU; GPU memory %.0f GiB, host %.0f GiB per node%s\n",
            modes[e->offload], e->offload && e->offload_fraction < 1 ? " (a fraction)" : "",
            c->host_link[0] ? c->host_link : "none", c->host_bw / 1e9,
            100 * (c->host_eff > 0 ? c->host_eff : 0.8),
            cpu / (PRED_LAND_BYTES + PRED_UPDATE_BYTES) / 1e9, c->gpu_mem / (1 << 30),
            c->host_mem / (1 << 30), e->clip ? "; updates after the norm (clipping)" : "");
}
