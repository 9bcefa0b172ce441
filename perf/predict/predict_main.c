/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * predict_main.c: the `sharc-perf predict` command: options, the sweep over node counts (and
 * a what-if setting), and the outputs: a column table, JSON (-J) and a gnuplot script and
 * PNG (--plot). Every line it writes is labelled a prediction. The numbers come from
 * predict_cost.c and predict_sim.c.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/perf_util.h"
#include "../sharc_perf.h"
#include "predict.h"

#define PRED_MAX_ROWS 64

typedef struct {
    const char *model, *cluster, *topo, *json, *plot, *sweep;
    int vocab;
    int nodes[PRED_MAX_ROWS], nnodes;
    const char *sets[32]; /* --set KEY=VALUE, in order */
    int nsets;
} pred_opts_t;

static void pred_usage(FILE *out)
{
    fprintf(out,
            "usage: sharc-perf predict [options]   (a prediction, not a measurement)\n"
            "  -m, --model M          named model, FILE.json (Hugging Face config), or\n"
            "                         synthetic:U:P (default llama2-7b; --list-models)\n"
            "      --vocab V          the named model with another vocabulary (the trainer's\n"
            "                         small ones take the data's)\n"
            "  -b, --batch N          sequences per GPU per micro-batch (default 1)\n"
            "  -t, --seq N            tokens per sequence (default 4096)\n"
            "      --accum N          micro-batches per step (default 1)\n"
            "  -C, --cluster C        p4d, p5, hgx-h100-ib, eth100, local, or a key = value\n"
            "                         file\n"
            "                         (default p5; docs/predict.md)\n"
            "      --from-topo FILE   the node part from sharc-topo --json output\n"
            "      --set KEY=VALUE    a cluster key (e.g. nics=16, mfu=0.4, unit_fwd_ms=2)\n"
            "  -N, --nodes LIST       node counts, e.g. 1,2,4,8,16 (default)\n"
            "      --prefetch N|auto  the engine's prefetch depth (default 1); auto: the\n"
            "                         engine's adaptive depth, its own decision replayed\n"
            "      --max-unsharded N  the bound on unsharded units (default: derived)\n"
            "      --reshard-after-forward 0|1|node  (default 1; node: hpZ's secondary shards,\n"
            "                         the backward gathers inside the node)\n"
            "      --param-wire W     full, int8 or fp8: the gathers' wire (default full)\n"
            "      --reduce-wire W    full, int8 or fp8: the reductions' between nodes\n"
            "      --wire-block N     values per scale of a quantized wire (default 256)\n"
            "      --layers-per-unit N  transformer blocks per unit (default 1)\n"
            "      --shard-size N     HSDP: ranks per shard group (default: all, full sharding)\n"
            "      --param-dtype T    bf16 or f32 (default bf16)\n"
            "      --reduce-dtype T   bf16 or f32 (default f32)\n"
            "      --recompute        the backward recomputes the forward\n"
            "      --algo A           auto, ring or hier (between nodes; default auto: hier)\n"
            "      --offload M        none, host or managed: f32 state in host memory, AdamW on\n"
            "                         the CPU (the host link and CPU: host_link, host_GBps,\n"
            "                         host_mem_GBps, cpu_optim_Gparams; docs/predict.md)\n"
            "      --offload-fraction F  the share of the model offloaded (default 1)\n"
            "      --clip 0|1         global-norm clipping (default 1): offloaded updates wait\n"
            "                         for every gradient\n"
            "      --sweep W          what-if at each node count: prefetch, hsdp, reduce, nics,\n"
            "                         offload, wire (bf16/f32, int8 gathers, int8 both, int8 and\n"
            "                         hpZ)\n"
            "  -J, --json FILE        the predictions as JSON\n"
            "      --plot FILE.png    a gnuplot picture (FILE.gp beside it)\n"
            "      --list-models      the named models\n");
}

static int pred_dtype_bytes(const char *s)
{
    return strcmp(s, "bf16") == 0 || strcmp(s, "f16") == 0 ? 2 : strcmp(s, "f32") == 0 ? 4 : 0;
}

