/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_input.c: what `sharc-perf predict` is told: the model (the trainer's named Llama
 * shapes, a Hugging Face config.json, or sharc-perf overlap's synthetic units), the cluster (a
 * preset, a key = value file, and the node part from sharc-topo's JSON). Numbers only; the
 * cost model and the simulation are elsewhere.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_JSONC
#include "../common/perf_json.h"
#endif
#include "../common/perf_util.h"
#include "predict.h"

/* ---- models ---------------------------------------------------------------------------- */

/* The trainer's named shapes (trainer/model/config.c; tests/perf/test_predict.c checks that they
 * agree): name, dim, layers, heads, kv heads, ffn, vocab. */
static const struct {
    const char *name;
    int dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab;
} pred_models[] = {
    {"tiny", 64, 2, 4, 2, 176, 4096},
    {"15m", 288, 6, 6, 6, 768, 4096},
    {"42m", 512, 8, 8, 8, 1376, 4096},
    {"110m", 768, 12, 12, 12, 2048, 4096},
    {"1b", 2048, 22, 32, 4, 5632, 32000},
    {"llama2-7b", 4096, 32, 32, 32, 11008, 32000},
    {"llama2-13b", 5120, 40, 40, 40, 13824, 32000},
    {"llama2-70b", 8192, 80, 64, 8, 28672, 32000},
    {"llama3-8b", 4096, 32, 32, 8, 14336, 128256},
    {"llama3.1-8b", 4096, 32, 32, 8, 14336, 128256},
};
#define PRED_NMODELS (sizeof(pred_models) / sizeof(pred_models[0]))

void pred_model_list(FILE *out)
{
    for (size_t i = 0; i < PRED_NMODELS; i++) {
        pred_model_t m;

        pred_model_load(pred_models[i].name, &m);
        fprintf(out,
                "  %-12s dim %5d  layers %2d  heads %2d/%-2d  ffn %5d  vocab %6d  %.1fM params\n",
                m.name, m.dim, m.n_layers, m.n_heads, m.n_kv_heads, m.hidden_dim, m.vocab,
                pred_model_params(&m) / 1e6);
    }
    fprintf(out, "  synthetic:U:P  U units of P parameters (sharc-perf overlap's model)\n"
                 "  FILE.json      a Hugging Face config.json\n");
}

static double pred_block_params(const pred_model_t *m);

#ifdef HAVE_JSONC
static int pred_json_int(struct json_object *o, const char *key, int *out)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int)) {
        return -1;
    }
    *out = json_object_get_int(v);
    return *out > 0 ? 0 : -1;
}

static int pred_model_hf(const char *path, pred_model_t *m)
{
    struct json_object *root = json_object_from_file(path);
    int bad;

    if (root == NULL) {
        fprintf(stderr, "sharc-perf predict: %s: cannot read a JSON object\n", path);
        return -1;
    }
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", path);
    bad = pred_json_int(root, "hidden_size", &m->dim) |
          pred_json_int(root, "num_hidden_layers", &m->n_layers) |
          pred_json_int(root, "num_attention_heads", &m->n_heads) |
          pred_json_int(root, "intermediate_size", &m->hidden_dim) |
          pred_json_int(root, "vocab_size", &m->vocab);
    if (pred_json_int(root, "num_key_value_heads", &m->n_kv_heads) != 0) {
        m->n_kv_heads = m->n_heads;
    }
    if (pred_json_int(root, "head_dim", &m->head_dim) != 0 && m->n_heads > 0) {
        m->head_dim = m->dim / m->n_heads;
    }
    json_object_put(root);
    if (bad) {
        fprintf(stderr,
                "sharc-perf predict: %s: hidden_size, num_hidden_layers, "
                "num_attention_heads, intermediate_size and vocab_size must be positive "
                "integers\n",
                path);
        return -1;
    }
    if (m->n_layers * pred_block_params(m) + 2.0 * m->vocab * m->dim > 1e15) {
        fprintf(stderr, "sharc-perf predict: %s: a model of more than 10^15 parameters\n", path);
        return -1;
    }
    return 0;
}
#else
static int pred_model_hf(const char *path, pred_model_t *m)
{
    (void)m;
    fprintf(stderr,
            "sharc-perf predict: %s: reading a config.json needs json-c, and this "
            "build has none (configure found no json-c); use a named model\n",
            path);
    return -1;
}
#endif

