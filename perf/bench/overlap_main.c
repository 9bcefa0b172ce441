/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * overlap_main.c: the command line of `sharc-perf overlap` and its job: the options, the
 * configuration the benchmark needs (the progress thread, the engine's trace) and the
 * communicator. The benchmark itself is overlap.c's.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sharc/sharc.h>

#ifdef HAVE_BLAS
#include <cblas.h>
#endif

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "../sharc_perf.h"
#include "overlap.h"

static void ovl_usage(FILE *f)
{
    fprintf(f, "usage: sharc-perf overlap [options]\n"
               "  -u, --units U          units of the synthetic model (default 8)\n"
               "  -p, --params N         parameters per unit (default 4M); K, M, G suffixes\n"
               "      --compute sleep|gemm  simulated accelerator time (the caller sleeps), or\n"
               "                         real single-threaded SGEMMs on the CPU (default sleep)\n"
               "      --compute-factor F forward compute per unit = F x one unit's all-gather\n"
               "                         time, measured first (default 1); backward: twice\n"
               "      --compute-us N     forward compute per unit in microseconds instead\n"
               "      --gemm-n N         GEMM size for --compute gemm (default 256; 4096 with\n"
               "                         --device cuda)\n"
               "      --device host|cuda where the group lives (default host); cuda: the\n"
               "                         compute is queued on the rank's stream (sleep holds\n"
               "                         the stream, gemm runs cuBLAS BF16 GEMMs)\n"
               "  -d, --datatype T       dtype of the gathered parameters: f32 bf16 f16 (f32)\n"
               "      --reduce-dtype T   dtype of the gradient reduction: f32 bf16 (f32)\n"
               "      --prefetch K|auto  units gathered ahead (default 1); auto: the engine sets\n"
               "                         the depth from the waits (SHARC_SHARD_PREFETCH=auto)\n"
               "      --max-unsharded M  bound on gathered units (default 0: derived)\n"
               "      --progress-thread 0|1  progress from a thread per communicator (default 1;\n"
               "                         without it nothing moves while the caller computes)\n"
               "  -n, --iters N          timed steps per measurement (default 10)\n"
               "  -w, --warmup_iters N   untimed steps first (default 2)\n"
               "  -J, --json FILE        results and every step's time as JSON\n"
               "      --trace FILE       the engine's timeline of the last steps as Chrome trace\n"
               "                         JSON (SHARC_SHARD_TRACE; tools/trace-plot draws it)\n"
               "Run it under the job's launcher: mpirun -np 2 sharc-perf overlap\n");
}

/* One option into @p o: 0, or 1 for a bad value. */
static int ovl_option(int c, const char *arg, ovl_opts_t *o)
{
    switch (c) {
    case 'u': return (o->units = atoi(arg)) < 1;
    case 'p': return perf_parse_size(arg, &o->params) != 0 || o->params == 0;
    case 'k':
        o->compute = strcmp(arg, "gemm") == 0 ? OVL_GEMM : OVL_SLEEP;
        return strcmp(arg, "gemm") != 0 && strcmp(arg, "sleep") != 0;
    case 'F': return (o->factor = atof(arg)) <= 0;
    case 'U': return (o->compute_us = atof(arg)) <= 0;
    case 'G': return (o->gemm_n = atoi(arg)) < 1;
    case 'V': o->cuda = strcmp(arg, "cuda") == 0; return !o->cuda && strcmp(arg, "host") != 0;
    case 'd': return sharc_dtype_from_name(arg, &o->pdtype) != SHARC_OK;
    case 'D': return sharc_dtype_from_name(arg, &o->rdtype) != SHARC_OK;
    case 'K':
        if (strcmp(arg, "auto") == 0) {
            o->prefetch = SHARC_SHARD_PREFETCH_AUTO;
            return 0;
        }
        return (o->prefetch = atoi(arg)) < 0;
    case 'm': return (o->max_unsharded = atoi(arg)) < 0;
    case 'T': o->progress_thread = atoi(arg) != 0; return 0;
    case 'n': return (o->iters = atoi(arg)) < 1;
    case 'w': return (o->warmup = atoi(arg)) < 0;
    case 'J': o->json = arg; return 0;
    case 'R': o->trace = arg; return 0;
    default: return 1;
    }
}

/* The options: 0, 2 for bad arguments (said), -1 for -h (done). */
static int ovl_parse_args(int argc, char **argv, ovl_opts_t *o)
{
    static const struct option opts[] = {
        {"units", required_argument, NULL, 'u'},
        {"params", required_argument, NULL, 'p'},
        {"compute", required_argument, NULL, 'k'},
        {"compute-factor", required_argument, NULL, 'F'},
        {"compute-us", required_argument, NULL, 'U'},
        {"gemm-n", required_argument, NULL, 'G'},
        {"device", required_argument, NULL, 'V'},
        {"datatype", required_argument, NULL, 'd'},
        {"reduce-dtype", required_argument, NULL, 'D'},
        {"prefetch", required_argument, NULL, 'K'},
        {"max-unsharded", required_argument, NULL, 'm'},
        {"progress-thread", required_argument, NULL, 'T'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"json", required_argument, NULL, 'J'},
        {"trace", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    optind = 2;
    while ((c = getopt_long(argc, argv, "u:p:d:n:w:J:h", opts, NULL)) != -1) {
        if (c == 'h') {
            ovl_usage(stdout);
            return -1;
        }
        bad |= ovl_option(c, optarg, o);
    }
    if (bad || optind < argc) {
        fprintf(stderr, "sharc-perf overlap: bad arguments\n");
        ovl_usage(stderr);
        return 2;
    }
    if (o->gemm_n == 0) {
        o->gemm_n = o->cuda ? 4096 : 256;
    }
#ifndef HAVE_BLAS
    if (o->compute == OVL_GEMM && !o->cuda) {
        fprintf(stderr, "sharc-perf overlap: --compute gemm needs sharc built with a CBLAS\n");
        return 2;
    }
#endif
    return 0;
}

/* A context with the progress thread as asked (what lets host collectives run while the
 * caller computes) and the engine's trace; o->reduce_queue as configured. 0 or 1 (said). */
static int ovl_context(ovl_opts_t *o, sharc_context_h *ctx_p)
{
    sharc_config_h config = NULL;
    char value[16];

    if (sharc_config_create(0, &config) != SHARC_OK ||
        sharc_config_set(config, "PROGRESS_THREAD", o->progress_thread ? "yes" : "no") !=
            SHARC_OK ||
        (o->trace != NULL && sharc_config_set(config, "SHARD_TRACE", o->trace) != SHARC_OK) ||
        sharc_config_get(config, "SHARD_REDUCE_QUEUE", value, sizeof(value)) != SHARC_OK ||
        sharc_context_create(config, ctx_p) != SHARC_OK) {
        sharc_config_destroy(config);
        fprintf(stderr, "sharc-perf overlap: bad configuration (see the log)\n");
        return 1;
    }
    o->reduce_queue =
        (value[0] != '\0' && strchr("yY1tT", value[0]) != NULL) || strcasecmp(value, "on") == 0;
    sharc_config_destroy(config);
    return 0;
}

int perf_overlap_main(int argc, char **argv)
{
    ovl_opts_t o = {.units = 8,
                    .params = 4u << 20,
                    .iters = 10,
                    .warmup = 2,
                    .prefetch = 1,
                    .progress_thread = 1,
                    .gemm_n = 0,
                    .factor = 1.0,
                    .pdtype = SHARC_DTYPE_F32,
                    .rdtype = SHARC_DTYPE_F32};
    sharc_context_h ctx;
    sharc_comm_h comm;
    int ret = ovl_parse_args(argc, argv, &o);

    if (ret != 0) {
        return ret < 0 ? 0 : ret;
    }
#ifdef HAVE_BLAS
    openblas_set_num_threads(1); /* one core per rank: ranks share the node's cores */
#endif
    if (ovl_context(&o, &ctx) != 0) {
        return 1;
    }
    if (sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        sharc_context_destroy(ctx);
        fprintf(stderr, "sharc-perf overlap: cannot create the communicator (see the log)\n");
        return 1;
    }
    ret = (o.cuda && perf_cuda_init(comm) != 0) ? 1 : perf_overlap_run(&o, comm);
    if (o.cuda) {
        perf_cuda_fini();
    }
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return ret;
}