static int pred_parse_nodes(const char *s, pred_opts_t *o)
{
    char *end;

    o->nnodes = 0;
    while (*s != '\0' && o->nnodes < PRED_MAX_ROWS) {
        long v = strtol(s, &end, 10);

        if (end == s || v < 1 || v > 100000 || (*end != ',' && *end != '\0')) {
            return -1;
        }
        o->nodes[o->nnodes++] = (int)v;
        s = end + (*end == ',');
    }
    return o->nnodes > 0 ? 0 : -1;
}

/* One what-if variant: its label, and the settings it changes. */
typedef struct {
    char label[48];
    pred_cluster_t c;
    pred_engine_t e;
} pred_variant_t;

static int pred_variants(const char *sweep, const pred_cluster_t *c, const pred_engine_t *e,
                         pred_variant_t *v, int max)
{
    int n = 0;

    if (sweep == NULL) {
        v[0] = (pred_variant_t){"as given", *c, *e};
        return 1;
    }
    if (strcmp(sweep, "prefetch") == 0) {
        for (int d = 0; d <= 3 && n < max; d++, n++) {
            v[n] = (pred_variant_t){"", *c, *e};
            v[n].e.prefetch = d;
            v[n].e.max_unsharded = 0;
            snprintf(v[n].label, sizeof(v[n].label), "prefetch %d", d);
        }
        v[n] = (pred_variant_t){"prefetch auto", *c, *e};
        v[n].e.prefetch = -1;
        v[n++].e.max_unsharded = 0;
    } else if (strcmp(sweep, "hsdp") == 0) {
        v[n] = (pred_variant_t){"full sharding", *c, *e};
        v[n++].e.shard_size = 0;
        v[n] = (pred_variant_t){"", *c, *e};
        v[n].e.shard_size = c->gpus_per_node;
        snprintf(v[n++].label, sizeof(v[0].label), "HSDP shard %d", c->gpus_per_node);
    } else if (strcmp(sweep, "reduce") == 0) {
        v[n] = (pred_variant_t){"reduce f32", *c, *e};
        v[n++].e.rbytes = 4;
        v[n] = (pred_variant_t){"reduce bf16", *c, *e};
        v[n++].e.rbytes = 2;
    } else if (strcmp(sweep, "offload") == 0) {
        static const char *const names[] = {"offload none", "offload host", "offload managed"};
        for (int k = 0; k < 3 && n < max; k++, n++) {
            v[n] = (pred_variant_t){"", *c, *e};
            v[n].e.offload = k;
            snprintf(v[n].label, sizeof(v[n].label), "%s", names[k]);
        }
    } else if (strcmp(sweep, "wire") == 0) {
        static const char *const labels[] = {"full", "int8 gathers", "int8 both", "int8+hpZ"};

        for (int k = 0; k < 4 && n < max; k++, n++) {
            v[n] = (pred_variant_t){"", *c, *e};
            snprintf(v[n].label, sizeof(v[n].label), "%s", labels[k]);
            v[n].e.pwire = k >= 1 ? SHARC_WIRE_INT8 : SHARC_WIRE_FULL;
            v[n].e.rwire = k >= 2 ? SHARC_WIRE_INT8 : SHARC_WIRE_FULL;
            v[n].e.hpz = k == 3;
            v[n].e.reshard_after_forward |= k == 3;
        }
    } else if (strcmp(sweep, "nics") == 0) {
        for (int k = c->nics > 4 ? c->nics / 8 : 1; k <= c->nics && n < max; k *= 2, n++) {
            v[n] = (pred_variant_t){"", *c, *e};
            v[n].c.nics = k;
            snprintf(v[n].label, sizeof(v[n].label), "%d NICs", k);
        }
    } else {
        fprintf(stderr,
                "sharc-perf predict: --sweep %s: prefetch, hsdp, reduce, nics, offload or wire\n",
                sweep);
        return -1;
    }
    return n;
}