int pred_model_load(const char *spec, pred_model_t *m)
{
    unsigned long units;
    size_t params;
    char rest[32];

    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < PRED_NMODELS; i++) {
        if (strcmp(spec, pred_models[i].name) == 0) {
            snprintf(m->name, sizeof(m->name), "%s", spec);
            m->dim = pred_models[i].dim;
            m->n_layers = pred_models[i].n_layers;
            m->n_heads = pred_models[i].n_heads;
            m->n_kv_heads = pred_models[i].n_kv_heads;
            m->head_dim = m->dim / m->n_heads;
            m->hidden_dim = pred_models[i].hidden_dim;
            m->vocab = pred_models[i].vocab;
            return 0;
        }
    }
    if (strncmp(spec, "synthetic:", 10) == 0) {
        if (sscanf(spec + 10, "%lu:%31s", &units, rest) == 2 && units > 0 && units < 100000 &&
            perf_parse_size(rest, &params) == 0 && params > 0) {
            snprintf(m->name, sizeof(m->name), "%s", spec);
            m->n_layers = (int)units;
            m->syn_params = params;
            return 0;
        }
        fprintf(stderr, "sharc-perf predict: '%s': synthetic:UNITS:PARAMS (e.g. synthetic:16:4M)\n",
                spec);
        return -1;
    }
    if (strstr(spec, ".json") != NULL) {
        return pred_model_hf(spec, m);
    }
    fprintf(stderr, "sharc-perf predict: unknown model '%s'; the models are:\n", spec);
    pred_model_list(stderr);
    return -1;
}

static double pred_block_params(const pred_model_t *m)
{
    double C = m->dim, hd = m->head_dim;

    return C * hd * m->n_heads * 2 + C * hd * m->n_kv_heads * 2 + 3.0 * C * m->hidden_dim + 2 * C;
}

size_t pred_model_params(const pred_model_t *m)
{
    if (m->syn_params > 0) {
        return m->syn_params * (size_t)m->n_layers;
    }
    return (size_t)(m->n_layers * pred_block_params(m) + m->dim + 2.0 * m->vocab * m->dim);
}

double pred_model_flops_per_token(const pred_model_t *m, int seq)
{
    double nonembed = m->n_layers * pred_block_params(m) + m->dim + (double)m->vocab * m->dim;

    return 6.0 * nonembed + 12.0 * m->n_layers * m->n_heads * m->head_dim * (double)seq;
}

void pred_engine_defaults(pred_engine_t *e)
{
    *e = (pred_engine_t){.batch = 1,
                         .seq = 4096,
                         .passes = 1,
                         .layers_per_unit = 1,
                         .prefetch = 1,
                         .reshard_after_forward = 1,
                         .pbytes = 2,
                         .rbytes = 4,
                         .offload_fraction = 1,
                         .clip = 1,
                         .pwire = SHARC_WIRE_FULL,
                         .rwire = SHARC_WIRE_FULL,
                         .wire_block = SHARC_WIRE_BLOCK};
}

/* ---- clusters -------------------------------------------------------------------------- */

/*
 * The presets: what the vendors publish for the links, and assumptions where they publish
 * nothing (achievable bus bandwidth inside the node, NIC efficiency, latencies, the
 * compute's share of the peak); docs/predict.md gives each one's source or reason.
 */
typedef struct {
    const char *name;
    int gpus; /* per node */
    double intra_bw, intra_rs_bw, intra_lat;
    int nics;
    double nic_bw, nic_lat, nic_eff, peak_flops, mfu;
    int queues;
    double call_s, quant_bw;
} pred_preset_t;

