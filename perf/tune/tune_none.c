/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_none.c: `sharc-perf tune` in a build without json-c, which it needs to read the
 * results of the jobs it launches.
 */
#include <stdio.h>

#include "../sharc_perf.h"

int perf_tune_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sharc-perf tune: this sharc was built without json-c (install libjson-c-dev "
                    "and configure again)\n");
    return 2;
}