static void pred_json_row(FILE *f, const char *label, const pred_row_t *r, int last)
{
    fprintf(f,
            "    {\"variant\": \"%s\", \"nodes\": %d, \"gpus\": %d, \"step_s\": %.6g, "
            "\"compute_s\": %.6g, \"comm_s\": %.6g, \"exposed_s\": %.6g, "
            "\"tokens_per_s_per_gpu\": %.6g, \"mfu\": %.4f, \"scaling_efficiency\": %.4f, "
            "\"unit_allgather_s\": %.6g, \"unit_reduce_scatter_s\": %.6g, \"prefetches\": %d, "
            "\"evictions\": %d, \"deferred\": %d, \"peak_unsharded\": %d, "
            "\"prefetch_depth\": %d, \"internode_bytes_per_gpu\": %.6g, "
            "\"secondary_bytes_per_gpu\": %.6g, \"gpu_mem_gib\": %.4g, "
            "\"host_mem_gib_per_node\": %.4g, \"fits\": %s}%s\n",
            label, r->nodes, r->gpus, r->step.step_s, r->step.compute_s, r->step.comm_s,
            r->step.exposed_s, r->tokens_per_s_gpu, r->mfu, r->efficiency, r->ag_s, r->rs_s,
            r->step.prefetches, r->step.evictions, r->step.deferred, r->step.peak_unsharded,
            r->step.depth, r->step.xnode_bytes, r->step.peak_secondary_bytes,
            r->gpu_bytes / (1 << 30), r->host_bytes / (1 << 30),
            r->fits < 0 ? "null"
            : r->fits   ? "true"
                        : "false",
            last ? "" : ",");
}

static int pred_plot(const char *png, const pred_variant_t *v, int nv, const pred_row_t *rows,
                     int nrows, const char *title)
{
    char gp[1024];
    FILE *f;

    perf_snprintf(gp, sizeof(gp), "%.*s.gp", (int)(strlen(png) > 4 ? strlen(png) - 4 : strlen(png)),
                  png);
    f = fopen(gp, "w");
    if (f == NULL) {
        perror(gp);
        return -1;
    }
    fprintf(f, "# sharc-perf predict: %s (a prediction)\n", title);
    fprintf(f, "set terminal pngcairo size 900,500\nset output '%s'\n", png);
    fprintf(f, "set title 'PREDICTED: %s'\nset logscale x 2\nset xlabel 'nodes'\n", title);
    fprintf(f, "set ylabel 'tokens/s per GPU (predicted)'\nset y2label 'scaling efficiency %%'\n"
               "set y2tics\nset key bottom left\nset grid\n");
    fprintf(f, "plot ");
    for (int k = 0; k < nv; k++) {
        fprintf(f,
                "%s'-' using 1:2 with linespoints lc %d title '%s tok/s/GPU', '-' using 1:3 "
                "axes x1y2 with lines lc %d dashtype 2 title '%s efficiency'",
                k ? ", " : "", k + 1, v[k].label, k + 1, v[k].label);
    }
    fprintf(f, "\n");
    for (int k = 0; k < nv; k++) {
        for (int rep = 0; rep < 2; rep++) {
            for (int i = 0; i < nrows; i++) {
                const pred_row_t *r = &rows[k * nrows + i];

                fprintf(f, "%d %.6g %.4g\n", r->nodes, r->tokens_per_s_gpu, r->efficiency * 100);
            }
            fprintf(f, "e\n");
        }
    }
    fclose(f);
    if (perf_gnuplot(gp) != 0) {
        fprintf(stderr,
                "sharc-perf predict: no picture (gnuplot missing or failed); the script "
                "is %s\n",
                gp);
        return 0;
    }
    printf("# picture (predicted): %s\n", png);
    return 0;
}

enum {
    OPT_ACCUM = 256,
    OPT_TOPO,
    OPT_SET,
    OPT_PREFETCH,
    OPT_MAXU,
    OPT_RAF,
    OPT_LPU,
    OPT_SHARD,
    OPT_PDT,
    OPT_RDT,
    OPT_RECOMP,
    OPT_ALGO,
    OPT_SWEEP,
    OPT_PLOT,
    OPT_LIST,
    OPT_VOCAB,
    OPT_OFFLOAD,
    OPT_OFFFRAC,
    OPT_CLIP,
    OPT_PWIRE,
    OPT_RWIRE,
    OPT_WBLOCK
};

