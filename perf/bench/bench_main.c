/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_main.c: sharc-perf's collective benchmarks in nccl-tests' language (same flags, same
 * columns, same bus-bandwidth formulas), on sharc's public API: the command line and the job.
 * It adds what a cluster check needs: --vs-mpi runs the same sweep through MPI in the same
 * job and prints sharc/MPI per size, and --vs-memcpy measures this machine's single-thread
 * copy bandwidth for the same sizes in the same run. -J writes every iteration's time as
 * JSON. Times are medians over the iterations of the slowest rank's time per iteration.
 * --device cuda runs on device buffers (one GPU per rank, by local rank), --vs-nccl beside
 * NCCL called directly on them. The sweep itself is bench_sweep.c's.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "../sharc_perf.h"
#include "bench.h"

static void bench_usage(FILE *out)
{
    fprintf(out,
            "usage: sharc-perf allgather|reduce_scatter|allreduce|broadcast|alltoall|sendrecv "
            "[options]\n"
            "       sharc-perf reduce|gather|scatter|allgatherv|reduce_scatterv|alltoallv "
            "[options]\n"
            "       (sendrecv: each rank sends to the next and receives from the previous one;\n"
            "       the uneven ones with even blocks; alltoallv has no in-place form, its\n"
            "       in-place columns repeat the out-of-place call)\n"
            "       sharc-perf overlap [options]   (the sharding engine; overlap -h)\n"
            "       sharc-perf tune [options]      (search the settings; tune -h)\n"
            "       sharc-perf check [options]     (find the slow node or link; check -h)\n"
            "       sharc-perf predict [options]   (what-if scaling of a step; predict -h)\n"
            "  -b, --minbytes N     smallest size (default 32M); K, M, G suffixes\n"
            "  -e, --maxbytes N     largest size (default 32M)\n"
            "                       a size is a rank's larger buffer, as in nccl-tests (alltoall:\n"
            "                       all n blocks a rank sends)\n"
            "  -i, --stepbytes N    step between sizes (default: use -f)\n"
            "  -f, --stepfactor F   factor between sizes (default 2)\n"
            "  -n, --iters N        timed iterations per size (default 20)\n"
            "  -w, --warmup_iters N untimed iterations first (default 5)\n"
            "  -c, --check 0|1      check results like nccl-tests (default 1)\n"
            "  -d, --datatype T     f32 f64 f16 bf16 i32 i64 u8 (or float, half, ...)\n"
            "  -o, --op OP          sum prod min max avg (default sum)\n"
            "  -r, --root N         root of broadcast, reduce, gather, scatter (default 0)\n"
            "  -R, --registered 0|1 1: buffers from sharc_mem_alloc, which peers on the node\n"
            "                       map and copy from directly (default 0: the heap)\n"
            "  -J, --json FILE      write every iteration's time as JSON\n"
            "      --vs-mpi         the same sweep through MPI in this job, and sharc/MPI\n"
            "      --vs-memcpy      single-thread memcpy bandwidth for each size, same run\n"
            "                       (--device cuda: a device-to-device copy)\n"
            "      --device host|cuda  buffers in host memory (default) or on the GPU of each\n"
            "                       rank's local rank (through NCCL, else staged)\n"
            "      --vs-nccl        --device cuda: NCCL called directly on the same buffers, and\n"
            "                       sharc/NCCL\n"
            "      --wire int8|fp8|full  allgather, reduce_scatter: values travel quantized in\n"
            "                       blocks (sharc_allgather_ex); bandwidths count the dtype's\n"
            "                       bytes delivered, and each size's error against the\n"
            "                       full-precision collective is printed beside them\n"
            "      --wire-block N   values per scale (default 256)\n"
            "      --wire-flat      reduce_scatter: quantize every hop (default: full precision\n"
            "                       within a node, quantized between nodes)\n"
            "Run it under the job's launcher: mpirun -np 2 sharc-perf allgather -b 1M -e 256M\n");
}

/* One option into @p o: 0, or 1 for a bad value. */
static int bench_option(int c, const char *arg, perf_bench_opts_t *o)
{
    switch (c) {
    case 'b': return perf_parse_size(arg, &o->minbytes) != 0;
    case 'e': return perf_parse_size(arg, &o->maxbytes) != 0;
    case 'i': return perf_parse_size(arg, &o->stepbytes) != 0;
    case 'f': return (o->stepfactor = atof(arg)) <= 0;
    case 'n': return (o->iters = atoi(arg)) < 1;
    case 'w': return (o->warmup = atoi(arg)) < 0;
    case 'c': o->check = atoi(arg); return 0;
    case 'd': return sharc_dtype_from_name(arg, &o->dtype) != SHARC_OK;
    case 'o': return sharc_op_from_name(arg, &o->op) != SHARC_OK;
    case 'r': o->root = atoi(arg); return 0;
    case 'R': o->registered = atoi(arg); return o->registered != 0 && o->registered != 1;
    case 'J': o->json = arg; return 0;
    case 'M': o->vs_mpi = 1; return 0;
    case 'C': o->vs_memcpy = 1; return 0;
    case 'N': o->vs_nccl = 1; return 0;
    case 'D': o->cuda = strcmp(arg, "cuda") == 0; return !o->cuda && strcmp(arg, "host") != 0;
    case 'W': return sharc_wire_from_name(arg, &o->wire.wire) != SHARC_OK;
    case 'B': return perf_parse_size(arg, &o->wire.block) != 0 || o->wire.block == 0;
    case 'F': o->wire.flat = 1; return 0;
    default: return 1;
    }
}