/*
 * Columns: name, GPUs per node, intra_bw, intra_rs_bw (0: as intra_bw), intra_lat, nics,
 * nic_bw, nic_lat, nic_eff, peak_flops, mfu, queues, call_s, quant_bw, in pred_cluster_t's
 * units (bytes/s, s, flop/s); every preset is one node. quant_bw: two thirds of the GPU's
 * memory bandwidth (A100 1.6 TB/s, H100 3.35 TB/s), what a memory-bound elementwise kernel
 * reaches; local's is kernels/cpu/quant.c's on this machine (tests/kernels/test_kern_quant).
 * eth100: p5's nodes with one 100 GbE NIC each instead of EFA's 32. local is this machine: ranks
 * are processes on one host, collectives over shared memory; the numbers are
 * tools/bench-predict.sh's fit (docs/perf.md), compute is measured. One queue: on the host one
 * progress thread per rank drives the gathers' lane and the reductions' lane alike (shard/shard.h),
 * so they share its time.
 */
/* clang-format off */
static const pred_preset_t pred_presets[] = {
    {"p4d",         8, 230e9, 0,     8e-6,  4,  100e9 / 8, 20e-6, 0.8, 312e12, 0.55, 2, 20e-6, 1.0e12},
    {"p5",          8, 360e9, 0,     8e-6,  32, 100e9 / 8, 20e-6, 0.8, 989e12, 0.5,  2, 20e-6, 2.2e12},
    {"hgx-h100-ib", 8, 360e9, 0,     8e-6,  8,  400e9 / 8, 5e-6,  0.9, 989e12, 0.5,  2, 20e-6, 2.2e12},
    {"eth100",      8, 360e9, 0,     8e-6,  1,  100e9 / 8, 30e-6, 0.8, 989e12, 0.5,  2, 20e-6, 2.2e12},
    {"local",       2, 3.4e9, 2.4e9, 30e-6, 0,  0,         0,     1,   0,      1,    1, 10e-6, 1.5e9},
    {"gh200",       1, 0,     0,     0,     1,  400e9 / 8, 5e-6,  0.9, 989e12, 0.5,  2, 20e-6, 2.2e12},
};
/* clang-format on */
#define PRED_NPRESETS (sizeof(pred_presets) / sizeof(pred_presets[0]))

int pred_cluster_preset(const char *name, pred_cluster_t *c)
{
    for (size_t i = 0; i < PRED_NPRESETS; i++) {
        const pred_preset_t *p = &pred_presets[i];

        if (strcmp(name, p->name) == 0) {
            *c = (pred_cluster_t){.nodes = 1,
                                  .gpus_per_node = p->gpus,
                                  .intra_bw = p->intra_bw,
                                  .intra_lat = p->intra_lat,
                                  .intra_rs_bw = p->intra_rs_bw,
                                  .nics = p->nics,
                                  .nic_bw = p->nic_bw,
                                  .nic_lat = p->nic_lat,
                                  .nic_eff = p->nic_eff,
                                  .peak_flops = p->peak_flops,
                                  .mfu = p->mfu,
                                  .queues = p->queues,
                                  .call_s = p->call_s,
                                  .quant_bw = p->quant_bw};
            snprintf(c->name, sizeof(c->name), "%s", p->name);
            pred_offload_preset(c, p->name); /* its host: link, memory (predict_offload.c) */
            return 0;
        }
    }
    return -1;
}

void pred_cluster_print(FILE *out, const pred_cluster_t *c)
{
    fprintf(out,
            "# cluster %s: %d node(s) x %d GPUs; inside a node %.0f GB/s, %.1f us per step; "
            "%d NIC(s) x %.0f Gb/s at %.0f%%, %.1f us; peak %.3g TFLOPS, compute at %.0f%% of "
            "it%s; queues %d\n",
            c->name, c->nodes, c->gpus_per_node, c->intra_bw / 1e9, c->intra_lat * 1e6, c->nics,
            c->nic_bw * 8 / 1e9, c->nic_eff * 100, c->nic_lat * 1e6, c->peak_flops / 1e12,
            c->mfu * 100, c->unit_fwd_s > 0 ? " (a block's forward measured)" : "", c->queues);
}