/* An option of the engine or the step into @p e: 0, 1 for a bad value, -1 when it is none. */
static int pred_engine_option(int opt, const char *arg, pred_engine_t *e)
{
    switch (opt) {
    case 'b': return (e->batch = atoi(arg)) < 1;
    case 't': return (e->seq = atoi(arg)) < 1;
    case OPT_ACCUM: return (e->passes = atoi(arg)) < 1;
    case OPT_PREFETCH:
        e->prefetch = strcmp(arg, "auto") == 0 ? -1 : atoi(arg);
        return e->prefetch < 0 && strcmp(arg, "auto") != 0;
    case OPT_MAXU: return (e->max_unsharded = atoi(arg)) < 0;
    case OPT_RAF:
        e->hpz = strcmp(arg, "node") == 0;
        e->reshard_after_forward = e->hpz || atoi(arg) != 0;
        return !e->hpz && strcmp(arg, "0") != 0 && strcmp(arg, "1") != 0;
    case OPT_PWIRE: return sharc_wire_from_name(arg, &e->pwire) != SHARC_OK;
    case OPT_RWIRE: return sharc_wire_from_name(arg, &e->rwire) != SHARC_OK;
    case OPT_WBLOCK: return (e->wire_block = atoi(arg)) < 1;
    case OPT_LPU: return (e->layers_per_unit = atoi(arg)) < 1;
    case OPT_SHARD: return (e->shard_size = atoi(arg)) < 0;
    case OPT_PDT: return (e->pbytes = pred_dtype_bytes(arg)) == 0;
    case OPT_RDT: return (e->rbytes = pred_dtype_bytes(arg)) == 0;
    case OPT_RECOMP: e->recompute = 1; return 0;
    case OPT_OFFLOAD:
        e->offload = strcmp(arg, "host") == 0 ? 1 : strcmp(arg, "managed") == 0 ? 2 : 0;
        return e->offload == 0 && strcmp(arg, "none") != 0;
    case OPT_OFFFRAC:
        e->offload_fraction = atof(arg);
        return !(e->offload_fraction > 0 && e->offload_fraction <= 1);
    case OPT_CLIP: e->clip = atoi(arg) != 0; return 0;
    case OPT_ALGO:
        e->algo = strcmp(arg, "ring") == 0   ? PRED_ALGO_RING
                  : strcmp(arg, "hier") == 0 ? PRED_ALGO_HIER
                                             : PRED_ALGO_AUTO;
        return e->algo == PRED_ALGO_AUTO && strcmp(arg, "auto") != 0;
    default: return -1;
    }
}

/* An option of the inputs, the sweep or the outputs into @p o: 0, or 1 for a bad value. */
static int pred_run_option(int opt, const char *arg, pred_opts_t *o)
{
    switch (opt) {
    case 'm': o->model = arg; return 0;
    case 'C': o->cluster = arg; return 0;
    case OPT_TOPO: o->topo = arg; return 0;
    case OPT_SET:
        if (o->nsets == 32) {
            return 1;
        }
        o->sets[o->nsets++] = arg;
        return 0;
    case 'N': return pred_parse_nodes(arg, o) != 0;
    case OPT_SWEEP: o->sweep = arg; return 0;
    case 'J': o->json = arg; return 0;
    case OPT_PLOT: o->plot = arg; return 0;
    case OPT_VOCAB: return (o->vocab = atoi(arg)) < 1;
    default: return 1;
    }
}

/* The options into @p o and @p e: 0, 2 when bad (said), -1 when done (help, the models). */
static int pred_parse(int argc, char **argv, pred_opts_t *o, pred_engine_t *e)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"batch", required_argument, NULL, 'b'},
        {"seq", required_argument, NULL, 't'},
        {"accum", required_argument, NULL, OPT_ACCUM},
        {"cluster", required_argument, NULL, 'C'},
        {"from-topo", required_argument, NULL, OPT_TOPO},
        {"set", required_argument, NULL, OPT_SET},
        {"nodes", required_argument, NULL, 'N'},
        {"prefetch", required_argument, NULL, OPT_PREFETCH},
        {"max-unsharded", required_argument, NULL, OPT_MAXU},
        {"reshard-after-forward", required_argument, NULL, OPT_RAF},
        {"layers-per-unit", required_argument, NULL, OPT_LPU},
        {"shard-size", required_argument, NULL, OPT_SHARD},
        {"param-dtype", required_argument, NULL, OPT_PDT},
        {"reduce-dtype", required_argument, NULL, OPT_RDT},
        {"recompute", no_argument, NULL, OPT_RECOMP},
        {"algo", required_argument, NULL, OPT_ALGO},
        {"sweep", required_argument, NULL, OPT_SWEEP},
        {"json", required_argument, NULL, 'J'},
        {"plot", required_argument, NULL, OPT_PLOT},
        {"list-models", no_argument, NULL, OPT_LIST},
        {"vocab", required_argument, NULL, OPT_VOCAB},
        {"offload", required_argument, NULL, OPT_OFFLOAD},
        {"offload-fraction", required_argument, NULL, OPT_OFFFRAC},
        {"clip", required_argument, NULL, OPT_CLIP},
        {"param-wire", required_argument, NULL, OPT_PWIRE},
        {"reduce-wire", required_argument, NULL, OPT_RWIRE},
        {"wire-block", required_argument, NULL, OPT_WBLOCK},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, bad = 0;

    pred_parse_nodes("1,2,4,8,16", o);
    optind = 2; /* after "predict" */
    while ((opt = getopt_long(argc, argv, "m:b:t:C:N:J:h", longopts, NULL)) != -1) {
        int one;

        if (opt == OPT_LIST) {
            pred_model_list(stdout);
            return -1;
        }
        if (opt == 'h') {
            pred_usage(stdout);
            return -1;
        }
        one = pred_engine_option(opt, optarg, e);
        bad |= one >= 0 ? one : pred_run_option(opt, optarg, o);
    }
    if (bad || optind < argc) {
        fprintf(stderr, "sharc-perf predict: bad or missing value (predict -h)\n");
        return 2;
    }
    return 0;
}

