/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc-info: what this sharc is and how it is set. -v version, -b build (which backends),
 * -c every configuration knob with its value, default and documentation, and -C a
 * communicator smoke run (create, split per node and by parity, barrier) that prints each
 * rank's place: the quickest check that a launcher and sharc agree.
 * Uses the public API only.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: sharc-info [-v] [-b] [-c] [-C]\n"
                 "  -v, --version  library version\n"
                 "  -b, --build    what this build includes (CUDA, NCCL, UCX, verbs, MPI, hwloc)\n"
                 "  -c, --config   every SHARC_* knob: value (from the environment), default, doc\n"
                 "  -C, --comm     create a communicator with the launcher's bootstrap, split it\n"
                 "                 per node and by parity, and print each rank's place\n"
                 "Launch -C under mpirun, srun or torchrun-style env to check a job's setup.\n");
}

static int comm_smoke(void)
{
    sharc_context_h ctx;
    sharc_comm_h world, node = NULL, parity = NULL;
    sharc_status_t status;
    int rank;

    status = sharc_context_create(NULL, &ctx);
    if (status != SHARC_OK) {
        fprintf(stderr, "sharc-info: sharc_context_create: %s\n", sharc_status_string(status));
        return 1;
    }
    status = sharc_comm_create(ctx, NULL, &world);
    if (status != SHARC_OK) {
        fprintf(stderr, "sharc-info: sharc_comm_create: %s\n", sharc_status_string(status));
        sharc_context_destroy(ctx);
        return 1;
    }
    rank = sharc_comm_rank(world);
    status = sharc_comm_split(world, sharc_comm_node(world), sharc_comm_rank(world), &node);
    if (status == SHARC_OK) {
        status = sharc_comm_split(world, rank % 2, rank, &parity);
    }
    if (status == SHARC_OK) {
        status = sharc_comm_barrier(world);
    }
    if (status == SHARC_OK) {
        printf("rank %d of %d: node %d of %d, local rank %d of %d, bootstrap %s; "
               "node comm rank %d of %d; parity comm rank %d of %d\n",
               rank, sharc_comm_size(world), sharc_comm_node(world), sharc_comm_nnodes(world),
               sharc_comm_local_rank(world), sharc_comm_local_size(world),
               sharc_bootstrap_name(sharc_comm_bootstrap(world)), sharc_comm_rank(node),
               sharc_comm_size(node), sharc_comm_rank(parity), sharc_comm_size(parity));
        fflush(stdout);
    } else {
        fprintf(stderr, "sharc-info: rank %d: %s\n", rank, sharc_status_string(status));
    }
    sharc_comm_destroy(parity);
    sharc_comm_destroy(node);
    sharc_comm_destroy(world);
    sharc_context_destroy(ctx);
    return status == SHARC_OK ? 0 : 1;
}

static int print_config(void)
{
    sharc_config_h config;
    sharc_status_t status = sharc_config_create(0, &config);

    if (status != SHARC_OK) {
        fprintf(stderr, "sharc-info: the environment holds an invalid setting (see above)\n");
        return 1;
    }
    sharc_config_print(config, stdout, SHARC_CONFIG_PRINT_DOC);
    sharc_config_destroy(config);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"version", no_argument, NULL, 'v'}, {"build", no_argument, NULL, 'b'},
        {"config", no_argument, NULL, 'c'},  {"comm", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},    {NULL, 0, NULL, 0},
    };
    int c, ret = 0, did = 0;

    while ((c = getopt_long(argc, argv, "vbcCh", opts, NULL)) != -1) {
        did = 1;
        switch (c) {
        case 'v': printf("sharc %s\n", sharc_get_version(NULL, NULL, NULL)); break;
        case 'b': fputs(sharc_build_info(), stdout); break;
        case 'c': ret |= print_config(); break;
        case 'C': ret |= comm_smoke(); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sharc-info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (!did) {
        printf("sharc %s\n", sharc_get_version(NULL, NULL, NULL));
        fputs(sharc_build_info(), stdout);
    }
    return ret;
}