int pred_cluster_set(pred_cluster_t *c, const char *key, const char *value, const char *where)
{
    char *end;
    double v;

    if (strcmp(key, "name") == 0) {
        snprintf(c->name, sizeof(c->name), "%s", value);
        return 0;
    }
    if (strcmp(key, "preset") == 0) {
        pred_cluster_t p;

        if (pred_cluster_preset(value, &p) != 0) {
            fprintf(stderr,
                    "sharc-perf predict: %s: no preset '%s' (p4d, p5, hgx-h100-ib, "
                    "eth100, gh200, local)\n",
                    where, value);
            return -1;
        }
        *c = p;
        return 0;
    }
    if (strcmp(key, "host_link") == 0) {
        return pred_host_link(c, value, where);
    }
    errno = 0;
    v = strtod(value, &end);
    if (errno != 0 || end == value || *end != '\0' || v < 0) {
        fprintf(stderr, "sharc-perf predict: %s: %s = '%s' is not a number >= 0\n", where, key,
                value);
        return -1;
    }
    if ((strcmp(key, "nodes") == 0 || strcmp(key, "gpus_per_node") == 0 ||
         strcmp(key, "nics") == 0) &&
        (v > 1e6 || v != (double)(int)v)) {
        fprintf(stderr, "sharc-perf predict: %s: %s = '%s' is not a whole number <= 1000000\n",
                where, key, value);
        return -1;
    }
    if (strcmp(key, "nodes") == 0) {
        c->nodes = (int)v;
    } else if (strcmp(key, "gpus_per_node") == 0) {
        c->gpus_per_node = (int)v;
    } else if (strcmp(key, "intra_GBps") == 0) {
        c->intra_bw = v * 1e9;
    } else if (strcmp(key, "intra_rs_GBps") == 0) {
        c->intra_rs_bw = v * 1e9;
    } else if (strcmp(key, "intra_lat_us") == 0) {
        c->intra_lat = v * 1e-6;
    } else if (strcmp(key, "nics") == 0) {
        c->nics = (int)v;
    } else if (strcmp(key, "nic_Gbps") == 0) {
        c->nic_bw = v * 1e9 / 8;
    } else if (strcmp(key, "nic_lat_us") == 0) {
        c->nic_lat = v * 1e-6;
    } else if (strcmp(key, "nic_eff") == 0) {
        c->nic_eff = v;
    } else if (strcmp(key, "peak_tflops") == 0) {
        c->peak_flops = v * 1e12;
    } else if (strcmp(key, "mfu") == 0) {
        c->mfu = v;
    } else if (strcmp(key, "unit_fwd_ms") == 0) {
        c->unit_fwd_s = v * 1e-3;
    } else if (strcmp(key, "queues") == 0 && (v == 1 || v == 2)) {
        c->queues = (int)v;
    } else if (strcmp(key, "shared_cores") == 0 && (v == 0 || v == 1)) {
        c->shared_cores = (int)v;
    } else if (strcmp(key, "call_us") == 0) {
        c->call_s = v * 1e-6;
    } else if (strcmp(key, "mem_GBps") == 0) {
        c->mem_bw = v * 1e9;
    } else if (strcmp(key, "optim_ms") == 0) {
        c->optim_s = v * 1e-3;
    } else if (strcmp(key, "quant_GBps") == 0) {
        c->quant_bw = v * 1e9;
    } else if (pred_offload_set(c, key, v)) {
        /* offload's: the host link, the CPU, memory */
    } else {
        fprintf(stderr,
                "sharc-perf predict: %s: unknown key '%s' (or a bad value; see "
                "docs/predict.md)\n",
                where, key);
        return -1;
    }
    if (c->gpus_per_node < 1 || c->nodes < 1) {
        fprintf(stderr, "sharc-perf predict: %s: nodes and gpus_per_node must be >= 1\n", where);
        return -1;
    }
    return 0;
}