/* The model, the cluster (preset or file, the node part from sharc-topo, --set). */
static int pred_inputs(const pred_opts_t *o, pred_model_t *m, pred_cluster_t *c)
{
    if (pred_model_load(o->model, m) != 0 || pred_cluster_load(o->cluster, c) != 0 ||
        (o->topo != NULL && pred_cluster_from_topo(o->topo, c) != 0)) {
        return 2;
    }
    if (o->vocab > 0 && m->syn_params == 0) {
        m->vocab = o->vocab;
    }
    for (int i = 0; i < o->nsets; i++) {
        char key[64];
        const char *eq = strchr(o->sets[i], '=');

        if (eq == NULL || eq - o->sets[i] >= (long)sizeof(key)) {
            fprintf(stderr, "sharc-perf predict: --set %s: KEY=VALUE\n", o->sets[i]);
            return 2;
        }
        snprintf(key, sizeof(key), "%.*s", (int)(eq - o->sets[i]), o->sets[i]);
        if (pred_cluster_set(c, key, eq + 1, "--set") != 0) {
            return 2;
        }
    }
    return 0;
}

static void pred_print_head(const pred_model_t *m, const pred_cluster_t *c, const pred_engine_t *e)
{
    char depth[16];

    printf("# sharc-perf predict: PREDICTED, not measured. model %s (%.4g M params), batch %d x "
           "seq %d per GPU, %d micro-batch(es)\n",
           m->name, pred_model_params(m) / 1e6, e->batch, e->seq, e->passes);
    pred_cluster_print(stdout, c);
    printf("# engine: prefetch %s, max_unsharded %d%s, %s after forward, %d block(s) per unit, "
           "param %s over a %s wire, reduce %s over a %s wire (blocks of %d)%s\n",
           e->prefetch < 0 ? "auto" : (snprintf(depth, sizeof(depth), "%d", e->prefetch), depth),
           e->max_unsharded, e->max_unsharded ? "" : " (derived)",
           e->hpz                     ? "secondary shards in the node (hpZ)"
           : e->reshard_after_forward ? "resharded"
                                      : "kept",
           e->layers_per_unit, e->pbytes == 2 ? "bf16" : "f32", sharc_wire_name(e->pwire),
           e->rbytes == 2 ? "bf16" : "f32", sharc_wire_name(e->rwire), e->wire_block,
           e->recompute ? ", recompute" : "");
    pred_print_offload(stdout, c, e);
    printf("# %-16s %5s %5s %5s %10s %10s %10s %10s %10s %12s %6s %6s %9s %7s %8s %4s\n",
           "variant", "nodes", "gpus", "depth", "step(ms)", "compute", "comm", "exposed",
           "ag/unit", "tok/s/gpu", "MFU%", "eff%", "xnode GB", "2nd GB", "GPU GiB", "fits");
}

