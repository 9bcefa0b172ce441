/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc_perf.c: sharc-perf's dispatcher. The first argument names a subcommand (overlap,
 * tune, check, predict, why), each a main of its own; anything else is the collective benchmarks'
 * (bench/), whose usage lists them all.
 */
#include "config.h"

#include <string.h>

#include "sharc_perf.h"

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} perf_subcommands[] = {
    {"overlap", perf_overlap_main},
    {"tune", perf_tune_main},
    {"check", perf_check_main},
    {"predict", perf_predict_main},
    {"why", perf_why_main},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc >= 2 && i < sizeof(perf_subcommands) / sizeof(perf_subcommands[0]);
         i++) {
        if (strcmp(argv[1], perf_subcommands[i].name) == 0) {
            return perf_subcommands[i].main(argc, argv);
        }
    }
    return perf_bench_main(argc, argv);
}