/* key = value lines, '#' comments; a preset name instead of a file. */
int pred_cluster_load(const char *spec, pred_cluster_t *c)
{
    char line[512], where[600];
    FILE *f;
    int lineno = 0, ret = 0;

    if (pred_cluster_preset(spec, c) == 0) {
        return 0;
    }
    f = fopen(spec, "r");
    if (f == NULL) {
        fprintf(stderr,
                "sharc-perf predict: cluster '%s': no such preset (p4d, p5, "
                "hgx-h100-ib, eth100, local) or file: %s\n",
                spec, strerror(errno));
        return -1;
    }
    pred_cluster_preset("p5", c); /* what a file leaves out */
    snprintf(c->name, sizeof(c->name), "%s", spec);
    while (ret == 0 && fgets(line, sizeof(line), f) != NULL) {
        char *p = line, *eq, *k, *v, *e;

        lineno++;
        line[strcspn(line, "#\r\n")] = '\0';
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p == '\0') {
            continue;
        }
        snprintf(where, sizeof(where), "%s:%d", spec, lineno);
        eq = strchr(p, '=');
        if (eq == NULL) {
            fprintf(stderr, "sharc-perf predict: %s: not 'key = value'\n", where);
            ret = -1;
            break;
        }
        *eq = '\0';
        k = p;
        v = eq + 1;
        for (e = eq - 1; e >= k && (*e == ' ' || *e == '\t'); e--) {
            *e = '\0';
        }
        while (*v == ' ' || *v == '\t') {
            v++;
        }
        for (e = v + strlen(v) - 1; e >= v && (*e == ' ' || *e == '\t'); e--) {
            *e = '\0';
        }
        ret = pred_cluster_set(c, k, v, where);
    }
    fclose(f);
    return ret;
}

#ifdef HAVE_JSONC
int pred_cluster_from_topo(const char *path, pred_cluster_t *c)
{
    struct json_object *root = json_object_from_file(path), *gpus, *nics, *intra, *v;
    int ngpus = 0, nnics = 0;
    double gbps = 0;
    const char *cls = "";

    if (root == NULL || !json_object_object_get_ex(root, "gpus", &gpus) ||
        !json_object_is_type(gpus, json_type_array)) {
        fprintf(stderr, "sharc-perf predict: %s: not sharc-topo --json output (no \"gpus\")\n",
                path);
        json_object_put(root);
        return -1;
    }
    ngpus = (int)json_object_array_length(gpus);
    if (json_object_object_get_ex(root, "intra", &intra)) {
        cls = json_object_get_string(intra);
    }
    if (json_object_object_get_ex(root, "nics", &nics) &&
        json_object_is_type(nics, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(nics); i++) {
            struct json_object *nic = json_object_array_get_idx(nics, i), *ports, *port;
            double best = 0;

            if ((ports = perf_jarr(nic, "ports")) == NULL) {
                continue;
            }
            for (size_t k = 0; k < json_object_array_length(ports); k++) {
                port = json_object_array_get_idx(ports, k);
                if (json_object_object_get_ex(port, "active", &v) && json_object_get_boolean(v) &&
                    json_object_object_get_ex(port, "rate_gbps", &v) &&
                    json_object_get_double(v) > best) {
                    best = json_object_get_double(v);
                }
            }
            if (best > 0) {
                nnics++;
                gbps += best;
            }
        }
    }
    if (ngpus > 0) {
        c->gpus_per_node = ngpus;
    }
    /* the class of the link inside the node sets its achievable bandwidth (docs/predict.md) */
    if (strcmp(cls, "NVSwitch") == 0) {
        c->intra_bw = 360e9;
        c->intra_lat = 8e-6;
    } else if (strcmp(cls, "NVLink") == 0) {
        c->intra_bw = 150e9;
        c->intra_lat = 8e-6;
    } else if (strcmp(cls, "PCIe P2P") == 0 || strcmp(cls, "host memory") == 0) {
        c->intra_bw = 20e9;
        c->intra_lat = 15e-6;
    }
    if (nnics > 0) {
        c->nics = nnics;
        c->nic_bw = gbps / nnics * 1e9 / 8;
    }
    fprintf(stdout,
            "# from %s: %d GPUs, inside the node %s, %d NIC(s) with an active port, %.0f "
            "Gb/s in all%s\n",
            path, ngpus, cls[0] ? cls : "unknown", nnics, gbps,
            nnics > 0 ? "" : " (the cluster's NICs kept)");
    json_object_put(root);
    return 0;
}
#else
int pred_cluster_from_topo(const char *path, pred_cluster_t *c)
{
    (void)c;
    fprintf(stderr,
            "sharc-perf predict: --from-topo %s needs json-c, and this build has none "
            "(configure found no json-c)\n",
            path);
    return -1;
}
#endif