static int pred_write_json(const char *path, const pred_model_t *m, const pred_cluster_t *c,
                           const pred_engine_t *e, const pred_variant_t *v, int nv,
                           const pred_row_t *rows, int nnodes)
{
    FILE *json = fopen(path, "w");

    if (json == NULL) {
        perror(path);
        return 1;
    }
    fprintf(json,
            "{\n  \"prediction\": true,\n  \"model\": \"%s\",\n  \"cluster\": \"%s\",\n"
            "  \"batch\": %d, \"seq\": %d, \"prefetch\": %d, \"param_wire\": \"%s\", "
            "\"reduce_wire\": \"%s\", \"wire_block\": %d, \"hpz\": %d,\n  \"rows\": [\n",
            m->name, c->name, e->batch, e->seq, e->prefetch, sharc_wire_name(e->pwire),
            sharc_wire_name(e->rwire), e->wire_block, e->hpz);
    for (int k = 0; k < nv; k++) {
        for (int i = 0; i < nnodes; i++) {
            pred_json_row(json, v[k].label, &rows[k * nnodes + i], k == nv - 1 && i == nnodes - 1);
        }
    }
    fprintf(json, "  ]\n}\n");
    fclose(json);
    return 0;
}

int perf_predict_main(int argc, char **argv)
{
    pred_opts_t o = {.model = "llama2-7b", .cluster = "p5"};
    pred_engine_t e;
    pred_model_t m;
    pred_cluster_t c;
    pred_variant_t v[8];
    pred_row_t *rows;
    int nv, ret;

    pred_engine_defaults(&e);
    ret = pred_parse(argc, argv, &o, &e);

    if (ret != 0) {
        return ret < 0 ? 0 : ret;
    }
    ret = pred_inputs(&o, &m, &c);
    if (ret != 0) {
        return ret;
    }
    nv = pred_variants(o.sweep, &c, &e, v, 8);
    if (nv < 0) {
        return 2;
    }
    rows = calloc((size_t)(nv * o.nnodes), sizeof(*rows));
    if (rows == NULL) {
        return 1;
    }
    pred_print_head(&m, &c, &e);
    for (int k = 0; k < nv; k++) {
        for (int i = 0; i < o.nnodes; i++) {
            pred_row_t *r = &rows[k * o.nnodes + i];

            if (pred_predict(&m, &v[k].c, &v[k].e, o.nodes[i], r) != 0) {
                free(rows);
                return 1;
            }
            r->efficiency = r->tokens_per_s_gpu / rows[k * o.nnodes].tokens_per_s_gpu;
            printf("  %-16s %5d %5d %5d %10.2f %10.2f %10.2f %10.2f %10.3f %12.1f %6.1f %6.1f "
                   "%9.3f %7.3f %8.1f %4s\n",
                   v[k].label, r->nodes, r->gpus, r->step.depth, r->step.step_s * 1e3,
                   r->step.compute_s * 1e3, r->step.comm_s * 1e3, r->step.exposed_s * 1e3,
                   r->ag_s * 1e3, r->tokens_per_s_gpu, r->mfu * 100, r->efficiency * 100,
                   r->step.xnode_bytes / 1e9, r->step.peak_secondary_bytes / 1e9,
                   r->gpu_bytes / (1 << 30),
                   r->fits < 0 ? "?"
                   : r->fits   ? "yes"
                               : "no");
        }
    }
    printf("# (depth: the prefetch depth, with auto where the engine's decision settled; ms per "
           "step; comm: every collective's time summed, most of it hidden; exposed: "
           "step - compute; eff: tokens/s per GPU against the first row; xnode: GB each GPU "
           "sends between nodes per step; 2nd: hpZ's secondary shards at their peak, GB per "
           "GPU; GPU GiB: the model's state, unsharded buffers, activations and %.1f GiB of the "
           "rest a GPU holds; fits: in the GPU's %.0f GiB and the node's host memory)\n",
           c.gpu_overhead / (1 << 30), c.gpu_mem / (1 << 30));
    ret = o.json != NULL ? pred_write_json(o.json, &m, &c, &e, v, nv, rows, o.nnodes) : 0;
    if (ret == 0 && o.plot != NULL) {
        char title[160];

        perf_snprintf(title, sizeof(title), "%s on %s, batch %d x %d", m.name, c.name, e.batch,
                      e.seq);
        pred_plot(o.plot, v, nv, rows, o.nnodes, title);
    }
    free(rows);
    return ret;
}
