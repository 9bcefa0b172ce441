/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * why.c: sharc-perf why DIR: the stall verdict of a job from the flight dumps its ranks
 * left in DIR (SHARC_FLIGHT_DIR, sharc_comm_dump; a scheduler's SIGUSR1 with
 * SHARC_FLIGHT_SIGNAL), for jobs that did not live to log it: one line per communicator
 * (sharc_flight_why).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sharc/sharc.h>

#include "../sharc_perf.h"

#define PERF_WHY_MAX (1u << 20)

int perf_why_main(int argc, char **argv)
{
    char *buf;
    sharc_status_t status;

    if (argc != 3 || strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0) {
        fprintf(argc == 3 ? stdout : stderr,
                "usage: sharc-perf why DIR\n"
                "  The stall verdict of a job from its ranks' flight dumps in DIR\n"
                "  (sharc-flight.<comm>.r<rank>.json: SHARC_FLIGHT_DIR, sharc_comm_dump):\n"
                "  per communicator, which collective stalled and why.\n");
        return argc == 3 ? 0 : 2;
    }
    buf = malloc(PERF_WHY_MAX);
    if (buf == NULL) {
        fprintf(stderr, "sharc-perf why: out of memory\n");
        return 1;
    }
    status = sharc_flight_why(argv[2], buf, PERF_WHY_MAX);
    if (status == SHARC_OK) {
        fputs(buf, stdout);
    } else {
        fprintf(stderr, "sharc-perf why: %s (%s)\n", argv[2], sharc_status_string(status));
    }
    free(buf);
    return status == SHARC_OK ? 0 : 1;
}