/* The collective and its options; 0, or 2 for bad arguments (said), or -1 for -h (done). */
static int bench_parse_args(int argc, char **argv, perf_bench_opts_t *o)
{
    static const struct option opts[] = {
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepbytes", required_argument, NULL, 'i'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"datatype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},
        {"root", required_argument, NULL, 'r'},
        {"json", required_argument, NULL, 'J'},
        {"registered", required_argument, NULL, 'R'},
        {"vs-mpi", no_argument, NULL, 'M'},
        {"vs-memcpy", no_argument, NULL, 'C'},
        {"vs-nccl", no_argument, NULL, 'N'},
        {"device", required_argument, NULL, 'D'},
        {"wire", required_argument, NULL, 'W'},
        {"wire-block", required_argument, NULL, 'B'},
        {"wire-flat", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    c = strcmp(argv[1], "sendrecv") == 0 ? PERF_SENDRECV : -1;
    for (int k = 0; c < 0 && k < SHARC_COLL_LAST; k++) { /* every collective but the barrier */
        c = (k != SHARC_COLL_BARRIER && strcmp(argv[1], sharc_coll_name(k)) == 0) ? k : -1;
    }
    if (c < 0) {
        fprintf(stderr, "sharc-perf: unknown collective '%s'\n", argv[1]);
        bench_usage(stderr);
        return 2;
    }
    o->coll = (sharc_coll_type_t)c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:c:d:o:r:R:J:h", opts, NULL)) != -1) {
        if (c == 'h') {
            bench_usage(stdout);
            return -1;
        }
        bad |= bench_option(c, optarg, o);
    }
    if (o->wire.wire != SHARC_WIRE_FULL && o->coll != SHARC_COLL_ALLGATHER &&
        o->coll != SHARC_COLL_REDUCE_SCATTER) {
        fprintf(stderr, "sharc-perf: --wire is for allgather and reduce_scatter\n");
        bad = 1;
    }
    if (bad || optind < argc || o->minbytes > o->maxbytes ||
        (o->cuda && (o->vs_mpi || o->registered)) || (o->vs_nccl && !o->cuda) ||
        (o->vs_nccl && o->coll == PERF_SENDRECV) || (o->vs_nccl && o->coll > SHARC_COLL_REDUCE)) {
        if (o->vs_nccl && o->coll > SHARC_COLL_REDUCE && o->coll != PERF_SENDRECV) {
            fprintf(stderr,
                    "sharc-perf: --vs-nccl: NCCL has no %s of its own (sharc runs it as "
                    "a group of NCCL's sends and receives)\n",
                    sharc_coll_name(o->coll));
        }
        fprintf(stderr, "sharc-perf: bad arguments\n");
        bench_usage(stderr);
        return 2;
    }
    return 0;
}

/* The job's communicator (and with --device cuda the GPU, NCCL's own for --vs-nccl), the
 * sweep, and the teardown (MPI's too, where the job got that far). */
static int bench_run(const perf_bench_opts_t *o)
{
    sharc_context_h ctx;
    sharc_comm_h comm;
    int ret;

    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "sharc-perf: cannot create the communicator (see the log above)\n");
        return 1;
    }
    if (o->cuda && (perf_cuda_init(comm) != 0 || (o->vs_nccl && perf_nccl_init(comm) != 0))) {
        sharc_comm_destroy(comm);
        sharc_context_destroy(ctx);
        return 1;
    }
    ret = perf_bench_sweep(o, ctx, comm);
    if (o->cuda) {
        perf_nccl_fini();
        perf_cuda_fini();
    }
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    perf_bench_mpi_fini(o);
    return ret;
}

int perf_bench_main(int argc, char **argv)
{
    perf_bench_opts_t o = {
        .minbytes = 32u << 20,
        .maxbytes = 32u << 20,
        .stepfactor = 2.0,
        .iters = 20,
        .warmup = 5,
        .check = 1,
        .dtype = SHARC_DTYPE_F32,
        .op = SHARC_OP_SUM,
        .wire = {.field_mask = SHARC_COLL_OPT_WIRE | SHARC_COLL_OPT_BLOCK | SHARC_COLL_OPT_FLAT,
                 .wire = SHARC_WIRE_FULL,
                 .block = SHARC_WIRE_BLOCK}};
    int ret;

    if (argc < 2 || argv[1][0] == '-') {
        int help = argc >= 2 && strcmp(argv[1], "-h") == 0;

        bench_usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    ret = bench_parse_args(argc, argv, &o);
    if (ret == 0) {
        ret = perf_bench_mpi_init(&o, &argc, &argv);
    }
    if (ret != 0) {
        return ret < 0 ? 0 : ret;
    }
    return bench_run(&o);
}
